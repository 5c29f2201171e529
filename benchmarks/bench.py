"""mytriton vs Triton vs PyTorch on one GPU, in one process.

Builds benchmarks/manifests/bench.yaml with mytriton-build, then times each kernel through
(a) the generated mytriton loader package, (b) real Triton JIT compiling the *same kernel source*
(its `import mytriton` lines swapped for `import triton`), and (c) the PyTorch equivalent.
Results are checked before timing; times are CUDA-event medians after warm-up, with inputs rotated
over several buffer sets so the L2 cache flatters no one; the tensor-core kernels (GEMMs,
attention) are timed interleaved, in rounds (common.bench_all), as their clocks drift over a run.
Prints a table and writes JSON.

    python3 benchmarks/bench.py [--json out.json]
                                [--only elementwise,half,softmax,scans,rowwise,gemm,descriptors,attention]
                                [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from common import KERNELS, ROOT, bench, bench_all, cdiv, check, triton_module


def build_mytriton(out_dir: Path):
    # bench.yaml reuses the kernels under manifests/, outside its own folder
    cmd = [sys.executable, "-m", "mytriton.aot", "--allow-outside",
           str(ROOT / "benchmarks" / "manifests" / "bench.yaml"), "--out", str(out_dir)]
    subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    sys.path.insert(0, str(out_dir))
    import mtbench
    return mtbench


def _square_operands(n: int, dtype):
    """A and B (random) and C (empty) of a GEMM of n x n matrices."""
    a, b = (torch.randn(n, n, device="cuda", dtype=dtype) for _ in range(2))
    return a, b, torch.empty(n, n, device="cuda", dtype=dtype)


class Suite:
    def __init__(self, mt, quick: bool):
        self.mt = mt
        self.quick = quick
        self.rows = []
        self.tr_ew = triton_module("elementwise.py")
        self.tr_sm = triton_module("softmax.py")
        self.tr_rd = triton_module("reductions.py")
        self.tr_mm = triton_module("matmul.py")

    def record(self, kernel, config, unit, amount, times):
        row = {"kernel": kernel, "config": config, "unit": unit}
        for who, ms in times.items():
            row[who + "_ms"] = ms
            row[who] = amount / (ms * 1e-3) / 1e9 if unit == "GB/s" else amount / (ms * 1e-3) / 1e12
        if "triton" in times and "mytriton" in times:
            row["ratio"] = times["triton"] / times["mytriton"]
        self.rows.append(row)
        print(f"  {kernel:10s} {config:22s} " + "  ".join(
            f"{k}={row[k]:8.1f}" for k in ("mytriton", "triton", "torch") if k in row) +
            (f"  ratio={row['ratio']:.3f}" if "ratio" in row else ""), flush=True)

    def elementwise(self):
        n = 2**24 if self.quick else 2**28
        sets = 2 if n >= 2**26 else 8
        xs = [torch.randn(n, device="cuda") for _ in range(sets)]
        ys = [torch.randn(n, device="cuda") for _ in range(sets)]
        out = torch.empty(n, device="cuda")
        for block in (1024, 2048):
            grid = (cdiv(n, block),)
            self.mt.add_kernel[grid](xs[0], ys[0], out, n, BLOCK=block)
            check("add", out, xs[0] + ys[0], 0, 0)
            t = {"mytriton": bench(lambda i: self.mt.add_kernel[grid](xs[i], ys[i], out, n, BLOCK=block), sets),
                 "triton": bench(lambda i: self.tr_ew.add_kernel[grid](xs[i], ys[i], out, n, BLOCK=block), sets),
                 "torch": bench(lambda i: torch.add(xs[i], ys[i], out=out), sets)}
            self.record("add", f"n=2^{n.bit_length() - 1} BLOCK={block}", "GB/s", 12 * n, t)
            self.mt.axpby_kernel[grid](xs[0], ys[0], out, 2.0, -0.5, n, BLOCK=block)
            check("axpby", out, 2.0 * xs[0] - 0.5 * ys[0], 1e-6, 1e-6)
            t = {"mytriton": bench(lambda i: self.mt.axpby_kernel[grid](xs[i], ys[i], out, 2.0, -0.5, n, BLOCK=block), sets),
                 "triton": bench(lambda i: self.tr_ew.axpby_kernel[grid](xs[i], ys[i], out, 2.0, -0.5, n, BLOCK=block), sets),
                 "torch": bench(lambda i: torch.add(xs[i] * 2.0, ys[i], alpha=-0.5, out=out), sets)}
            self.record("axpby", f"n=2^{n.bit_length() - 1} BLOCK={block}", "GB/s", 12 * n, t)

    def half(self):
        """fp16/bf16 vector add: elementwise.py's add_kernel (the same source) JIT-compiled by
        mytriton and by Triton; 16-byte accesses of 8 halves."""
        sys.path.insert(0, str(KERNELS))
        import elementwise as mt_ew
        n = 2**24 if self.quick else 2**28
        sets = 2 if n >= 2**26 else 8
        for dtype, name in ((torch.float16, "add_fp16"), (torch.bfloat16, "add_bf16")):
            xs = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(sets)]
            ys = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(sets)]
            out = torch.empty(n, device="cuda", dtype=dtype)
            for block in (1024, 2048, 4096):
                grid = (cdiv(n, block),)
                mt_ew.add_kernel[grid](xs[0], ys[0], out, n, BLOCK=block)
                check(name, out, xs[0] + ys[0], 0, 0)
                t = {"mytriton": bench(lambda i: mt_ew.add_kernel[grid](xs[i], ys[i], out, n, BLOCK=block), sets),
                     "triton": bench(lambda i: self.tr_ew.add_kernel[grid](xs[i], ys[i], out, n, BLOCK=block), sets),
                     "torch": bench(lambda i: torch.add(xs[i], ys[i], out=out), sets)}
                self.record(name, f"n=2^{n.bit_length() - 1} BLOCK={block}", "GB/s", 6 * n, t)

    def softmax(self):
        rows, cols = (4096 if self.quick else 32768), 1024
        sets = 4
        xs = [torch.randn(rows, cols, device="cuda") * 10 for _ in range(sets)]
        y = torch.empty(rows, cols, device="cuda")
        for warps in (4, 8):
            self.mt.softmax_kernel[(rows,)](xs[0], y, cols, BLOCK=1024, num_warps=warps)
            check("softmax", y, torch.softmax(xs[0], 1), 1e-5, 1e-6)
            t = {"mytriton": bench(lambda i: self.mt.softmax_kernel[(rows,)](xs[i], y, cols, BLOCK=1024, num_warps=warps), sets),
                 "triton": bench(lambda i: self.tr_sm.softmax_kernel[(rows,)](xs[i], y, cols, BLOCK=1024, num_warps=warps), sets),
                 "torch": bench(lambda i: torch.softmax(xs[i], 1, out=y) if False else torch.softmax(xs[i], 1), sets)}
            self.record("softmax", f"{rows}x{cols} w{warps}", "GB/s", 8 * rows * cols, t)

    def reductions(self):
        rows, cols = (256 if self.quick else 4096), 65536
        sets = 2
        xs = [torch.randn(rows, cols, device="cuda") for _ in range(sets)]
        out = torch.empty(rows, device="cuda")
        for block, warps in ((1024, 4), (2048, 8)):
            self.mt.row_sum_kernel[(rows,)](xs[0], out, cols, BLOCK=block, num_warps=warps)
            check("row_sum", out, xs[0].sum(1), 1e-4, 1e-2)
            t = {"mytriton": bench(lambda i: self.mt.row_sum_kernel[(rows,)](xs[i], out, cols, BLOCK=block, num_warps=warps), sets),
                 "triton": bench(lambda i: self.tr_rd.row_sum_kernel[(rows,)](xs[i], out, cols, BLOCK=block, num_warps=warps), sets),
                 "torch": bench(lambda i: torch.sum(xs[i], 1, out=out), sets)}
            self.record("row_sum", f"{rows}x{cols} B={block} w{warps}", "GB/s", 4 * rows * cols, t)
        n_rows, n_cols = (2048 if self.quick else 16384), 16384
        xs = [torch.randn(n_rows, n_cols, device="cuda") for _ in range(sets)]
        out = torch.empty(n_cols, device="cuda")
        for bm, bn in ((32, 128), (64, 64)):
            grid = (cdiv(n_cols, bn),)
            self.mt.col_max_kernel[grid](xs[0], out, n_rows, n_cols, BM=bm, BN=bn)
            check("col_max", out, xs[0].max(0).values, 0, 0)
            t = {"mytriton": bench(lambda i: self.mt.col_max_kernel[grid](xs[i], out, n_rows, n_cols, BM=bm, BN=bn), sets),
                 "triton": bench(lambda i: self.tr_rd.col_max_kernel[grid](xs[i], out, n_rows, n_cols, BM=bm, BN=bn), sets),
                 "torch": bench(lambda i: torch.amax(xs[i], 0, out=out), sets)}
            self.record("col_max", f"{n_rows}x{n_cols} {bm}x{bn}", "GB/s", 4 * n_rows * n_cols, t)

    def matmul(self):
        n = 1024 if self.quick else 4096
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        c = torch.empty(n, n, device="cuda")
        ref = (a.double() @ b.double()).float()
        torch.backends.cuda.matmul.allow_tf32 = False
        for bm, bn, warps in ((32, 32, 4), (64, 64, 4), (64, 64, 8), (128, 64, 8)):
            grid = (cdiv(n, bm), cdiv(n, bn))
            self.mt.matmul_kernel[grid](a, b, c, n, n, n, BM=bm, BN=bn, num_warps=warps)
            check("matmul", c, ref, 1e-3, 1e-2)
            t = {"mytriton": bench(lambda i: self.mt.matmul_kernel[grid](a, b, c, n, n, n, BM=bm, BN=bn, num_warps=warps), 1, reps=10),
                 "triton": bench(lambda i: self.tr_mm.matmul_kernel[grid](a, b, c, n, n, n, BM=bm, BN=bn, num_warps=warps), 1, reps=10),
                 "torch": bench(lambda i: torch.matmul(a, b, out=c), 1, reps=10)}
            self.record("matmul", f"{n}^3 {bm}x{bn} w{warps}", "TFLOP/s", 2 * n**3, t)

    def rowwise(self):
        """manifests/kernels/rows.py through both JITs: the softmax by persistent programs on fp16
        32768x1024 (stepping by tl.num_programs(0), num_warps=8, 4 stages) and the layer norm
        forward on fp16 and fp32 (BLOCK up to 64 KiB of a row, a warp per 256 columns up to 8).
        (Triton's tutorials themselves: benchmarks/tutorials.py.)"""
        from common import load_module
        mt_sm = mt_ln = load_module(KERNELS / "rows.py", "mt_rows")
        tr_sm = tr_ln = triton_module("rows.py")
        rows, cols = (4096 if self.quick else 32768), 1024
        sets = 4
        xs = [torch.randn(rows, cols, device="cuda", dtype=torch.float16) for _ in range(sets)]
        y = torch.empty_like(xs[0])
        programs = min(rows, torch.cuda.get_device_properties(0).multi_processor_count * 8)
        for impl in (mt_sm, tr_sm):
            impl.softmax_rows_kernel[(programs,)](y, xs[0], cols, cols, rows, cols, BLOCK=1024, STAGES=4,
                                                  num_warps=8)
            check("row softmax", y.float(), torch.softmax(xs[0].float(), 1), 2e-3, 1e-3)

        def run_sm(impl):
            return lambda i: impl.softmax_rows_kernel[(programs,)](y, xs[i], cols, cols, rows, cols, BLOCK=1024,
                                                                   STAGES=4, num_warps=8)
        t = {"mytriton": bench(run_sm(mt_sm), sets), "triton": bench(run_sm(tr_sm), sets),
             "torch": bench(lambda i: torch.softmax(xs[i], 1), sets)}
        self.record("softmax_fp16", f"{rows}x{cols} persistent rows", "GB/s", 4 * rows * cols, t)
        m, n = (1024 if self.quick else 4096), 4096
        for dtype, name in ((torch.float16, "layernorm_fp16"), (torch.float32, "layernorm_fp32")):
            xs = [torch.randn(m, n, device="cuda", dtype=dtype) for _ in range(sets)]
            w, b = torch.rand(n, device="cuda", dtype=dtype), torch.rand(n, device="cuda", dtype=dtype)
            y = torch.empty_like(xs[0])
            mean, rstd = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
            block = min(65536 // xs[0].element_size(), 1 << (n - 1).bit_length())
            warps = min(max(block // 256, 1), 8)

            def run_ln(impl):
                return lambda i: impl.layer_norm_fwd_kernel[(m,)](xs[i], y, w, b, mean, rstd, n, n, 1e-5,
                                                                  BLOCK=block, num_warps=warps)
            want = torch.nn.functional.layer_norm(xs[0].float(), (n,), w.float(), b.float(), 1e-5)
            for impl in (mt_ln, tr_ln):
                run_ln(impl)(0)
                check(name, y.float(), want, 1e-2, 1e-2)
            t = {"mytriton": bench(run_ln(mt_ln), sets), "triton": bench(run_ln(tr_ln), sets),
                 "torch": bench(lambda i: torch.nn.functional.layer_norm(xs[i], (n,), w, b, 1e-5), sets)}
            self.record(name, f"{m}x{n}", "GB/s", 2 * m * n * xs[0].element_size(), t)

    def scans(self):
        """Row-wise tl.cumsum and tl.argmax (manifests/kernels/scans.py through both JITs) on fp32
        32768x1024, one program per row, against torch.cumsum / torch.argmax."""
        from common import load_module
        mt, tr = load_module(KERNELS / "scans.py", "mt_scans"), triton_module("scans.py")
        rows, cols = (4096 if self.quick else 32768), 1024
        sets = 4
        xs = [torch.randn(rows, cols, device="cuda") for _ in range(sets)]
        y = torch.empty_like(xs[0])
        idx = torch.empty(rows, dtype=torch.int32, device="cuda")
        for warps in (4, 8):
            for impl in (mt, tr):
                impl.row_cumsum_kernel[(rows,)](xs[0], y, cols, BLOCK=1024, num_warps=warps)
                check("cumsum", y, torch.cumsum(xs[0], 1), 1e-4, 1e-3)
                impl.row_argmax_kernel[(rows,)](xs[0], idx, cols, BLOCK=1024, num_warps=warps)
                check("argmax", idx.long(), torch.argmax(xs[0], 1), 0, 0)

            def run(impl, name, out):
                return lambda i: getattr(impl, name)[(rows,)](xs[i], out, cols, BLOCK=1024, num_warps=warps)
            t = {"mytriton": bench(run(mt, "row_cumsum_kernel", y), sets),
                 "triton": bench(run(tr, "row_cumsum_kernel", y), sets),
                 "torch": bench(lambda i: torch.cumsum(xs[i], 1, out=y), sets)}
            self.record("cumsum", f"{rows}x{cols} w{warps}", "GB/s", 8 * rows * cols, t)
            t = {"mytriton": bench(run(mt, "row_argmax_kernel", idx), sets),
                 "triton": bench(run(tr, "row_argmax_kernel", idx), sets),
                 "torch": bench(lambda i: torch.argmax(xs[i], 1), sets)}
            self.record("argmax", f"{rows}x{cols} w{warps}", "GB/s", 4 * rows * cols, t)

    def gemm(self):
        """tl.dot GEMMs (manifests/kernels/gemm.py through both JITs): fp16 and bf16 4096^3 against
        cuBLAS (torch.matmul), and the fused linear layer + bias + ReLU in bf16 against torch."""
        from common import load_module
        mt, tr = load_module(KERNELS / "gemm.py", "mt_gemm"), triton_module("gemm.py")
        n = 1024 if self.quick else 4096
        for dtype, name in ((torch.float16, "gemm_fp16"), (torch.bfloat16, "gemm_bf16")):
            a, b, c = _square_operands(n, dtype)
            for bm, bn, bk, warps, stages in ((128, 128, 32, 4, 3), (128, 128, 32, 4, 4), (128, 128, 64, 4, 3),
                                              (128, 128, 64, 8, 3), (128, 256, 32, 8, 3), (128, 256, 64, 8, 3),
                                              (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (64, 64, 32, 4, 3)):
                grid = (cdiv(n, bm) * cdiv(n, bn),)

                def run(impl):
                    return lambda i: impl.matmul_kernel[grid](a, b, c, n, n, n, n, 1, n, 1, n, 1, BLOCK_M=bm,
                                                              BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, ACTIVATION="",
                                                              num_warps=warps, num_stages=stages)
                for impl in (mt, tr):
                    run(impl)(0)
                    check(name, c.float(), (a.float() @ b.float()), 2e-2, 1e-1)
                t = bench_all({"mytriton": run(mt), "triton": run(tr), "torch": lambda i: torch.matmul(a, b, out=c)}, 1)
                self.record(name, f"{n}^3 {bm}x{bn}x{bk} w{warps} s{stages}", "TFLOP/s", 2 * n**3, t)
        a, b = (torch.randn(n, n, device="cuda") for _ in range(2))
        c = torch.empty(n, n, device="cuda")
        torch.backends.cuda.matmul.allow_tf32 = True
        for bm, bn, bk, warps, stages in ((128, 128, 32, 4, 3), (128, 64, 32, 4, 3), (64, 64, 32, 4, 3)):
            grid = (cdiv(n, bm) * cdiv(n, bn),)

            def run_tf32(impl):
                return lambda i: impl.matmul_kernel[grid](a, b, c, n, n, n, n, 1, n, 1, n, 1, BLOCK_M=bm, BLOCK_N=bn,
                                                          BLOCK_K=bk, GROUP_M=8, ACTIVATION="", num_warps=warps,
                                                          num_stages=stages)
            for impl in (mt, tr):
                run_tf32(impl)(0)
                check("gemm_tf32", c, a @ b, 1e-2, 0.5)
            t = bench_all({"mytriton": run_tf32(mt), "triton": run_tf32(tr), "torch": lambda i: torch.matmul(a, b, out=c)}, 1)
            self.record("gemm_tf32", f"{n}^3 {bm}x{bn}x{bk} w{warps} s{stages}", "TFLOP/s", 2 * n**3, t)
        torch.backends.cuda.matmul.allow_tf32 = False
        a, b = (torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8) for _ in range(2))
        c = torch.empty(n, n, device="cuda", dtype=torch.int32)
        want = torch._int_mm(a, b)
        for bm, bn, bk, warps, stages in ((128, 128, 64, 4, 3), (128, 128, 32, 4, 3), (64, 64, 64, 4, 3)):
            grid = (cdiv(n, bm) * cdiv(n, bn),)

            def run_i8(impl):
                return lambda i: impl.int8_matmul_kernel[grid](a, b, c, n, n, n, n, n, n, BLOCK_M=bm, BLOCK_N=bn,
                                                               BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)
            for impl in (mt, tr):
                run_i8(impl)(0)
                check("gemm_int8", c, want, 0, 0)
            t = bench_all({"mytriton": run_i8(mt), "triton": run_i8(tr), "torch": lambda i: torch._int_mm(a, b)}, 1)
            self.record("gemm_int8", f"{n}^3 {bm}x{bn}x{bk} w{warps} s{stages}", "TOP/s", 2 * n**3, t)
        m, k, nn = (1024, 1024, 1024) if self.quick else (8192, 4096, 4096)
        x, w = torch.randn(m, k, device="cuda", dtype=torch.bfloat16), torch.randn(k, nn, device="cuda", dtype=torch.bfloat16)
        bias = torch.randn(nn, device="cuda", dtype=torch.bfloat16)
        y = torch.empty(m, nn, device="cuda", dtype=torch.bfloat16)
        grid = (cdiv(m, 128) * cdiv(nn, 128),)

        def run_linear(impl):
            return lambda i: impl.linear_kernel[grid](x, w, bias, y, m, nn, k, k, nn, nn, BLOCK_M=128, BLOCK_N=128,
                                                      BLOCK_K=32, GROUP_M=8, ACTIVATION="relu", num_warps=4)
        want = torch.relu(x.float() @ w.float() + bias.float())
        for impl in (mt, tr):
            run_linear(impl)(0)
            check("linear_bf16", y.float(), want, 5e-2, 5e-1)
        t = bench_all({"mytriton": run_linear(mt), "triton": run_linear(tr),
                       "torch": lambda i: torch.relu(torch.addmm(bias, x, w))}, 1)
        self.record("linear_bf16", f"{m}x{k}x{nn} +bias relu", "TFLOP/s", 2 * m * k * nn, t)
        # x @ W.T with W stored as nn.Linear does (out x in): B is K-contiguous
        wt = torch.randn(nn, k, device="cuda", dtype=torch.bfloat16)
        grid = (cdiv(m, 128) * cdiv(nn, 256),)

        def run_wt(impl):
            return lambda i: impl.matmul_kernel[grid](x, wt.t(), y, m, nn, k, k, 1, 1, k, nn, 1, BLOCK_M=128,
                                                      BLOCK_N=256, BLOCK_K=64, GROUP_M=8, ACTIVATION="",
                                                      num_warps=8)
        want = x.float() @ wt.float().t()
        for impl in (mt, tr):
            run_wt(impl)(0)
            check("matmul_wt_bf16", y.float(), want, 5e-2, 5e-1)
        t = bench_all({"mytriton": run_wt(mt), "triton": run_wt(tr), "torch": lambda i: torch.nn.functional.linear(x, wt)}, 1)
        self.record("matmul_wt_bf16", f"{m}x{k}x{nn} x @ W.T", "TFLOP/s", 2 * m * k * nn, t)

    def descriptors(self):
        """The GEMM through host-side tensor descriptors (gemm.py's descriptor_matmul_kernel, both
        JITs; on the H200 both copy the blocks by TMA), fp16 and bf16 4096^3, against cuBLAS; and
        through descriptors made in the kernel (made_descriptor_matmul_kernel)."""
        from common import load_module
        from mytriton.tools.tensor_descriptor import TensorDescriptor as Ours
        from triton.tools.tensor_descriptor import TensorDescriptor as Theirs
        mt, tr = load_module(KERNELS / "gemm.py", "mt_gemm"), triton_module("gemm.py")
        n = 1024 if self.quick else 4096
        for dtype, name in ((torch.float16, "desc_gemm_fp16"), (torch.bfloat16, "desc_gemm_bf16")):
            a, b, c = _square_operands(n, dtype)
            for bm, bn, bk, warps, stages in ((128, 128, 64, 4, 3), (128, 128, 64, 4, 4), (128, 256, 64, 8, 3),
                                              (128, 128, 32, 4, 4), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4)):
                grid = (cdiv(n, bm) * cdiv(n, bn),)

                def run(impl, desc):
                    da, db, dc = desc.from_tensor(a, [bm, bk]), desc.from_tensor(b, [bk, bn]), desc.from_tensor(c, [bm, bn])
                    return lambda i: impl.descriptor_matmul_kernel[grid](da, db, dc, n, n, n, BLOCK_M=bm, BLOCK_N=bn,
                                                                         BLOCK_K=bk, GROUP_M=8, num_warps=warps,
                                                                         num_stages=stages)
                for impl, desc in ((mt, Ours), (tr, Theirs)):
                    c.zero_()
                    run(impl, desc)(0)
                    check(name, c.float(), (a.float() @ b.float()), 2e-2, 1e-1)
                t = bench_all({"mytriton": run(mt, Ours), "triton": run(tr, Theirs),
                               "torch": lambda i: torch.matmul(a, b, out=c)}, 1)
                self.record(name, f"{n}^3 {bm}x{bn}x{bk} w{warps} s{stages}", "TFLOP/s", 2 * n**3, t)
        # the same GEMM with its descriptors made in the kernel (made_descriptor_matmul_kernel):
        # mytriton encodes their tensor maps at launch, Triton's programs write theirs into scratch
        # memory from its allocator
        import triton
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
        for dtype, name in ((torch.float16, "made_gemm_fp16"), (torch.bfloat16, "made_gemm_bf16")):
            a, b, c = _square_operands(n, dtype)
            for bm, bn, bk, warps, stages in ((128, 128, 64, 4, 3), (128, 256, 64, 8, 3), (128, 128, 32, 4, 4),
                                              (128, 64, 64, 4, 4)):
                grid = (cdiv(n, bm) * cdiv(n, bn),)

                def run(impl):
                    return lambda i: impl.made_descriptor_matmul_kernel[grid](a, b, c, n, n, n, BLOCK_M=bm, BLOCK_N=bn,
                                                                              BLOCK_K=bk, GROUP_M=8, num_warps=warps,
                                                                              num_stages=stages)
                for impl in (mt, tr):
                    c.zero_()
                    run(impl)(0)
                    check(name, c.float(), (a.float() @ b.float()), 2e-2, 1e-1)
                t = bench_all({"mytriton": run(mt), "triton": run(tr), "torch": lambda i: torch.matmul(a, b, out=c)}, 1)
                self.record(name, f"{n}^3 {bm}x{bn}x{bk} w{warps} s{stages}", "TFLOP/s", 2 * n**3, t)

    def attention(self):
        """FlashAttention-style forward (manifests/kernels/attention.py through both JITs), fp16,
        head dim 64 and 128, causal and not, against torch's scaled_dot_product_attention."""
        from common import load_module
        mt, tr = load_module(KERNELS / "attention.py", "mt_attention"), triton_module("attention.py")
        z, h, n_ctx = (2, 8, 1024) if self.quick else (4, 32, 4096)
        for d in (64, 128):
            q, k, v = (torch.randn(z, h, n_ctx, d, device="cuda", dtype=torch.float16) for _ in range(3))
            o = torch.empty_like(q)
            for causal in (False, True):
                grid = (cdiv(n_ctx, 128), z * h)

                def run(impl):
                    return lambda i: impl.attention_fwd_kernel[grid](q, k, v, o, d ** -0.5, n_ctx, HEAD_DIM=d,
                                                                     BLOCK_M=128, BLOCK_N=64, CAUSAL=causal,
                                                                     num_warps=8 if d == 128 else 4)
                want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                for impl in (mt, tr):
                    run(impl)(0)
                    check("attention", o.float(), want.float(), 2e-2, 2e-2)
                flops = 4 * z * h * n_ctx * n_ctx * d * (0.5 if causal else 1)
                t = bench_all({"mytriton": run(mt), "triton": run(tr),
                               "torch": lambda i: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)}, 1)
                self.record("attention", f"d={d} {'causal' if causal else 'full'}", "TFLOP/s", flops, t)

    def histogram(self):
        """Atomic adds into few bins (heavy contention) and into many (little); one run each."""
        n = 2**24 if self.quick else 2**27
        tr = triton_module("histogram.py")
        for bins in (256, 65536):
            x = torch.randint(0, bins, (n,), device="cuda", dtype=torch.int32)
            want = torch.bincount(x, minlength=bins).to(torch.int32)
            hist = torch.zeros(bins, device="cuda", dtype=torch.int32)
            for block, warps in ((1024, 4), (4096, 8)):
                grid = (cdiv(n, block),)
                for run in (self.mt.histogram_kernel, tr.histogram_kernel):
                    hist.zero_()
                    run[grid](x, hist, n, BLOCK=block, num_warps=warps)
                    check("histogram", hist, want, 0, 0)
                t = {"mytriton": bench(lambda i: self.mt.histogram_kernel[grid](x, hist, n, BLOCK=block,
                                                                                 num_warps=warps), 1),
                     "triton": bench(lambda i: tr.histogram_kernel[grid](x, hist, n, BLOCK=block, num_warps=warps), 1),
                     "torch": bench(lambda i: torch.bincount(x, minlength=bins), 1)}
                self.record("histogram", f"n=2^{n.bit_length() - 1} bins={bins} B={block} w{warps}", "GB/s", 4 * n, t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "bench.json"))
    ap.add_argument("--only", default="")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    mt = build_mytriton(Path(tempfile.mkdtemp()) / "build")
    suite = Suite(mt, args.quick)
    print(f"device: {torch.cuda.get_device_name()}  (GB/s counts bytes read + written; fp32 matmul without tf32)")
    groups = ("elementwise", "half", "softmax", "reductions", "matmul", "histogram", "scans", "rowwise", "gemm",
              "descriptors", "attention")
    for name in groups:
        # (the tl.dot groups, gemm, descriptors and attention, run when asked for)
        if (not args.only and name not in ("gemm", "descriptors", "attention")) or name in args.only.split(","):
            getattr(suite, name)()
    print("\nsummary (best config of each):")
    print(f"{'kernel':10s} {'unit':8s} {'mytriton':>10s} {'triton':>10s} {'torch':>10s} {'mt/triton':>10s}")
    for kernel in dict.fromkeys(r["kernel"] for r in suite.rows):
        rows = [r for r in suite.rows if r["kernel"] == kernel]
        best = {w: max(r.get(w, 0) for r in rows) for w in ("mytriton", "triton", "torch")}
        print(f"{kernel:10s} {rows[0]['unit']:8s} {best['mytriton']:10.1f} {best['triton']:10.1f} {best['torch']:10.1f}"
              f" {best['mytriton'] / best['triton']:10.3f}")
    Path(args.json).write_text(json.dumps(suite.rows, indent=1))


if __name__ == "__main__":
    main()
