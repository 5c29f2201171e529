"""Triton's tutorials through mytriton, from a Triton checkout: the kernels of each tutorial file,
unchanged but for their imports, run by mytriton and by Triton on the same inputs, checked against
PyTorch and against each other, and timed side by side.

    python3 benchmarks/tutorials.py PATH/triton/python/tutorials [--only 01,05] [--interpret] [--json FILE]

Nothing of Triton's is kept in this repository: the runner reads the files it is given. From each
file it takes the ``@triton.jit`` functions (with their ``@triton.autotune`` / ``@triton.heuristics``
decorators) and whatever top-level definitions and imports they use, leaving out the tutorial's own
host code, tests and plots; it writes that source twice, once importing Triton and once with the
imports pointed at mytriton, and drives both with host code of its own below (the tutorial's
launches: same grids, constexprs and ``num_warps``). Kernel parameters are passed by name, so
versions of a tutorial that reorder or rename a few of them still run.

``--interpret`` runs the mytriton side in the CPU interpreter on small numpy inputs instead
(against numpy; no GPU, no Triton, no PyTorch).
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import sys
import tempfile
from pathlib import Path

from common import TO_MYTRITON

FILES = {"01": "01-vector-add.py", "02": "02-fused-softmax.py", "03": "03-matrix-multiplication.py",
         "04": "04-low-memory-dropout.py",
         "05": "05-layer-norm.py", "06": "06-fused-attention.py", "07": "07-extern-functions.py",
         "08": "08-grouped-gemm.py"}
# The tutorials this runner does not drive, and why.
NOT_RUN: dict[str, str] = {}
NOT_INTERPRETED = {"03": "the file asks the GPU driver for its target (its autotune configs) at import",
                   "06": "the file asks the GPU driver for its target and PyTorch for the device at import",
                   "08": "its tl.dot tiles are too slow on a CPU"}

_DECORATORS = {"jit", "autotune", "heuristics"}
# (pattern, replacement) per line: the tutorial's imports of Triton become mytriton's
_TO_MYTRITON = [(re.compile(r"^(\s*)import triton\s*$"), r"\1import mytriton as triton"), *TO_MYTRITON]


class TutorialError(Exception):
    """A tutorial file that cannot be used (missing, no kernels, not the expected kernels)."""


# -- taking the kernels out of a tutorial file ----------------------------------------------------

def _decorator_name(node: ast.expr) -> str | None:
    """``jit`` for ``@triton.jit``, ``@jit``, ``@triton.jit(...)``; ``autotune`` for ``@triton.autotune(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _used_names(node: ast.AST) -> set[str]:
    """The names *node* reads from its module: those it loads, less (for a function) its
    parameters and the names it assigns."""
    loaded = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        local = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        local |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        loaded = (loaded - local) | {n.id for d in node.decorator_list for n in ast.walk(d) if isinstance(n, ast.Name)}
    return loaded


def kernel_source(text: str, path: str = "<tutorial>") -> tuple[str, list[str]]:
    """(the source of the file's kernels and what they use, the kernels' names), in the file's
    order; imports are kept as written (Triton's)."""
    try:
        tree = ast.parse(text, path)
    except SyntaxError as exc:
        raise TutorialError(f"{path}:{exc.lineno}: not Python: {exc.msg}") from None
    body = tree.body
    kernels = [n for n in body if isinstance(n, ast.FunctionDef)
               and any(_decorator_name(d) in _DECORATORS for d in n.decorator_list)]
    if not kernels:
        raise TutorialError(f"{path}: no @triton.jit function")
    keep = set(map(id, kernels))
    wanted = set().union(*(_used_names(k) for k in kernels))
    changed = True
    while changed:          # the definitions the kernels use, and what those use
        changed = False
        for node in body:
            if id(node) not in keep and not isinstance(node, (ast.Import, ast.ImportFrom)) \
                    and _bound_names(node) & wanted:
                keep.add(id(node))
                wanted |= _used_names(node)
                changed = True
    lines = text.splitlines()
    out, previous_import = [], None
    for node in body:
        is_import = isinstance(node, (ast.Import, ast.ImportFrom))
        if not (_bound_names(node) & wanted if is_import else id(node) in keep):
            continue
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if previous_import is not None:
            out.append("\n" if is_import and previous_import else "\n\n\n")
        out.append("\n".join(lines[first - 1:node.end_lineno]))
        previous_import = is_import
    return "".join(out) + "\n", [k.name for k in kernels]


def for_mytriton(source: str) -> str:
    """*source* with its imports of Triton pointed at mytriton."""
    out = []
    for line in source.splitlines():
        for pattern, replacement in _TO_MYTRITON:
            line = pattern.sub(replacement, line)
        out.append(line)
    return "\n".join(out) + "\n"


def load_kernels(path: Path, flavor: str, folder: Path):
    """The module of *path*'s kernels, importing Triton (``flavor="triton"``) or mytriton."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TutorialError(f"{path}: {exc.strerror}") from None
    source, _ = kernel_source(text, str(path))
    if flavor == "mytriton":
        source = for_mytriton(source)
    stem = re.sub(r"\W", "_", path.stem)
    out = folder / f"{flavor}_{stem}.py"
    out.write_text(f"# The kernels of {path.name}, for {flavor} (benchmarks/tutorials.py)\n" + source)
    spec = importlib.util.spec_from_file_location(f"{flavor}_{stem}", out)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def kernel(module, name: str, path: Path):
    fn = getattr(module, name, None)
    if fn is None:
        raise TutorialError(f"{path.name} has no kernel {name} (a version this runner does not know)")
    return fn


def arg_names(fn) -> list[str]:
    while not hasattr(fn, "arg_names"):        # under @autotune / @heuristics
        fn = fn.fn
    return list(fn.arg_names)


def by_name(fn, values: dict) -> dict:
    """The keyword arguments of a launch of *fn*: the values of those of its parameters *values*
    names (a key may list several spellings, ``"M|Mean"``); a parameter left out is the launch's
    own error, naming it."""
    spelled = {alias: value for key, value in values.items() for alias in key.split("|")}
    out = {}
    for name in arg_names(fn):
        if name in spelled:
            out[name] = spelled[name]
    return out


# -- the drivers: the tutorials' launches, on both sides ------------------------------------------

class Runner:
    def __init__(self, interpret: bool):
        self.interpret = interpret
        self.rows = []

    def row(self, tutorial, case, ok, detail="", unit=None, amount=None, times=None):
        row = {"tutorial": tutorial, "case": case, "ok": ok, "detail": detail}
        if times:
            row.update(unit=unit, **{f"{k}_ms": v for k, v in times.items()})
            row["vs_triton"] = times["triton"] / times["mytriton"]
            row["rates"] = {k: amount / v / 1e6 for k, v in times.items()}
        self.rows.append(row)
        rate = ""
        if times:
            rate = "  " + "  ".join(f"{k} {amount / v / 1e6:8.1f} {unit}" for k, v in times.items()) \
                   + f"  mytriton/Triton {row['vs_triton']:.3f}"
        print(f"{tutorial} {case:<34} {'ok' if ok else 'FAILED'}{(': ' + detail) if detail else ''}{rate}", flush=True)

    def time(self, fns: dict) -> dict:
        from common import bench
        return {name: bench(lambda i, f=fn: f(), 1) for name, fn in fns.items()}


def _torch():
    import torch
    return torch


def _triton_version() -> str:
    import triton
    return triton.__version__


def row_stride(x) -> int:
    """A 2-D array's row stride in elements (a PyTorch tensor or a numpy array)."""
    return x.stride(0) if callable(getattr(x, "stride", None)) else x.strides[0] // x.itemsize


def itemsize(x) -> int:
    return x.element_size() if hasattr(x, "element_size") else x.itemsize


def run_01(r: Runner, mt, tr, path):
    if r.interpret:
        import numpy as np
        add = kernel(mt, "add_kernel", path)
        for n in (1, 1000, 4097):
            x, y = np.random.default_rng(n).random((2, n)).astype(np.float32)
            out = np.zeros(n, np.float32)
            add[(-(-n // 1024),)](**by_name(add, {"x_ptr": x, "y_ptr": y, "output_ptr|out_ptr": out,
                                                  "n_elements": n, "BLOCK_SIZE": 1024}))
            r.row("01", f"vector add n={n} (interpreter)", bool((out == x + y).all()))
        return
    torch = _torch()
    for n in (98432, 1 << 24):
        x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        outs = {}
        launches = {}
        for side, module in (("mytriton", mt), ("triton", tr)):
            add, out = kernel(module, "add_kernel", path), torch.empty_like(x)
            args = by_name(add, {"x_ptr": x, "y_ptr": y, "output_ptr|out_ptr": out, "n_elements": n, "BLOCK_SIZE": 1024})
            launches[side] = (lambda add=add, args=args: add[(-(-n // 1024),)](**args))
            launches[side]()
            outs[side] = out
        ok = torch.equal(outs["mytriton"], x + y) and torch.equal(outs["mytriton"], outs["triton"])
        times = r.time({**launches, "torch": lambda: torch.add(x, y)}) if n > 10**6 else None
        r.row("01", f"vector add fp32 n={n}", ok, unit="GB/s", amount=12 * n, times=times)


def run_02(r: Runner, mt, tr, path):
    def launch(module, y, x, programs):
        fn = kernel(module, "softmax_kernel", path)
        n_rows, n_cols = x.shape
        args = by_name(fn, {"output_ptr": y, "input_ptr": x, "input_row_stride": row_stride(x),
                            "output_row_stride": row_stride(y), "n_rows": n_rows, "n_cols": n_cols,
                            "BLOCK_SIZE": 1 << (n_cols - 1).bit_length(), "num_stages": 4})
        grid = (programs,) if "n_rows" in arg_names(fn) else (n_rows,)     # persistent programs, or a row each
        return lambda: fn[grid](**args, num_warps=8)
    if r.interpret:
        import numpy as np
        x = np.random.default_rng(2).standard_normal((37, 100)).astype(np.float32)
        y = np.zeros_like(x)
        launch(mt, y, x, 5)()
        e = np.exp(x - x.max(1, keepdims=True))
        r.row("02", "fused softmax 37x100 (interpreter)", bool(np.allclose(y, e / e.sum(1, keepdims=True), 1e-5, 1e-6)))
        return
    torch = _torch()
    # (the tutorial's host code launches an SM's occupancy of programs, from Triton's registers: 32 a
    # thread at 8 warps leave 8 blocks an SM)
    programs = torch.cuda.get_device_properties(0).multi_processor_count * 8
    for shape, dtype in (((1823, 781), torch.float32), ((4096, 4096), torch.float32), ((32768, 1024), torch.float16)):
        x = torch.randn(*shape, device="cuda", dtype=dtype)
        ys = {side: torch.empty_like(x) for side in ("mytriton", "triton")}
        launches = {side: launch(module, ys[side], x, min(programs, shape[0]))
                    for side, module in (("mytriton", mt), ("triton", tr))}
        for fn in launches.values():
            fn()
        want = torch.softmax(x.float(), 1).to(dtype)
        tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=2e-3, atol=1e-3)
        ok = torch.allclose(ys["mytriton"], want, **tol) and torch.allclose(ys["mytriton"], ys["triton"], **tol)
        times = r.time({**launches, "torch": lambda: torch.softmax(x, 1)}) if shape[0] > 2000 else None
        r.row("02", f"fused softmax {str(dtype)[6:]} {shape[0]}x{shape[1]}", ok, unit="GB/s",
              amount=2 * x.numel() * x.element_size(), times=times)


def run_04(r: Runner, mt, tr, path):
    p, n = 0.5, 1 << 22
    if r.interpret:
        import numpy as np
        fn = kernel(mt, "_dropout", path)
        x = np.random.default_rng(4).standard_normal(1000).astype(np.float32)
        keep = (np.random.default_rng(5).random(1000) > p).astype(np.int32)
        out = np.zeros_like(x)
        fn[(1,)](**by_name(fn, {"x_ptr": x, "x_keep_ptr": keep, "output_ptr": out, "n_elements": 1000, "p": p,
                                "BLOCK_SIZE": 1024}))
        r.row("04", "dropout with a mask (interpreter)", bool((out == np.where(keep != 0, x / (1 - p), 0)).all()))
        return
    torch = _torch()
    x = torch.randn(n, device="cuda")
    keep = (torch.rand(n, device="cuda") > p).to(torch.int32)
    outs, launches = {}, {}
    for side, module in (("mytriton", mt), ("triton", tr)):
        fn, out = kernel(module, "_dropout", path), torch.empty_like(x)
        args = by_name(fn, {"x_ptr": x, "x_keep_ptr": keep, "output_ptr": out, "n_elements": n, "p": p,
                            "BLOCK_SIZE": 1024})
        launches[side] = lambda fn=fn, args=args: fn[(n // 1024,)](**args)
        launches[side]()
        outs[side] = out
    ok = torch.equal(outs["mytriton"], torch.where(keep != 0, x / (1 - p), 0.0)) and torch.equal(*outs.values())
    r.row("04", "dropout with a mask", ok, unit="GB/s", amount=12 * n, times=r.time(launches))
    outs, launches = {}, {}
    for side, module in (("mytriton", mt), ("triton", tr)):
        fn, out = kernel(module, "_seeded_dropout", path), torch.empty_like(x)
        args = by_name(fn, {"x_ptr": x, "output_ptr": out, "n_elements": n, "p": p, "seed": 123, "BLOCK_SIZE": 1024})
        launches[side] = lambda fn=fn, args=args: fn[(n // 1024,)](**args)
        launches[side]()
        outs[side] = out
    kept = outs["mytriton"] != 0
    ok = torch.equal(outs["mytriton"], outs["triton"]) and abs(kept.float().mean().item() - (1 - p)) < 0.01
    r.row("04", "seeded dropout (bit-exact vs Triton)", ok, unit="GB/s", amount=8 * n, times=r.time(launches))


def _ln_fwd(fn, x, w, b, y, mean, rstd, eps):
    M, N = x.shape
    block = min(65536 // itemsize(x), 1 << (N - 1).bit_length())
    args = by_name(fn, {"X": x, "Y": y, "W": w, "B": b, "M|Mean": mean, "V|Rstd": rstd, "stride": row_stride(x),
                        "N": N, "eps": eps, "BLOCK_SIZE": block})
    return lambda: fn[(M,)](**args, num_warps=min(max(block // 256, 1), 8))


def run_05(r: Runner, mt, tr, path):
    eps = 1e-5
    if r.interpret:
        import numpy as np
        fn = kernel(mt, "_layer_norm_fwd_fused", path)
        rng = np.random.default_rng(5)
        x = (-2.3 + 0.5 * rng.standard_normal((3, 300))).astype(np.float32)
        w, b = rng.random(300).astype(np.float32), rng.random(300).astype(np.float32)
        y, mean, rstd = np.zeros_like(x), np.zeros(3, np.float32), np.zeros(3, np.float32)
        _ln_fwd(fn, x, w, b, y, mean, rstd, eps)()
        want = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + eps) * w + b
        r.row("05", "layer norm forward 3x300 (interpreter)", bool(np.allclose(y, want, 1e-4, 1e-4)))
        return
    torch = _torch()
    for dtype, (M, N) in ((torch.float16, (4096, 4096)), (torch.float32, (4096, 4096)), (torch.float16, (1151, 8192))):
        x = -2.3 + 0.5 * torch.randn(M, N, device="cuda", dtype=dtype)
        w, b = torch.rand(N, device="cuda", dtype=dtype), torch.rand(N, device="cuda", dtype=dtype)
        outs, launches = {}, {}
        for side, module in (("mytriton", mt), ("triton", tr)):
            y, mean, rstd = torch.empty_like(x), torch.empty(M, device="cuda"), torch.empty(M, device="cuda")
            launches[side] = _ln_fwd(kernel(module, "_layer_norm_fwd_fused", path), x, w, b, y, mean, rstd, eps)
            launches[side]()
            outs[side] = (y, mean, rstd)
        want = torch.nn.functional.layer_norm(x.float(), (N,), w.float(), b.float(), eps).to(dtype)
        atol = 1e-2 if dtype == torch.float16 else 1e-4
        ok = torch.allclose(outs["mytriton"][0], want, atol=atol, rtol=0) and all(
            torch.allclose(a, t, atol=atol, rtol=1e-3) for a, t in zip(outs["mytriton"], outs["triton"]))
        r.row("05", f"layer norm forward {str(dtype)[6:]} {M}x{N}", ok, unit="GB/s",
              amount=2 * x.numel() * x.element_size(),
              times=r.time({**launches, "torch": lambda: torch.nn.functional.layer_norm(x, (N,), w, b, eps)}))
        if "_layer_norm_bwd_dx_fused" in vars(mt) and dtype == torch.float16 and N == 4096:
            run_05_backward(r, mt, tr, path, x, w, b, eps)


def run_05_backward(r: Runner, mt, tr, path, x, w, b, eps):
    """The tutorial's backward: dx with partial dw/db sums under a spin lock per group of rows
    (tl.atomic_cas / tl.atomic_xchg), then the partial sums reduced by a second kernel."""
    torch = _torch()
    M, N = x.shape
    group = 128 if N <= 4096 else 96
    dy = 0.1 * torch.randn_like(x)
    xr = x.clone().float().requires_grad_(True)
    wr, br = w.float().clone().requires_grad_(True), b.float().clone().requires_grad_(True)
    torch.nn.functional.layer_norm(xr, (N,), wr, br, eps).backward(dy.float())
    outs, launches = {}, {}
    for side, module in (("mytriton", mt), ("triton", tr)):
        y, mean, rstd = torch.empty_like(x), torch.empty(M, device="cuda"), torch.empty(M, device="cuda")
        _ln_fwd(kernel(module, "_layer_norm_fwd_fused", path), x, w, b, y, mean, rstd, eps)()
        block = min(65536 // x.element_size(), 1 << (N - 1).bit_length())
        dx = torch.empty_like(x)
        partial_dw = torch.empty((group, N), dtype=x.dtype, device="cuda")
        partial_db = torch.empty((group, N), dtype=x.dtype, device="cuda")
        dw, db = torch.empty_like(w), torch.empty_like(b)
        locks = torch.zeros(2 * group, dtype=torch.int32, device="cuda")
        dx_fn = kernel(module, "_layer_norm_bwd_dx_fused", path)
        dwdb_fn = kernel(module, "_layer_norm_bwd_dwdb", path)
        dx_args = by_name(dx_fn, {"DX": dx, "DY": dy, "DW": partial_dw, "DB": partial_db, "X": x, "W": w, "B": b,
                                  "M|Mean": mean, "V|Rstd": rstd, "Lock": locks, "stride": x.stride(0), "N": N,
                                  "eps": eps, "BLOCK_SIZE_N": block, "GROUP_SIZE_M": group})
        dwdb_args = by_name(dwdb_fn, {"DW": partial_dw, "DB": partial_db, "FINAL_DW": dw, "FINAL_DB": db, "M": group,
                                      "N": N, "BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 128})

        def backward(dx_fn=dx_fn, dx_args=dx_args, dwdb_fn=dwdb_fn, dwdb_args=dwdb_args, locks=locks):
            locks.zero_()
            dx_fn[(M,)](**dx_args, num_warps=min(max(block // 256, 1), 8))
            dwdb_fn[(-(-N // 128),)](**dwdb_args)
        launches[side] = backward
        backward()
        outs[side] = (dx, dw, db)
    got = outs["mytriton"]
    ok = (torch.allclose(got[0].float(), xr.grad, atol=1e-2, rtol=1e-2)
          and torch.allclose(got[1].float(), wr.grad, atol=0.5, rtol=2e-2)
          and torch.allclose(got[2].float(), br.grad, atol=0.5, rtol=2e-2)
          and all(torch.allclose(a.float(), t.float(), atol=0.5, rtol=2e-2) for a, t in zip(got, outs["triton"])))
    r.row("05", f"layer norm backward float16 {M}x{N}", ok, unit="GB/s", amount=3 * x.numel() * x.element_size(),
          times=r.time(launches))


def run_07(r: Runner, mt, tr, path):
    if r.interpret:
        import numpy as np
        fn = kernel(mt, "asin_kernel", path)
        x = np.random.default_rng(7).uniform(-1, 1, 1000).astype(np.float32)
        y = np.zeros_like(x)
        fn[(1,)](**by_name(fn, {"x_ptr": x, "y_ptr": y, "n_elements": 1000, "BLOCK_SIZE": 1024}))
        r.row("07", "libdevice asin (interpreter)", bool(np.allclose(y, np.arcsin(x), 1e-6, 1e-6)))
        return
    torch = _torch()
    n = 1 << 24
    x = torch.rand(n, device="cuda") * 2 - 1
    outs, launches = {}, {}
    for side, module in (("mytriton", mt), ("triton", tr)):
        fn, y = kernel(module, "asin_kernel", path), torch.empty_like(x)
        args = by_name(fn, {"x_ptr": x, "y_ptr": y, "n_elements": n, "BLOCK_SIZE": 1024})
        launches[side] = lambda fn=fn, args=args: fn[(n // 1024,)](**args)
        launches[side]()
        outs[side] = y
    ulps = (outs["mytriton"].view(torch.int32).long() - outs["triton"].view(torch.int32).long()).abs()
    differ, worst = int((ulps > 0).sum()), int(ulps.max())
    # (Triton links libdevice with flush-to-zero on, which takes other paths inside asinf: README, libdevice)
    ok = torch.allclose(outs["mytriton"], torch.asin(x), rtol=1e-6, atol=1e-6) and worst <= 3
    r.row("07", "libdevice asin", ok, f"{differ} of {n} values differ from Triton's, by at most {worst} ulp",
          unit="GB/s", amount=8 * n, times=r.time({**launches, "torch": lambda: torch.asin(x)}))


def run_03(r: Runner, mt, tr, path):
    """The tutorial's own launch (its autotuned configs, its grid of the chosen config), fp16, on
    square sizes and on sizes that are multiples of nothing (the `% M` offsets wrap there)."""
    torch = _torch()
    for m, n, k in ((4096, 4096, 4096), (3000, 2000, 1000)):
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        outs, launches = {}, {}
        for side, module in (("mytriton", mt), ("triton", tr)):
            fn = kernel(module, "matmul_kernel", path)
            c = torch.empty(m, n, device="cuda", dtype=torch.float16)
            args = by_name(fn, {"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": m, "N": n, "K": k,
                                "stride_am": a.stride(0), "stride_ak": a.stride(1), "stride_bk": b.stride(0),
                                "stride_bn": b.stride(1), "stride_cm": c.stride(0), "stride_cn": c.stride(1),
                                "ACTIVATION": ""})
            grid = (lambda meta: (-(-m // meta["BLOCK_SIZE_M"]) * -(-n // meta["BLOCK_SIZE_N"]),))
            launches[side] = lambda fn=fn, args=args, grid=grid, keep=c: fn[grid](**args)
            launches[side]()
            outs[side] = c
        want = (a.float() @ b.float()).half()
        ok = torch.allclose(outs["mytriton"], want, atol=1e-1, rtol=1e-2) and torch.allclose(
            outs["mytriton"], outs["triton"], atol=1e-1, rtol=1e-2)
        r.row("03", f"matmul fp16 {m}x{n}x{k}", ok, unit="TFLOP/s", amount=2 * m * n * k / 1e3,
              times=r.time({**launches, "torch": lambda: torch.matmul(a, b)}))


def run_08(r: Runner, mt, tr, path):
    torch = _torch()
    sizes = [(1024, 1024, 1024), (512, 512, 512), (256, 256, 256), (128, 128, 128)] * 2
    a = [torch.rand(m, k, device="cuda", dtype=torch.float16) for m, n, k in sizes]
    b = [torch.rand(k, n, device="cuda", dtype=torch.float16) for m, n, k in sizes]
    outs, launches = {}, {}
    for side, module in (("mytriton", mt), ("triton", tr)):
        fn = kernel(module, "grouped_matmul_kernel", path)
        c = [torch.empty(m, n, device="cuda", dtype=torch.float16) for m, n, k in sizes]
        ptrs = [torch.tensor([t.data_ptr() for t in ts], device="cuda") for ts in (a, b, c)]
        dims = torch.tensor([d for m, n, k in sizes for d in (m, n, k)], dtype=torch.int32, device="cuda")
        lds = torch.tensor([d for x, y, z in zip(a, b, c) for d in (x.stride(0), y.stride(0), z.stride(0))],
                           dtype=torch.int32, device="cuda")
        args = by_name(fn, {"group_a_ptrs": ptrs[0], "group_b_ptrs": ptrs[1], "group_c_ptrs": ptrs[2],
                            "group_gemm_sizes": dims, "g_lds": lds, "group_size": len(sizes)})
        launches[side] = lambda fn=fn, args=args, keep=(c, ptrs, dims, lds): fn[lambda meta: (meta["NUM_SM"],)](**args)
        launches[side]()
        outs[side] = c
    ok = all(torch.allclose(got, x @ y, atol=1e-2, rtol=1e-2) for got, x, y in zip(outs["mytriton"], a, b)) and all(
        torch.allclose(got, theirs, atol=1e-2, rtol=1e-2) for got, theirs in zip(outs["mytriton"], outs["triton"]))
    flops = sum(2 * m * n * k for m, n, k in sizes)
    r.row("08", f"grouped GEMM fp16, {len(sizes)} problems", ok, unit="TFLOP/s", amount=flops / 1e3,
          times=r.time({**launches, "torch": lambda: [x @ y for x, y in zip(a, b)]}))


def run_06(r: Runner, mt, tr, path):
    """The fused attention forward of block pointers (``_attn_fwd``, autotuned on the file's configs;
    its TMA variant takes host tensor descriptors, which mytriton does not have), fp16, not causal."""
    torch = _torch()
    Z, H, N, D = 4, 16, 1024, 64
    q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
    scale = D ** -0.5
    outs, launches = {}, {}
    for side, module in (("mytriton", mt), ("triton", tr)):
        fn = kernel(module, "_attn_fwd", path)
        o, m = torch.empty_like(q), torch.empty((Z, H, N), device="cuda", dtype=torch.float32)
        values = {"Q": q, "K": k, "V": v, "sm_scale": scale, "M": m, "Out": o, "Z": Z, "H": H, "N_CTX": N,
                  "HEAD_DIM": D, "CAUSAL": False, "STAGE": 1}
        for name, t in (("q", q), ("k", k), ("v", v), ("o", o)):
            for axis, suffix in enumerate("zh"):
                values[f"stride_{name}{suffix}"] = t.stride(axis)
        values.update(stride_qm=q.stride(2), stride_qk=q.stride(3), stride_kn=k.stride(2), stride_kk=k.stride(3),
                      stride_vk=v.stride(2), stride_vn=v.stride(3), stride_om=o.stride(2), stride_on=o.stride(3))
        args = by_name(fn, values)
        launches[side] = lambda fn=fn, args=args: fn[lambda meta: (-(-N // meta["BLOCK_M"]), Z * H, 1)](**args)
        try:
            launches[side]()
        except Exception as exc:  # noqa: BLE001 - a Triton that cannot compile this version of the file
            if side == "mytriton":
                raise
            del launches[side]
            detail = f"Triton {_triton_version()} cannot run this version of the file ({type(exc).__name__}: " \
                     f"{str(exc).splitlines()[0][:120]}); checked against PyTorch only"
            continue
        outs[side] = o
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
    ok = torch.allclose(outs["mytriton"], want, atol=2e-2, rtol=0) and (
        "triton" not in outs or torch.allclose(outs["mytriton"], outs["triton"], atol=2e-2, rtol=0))
    times = r.time({**launches, "torch": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)})
    if "triton" not in times:
        times["triton"] = float("nan")
    r.row("06", f"fused attention fwd fp16 {Z}x{H}x{N}x{D}", ok, "" if "triton" in outs else detail,
          unit="TFLOP/s", amount=4 * Z * H * N * N * D / 1e3, times=times)


DRIVERS = {"01": run_01, "02": run_02, "03": run_03, "04": run_04, "05": run_05, "06": run_06, "07": run_07, "08": run_08}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="a folder holding Triton's tutorial files (python/tutorials of a checkout)")
    parser.add_argument("--only", default=",".join(FILES), help="tutorial numbers, comma-separated")
    parser.add_argument("--interpret", action="store_true", help="mytriton's CPU interpreter on numpy inputs only")
    parser.add_argument("--json", default=None, help="write the rows here")
    opts = parser.parse_args(argv)
    folder, work = Path(opts.folder), Path(tempfile.mkdtemp())
    runner = Runner(opts.interpret)
    for number in opts.only.split(","):
        if number in NOT_RUN:
            print(f"{number} not run: {NOT_RUN[number]}")
            continue
        if number not in FILES:
            parser.error(f"unknown tutorial {number!r} (known: {', '.join(FILES)})")
        if opts.interpret and number in NOT_INTERPRETED:
            print(f"{number} not interpreted: {NOT_INTERPRETED[number]}")
            continue
        path = folder / FILES[number]
        if not path.is_file():
            runner.row(number, FILES[number], False, f"not found in {folder}")
            continue
        try:
            mt = load_kernels(path, "mytriton", work)
            tr = None if opts.interpret else load_kernels(path, "triton", work)
            DRIVERS[number](runner, mt, tr, path)
        except Exception as exc:  # noqa: BLE001 - one tutorial's failure is a row, the others still run
            runner.row(number, FILES[number], False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(runner.rows, indent=2))
    failed = [row for row in runner.rows if not row["ok"]]
    print(f"{len(runner.rows) - len(failed)} of {len(runner.rows)} cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
