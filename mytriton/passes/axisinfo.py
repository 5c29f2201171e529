"""Axis analysis (after Triton's AxisInfo): for each value and dimension, how long its runs of +1
steps are (contiguity), the largest power of 2 dividing each run's first value (divisibility; in
bytes for pointers), and how long its runs of equal values are (constancy). The CUDA backend turns
a load or store of pointers contiguous along the fastest register dimension into 16-byte vector
accesses; divisibility decides whether their alignment is proven or must be checked at run time.

Values that flow through region ops (a loop's carried values, an ``if``'s results) get what holds
for every value flowing into them (the meet of their sources, ir/regions.py), found by iterating a
loop's body to a fixed point; a loop's leading arguments (a ``for``'s index, ``start + k*step``)
have their own rule (``leading_<op>``). So the offsets of a column loop ``for start in range(0, n,
BLOCK)`` keep their divisibility by BLOCK, and its masked accesses stay vectorized.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.regions import is_target, lanes
from ..ir.ssa import Const, Function, Op, Param, Region, Value
from ..ir.types import BlockType, PointerType, shape_of

MAX_DIV = 1 << 30


def _pow2_divisor(c: int) -> int:
    c = abs(int(c))
    if c == 0:
        return MAX_DIV
    return min(c & -c, MAX_DIV)


@dataclass(frozen=True)
class AxisInfo:
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]

    @staticmethod
    def scalar(div: int) -> "AxisInfo":
        return AxisInfo((), (div,), ())

    @staticmethod
    def unknown(shape, div: int = 1) -> "AxisInfo":
        return AxisInfo((1,) * len(shape), (div,) * len(shape), (1,) * len(shape))

    def expand(self, own_shape: tuple[int, ...], shape: tuple[int, ...]) -> "AxisInfo":
        """This value's info seen broadcast to ``shape``."""
        if not own_shape:
            d = self.divisibility[0]
            return AxisInfo((1,) * len(shape), (d,) * len(shape), tuple(shape))
        contig, div, const = [], [], []
        for d, (o, s) in enumerate(zip(own_shape, shape)):
            if o == 1 and s != 1:
                contig.append(1)
                div.append(self.divisibility[d])
                const.append(s)
            else:
                contig.append(self.contiguity[d])
                div.append(self.divisibility[d])
                const.append(self.constancy[d])
        return AxisInfo(tuple(contig), tuple(div), tuple(const))


