"""Compile time of tensor-core kernels: mytriton.compile against Triton 3.6's triton.compile, the
same kernel sources on the same machine, interleaved (no GPU needed: both compile for sm_90a /
compute capability 9.0).

    python3 benchmarks/compile_time.py [--triton-python PATH] [--repeats 3] [--json FILE]

``--triton-python``: a Python with Triton 3.6 installed (a venv of its own keeps it apart from the
project's test environment; default: this one). Each row times a fresh compile to cubin of one
kernel, signature and configuration, both warm (a compile of another configuration first) —
mytriton in this process, Triton in a subprocess with ``TRITON_CACHE_DIR`` pointed at an empty
folder each time — and reports the median of ``--repeats`` (seconds) and the ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "manifests" / "kernels"
sys.path.insert(0, str(ROOT))

INTS = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")
PLAIN = {**{p: "*fp16" for p in ("a_ptr", "b_ptr", "c_ptr")}, **{p: "i32" for p in INTS}}
JIT = {**{p: "*fp16:16" for p in ("a_ptr", "b_ptr", "c_ptr")}, **{p: "i32:16" for p in INTS},
       "stride_ak": "i32:1", "stride_bn": "i32:1", "stride_cn": "i32:1"}
GEMM = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, ACTIVATION="")
LINEAR = {"x_ptr": "*bf16", "w_ptr": "*bf16", "bias_ptr": "*bf16", "y_ptr": "*bf16",
          **{p: "i32" for p in ("M", "N", "K", "stride_xm", "stride_wk", "stride_ym")}}
# (file, kernel, signature, constexprs, num_warps, num_stages)
CASES = {
    "masked-K matmul 128x128x32 w4, plain": ("gemm.py", "matmul_kernel", PLAIN, GEMM, 4, 3),
    "masked-K matmul 128x128x32 w4, JIT's": ("gemm.py", "matmul_kernel", JIT, GEMM, 4, 3),
    "tutorial GEMM 128x128x64 w8, plain": ("wrapped_gemm.py", "wrapped_matmul", PLAIN,
                                           dict(BM=128, BN=128, BK=64, GROUP=8), 8, 3),
    "tutorial GEMM 128x128x64 w8, JIT's": ("wrapped_gemm.py", "wrapped_matmul", JIT,
                                           dict(BM=128, BN=128, BK=64, GROUP=8), 8, 3),
    "bf16 linear+bias+ReLU 128x128x32 w4, plain": ("gemm.py", "linear_kernel", LINEAR,
                                                   dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8,
                                                        ACTIVATION="relu"), 4, 3),
}

TRITON_SCRIPT = textwrap.dedent("""
    import json, sys, time, importlib.util
    import triton
    from triton.compiler import ASTSource
    from triton.backends.compiler import GPUTarget
    path, name, sig, constexprs, warps, stages = json.loads(sys.argv[1])
    spec = importlib.util.spec_from_file_location("k", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, name)
    types, attrs = {}, {}
    for i, p in enumerate(fn.arg_names):
        if p in constexprs:
            types[p] = "constexpr"
            continue
        t = sig[p]
        base, _, promise = t.partition(":")
        if promise == "1":
            types[p] = "constexpr"
            constexprs[p] = 1
            continue
        types[p] = base
        if promise == "16":
            attrs[(i,)] = [["tt.divisibility", 16]]
    def compile(warps, stages):
        src = ASTSource(fn=fn, signature=types, constexprs={(fn.arg_names.index(k),): v for k, v in constexprs.items()},
                        attrs=attrs)
        return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": stages})
    compile(warps, stages + 1)          # (the backend's first load, as mytriton's is before its timing)
    start = time.perf_counter()
    compile(warps, stages).asm["cubin"]
    print(time.perf_counter() - start)
""")


def triton_source(path: Path, folder: Path) -> Path:
    out = folder / f"triton_{path.name}"
    out.write_text(path.read_text().replace("import mytriton as triton", "import triton")
                   .replace("import mytriton.language as tl", "import triton.language as tl"))
    return out


def time_triton(python: str, case, folder: Path) -> float:
    file, name, sig, constexprs, warps, stages = case
    args = json.dumps([str(triton_source(KERNELS / file, folder)), name, sig, dict(constexprs), warps, stages])
    env = {**os.environ, "TRITON_CACHE_DIR": tempfile.mkdtemp(dir=folder)}
    out = subprocess.run([python, "-c", TRITON_SCRIPT, args], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def time_mytriton(case) -> float:
    import mytriton
    from benchmarks.common import load_module
    file, name, sig, constexprs, warps, stages = case
    fn = getattr(load_module(KERNELS / file, f"ct_{Path(file).stem}"), name)
    start = time.perf_counter()
    ck = mytriton.compile(fn, dict(sig), dict(constexprs), target="sm_90a", num_warps=warps, num_stages=stages)
    ck.asm["cubin"]
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--triton-python", default=sys.executable)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp())
    time_mytriton(CASES["masked-K matmul 128x128x32 w4, JIT's"])      # (imports and NVRTC's first load)
    rows = []
    for label, case in CASES.items():
        mt, tr = [], []
        for _ in range(args.repeats):
            mt.append(time_mytriton(case))
            tr.append(time_triton(args.triton_python, case, folder))
        m, t = statistics.median(mt), statistics.median(tr)
        rows.append({"kernel": label, "mytriton_s": m, "triton_s": t, "ratio": m / t})
        print(f"{label:<44} mytriton {m:6.2f} s   triton {t:6.2f} s   {m / t:5.2f}x", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
