"""The MLIR/LLVM command-line tools: find them, run them, and say clearly when they are missing.

The tools are an optional dependency: ``emit_mlir`` needs none of them. Checking and lowering the
emitted text does:

    verify(text)            mlir-opt parses and verifies the module; returns it as mlir-opt prints it
    verify_many(texts)      the same for many modules in one mlir-opt run (--split-input-file)
    lower_to_nvvm(text)     → LLVM dialect + NVVM intrinsics (scf→cf, gpu→nvvm, casts reconciled)
    to_ptx(text, chip)      → PTX, serialized by MLIR's own NVPTX backend (gpu-module-to-binary),
                              with libdevice linked for the ``math`` functions; ``to_ptx_many``
                              does many modules in one run
    to_llvm_ir(text)        → LLVM IR text of the kernel (mlir-translate on the NVVM-lowered functions)

A tool is looked for as ``NAME-19`` on PATH, then in ``/usr/lib/llvm-19/bin``, then as ``NAME`` on
PATH (``MYTRITON_LLVM_BIN=DIR`` puts a directory first); only a tool whose ``--version`` says LLVM
19 is taken (a plain ``llc`` on PATH is often another LLVM, whose IR and flags differ). libdevice (``libdevice.10.bc``) comes from
``MYTRITON_LIBDEVICE``, a CUDA toolkit (``CUDA_HOME``, ``/usr/local/cuda*``, ``/usr/lib/cuda``), or
an installed Python package that ships one (``nvidia-cuda-nvcc``, Triton).
"""
from __future__ import annotations

import functools
import glob
import importlib.util
import os
import re
import shutil
import subprocess

LLVM_MAJOR = 19
INSTALL_HINT = (f"install the MLIR tools (Debian/Ubuntu: apt-get install mlir-{LLVM_MAJOR}-tools) or set "
                "MYTRITON_LLVM_BIN to the directory that holds them; the MLIR backend still emits MLIR text "
                "without them")

NVVM_PIPELINE = "gpu.module(convert-scf-to-cf,arith-expand,convert-gpu-to-nvvm,reconcile-unrealized-casts)"

_SPLIT = "\n// -----\n"


class MLIRToolsMissing(RuntimeError):
    """A needed MLIR/LLVM tool is not installed."""


class MLIRToolError(RuntimeError):
    """A tool rejected its input; ``stderr`` holds its diagnostics."""

    def __init__(self, message: str, stderr: str = ""):
        self.stderr = stderr
        super().__init__(message + (f"\n{stderr.rstrip()}" if stderr else ""))


LLVM_DIR = f"/usr/lib/llvm-{LLVM_MAJOR}/bin"
_VERSION_RE = re.compile(r"LLVM version (\d+)\.")


def _candidates(name: str) -> list[str]:
    found = []
    if os.environ.get("MYTRITON_LLVM_BIN"):
        found.append(os.path.join(os.environ["MYTRITON_LLVM_BIN"], name))
    found += [shutil.which(f"{name}-{LLVM_MAJOR}"), os.path.join(LLVM_DIR, name), shutil.which(name)]
    return [path for path in found if path and os.path.isfile(path) and os.access(path, os.X_OK)]