def _pointee_bytes(ty) -> int:
    e = ty.scalar
    if isinstance(e, PointerType):
        return max(1, e.pointee.bits // 8)
    return 0


class AxisAnalysis:
    def __init__(self, fn: Function):
        self.info: dict[Value, AxisInfo] = {}
        self.region(fn.body)

    def get(self, v: Value) -> AxisInfo:
        info = self._proven(v)
        return _with_hints(info, v.hints) if v.hints else info

    def _proven(self, v: Value) -> AxisInfo:
        if v in self.info:
            return self.info[v]
        if isinstance(v, Const):
            return AxisInfo.scalar(_pow2_divisor(v.value) if isinstance(v.value, int) and not isinstance(v.value, bool) else 1)
        if isinstance(v, Param):
            if isinstance(v.type, PointerType):
                return AxisInfo.scalar(max(v.align, _pointee_bytes(v.type)))
            return AxisInfo.scalar(max(v.align, 1))          # `n: i32:16` promises 16 divides n
        eb = _pointee_bytes(v.type)
        return AxisInfo.unknown(shape_of(v.type), eb or 1) if shape_of(v.type) else AxisInfo.scalar(eb or 1)

    def region(self, region: Region):
        for op in region.ops:
            if op.regions:
                self.region_op(op)
                continue
            if op.results:
                rule = getattr(self, "rule_" + op.name, None)
                info = rule(op) if rule else None
                if info is not None:
                    self.info[op.result] = info

    def region_op(self, op: Op, rounds: int = 4):
        """Region arguments and results: the meet of the values flowing into them. The first round
        takes only the op's operands (the regions are not analyzed yet: optimistic for a loop's
        back edge); each later round all the sources, until nothing changes. Facts only weaken
        from round to round; if they still change after ``rounds``, every flowing value is taken
        as unknown."""
        leading = getattr(self, "leading_" + op.name, None)
        if leading is not None:
            leading(op)
        flows = lanes(op)
        targets = [v for group, _, values in flows for v, p in zip(values, group) if is_target(p)]
        for round_ in range(rounds + 1):
            before = {v: self.info.get(v) for v in targets}
            for group, _pos, values in flows:
                sources = [v for v, p in zip(values, group)
                           if not is_target(p) and (p[0] == "operands" or round_ > 0)]
                info = _meet([self.get(v) for v in sources]) if sources and round_ < rounds else None
                for v, p in zip(values, group):
                    if not is_target(p):
                        continue
                    if info is None:
                        self.info.pop(v, None)          # unknown (get's default for the type)
                    else:
                        self.info[v] = info
            for r in op.regions:
                self.region(r)
            if round_ > 0 and all(self.info.get(v) == before[v] for v in targets):
                return

    def leading_for(self, op: Op):
        """A for's index is start + k*step: divisible by what divides both."""
        start, _stop, step = op.operands[:3]
        div = min(self.get(start).divisibility[0], self.get(step).divisibility[0])
        self.info[op.regions[0].args[0]] = AxisInfo.scalar(div)

    def operands(self, op: Op) -> list[AxisInfo]:
        shape = shape_of(op.result.type)
        return [self.get(v).expand(shape_of(v.type), shape) for v in op.operands]

    def rule_arange(self, op: Op):
        n = op.attrs["end"] - op.attrs["start"]
        return AxisInfo((n,), (_pow2_divisor(op.attrs["start"]),), (1,))

    def _const_fill(self, op: Op):
        shape = op.result.type.shape
        div = MAX_DIV if op.name != "full" else self.get(op.operands[0]).divisibility[0]
        return AxisInfo((1,) * len(shape), (div,) * len(shape), shape)

    rule_zeros = rule_full = _const_fill

    def rule_trans(self, op: Op):
        src = self.get(op.operands[0])
        dims = op.attrs["dims"]
        if not src.contiguity:
            return None
        return AxisInfo(*(tuple(t[d] for d in dims) for t in (src.contiguity, src.divisibility, src.constancy)))

    def rule_expand_dims(self, op: Op):
        src = self.get(op.operands[0])
        a = op.attrs["axis"]
        if not src.contiguity:                               # a scalar cannot be expanded
            return None
        ins = lambda t, x: t[:a] + (x,) + t[a:]              # noqa: E731
        # along the new size-1 dimension every element starts a run: what divides every element
        every = min(self._run_div(src, d, 1) for d in range(len(src.contiguity)))
        return AxisInfo(ins(src.contiguity, 1), ins(src.divisibility, every), ins(src.constancy, 1))

    def rule_broadcast(self, op: Op):
        return self.get(op.operands[0]).expand(shape_of(op.operands[0].type), op.result.type.shape)

    def rule_convert_layout(self, op: Op):
        return self.get(op.operands[0])

    def rule_cast(self, op: Op):
        """An integer widened (i32 -> i64: a carried pointer offset) keeps what divides it."""
        src, dst = op.operands[0].type.scalar, op.result.type.scalar
        if src.is_int and dst.is_int and not src.is_bool and dst.bits >= src.bits and src.is_signed == dst.is_signed:
            return self.get(op.operands[0])
        return self._constancy_only(op)

    @staticmethod
    def _run_div(info: AxisInfo, d: int, run: int, step: int = 1) -> int:
        """Divisibility of the values at multiples of ``run`` along ``d``: a run of +1 steps
        (of ``step`` units each) starting at a multiple of D holds multiples of min(D, run*step)
        there; a value with no runs is divisible by D everywhere."""
        div = info.divisibility[d]
        return div if info.contiguity[d] == 1 else min(div, run * step)

    def _add_like(self, op: Op, scale: int = 1, subtract: bool = False):
        """add / sub / addptr; ``scale`` is the pointee size for addptr (offsets count elements,
        divisibility of pointers counts bytes)."""
        if not isinstance(op.result.type, BlockType):
            a, b = (self.get(v) for v in op.operands)
            return AxisInfo.scalar(min(a.divisibility[0], b.divisibility[0] * scale))
        a, b = self.operands(op)
        contig, div, const = [], [], []
        for d in range(len(a.contiguity)):
            c = min(a.contiguity[d], b.constancy[d])
            if not subtract:
                c = max(c, min(a.constancy[d], b.contiguity[d]))
            contig.append(c)
            div.append(min(self._run_div(a, d, c, scale), self._run_div(b, d, c) * scale))
            const.append(min(a.constancy[d], b.constancy[d]))
        return AxisInfo(tuple(contig), tuple(div), tuple(const))

    def rule_add(self, op):
        return self._add_like(op)

    def rule_sub(self, op):
        return self._add_like(op, subtract=True)

    def rule_addptr(self, op):
        return self._add_like(op, scale=_pointee_bytes(op.result.type))

    def rule_mul(self, op: Op):
        if not isinstance(op.result.type, BlockType):
            a, b = (self.get(v) for v in op.operands)
            return AxisInfo.scalar(min(MAX_DIV, a.divisibility[0] * b.divisibility[0]))
        a, b = self.operands(op)
        n = len(a.contiguity)
        one = lambda v: isinstance(v, Const) and v.value == 1        # noqa: E731
        contig = tuple(a.contiguity[d] if one(op.operands[1]) else b.contiguity[d] if one(op.operands[0]) else 1
                       for d in range(n))
        div = tuple(min(MAX_DIV, self._run_div(a, d, contig[d]) * self._run_div(b, d, contig[d])) for d in range(n))
        const = tuple(min(a.constancy[d], b.constancy[d]) for d in range(n))
        return AxisInfo(contig, div, const)

    def rule_mod(self, op: Op):
        """``x % n`` for ``x`` running +1 from a multiple of D and ``n`` a multiple of D, the same over
        the run: the run holds D values in a row before it can wrap, so the result runs +1 for
        D elements from a multiple of D (Triton's rule; as Triton's, it reads the offsets as not
        negative, where C's remainder of a negative run would count down)."""
        if not isinstance(op.result.type, BlockType):
            return None
        a, b = self.operands(op)
        contig, div, const = [], [], []
        for d in range(len(a.contiguity)):
            c = 1
            if a.contiguity[d] > 1 and b.constancy[d] >= a.contiguity[d]:
                c = min(a.contiguity[d], a.divisibility[d], b.divisibility[d])
            v = min(a.divisibility[d], b.divisibility[d])
            if a.contiguity[d] > c or b.contiguity[d] > c:
                v = min(v, c)
            contig.append(c)
            div.append(v)
            const.append(min(a.constancy[d], b.constancy[d]))
        return AxisInfo(tuple(contig), tuple(div), tuple(const))

    def _constancy_only(self, op: Op):
        if not isinstance(op.result.type, BlockType):
            return None
        infos = self.operands(op)
        n = len(op.result.type.shape)
        const = tuple(min(i.constancy[d] for i in infos) for d in range(n))
        return AxisInfo((1,) * n, (1,) * n, const)

    def _compare(self, op: Op, lower_first: bool):
        """``x < n`` / ``x >= n`` (``lower_first``: the run is on the left) and ``n > x`` /
        ``n <= x``: where ``x`` runs +1 from a multiple of D and ``n`` is a multiple of D (D a power
        of two), a run of D elements lies wholly below or wholly at/above ``n``, so the result is
        constant over aligned runs of D — what lets a masked access by ``offs < n`` be vectorized
        under one predicate. Otherwise as for any elementwise op."""
        out = self._constancy_only(op)
        if out is None:
            return None
        run, bound = self.operands(op) if lower_first else reversed(self.operands(op))
        const = []
        for d, c in enumerate(out.constancy):
            if run.contiguity[d] > 1 and bound.constancy[d] >= run.contiguity[d]:
                c = max(c, min(run.contiguity[d], run.divisibility[d], bound.divisibility[d]))
            const.append(c)
        return AxisInfo(out.contiguity, out.divisibility, tuple(const))

    def rule_cmp_lt(self, op):
        return self._compare(op, lower_first=True)

    def rule_cmp_ge(self, op):
        return self._compare(op, lower_first=True)

    def rule_cmp_gt(self, op):
        return self._compare(op, lower_first=False)

    def rule_cmp_le(self, op):
        return self._compare(op, lower_first=False)

    rule_cmp_eq = rule_cmp_ne = _constancy_only
    rule_and = rule_or = rule_xor = rule_where = _constancy_only


def _with_hints(info: AxisInfo, hints: dict) -> AxisInfo:
    """*info* with the user's promises (tl.multiple_of...) taken where they say more."""
    fields = {}
    for kind in ("contiguity", "divisibility", "constancy"):
        have = getattr(info, kind)
        promised = hints.get(kind)
        if promised is not None and len(promised) == len(have):
            have = tuple(max(a, b) for a, b in zip(have, promised))
        fields[kind] = have
    return AxisInfo(**fields)


def _meet(infos: list[AxisInfo]) -> AxisInfo:
    """What holds for each of ``infos`` (of one type)."""
    first = infos[0]
    return AxisInfo(*(tuple(min(i.__dict__[f][d] for i in infos) for d in range(len(first.__dict__[f])))
                      for f in ("contiguity", "divisibility", "constancy")))


def analyze(fn: Function) -> AxisAnalysis:
    return AxisAnalysis(fn)
