"""A kernel file of tests/kernels compiled by real Triton, for the GPU tests that run the same
source through both: its ``import mytriton`` lines pointed at Triton, written to a file of its own
(Triton's JIT reads a kernel's source from its file)."""
from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path


def triton_version(kernel_file):
    """The Triton module of ``kernel_file``, or None where Triton is not installed."""
    if importlib.util.find_spec("triton") is None:
        return None
    src = Path(kernel_file).read_text().replace("import mytriton as triton", "import triton").replace(
        "import mytriton.language as tl", "import triton.language as tl").replace(
        "from mytriton.language.extra import", "from triton.language.extra import")
    name = f"triton_{Path(kernel_file).stem}_kernels"
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_both(ours, theirs, name: str, grid, *args, **constexprs):
    """Kernel ``name`` of the module ``ours`` (mytriton) and of its Triton version ``theirs``, each
    on fresh copies of the tensor arguments; both argument lists after the launches (synchronized)."""
    import torch
    outs = []
    for module in (ours, theirs):
        copies = [a.clone() if torch.is_tensor(a) else a for a in args]
        getattr(module, name)[grid](*copies, **constexprs)
        outs.append(copies)
    torch.cuda.synchronize()
    return outs
