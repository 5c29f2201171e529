"""Hypothesis strategies for random rank-2 tile programs (tests/test_cuda_emulated.py; longer
campaigns run the same property with more examples): kernels over a BM x BN tile, its transpose, a
row and a column, combined by elementwise ops, broadcasts, reductions along either axis, argmax /
argmin, transposes, reshapes, scans, sorts, gathers, joins, flips, ``tl.dot``, conversions, selects
and a run-time loop carrying one of them, some of it in a helper function (inlined or a device
function of its own), with masked tails on both axes, over fp32, fp16 or bf16
input, or i8, i16, i32 (integer arithmetic wraps, sums widen as Triton's). The code generator
picks a different layout for almost every shape, warp count and mix of ops (and converts between
them: reductions, broadcasts and transposes each cross layouts), so the emulated CUDA of such
programs against the CPU interpreter checks the layout pass and the index math of every
conversion.

Values have one of four shapes (kinds): T = (BM, BN), U = (BN, BM), R = (BN,) and C = (BM,). The
program's result is stored where the shape says (T and U to the same (M, N) output, R and C to
rows or columns of their own)."""
from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

from tests.kernel_files import kernel_from_source

KINDS = ("T", "U", "R", "C")
LEAVES = {"T": ["x"], "U": ["xu"], "R": ["y"], "C": ["c"]}
# reductions: (result kind, operand kind, axis)
REDUCTIONS = [("R", "T", 0), ("C", "T", 1), ("R", "U", 1), ("C", "U", 0)]
# broadcasts of a vector into a tile: (tile kind, vector kind, indexing)
BROADCASTS = [("T", "R", "[None, :]"), ("T", "C", "[:, None]"), ("U", "R", "[:, None]"), ("U", "C", "[None, :]")]


