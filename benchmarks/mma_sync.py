"""The portable tensor-core path (``mma.sync``, the sm_80 / sm_90 targets) on an H200: the fp16 GEMM
of ``manifests/kernels/gemm.py`` built for sm_90 — what a package built without sm_90a runs on
Hopper — beside cuBLAS in the same process. (Triton uses wgmma on this GPU, so it is no reference
here; ``bench.py`` compares the sm_90a path with it.)

    python3 benchmarks/mma_sync.py [--n 4096]
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

CONFIGS = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages
    (128, 128, 32, 4, 3), (128, 128, 32, 4, 4), (128, 128, 32, 8, 3), (128, 128, 32, 8, 4),
    (128, 256, 32, 8, 3), (256, 128, 32, 8, 3), (128, 128, 64, 8, 3), (128, 64, 32, 4, 4),
    (64, 128, 32, 4, 4),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    n = ap.parse_args().n
    import torch
    import mytriton
    from common import bench, cdiv, check, load_module
    from mytriton.runtime import driver
    gemm = load_module(ROOT / "manifests" / "kernels" / "gemm.py", "mt_gemm_mma")
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    want = a.float() @ b.float()
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32:16", "N": "i32:16",
           "K": "i32:16", "stride_am": "i32:16", "stride_ak": "i32:1", "stride_bk": "i32:16", "stride_bn": "i32:1",
           "stride_cm": "i32:16", "stride_cn": "i32:1"}
    flops = 2 * n ** 3
    t = bench(lambda i: torch.matmul(a, b, out=c), 1)
    print(f"cuBLAS fp16 {n}^3: {flops / t / 1e9:.1f} TFLOP/s")
    for bm, bn, bk, warps, stages in CONFIGS:
        ce = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "ACTIVATION": ""}
        label = f"{bm}x{bn}x{bk} w{warps} s{stages}"
        try:
            ck = mytriton.compile(gemm.matmul_kernel, sig, ce, num_warps=warps, num_stages=stages, target="sm_90")
        except mytriton.CompilationError as e:
            print(f"  {label}: {e}")
            continue
        assert "mma.sync" in ck.asm["ptx"] and "wgmma" not in ck.asm["ptx"]
        k = driver.Kernel(ck.metadata["name"], list(sig.items()), warps, ck.metadata["shared"],
                          {"sm_90": ck.asm["cubin"]})
        grid = (cdiv(n, bm) * cdiv(n, bn),)
        args = [a, b, c, n, n, n, n, 1, n, 1, n, 1]

        def run(i):
            k.launch(grid, args)
        c.zero_()
        run(0)
        torch.cuda.synchronize()
        check(f"mma.sync {label}", c.float(), want, 2e-2, 0.5)
        t = bench(run, 1)
        print(f"  mma.sync fp16 {n}^3 {label:<18} {flops / t / 1e9:7.1f} TFLOP/s")


if __name__ == "__main__":
    main()
