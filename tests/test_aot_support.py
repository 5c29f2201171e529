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
