"""A kernel calling every signature of every libdevice function (ir/libdevice.FUNCTIONS), written
to a file of its own: each call's arguments loaded from one input block per dtype, its result
stored at its own offset of the output block of the result's dtype (int1 results as int32)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mytriton.ir.libdevice import FUNCTIONS, NOT_IN_LIBDEVICE_MODULE
from tests.kernel_files import kernel_from_source

DTYPES = ("fp32", "fp64", "i32", "u32", "i64", "u64")
NP = {"fp32": np.float32, "fp64": np.float64, "i32": np.int32, "u32": np.uint32, "i64": np.int64,
      "u64": np.uint64}
RESULT = {"i1": "i32"}


def calls():
    """[(function, signature, result dtype, slot)]: every signature, numbered per result dtype."""
    slots = dict.fromkeys(DTYPES, 0)
    out = []
    for name in sorted(set(FUNCTIONS) - NOT_IN_LIBDEVICE_MODULE):
        for sig, (_, res) in FUNCTIONS[name].signatures.items():
            if any(t not in DTYPES for t in sig):
                continue                       # (fma of halves: test_libdevice.py)
            res = RESULT.get(res, res)
            out.append((name, sig, res, slots[res]))
            slots[res] += 1
    return out, slots


def source(names=None) -> str:
    """The kernel ``k(in_<dtype>..., out_<dtype>..., n, BLOCK)``; argument j of a call reads block j
    of its dtype's input (``in_fp32 + j * n``); the Bessel functions' order is that & 15."""
    lines = ["import mytriton", "import mytriton.language as tl",
             "from mytriton.language.extra.cuda import libdevice", "", "", "@mytriton.jit",
             "def k(" + ", ".join(f"in_{t}" for t in DTYPES) + ", " + ", ".join(f"out_{t}" for t in DTYPES)
             + ", n, BLOCK: tl.constexpr):",
             "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
             "    mask = offs < n"]
    for t in DTYPES:
        for j in range(4):
            lines.append(f"    {t}_{j} = tl.load(in_{t} + {j} * n + offs, mask=mask)")
    for name, sig, res, slot in calls()[0]:
        if names is not None and name not in names:
            continue
        used = {}
        args = []
        for t in sig:
            args.append(f"{t}_{used.get(t, 0)}")
            used[t] = used.get(t, 0) + 1
        if name in ("jn", "yn"):
            args[0] = f"({args[0]} & 15)"        # (orders 0..15: the functions recur up to n)
        value = f"libdevice.{name}({', '.join(args)})"
        if FUNCTIONS[name].signatures[sig][1] == "i1":
            value += ".to(tl.int32)"
        lines.append(f"    tl.store(out_{res} + {slot} * n + offs, {value}, mask=mask)")
    return "\n".join(lines) + "\n"


def kernel(tmp_path: Path, names=None):
    return kernel_from_source(tmp_path / "libdevice_every_kernel.py", source(names))


SIGNATURE = {**{f"in_{t}": f"*{t}" for t in DTYPES}, **{f"out_{t}": f"*{t}" for t in DTYPES}, "n": "i32"}


def run(k, inputs: dict, n: int, block: int = 64) -> dict:
    """Interpret ``k`` on ``inputs`` (dtype -> (4, n) array); the outputs, dtype -> (slots, n)."""
    _, slots = calls()
    outs = {t: np.zeros((max(slots[t], 1), n), NP[t]) for t in DTYPES}
    ins = [np.ascontiguousarray(inputs[t], NP[t]).ravel() for t in DTYPES]
    k[((n + block - 1) // block,)](*ins, *[outs[t].ravel() for t in DTYPES], n, BLOCK=block)
    return outs
