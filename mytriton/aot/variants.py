"""Specialized variants: Triton's JIT specialization, ahead of time.

Triton's JIT specializes each launch on its arguments: an integer equal to 1 is compiled in, an
integer divisible by 16 and a 16-byte aligned pointer get that promise. A manifest's plain ``i32``
or unaligned ``*fp16`` gets none of it, so by default (``specialize: false`` in a kernel entry
turns it off) every specialization whose signature leaves promises out is also built as one
*specialized variant*, and a launch whose arguments keep all of its promises runs it; any other
launch runs the plain one, which serves every launch::

    the plain signature ─→ candidates: pointers :16, integers :16, or :1 where they are unit strides
      ─→ the promises that change what the compiler proves of a memory access ─→ the variant's signature

Which integers are *unit strides* is read from the kernel itself, not from names: the frontend's
SSA (no NVRTC) of the common case (every other promise made: an offset wrapped by ``% N`` keeps its
runs only where ``N`` is a multiple of 16), with the parameter compiled in as 1 and without,
through the axis analysis the CUDA backend vectorizes by (``passes/axisinfo.py``); a parameter
whose being 1 makes a load or store contiguous along its fastest axis is one. The variant then promises each
pointer 16-byte alignment, each unit stride the value 1 and each other integer divisibility by 16
(``do_not_specialize`` leaves a parameter plain, ``do_not_specialize_on_alignment`` allows it only
``:1``, as in Triton), less the promises that change nothing the compiler proves of the kernel's
memory accesses (the contiguity, divisibility and constancy of each load's, store's and atomic's
operands along their fastest axis, as far as 16-byte vectors reach): a GEMM's ``M`` bounds only
masks along rows, so a launch with ``M = 1000`` still runs the variant. Where dropping several
promises at once would change what one alone does not, all are kept.

The answer is keyed (:func:`analysis_key`: the kernel's cache key, the plain signature, the
specialization, the toolchain and this file) and kept as compiles are: in the package's
manifest.json, the pending compiles and the shared cache; the variant's compile is a job of its
own, keyed by its signature.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import kernel_source
from .toolchain import Toolchain

SUFFIX = ".specialized"         # a variant's id: "<spec id>.specialized" (spec ids hold no '.')
FORMAT = 1
_CAP = 16                       # facts beyond a 16-byte vector's reach change no access
_HERE = Path(__file__).resolve()


def variant_id(spec_id: str) -> str:
    """The id of a specialization's specialized variant (its files: ``<id>.specialized.sm_90.cubin``)."""
    return spec_id + SUFFIX


@dataclass(frozen=True)
class AnalysisJob:
    """What the analysis of one specialization reads (picklable, as a CompileJob)."""

    source: kernel_source.KernelSource
    signature: tuple[tuple[str, str], ...]          # the plain one, as the manifest writes it
    constexprs: tuple[tuple[str, Any], ...]
    num_warps: int
    num_stages: int | None = None
    hoist_tensor_maps: bool = False
    source_text: bytes | None = field(default=None, compare=False, repr=False)
    kernel_key: str | None = None
    toolchain: Toolchain | None = None


@dataclass(frozen=True)
class Variant:
    """The analysis' answer: the specialized variant's signature, or None where there is none;
    ``why`` says what it promises, or why there is none."""

    signature: tuple[tuple[str, str], ...] | None
    why: str
    seconds: float = 0.0
    cached: bool = False
    toolchain: Toolchain | None = None
    key: str | None = field(default=None, compare=False)       # its analysis_key, once the build keyed it


