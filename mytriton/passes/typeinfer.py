"""Type inference on the expression tree.

Every node's type follows from its operands' types and its attributes by the op's type rule in the
registry (ir/ops.py). The frontend infers each node as it is built, so a type error points at the
source line that caused it; ``check_tree`` re-derives all types as a separate stage before SSA.
"""
from __future__ import annotations

from ..ir.ops import OPS, OpTypeError
from ..ir.tree import LEAVES, ForRange, Node, Scope


def infer(node: Node):
    """The type of ``node`` (leaves carry theirs); raises OpTypeError for ill-typed ops."""
    if node.op in LEAVES:
        if node.type is None:
            raise OpTypeError(f"leaf {node.op} has no type")
        return node.type
    d = OPS.get(node.op)
    if d is None:
        raise OpTypeError(f"unknown op {node.op!r}")
    lo, hi = d.arity
    if not lo <= len(node.operands) <= hi:
        raise OpTypeError(f"{node.op} takes {lo}..{hi} operands, got {len(node.operands)}")
    return d.type_rule([o.type if o.type is not None else infer(o) for o in node.operands], node.attrs)


def type_node(node: Node) -> Node:
    node.type = infer(node)
    return node


def check_tree(scope: Scope) -> None:
    """Re-derive the type of every node reachable from the statements and check loop lanes."""
    seen: set[int] = set()

    def visit(root: Node):
        # iterative post-order: a chain of thousands of dependent statements is as deep as it is long
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                t = infer(node)
                if node.op not in LEAVES and t != node.type:
                    raise OpTypeError(f"{node.op}: recorded type {node.type} but its rule gives {t}")
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((o, False) for o in reversed(node.operands) if id(o) not in seen)

    def visit_scope(s: Scope):
        for st in s.statements:
            if isinstance(st, ForRange):
                for n in (st.start, st.stop, st.step, *st.carried_inputs):
                    visit(n)
                visit_scope(st.body)
                for i, (init, out) in enumerate(zip(st.carried_inputs, st.carried_outputs)):
                    visit(out)
                    if init.type != out.type:
                        raise OpTypeError(f"loop-carried '{st.carried_names[i]}' enters the loop as {init.type}"
                                          f" but leaves an iteration as {out.type}")
            else:
                visit(st)

    visit_scope(scope)
