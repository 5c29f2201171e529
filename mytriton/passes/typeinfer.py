"""Type inference on the expression tree.

Every node's type follows from its operands' types and its attributes by the op's type rule in the
registry (ir/ops.py). The frontend infers each node as it is built, so a type error points at the
source line that caused it; ``check_tree`` re-derives all types as a separate stage before SSA.
"""
from __future__ import annotations

from ..ir.ops import OPS, OpTypeError
from ..ir.tree import LEAVES, Node, RegionStmt, Scope


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
    """Re-derive the type of every node reachable from the statements (the lanes of ops with
    regions are checked by the SSA verifier)."""
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
            if isinstance(st, RegionStmt):
                for n in st.operands:
                    visit(n)
                for body, exits in zip(st.scopes, st.exits):
                    visit_scope(body)
                    for n in exits:
                        visit(n)
            else:
                visit(st)

    visit_scope(scope)
