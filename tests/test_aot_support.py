"""Helpers shared by the tests/test_aot_*.py files (this module holds no tests)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Real kernels (Triton syntax) used by the manifest and build tests.
KERNELS = '''\
import mytriton as triton
import mytriton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


@triton.jit
def cdiv(x_ptr, BLOCK: tl.constexpr):
    pass


not_a_kernel = 3
'''

# A small manifest that really compiles: 2 specializations for one target.
SMALL_MANIFEST = '''\
package: small
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    constexprs:
      BLOCK: [64, 256]
'''


def write_project(folder: Path, manifest: str, kernels: str = KERNELS, name: str = "m.yaml") -> Path:
    """A manifest *name* in *folder* with the kernel file kernels/k.py beside it."""
    (folder / "kernels").mkdir(parents=True, exist_ok=True)
    (folder / "kernels" / "k.py").write_text(kernels)
    path = folder / name
    path.write_text(textwrap.dedent(manifest))
    return path


def env_with_repo(**extra: str) -> dict:
    """The environment for a subprocess that must import mytriton from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def run_cli(args: list[str], cwd: Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    """``python -m mytriton.aot ARGS`` in *cwd*."""
    return subprocess.run([sys.executable, "-m", "mytriton.aot", *args], cwd=cwd, env=env_with_repo(**env),
                          capture_output=True, text=True, timeout=timeout)


def tree_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under *folder* (relative path → bytes)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(out: Path) -> list[str]:
    """Temporary folders a build left in its output folder (there should be none)."""
    return sorted(p.name for p in out.iterdir() if ".tmp-" in p.name or ".old-" in p.name)


def assert_no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert 'File "' not in stderr, stderr


# -- the kernels of manifests/elementwise.yaml, their inputs and numpy references ---------------
# (also imported by the GPU tests' subprocesses: keep this module free of mytriton imports)

ELEMENTWISE_SCALARS = {"a": 1.5, "b": -0.25, "slope": 0.1}
FLOAT_SENTINEL, INT_SENTINEL = 12345.0, -7


def elementwise_case(kernel: str, n: int, rng, pad: int = 0):
    """``(arrays by pointer parameter, expected out[:n])`` for one elementwise kernel.

    The arrays hold ``n + pad`` elements; the kernel must leave out_ptr[n:] at its sentinel."""
    import numpy as np
    size = n + pad
    if kernel == "int_ops_kernel":
        a = rng.integers(-1000, 1000, size, dtype=np.int32)
        b = (rng.integers(1, 50, size) * rng.choice([-1, 1], size)).astype(np.int32)
        q = (np.abs(a) // np.abs(b)) * np.sign(a) * np.sign(b)      # Triton: division truncates,
        r = a - b * q                                               # the remainder has a's sign
        expected = np.where((a > 0) & (b > 0) & (a > b), q, r + (a & 255)).astype(np.int32)
        return {"a_ptr": a, "b_ptr": b, "out_ptr": np.full(size, INT_SENTINEL, np.int32)}, expected[:n]
    x = (rng.standard_normal(size) * 4).astype(np.float32)
    y = (rng.standard_normal(size) * 4).astype(np.float32)
    s = {name: np.float32(value) for name, value in ELEMENTWISE_SCALARS.items()}
    expected = {
        "add_kernel": lambda: x + y,
        "axpby_kernel": lambda: s["a"] * x + s["b"] * y,
        "leaky_relu_kernel": lambda: np.where(x > 0, x, x * s["slope"]),
        "sigmoid_kernel": lambda: np.float32(1) / (np.float32(1) + np.exp(-x)),
    }[kernel]()
    arrays = {"x_ptr": x, "out_ptr": np.full(size, FLOAT_SENTINEL, np.float32)}
    if kernel in ("add_kernel", "axpby_kernel"):
        arrays["y_ptr"] = y
    return arrays, expected[:n].astype(np.float32)


def elementwise_args(params, arrays: dict, n: int, to_device=lambda array: array) -> list:
    """Launch arguments in signature order: pointers from *arrays*, ``n``, the fixed scalars."""
    return [to_device(arrays[name]) if kind.startswith("*") else n if name == "n"
            else ELEMENTWISE_SCALARS[name] for name, kind in params]


def elementwise_mismatch(got, expected, n: int) -> str | None:
    """Why *got* (the whole out array) is wrong, or None."""
    import numpy as np
    sentinel = INT_SENTINEL if got.dtype.kind == "i" else FLOAT_SENTINEL
    if not (got[n:] == sentinel).all():
        return f"wrote past n={n}: {got[n:n + 8]}"
    if got.dtype.kind == "i":
        ok = np.array_equal(got[:n], expected)
    else:
        ok = np.allclose(got[:n], expected, rtol=1e-5, atol=1e-6)
    if ok:
        return None
    bad = np.flatnonzero(got[:n] != expected)[:5]
    return f"n={n}: first mismatches at {bad.tolist()}: got {got[bad].tolist()}, expected {expected[bad].tolist()}"