def analysis_key(toolchain: Toolchain, cache_key: str | None, job: AnalysisJob) -> str | None:
    """The key of one analysis; None for a kernel without a cache key (analyzed by every build)."""
    if cache_key is None:
        return None
    from .cache import _constexpr_text
    payload = {
        "format": FORMAT, "analysis": hashlib.sha256(_HERE.read_bytes()).hexdigest(),
        "toolchain": toolchain.key(), "kernel": [job.source.function, str(cache_key)],
        "signature": [list(p) for p in job.signature],
        "constexprs": [[name, _constexpr_text(value)] for name, value in job.constexprs],
        "num_warps": job.num_warps, "num_stages": job.num_stages, "hoist_tensor_maps": job.hoist_tensor_maps,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def analyze_job(job: AnalysisJob):
    """Run one analysis (in this process or a worker, as ``jobs.compile_job`` runs a compile): a
    :class:`Variant`, or a ``jobs.Failure`` where the worker cannot run it as keyed (another
    compiler, a kernel file changed). An error of the analysis itself is a Variant without a
    signature: the plain compile reports the kernel's own errors."""
    from .jobs import Failure, load_keyed
    start = time.perf_counter()
    loaded = load_keyed(job, start)
    if isinstance(loaded, Failure):
        return loaded
    fn, mine = loaded
    try:
        signature, why = specialized_signature(fn, job)
    except Exception as exc:  # noqa: BLE001 - the plain compile reports the kernel's own errors
        signature, why = None, f"the analysis failed ({type(exc).__name__}: {exc})"
    return Variant(signature, why, time.perf_counter() - start, toolchain=mine)


# -- the analysis ---------------------------------------------------------------------------------

def specialized_signature(fn, job: AnalysisJob) -> tuple[tuple[tuple[str, str], ...] | None, str]:
    """(the specialized variant's signature or None, what it promises or why there is none) of one
    specialization of the @jit function ``fn`` (see the module docstring)."""
    from ..frontend.autotune import unwrap
    from ..runtime.driver import parse_type
    fn = unwrap(fn)                 # (an @autotune / @heuristics kernel: its @jit function)
    plain = dict(job.signature)
    types = {name: parse_type(text) for name, text in job.signature}
    integers = [n for n, t in types.items() if _integer(t) and t.align == 1 and not t.one
                and n not in fn.not_specialized]
    pointers = [n for n, t in types.items() if t.is_pointer and t.align < 16 and n not in fn.not_aligned]
    if not integers and not pointers:
        return None, "its signature promises all it can already"
    # the common case, where unit strides are looked for: every other promise made (an offset
    # wrapped by `% N` stays a run only where N is a multiple of 16)
    common = {**plain, **{n: _aligned(types[n]) for n in pointers},
              **{n: _aligned(types[n]) for n in integers if n not in fn.not_aligned}}
    base = _ssa(fn, job, common)
    if base.made_tensor_maps:
        return None, "its launches encode tensor maps (descriptors made in the kernel)"
    contiguous = _contiguity(base)
    unit = [n for n in integers if _more_contiguous(contiguous, _try_contiguity(fn, job, {**common, n: _one(types[n])}))]
    full = {**common, **{n: _one(types[n]) for n in unit}}
    promised = [n for n in full if full[n] != plain[n]]
    if not promised:
        return None, "no parameter can take a promise (do_not_specialize)"
    facts = _facts(_ssa(fn, job, full))
    kept = [n for n in promised if n in unit or _facts_without(fn, job, full, plain, n) != facts]
    if not kept:
        return None, "no promise changes what the compiler proves of its memory accesses"
    chosen = {**plain, **{n: full[n] for n in kept}}
    if len(kept) < len(promised) and _facts(_ssa(fn, job, chosen)) != facts:
        chosen, kept = full, promised                # (promises that matter only together)
    signature = tuple((name, chosen[name]) for name, _ in job.signature)
    return signature, _describe(types, chosen, plain, [n for n in promised if n not in kept])


def _integer(t) -> bool:
    from ..runtime.driver import DTYPES
    return not t.is_pointer and DTYPES[t.dtype].kind in ("int", "uint") and t.dtype != "i1"


def _one(t) -> str:
    return f"{t.dtype}:1"


def _aligned(t) -> str:
    return ("*" if t.is_pointer else "") + f"{t.dtype}:16"


def _ssa(fn, job: AnalysisJob, signature: dict):
    """The optimized SSA of the specialization under ``signature``, as a compile builds it (its
    noinline helpers inlined: their accesses count too)."""
    from ..compiler import build_ssa
    return build_ssa(fn, signature, dict(job.constexprs), job.num_warps, num_stages=job.num_stages,
                     hoist_tensor_maps=job.hoist_tensor_maps)


def _accesses(func):
    """The SSA's memory accesses (loads, stores, atomics, TMA copies) in order, with the axis analysis."""
    from ..ir.ops import OPS
    from ..ir.ssa import walk
    from ..passes.axisinfo import analyze
    axis = analyze(func)
    return axis, [op for op in walk(func.body) if OPS[op.name].reads_memory or OPS[op.name].writes_memory]


def _contiguity(func) -> list[tuple[str, int]]:
    """Each access's name and its pointers' contiguity along the fastest axis (1 for scalars)."""
    axis, ops = _accesses(func)
    out = []
    for op in ops:
        info = axis.get(op.operands[0])
        out.append((op.name, info.contiguity[-1] if info.contiguity else 1))
    return out


def _try_contiguity(fn, job, signature):
    try:
        return _contiguity(_ssa(fn, job, signature))
    except Exception:  # noqa: BLE001 - a kernel that cannot take the value 1 there: not a unit stride
        return None


def _more_contiguous(before, after) -> bool:
    """Whether ``after`` (None: it did not build) makes some access more contiguous than ``before``:
    access by access where both have the same ones, else by the number of contiguous accesses
    (a value compiled in may fold a loop's copies away)."""
    if after is None:
        return False
    if [name for name, _ in before] == [name for name, _ in after]:
        return any(a > b for (_, a), (_, b) in zip(after, before))
    return sum(c > 1 for _, c in after) > sum(c > 1 for _, c in before)


def _facts(func) -> list[tuple]:
    """What the compiler proves of each access: per block operand (pointers, masks, values) its
    contiguity, divisibility and constancy along the fastest axis, each as far as a 16-byte vector
    reaches; a TMA copy's scalar operands (its offsets) by their divisibility. (An access of one
    element moves no vector, whatever its address is known to be.)"""
    axis, ops = _accesses(func)
    facts = []
    for op in ops:
        entry = [op.name]
        for v in op.operands:
            info = axis.get(v)
            if info.contiguity or op.name.startswith("tma_"):
                entry.append(tuple(min(x[-1], _CAP) if x else 0
                                   for x in (info.contiguity, info.divisibility, info.constancy)))
        facts.append(tuple(entry))
    return facts


def _facts_without(fn, job, full: dict, plain: dict, name: str):
    """The facts of ``full`` with ``name`` plain again (None where that does not build: kept)."""
    try:
        return _facts(_ssa(fn, job, {**full, name: plain[name]}))
    except Exception:  # noqa: BLE001 - keep the promise
        return None


def _describe(types, chosen: dict, plain: dict, dropped: list[str]) -> str:
    """``promises a, b 16-byte aligned; n divisible by 16; stride_k 1 (a unit stride); M left plain
    (no access depends on it)``."""
    from ..runtime.driver import parse_type
    aligned = [n for n in chosen if chosen[n] != plain[n] and types[n].is_pointer]
    divisible = [n for n in chosen if chosen[n] != plain[n] and not types[n].is_pointer and not parse_type(chosen[n]).one]
    ones = [n for n in chosen if chosen[n] != plain[n] and parse_type(chosen[n]).one]
    parts = [f"{', '.join(aligned)} 16-byte aligned"] * bool(aligned) + \
        [f"{', '.join(divisible)} divisible by 16"] * bool(divisible) + \
        [f"{', '.join(ones)} equal to 1 (unit strides)"] * bool(ones)
    text = "promises " + "; ".join(parts)
    if dropped:
        text += f"; leaves {', '.join(dropped)} plain (no memory access depends on {'it' if len(dropped) == 1 else 'them'})"
    return text


def checked(job: AnalysisJob, result):
    """A worker's answer, refused unless it is a Variant the build's own toolchain computed (as
    ``jobs.checked`` does for compiles)."""
    from .jobs import Failure, foreign_compiler
    if isinstance(result, Failure):
        return result
    if not isinstance(result, Variant):
        return Failure(f"the analysis worker returned a {type(result).__name__}, not an analysis")
    if job.toolchain is not None and result.toolchain != job.toolchain:
        return Failure(foreign_compiler(result.toolchain, job.toolchain))
    return result