def tool_major(path: str) -> int | None:
    """The LLVM major version ``path --version`` reports, or None when it reports none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return _tool_major(os.path.realpath(path), info.st_mtime_ns, info.st_size)


@functools.lru_cache(maxsize=None)
def _tool_major(path: str, mtime_ns: int, size: int) -> int | None:
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    match = _VERSION_RE.search(proc.stdout + proc.stderr)
    return int(match[1]) if match else None


def find_tool(name: str) -> str | None:
    """The path of ``name`` (``mlir-opt``, ``mlir-translate``, ``llc``, …) of LLVM 19, or None."""
    return next((path for path in _candidates(name) if tool_major(path) == LLVM_MAJOR), None)


def require_tool(name: str) -> str:
    path = find_tool(name)
    if path is None:
        others = [f"{p} is {'LLVM ' + str(m) if m else 'of an unknown LLVM version'}"
                  for p in _candidates(name) for m in [tool_major(p)]]
        found = f"; found only {', '.join(others)}" if others else ""
        raise MLIRToolsMissing(f"{name} not found (looked for {name}-{LLVM_MAJOR} and {name} of LLVM {LLVM_MAJOR} "
                               f"on PATH and in {LLVM_DIR}){found}; {INSTALL_HINT}")
    return path


def missing_tools(*names: str) -> list[str]:
    """The tools among ``names`` (default: mlir-opt) that cannot be found."""
    return [n for n in (names or ("mlir-opt",)) if find_tool(n) is None]


def find_libdevice() -> str | None:
    """A ``libdevice.10.bc`` to link the ``math`` functions against, or None."""
    env = os.environ.get("MYTRITON_LIBDEVICE")
    if env:
        return env if os.path.isfile(env) else None
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    roots += sorted(glob.glob("/usr/local/cuda*"), reverse=True) + ["/usr/lib/cuda", "/opt/cuda"]
    patterns = [os.path.join(r, "nvvm", "libdevice", "libdevice*.bc") for r in roots if r]
    for package, subpatterns in (("nvidia", ("*/nvvm/libdevice/libdevice*.bc", "nvvm/libdevice/libdevice*.bc")),
                                 ("triton", ("backends/nvidia/lib/libdevice*.bc",))):
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec else []:
            patterns += [os.path.join(location, p) for p in subpatterns]
    for pattern in patterns:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    return None


def run(tool: str, args: list[str], stdin: str | bytes, what: str, timeout: float = 120) -> str | bytes:
    """Run ``tool`` on ``stdin``; its stdout, or ``MLIRToolError`` with its diagnostics."""
    path = require_tool(tool)
    binary = isinstance(stdin, bytes)
    proc = subprocess.run([path, *args], input=stdin, capture_output=True, timeout=timeout, text=not binary)
    if proc.returncode != 0:
        stderr = proc.stderr.decode(errors="replace") if binary else proc.stderr
        raise MLIRToolError(f"{tool} failed to {what} (exit status {proc.returncode})", stderr)
    return proc.stdout


def mlir_opt(text: str, *args: str, what: str = "process the module") -> str:
    return run("mlir-opt", list(args), text, what)


def verify(text: str) -> str:
    """mlir-opt parses and verifies ``text``; returns the module as mlir-opt prints it."""
    return mlir_opt(text, what="parse and verify the module")


def run_many(texts: list[str], *args: str, what: str) -> list[str]:
    """mlir-opt on many modules in one process (``--split-input-file``): one output per module.
    When the batch fails, the modules are rerun one by one so the error names the bad one."""
    if not texts:
        return []
    try:
        out = mlir_opt(_SPLIT.join(texts), "--split-input-file", *args, what=what)
    except MLIRToolError:
        for i, text in enumerate(texts):
            try:
                mlir_opt(text, *args, what=what)
            except MLIRToolError as e:
                raise MLIRToolError(f"module {i} of {len(texts)}: {e}", e.stderr) from None
        raise
    parts = re.split(r"^// -----$", out, flags=re.M)
    if len(parts) != len(texts):
        raise MLIRToolError(f"mlir-opt returned {len(parts)} modules for {len(texts)}")
    return parts


def verify_many(texts: list[str]) -> list[str | None]:
    """Verify many modules in one mlir-opt run; for each, None or the diagnostics that reject it."""
    try:
        run_many(texts, what="parse and verify the modules")
        return [None] * len(texts)
    except MLIRToolError:
        pass
    return [_diagnostics(t) for t in texts]           # some module failed: find which, one by one


def _diagnostics(text: str) -> str | None:
    try:
        verify(text)
        return None
    except MLIRToolError as e:
        return e.stderr or str(e)


def lower_to_nvvm(text: str) -> str:
    """The module lowered to the LLVM dialect with NVVM intrinsics (what becomes LLVM IR)."""
    return mlir_opt(text, f"--pass-pipeline=builtin.module({NVVM_PIPELINE})", what="lower the module to NVVM")


def _binary_pipeline(chip: str) -> str:
    libdevice = find_libdevice()
    attach = f"nvvm-attach-target{{chip={chip} O=3" + (f" l={libdevice}" if libdevice else "") + "}"
    return f"--pass-pipeline=builtin.module({attach},{NVVM_PIPELINE},gpu-module-to-binary{{format=isa}})"


def to_ptx(text: str, chip: str = "sm_90") -> str:
    """PTX for the module's kernel, made by MLIR's NVPTX serializer (no CUDA toolkit needed, but a
    kernel that calls ``math`` functions needs libdevice: see ``find_libdevice``)."""
    return to_ptx_many([text], chip)[0]


def to_ptx_many(texts: list[str], chip: str = "sm_90") -> list[str]:
    outs = run_many(texts, _binary_pipeline(chip), what=f"serialize the module to PTX for {chip}")
    return [_checked_ptx(_object_bytes(out, "assembly").rstrip(b"\0").decode()) for out in outs]


def _checked_ptx(ptx: str) -> str:
    unresolved = sorted(set(re.findall(r"\.extern \.func[^;]*?(__nv_\w+)", ptx)))
    if unresolved:
        raise MLIRToolError(f"the PTX calls libdevice functions ({', '.join(unresolved)}) but no libdevice.10.bc "
                            "was found; set MYTRITON_LIBDEVICE or CUDA_HOME")
    return ptx


def to_llvm_ir(text: str) -> str:
    """LLVM IR (text) of the module's kernel: the NVVM-lowered ``gpu.module``'s functions, moved
    into a module for the ``nvptx64-nvidia-cuda`` triple and translated by ``mlir-translate``.
    libdevice is not linked here (``math`` functions stay ``declare``d ``__nv_*`` calls); ``llc
    -march=nvptx64`` makes PTX from it for kernels that call none."""
    body = _gpu_module_body(lower_to_nvvm(text))
    module = 'module attributes {llvm.target_triple = "nvptx64-nvidia-cuda"} {\n' + body + "}\n"
    return run("mlir-translate", ["--mlir-to-llvmir"], module, "translate the module to LLVM IR")


def _gpu_module_body(lowered: str) -> str:
    """The ops inside the (single) ``gpu.module`` of mlir-opt's output."""
    lines = lowered.splitlines()
    for i, line in enumerate(lines):
        head = re.match(r"^(\s*)gpu\.module @", line)
        if head and line.rstrip().endswith("{"):
            close = head.group(1) + "}"
            end = next(j for j in range(i + 1, len(lines)) if lines[j].rstrip() == close)
            return "\n".join(lines[i + 1:end]) + "\n"
    raise MLIRToolError("no gpu.module in the lowered module")


def _object_bytes(module_text: str, key: str) -> bytes:
    """The payload of the ``gpu.binary``'s object (``assembly = "..."``), unescaped from MLIR's
    string syntax, where ``\\`` is a backslash and ``\\XX`` a hex byte (a quote is always escaped)."""
    start = module_text.find(f'{key} = "')
    if start < 0:
        raise MLIRToolError(f"mlir-opt produced no {key} in the gpu.binary")
    start += len(key) + 4
    payload = module_text[start:module_text.index('"', start)]
    text = re.sub(r"\\(\\|[0-9A-Fa-f]{2})", lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1), 16)),
                  payload)
    return text.encode("latin-1")
