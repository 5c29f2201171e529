"""Expression tree → typed SSA with structured regions (seed parts 2 and 10).

Statements (loads, stores, ops with regions) are lowered in program order; pure expressions on demand, each
into the region of the scope that created it — so a value created before a loop and read inside it
(a capture) is defined before the loop, and an unused pure expression never reaches SSA.
"""
from __future__ import annotations

from ..ir.ops import OPS
from ..ir.regions import flow_of, is_target, lanes
from ..ir.ssa import Combine, Const, Function, Op, Param, Region, Value
from ..ir.tree import CombineTree, Node, RegionStmt, Scope


class Lowering:
    def __init__(self, params: list[Param]):
        self.values: dict[int, Value] = {}         # id(node) -> value
        self.keep: list[Node] = []                  # keep nodes alive while their ids are keys
        self.regions: dict[int, Region] = {}        # id(scope) -> region being filled
        self.params = {p.name: p for p in params}

    def lower_scope(self, scope: Scope, region: Region):
        self.regions[id(scope)] = region
        for st in scope.statements:
            if isinstance(st, RegionStmt):
                self.lower_region_stmt(st, region)
            else:
                self.value(st)

    def value(self, node: Node) -> Value | None:
        """The SSA value of ``node``, lowering it and its not yet lowered operands first.

        Iterative (post-order with an explicit stack): a chain of dependent statements such as
        ``x = x + 1`` repeated thousands of times is as deep as the program is long."""
        values = self.values
        if id(node) in values:
            return values[id(node)]
        stack = [node]
        while stack:
            top = stack[-1]
            if id(top) in values:
                stack.pop()
                continue
            pending = [o for o in top.operands if id(o) not in values]
            if pending:
                stack.extend(reversed(pending))
                continue
            stack.pop()
            values[id(top)] = _carry_hints(self.lower_node(top), top)
            self.keep.append(top)
        return values[id(node)]

    def lower_node(self, node: Node) -> Value | None:
        """One node whose operands are lowered already."""
        op = node.op
        if op == "const":
            return Const(node.attrs["value"], node.type)
        if op == "param":
            return self.params[node.attrs["name"]]
        if op in ("region_arg", "region_result"):
            raise AssertionError(f"{op} used before its region op was lowered")
        operands = [self.values[id(o)] for o in node.operands]
        result_types = [node.type] if node.type is not None else []
        ssa_op = Op(op, operands, result_types, dict(node.attrs), loc=node.loc)
        self.regions[id(node.scope)].ops.append(ssa_op)
        return ssa_op.results[0] if ssa_op.results else None

    def lower_region_stmt(self, st: RegionStmt, region: Region):
        """The op of ``st`` with its regions; the terminator of each region is the one its
        RegionFlow names, forwarding the scope's exits after its own leading operands."""
        flow = OPS[st.op].region_flow
        operands = [self.value(n) for n in st.operands]
        regions = []
        for i, (scope, args, exits) in enumerate(zip(st.scopes, st.args, st.exits)):
            values = [_carry_hints(Value(n.type), n) for n in args]
            for n, v in zip(args, values):
                self.values[id(n)] = v
            self.keep.extend(args)
            body = Region(values)
            self.lower_scope(scope, body)
            term = [self.value(n) for n in exits]
            body.ops.append(Op(flow.terminators[i], term, [], loc=st.loc))
            regions.append(body)
        attrs = {k: self.lower_combine(v) if isinstance(v, CombineTree) else v for k, v in st.attrs.items()}
        op = Op(st.op, operands, [n.type for n in st.results], attrs, regions=regions, loc=st.loc)
        region.ops.append(op)
        for n, r in zip(st.results, op.results):
            self.values[id(n)] = _carry_hints(r, n)
            self.keep.append(n)
        _spread_hints(op)

    def lower_combine(self, tree: CombineTree) -> Combine:
        """A combine function's closed scope → a Combine whose region ends in ``yield``."""
        values = [Value(n.type) for n in tree.args]
        for n, v in zip(tree.args, values):
            self.values[id(n)] = v
        self.keep.extend(tree.args)
        body = Region(values)
        self.lower_scope(tree.scope, body)
        body.ops.append(Op("yield", [self.value(n) for n in tree.results], []))
        return Combine(body)


def _carry_hints(value: Value | None, node: Node) -> Value | None:
    """*value*, carrying *node*'s promises (tl.multiple_of...) on to the SSA value."""
    if node.hints and value is not None and not isinstance(value, Const):
        value.hints = {**(value.hints or {}), **node.hints}
    return value


def _spread_hints(op: Op) -> None:
    """A promise about a region argument or result (``tl.multiple_of(a_ptrs, 16)`` on a loop's
    carried pointers, as Triton's tutorials write it) holds for every value flowing into it: its
    initial value and what each iteration yields get it too, so that passes which rebuild the loop
    (the prefetch of dot operands) still see it."""
    targets = [*op.results, *(a for r in op.regions for a in r.args)]
    if not any(v.hints for v in targets) or flow_of(op) is None:
        return
    for group, _, values in lanes(op):
        hints = {}
        for v, p in zip(values, group):
            if is_target(p) and v.hints:
                hints.update(v.hints)
        for v, p in zip(values, group):
            if hints and not is_target(p) and not isinstance(v, Const):
                v.hints = {**(v.hints or {}), **hints}


def lower(root: Scope, name: str, params: list[Param], constexprs: dict, num_warps: int, loc=None,
          returns: list[Node] | None = None) -> Function:
    """The Function of a traced kernel; with ``returns``, of a device function, whose body ends
    with ``func_return`` of those nodes' values."""
    body = Region()
    lowering = Lowering(params)
    lowering.lower_scope(root, body)
    if returns is not None:
        body.ops.append(Op("func_return", [lowering.value(n) for n in returns], []))
    return Function(name, params, body, dict(constexprs), num_warps, loc)