@st.composite
def exact_values(draw, kind: str, depth: int):
    """A value of ``kind`` made of the inputs by operations that round nothing (selects, max/min,
    negation, data movement): what the operand of a discontinuous operation (a comparison, an
    argmax, a conversion to an integer or a half) must be, so that the interpreter's and the
    generated code's different summation orders cannot flip its result."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(LEAVES[kind]))
    sub = exact_values(kind, depth - 1)
    other = "U" if kind == "T" else "T"
    choices = ["minmax", "neg"] + (["trans", "flip"] if kind in "TU" else ["reduce"])
    op = draw(st.sampled_from(choices))
    if op == "minmax":
        return f"tl.{draw(st.sampled_from(['maximum', 'minimum']))}({draw(sub)}, {draw(sub)})"
    if op == "neg":
        return f"(-{draw(sub)})"
    if op == "trans":
        return f"tl.trans({draw(exact_values(other, depth - 1))})"
    if op == "flip":
        return f"tl.flip({draw(sub)}, {draw(st.integers(0, 1))})"
    operand, axis = draw(st.sampled_from([(o, a) for r, o, a in REDUCTIONS if r == kind]))
    return f"tl.{draw(st.sampled_from(['max', 'min']))}({draw(exact_values(operand, depth - 1))}, axis={axis})"


@st.composite
def values(draw, kind: str, depth: int, shape: tuple[int, int], integer: bool = False):
    """Source text of a value of ``kind`` in a program of tile ``shape`` (BM, BN) whose input is
    integers where ``integer`` (no ``tl.fma``, which takes floats only)."""
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(LEAVES[kind]))
    bm, bn = shape
    sub = values(kind, depth - 1, shape, integer)
    exact = exact_values(kind, 2)

    def of(k):
        return values(k, depth - 1, shape, integer)
    choices = ["binary", "binary", "unary", "where", "scale", "convert"] + ([] if integer else ["fma"])
    if kind in "TU":
        choices += ["broadcast", "broadcast", "trans", "scan", "reshape", "broadcast_to", "flip", "sort", "gather",
                    "join"]
        if kind == "T" and bm >= 16 and bn >= 16:
            choices += ["dot"]
    else:
        choices += ["reduce", "reduce", "arg"]
    op = draw(st.sampled_from(choices))
    if op == "binary":
        a, b = draw(sub), draw(sub)
        f = draw(st.sampled_from(["+", "-", "*", "maximum", "minimum"]))
        return f"({a} {f} {b})" if len(f) == 1 else f"tl.{f}({a}, {b})"
    if op == "unary":
        a = draw(sub)
        # (Triton's exp and sqrt take fp32 or fp64 only)
        return draw(st.sampled_from([f"tl.abs({a})", f"(-{a})", f"tl.exp(tl.minimum({a}, 4.0).to(tl.float32))",
                                     f"tl.sqrt(tl.abs({a}).to(tl.float32))"]))
    if op == "where":
        return f"tl.where({draw(exact)} > {draw(exact)}, {draw(sub)}, {draw(sub)})"
    if op == "scale":
        return f"({draw(sub)} * {draw(st.sampled_from(['s', '0.5', '-2.0']))})"
    if op == "fma":
        return f"tl.fma({draw(sub)}, {draw(sub)}, {draw(sub)})"
    if op == "convert":
        a = draw(exact)
        return draw(st.sampled_from([
            f"{a}.to(tl.float16).to(tl.float32)", f"{a}.to(tl.bfloat16).to(tl.float32)",
            f"(tl.minimum(tl.maximum({a}, -100.0), 100.0).to(tl.int32) % 7).to(tl.float32)",
            f"(tl.minimum(tl.maximum({a} * 8.0, -100.0), 100.0).to(tl.int32) >> 1).to(tl.float32)"]))
    other = "U" if kind == "T" else "T"
    full = "(BM, BN)" if kind == "T" else "(BN, BM)"
    if op == "broadcast":
        vec, index = draw(st.sampled_from([(v, i) for t, v, i in BROADCASTS if t == kind]))
        f = draw(st.sampled_from(["+", "-", "*"]))
        return f"({draw(sub)} {f} {draw(of(vec))}{index})"
    if op == "broadcast_to":
        vec, index = draw(st.sampled_from([(v, i) for t, v, i in BROADCASTS if t == kind]))
        return f"tl.broadcast_to({draw(of(vec))}{index}, {full})"
    if op == "trans":
        return f"tl.trans({draw(of(other))})"
    if op == "reshape":
        return f"tl.reshape({draw(of(other))}, {full})"
    if op == "scan":
        return f"tl.cumsum({draw(sub)}, axis={draw(st.integers(0, 1))})"
    if op == "flip":
        return f"tl.flip({draw(sub)}, {draw(st.integers(0, 1))})"
    if op == "sort":
        return f"tl.sort({draw(sub)}, dim=1, descending={draw(st.booleans())})"
    if op == "gather":
        # indices along the last axis from the row and column numbers (every index in range)
        rows, cols = ("rm[:, None]", "rn[None, :]") if kind == "T" else ("rn[:, None]", "rm[None, :]")
        last = "BN" if kind == "T" else "BM"
        return f"tl.gather({draw(sub)}, ({rows} * 3 + {cols} * 5) % {last}, 1)"
    if op == "join":
        return f"tl.sum(tl.join({draw(sub)}.to(tl.float32), {draw(sub)}.to(tl.float32)), axis=2)"
    if op == "dot":
        precision = draw(st.sampled_from(['"ieee"', None]))
        if precision is None:                 # (fp16 operands: exact products, fp32 sums)
            return f"tl.dot({draw(sub)}.to(tl.float16), w.to(tl.float16))"
        return f"tl.dot({draw(sub)}.to(tl.float32), w.to(tl.float32), input_precision={precision})"
    if op == "arg":
        operand, axis = draw(st.sampled_from([(o, a) for r, o, a in REDUCTIONS if r == kind]))
        f = draw(st.sampled_from(["argmax", "argmin"]))
        return f"tl.{f}({draw(exact_values(operand, 2))}, axis={axis}).to(tl.float32)"
    operand, axis = draw(st.sampled_from([(o, a) for r, o, a in REDUCTIONS if r == kind]))
    f = draw(st.sampled_from(["sum", "max", "min"]))
    return f"tl.{f}({draw(of(operand))}, axis={axis})"


STORES = {
    "T": "tl.store(out + rm[:, None] * N + rn[None, :], r, mask=(rm[:, None] < M) & (rn[None, :] < N))",
    "U": "tl.store(out + rm[None, :] * N + rn[:, None], r, mask=(rm[None, :] < M) & (rn[:, None] < N))",
    "R": "tl.store(out + pid * BN + rn, r, mask=rn < N)",
    "C": "tl.store(out + rm, r, mask=rm < M)",
}
ZEROS = {"T": "(BM, BN)", "U": "(BN, BM)", "R": "(BN,)", "C": "(BM,)"}


@dataclass
class TileProgram:
    source: str
    kind: str                 # the result's
    bm: int
    bn: int
    num_warps: int
    m: int                    # rows (a masked tail unless a multiple of BM)
    n: int                    # columns, at most BN (a masked tail unless BN)
    loop: int                 # the run-time loop's trip count (0: none in the program)
    # (the program may also exit early in program 1, branch on its data, and take the maxima of
    # its columns into out[A:A + N] by atomics)
    dtype: str = "fp32"       # the input's: fp32 fp16 bf16 i8 i16 i32 (the result is stored as fp32)
    path: Path = field(default=None)
    fn: object = field(default=None)

    @property
    def signature(self) -> dict:
        return {"x_ptr": f"*{self.dtype}", "out": "*fp32", "M": "i32", "N": "i32", "stride": "i32", "s": "fp32",
                "L": "i32", "A": "i32"}

    @property
    def constexprs(self) -> dict:
        return {"BM": self.bm, "BN": self.bn}

    @property
    def programs(self) -> int:
        return -(-self.m // self.bm)


@st.composite
def tile_programs(draw, max_depth: int = 4, dtypes=("fp32",), sizes=(1, 2, 4, 8, 16, 32, 64),
                  warps=(1, 2, 4, 8)) -> TileProgram:
    bm, bn = draw(st.sampled_from(sizes)), draw(st.sampled_from(sizes))
    kind = draw(st.sampled_from(KINDS))
    dtype = draw(st.sampled_from(dtypes))
    body = draw(values(kind, max_depth, (bm, bn), dtype.startswith("i")))
    # the value computed by a function of its own, inlined or a device function of its own (whose
    # arguments and result keep the layouts they have at the call)
    helper = draw(st.sampled_from([None, None, "False", "True"]))
    helper_source = ""
    if helper is not None:
        helper_source = (f"@triton.jit(noinline={helper})\n"
                         "def helper(x, xu, y, c, w, s, rm, rn, BM: tl.constexpr, BN: tl.constexpr):\n"
                         f"    return {body}\n\n\n")
        body = "helper(x, xu, y, c, w, s, rm, rn, BM, BN)"
    looped = draw(st.booleans())
    control = draw(st.sampled_from(["none", "none", "if", "return", "while"]))
    lines = [
        "pid = tl.program_id(0)",
        *(["if pid == 1:", "    return"] if control == "return" else []),      # (an early exit)
        "rm = pid * BM + tl.arange(0, BM)",
        "rn = tl.arange(0, BN)",
        "mask = (rm[:, None] < M) & (rn[None, :] < N)",
        "x = tl.load(x_ptr + rm[:, None] * stride + rn[None, :], mask=mask, other=0.0)",
        "xu = tl.load(x_ptr + rm[None, :] * stride + rn[:, None], mask=(rm[None, :] < M) & (rn[:, None] < N), "
        "other=1.0)",
        "y = tl.load(x_ptr + M * stride + rn, mask=rn < N, other=-1.0)",
        "c = tl.load(x_ptr + rm * stride + N, mask=rm < M, other=0.5)",
        "w = tl.load(x_ptr + rn[:, None] * stride + rn[None, :])",
    ]
    if looped:
        # the loop reads the tile shifted by its index (the buffer is padded for it) and carries
        # one value of the result's kind; a for, or a while on a run-time condition
        step = ["    x = tl.load(x_ptr + rm[:, None] * stride + rn[None, :] + i, mask=mask, other=0.0)",
                f"    r = r * 0.5 + {body}"]
        lines.append(f"r = tl.zeros({ZEROS[kind]}, tl.float32)")
        lines += ["for i in range(L):", *step] if control != "while" else \
            ["i = 0", "while i < L:", *step, "    i += 1"]
    elif control == "if":
        # a run-time branch on a scalar of the data (exact: the tile's largest element), the
        # result merged from both arms
        other = draw(values(kind, max_depth - 1, (bm, bn), dtype.startswith("i")))
        lines += ["if tl.max(x) > 0.25:", f"    r = ({body}).to(tl.float32)", "else:",
                  f"    r = ({other}).to(tl.float32)"]
    else:
        lines.append(f"r = {body}")
    lines.append(STORES[kind])
    if draw(st.booleans()):
        # the result read back from memory, in the layout a load of that shape takes, and stored
        # over itself: a read after the store and a write after that read, across threads
        store = STORES[kind]
        address, mask = store[len("tl.store("):].split(", r, mask=")
        lines += [f"t = tl.load({address}, mask={mask[:-1]}, other=0.0)",
                  f"tl.store({address}, t * 2.0 + 1.0, mask={mask[:-1]})"]
    if draw(st.booleans()):
        # every program's column maxima into one row (order-independent: exact), by atomics
        lines.append("tl.atomic_max(out + A + rn, tl.max(x, axis=0).to(tl.float32), mask=rn < N)")
    source = ("import mytriton as triton\nimport mytriton.language as tl\n\n\n" + helper_source + "@triton.jit\n"
              "def tile_program(x_ptr, out, M, N, stride, s, L, A, BM: tl.constexpr, BN: tl.constexpr):\n"
              + "".join(f"    {line}\n" for line in lines))
    m = draw(st.integers(1, 3 * bm))
    n = draw(st.integers(1, bn))
    return TileProgram(source, kind, bm, bn, draw(st.sampled_from(warps)), m, n,
                       draw(st.integers(1, 3)) if looped else 0, dtype)


_DIR = None
_COUNTER = itertools.count()


def load(p: TileProgram) -> TileProgram:
    """Write the program's source to a file of its own and import it (the frontend reads source)."""
    global _DIR
    if _DIR is None:
        _DIR = Path(tempfile.mkdtemp(prefix="mytriton-tile-programs-"))
        atexit.register(shutil.rmtree, _DIR, ignore_errors=True)
    p.path = _DIR / f"tile_{next(_COUNTER)}.py"
    p.fn = kernel_from_source(p.path, p.source, "tile_program")
    return p
