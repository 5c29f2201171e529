"""Triton's random numbers: the counter-based Philox generator (Salmon et al., "Parallel random
numbers: as easy as 1, 2, 3", SC'11 — Philox4x32-10 and Philox4x64-10, the Random123 library's
constants), and Triton's mapping of seeds and offsets onto it, so that a kernel draws the numbers
Triton's kernels draw for the same seed and offsets.

- ``philox(seed, c0, c1, c2, c3, n_rounds=10)``: the four counter words (32-bit: the key is the
  seed's two halves; 64-bit: the seed and 0) after ``n_rounds`` rounds.
- ``randint4x(seed, offset)``: counters (offset's low 32 bits, its high 32 bits — 0 for a 32-bit
  offset —, 0, 0): four blocks of uint32. ``randint``: the first of them.
- ``uint_to_uniform_float``: read as signed, negatives folded onto ``-x - 1``, times 2^-31
  (``4.6566127342e-10`` as fp32): uniform in [0, 1). ``rand``/``rand4x`` apply it.
- ``pair_uniform_to_normal``: Box-Muller on (max(u1, 1e-7), u2) with ``tl.sqrt``, ``tl.log``,
  ``tl.cos``, ``tl.sin``; ``randn``/``randn4x`` apply it to the uniform pairs.
Everything is the language's own integer and float arithmetic, so the interpreter and both
backends compute it alike.
"""
from __future__ import annotations

from ..ir.types import I32, I64, U32, U64
from . import cos, full, log, maximum, sin, sqrt, where
from .core import builtin, constexpr, to_tensor

N_ROUNDS_DEFAULT = 10
# (round multipliers A, B; key increments A, B) per counter width
_CONSTANTS = {32: (0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85),
              64: (0xD2E7470EE14C6C93, 0xCA5A826395121157, 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)}


def _rounds(n_rounds) -> int:
    n = n_rounds.value if isinstance(n_rounds, constexpr) else n_rounds
    if type(n) is not int or n < 0:
        raise TypeError(f"n_rounds must be a non-negative int constant, got {n!r}")
    return n


@builtin
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT):
    """``n_rounds`` Philox rounds of the counters (c0..c3, all uint32 or all uint64) under the key
    (k0, k1)."""
    ty = c0.dtype
    if ty not in (U32, U64):
        raise TypeError(f"philox_impl takes uint32 or uint64 counters, got {ty}")
    round_a, round_b, key_a, key_b = (to_tensor(v, ty) for v in _CONSTANTS[ty.bits])
    from .math import umulhi
    for _ in range(_rounds(n_rounds)):
        _c0, _c2 = c0, c2
        c0 = umulhi(round_b, _c2) ^ c1 ^ k0
        c2 = umulhi(round_a, _c0) ^ c3 ^ k1
        c1 = round_b * _c2
        c3 = round_a * _c0
        k0 = k0 + key_a
        k1 = k1 + key_b
    return c0, c1, c2, c3


@builtin
def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT):
    """Philox of the counters (bits of 32- or 64-bit integers) keyed by ``seed`` (an integer)."""
    seed = to_tensor(seed)
    if not getattr(seed.dtype, "is_int", False):
        raise TypeError(f"philox: the seed must be an integer, got {seed.dtype}")
    seed = seed.to(U64)
    cs = [to_tensor(c) for c in (c0, c1, c2, c3)]
    bits = cs[0].dtype.bits
    if bits == 32:
        ty = U32
        k1, k0 = ((seed >> 32) & 0xFFFFFFFF).to(U32), (seed & 0xFFFFFFFF).to(U32)
    elif bits == 64:
        ty = U64
        k0, k1 = seed, full((1,), 0, U64)
    else:
        raise TypeError(f"philox: counters must be 32- or 64-bit integers, got {cs[0].dtype}")
    cs = [c.to(ty, bitcast=True) for c in cs]
    return philox_impl(*cs, k0, k1, n_rounds)


@builtin
def randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for ``seed`` and the ``offset`` block."""
    offset = to_tensor(offset)
    lo = offset.to(U32)
    zero = lo * 0
    hi = (offset >> 32).to(U32) if offset.dtype.bits > 32 else zero
    return philox(seed, lo, hi, zero, zero, n_rounds)


@builtin
def randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of random uint32 for ``seed`` and the ``offset`` block (``randint4x``'s first)."""
    return randint4x(seed, offset, n_rounds)[0]


@builtin
def uint_to_uniform_float(x):
    """Random 32- or 64-bit integers to floats uniform in [0, 1)."""
    x = to_tensor(x)
    if x.dtype in (U32, I32):
        x, scale = x.to(I32, bitcast=True), 4.6566127342e-10
    elif x.dtype in (U64, I64):
        x, scale = x.to(I64, bitcast=True), 1.0842020432385337e-19
    else:
        raise TypeError(f"uint_to_uniform_float takes 32- or 64-bit integers, got {x.dtype}")
    x = where(x < 0, -x - 1, x)
    return x * scale


@builtin
def rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of random fp32 uniform in [0, 1)."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@builtin
def rand4x(seed, offsets, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of random fp32 uniform in [0, 1)."""
    return tuple(uint_to_uniform_float(i) for i in randint4x(seed, offsets, n_rounds))


@builtin
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform blocks to two standard normal ones."""
    u1 = maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = sqrt(-2.0 * log(u1))
    return r * cos(th), r * sin(th)


@builtin
def randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of random fp32, standard normal."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))[0]


@builtin
def randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of random fp32, standard normal."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
