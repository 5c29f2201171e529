"""mytriton.compile: stages, metadata, backends."""
import pytest

import mytriton
from tests.kernels import basic

SIG = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32"}


def test_cuda_stages_and_metadata():
    ck = mytriton.compile(basic.add_kernel, signature=SIG, constexprs={"BLOCK": 512}, num_warps=2)
    assert set(ck.asm) >= {"ssa", "ssa_layout", "cu"}
    assert isinstance(ck.asm["cubin"], bytes) and ck.asm["ptx"].startswith("//")
    assert ck.metadata == {"name": "k_add_kernel", "num_warps": 2, "num_stages": None, "shared": 0, "target": "sm_90",
                           "backend": "cuda",
                           "signature": SIG, "constexprs": {"BLOCK": 512}, "tensor_maps": {},
                           "made_tensor_maps": [], "ptxas_options": [], "explain": []}
    assert "#blocked<spt=[4], tpw=[32], wpc=[2], order=[0]>" in ck.asm["ssa_layout"]


def test_positional_signature_and_sm80():
    ck = mytriton.compile(basic.add_kernel, signature="*fp32, *fp32, *fp32, i32", constexprs={"BLOCK": 64},
                          target="sm_80")
    assert ".target sm_80" in ck.asm["ptx"] and ck.asm["cubin"][:4] == b"\x7fELF"


def _virtual_arch_ptx(cu: str, arch: str) -> str:
    """The PTX of a compile for the virtual architecture (what a build once compiled apart)."""
    from cuda.bindings import nvrtc as bindings
    from mytriton.backends.cuda import nvrtc
    _, prog, _ = nvrtc._compile(cu, "/mytriton/add_kernel.cu", f"--gpu-architecture={arch}", True)
    try:
        _, size = bindings.nvrtcGetPTXSize(prog)
        buf = bytearray(size)
        bindings.nvrtcGetPTX(prog, buf)
        return bytes(buf).rstrip(b"\x00").decode()
    finally:
        bindings.nvrtcDestroyProgram(prog)


@pytest.mark.parametrize("target,arch", [("sm_80", "compute_80"), ("sm_90", "compute_90"), ("sm_90a", "compute_90a")])
def test_ptx_and_cubin_come_from_one_nvrtc_compile(monkeypatch, target, arch):
    """A build ships both; one compile for the real architecture gives them, and its PTX is the
    virtual architecture's byte for byte."""
    from mytriton.backends.cuda import nvrtc
    calls, real = [], nvrtc._compile
    monkeypatch.setattr(nvrtc, "_compile", lambda *a: calls.append(a[2]) or real(*a))
    ck = mytriton.compile(basic.add_kernel, signature=SIG, constexprs={"BLOCK": 512}, target=target, num_warps=2)
    ptx, cubin = ck.asm["ptx"], ck.asm["cubin"]
    assert calls == [f"--gpu-architecture={target}"] and cubin[:4] == b"\x7fELF"
    assert ptx == _virtual_arch_ptx(ck.asm["cu"], arch) and f".target {target}" in ptx


def test_shared_memory_is_reported_for_cross_warp_reductions():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
    import softmax
    ck = mytriton.compile(softmax.softmax_kernel, signature={"x": "*fp32", "y": "*fp32", "n_cols": "i32"},
                          constexprs={"BLOCK": 1024}, num_warps=4)
    assert ck.metadata["shared"] == 16            # one fp32 partial per warp


def test_mlir_backend_through_compile():
    ck = mytriton.compile(basic.add_kernel, signature=SIG, constexprs={"BLOCK": 128}, backend="mlir")
    assert "gpu.module" in ck.asm["mlir"] and "cu" not in ck.asm
    assert ck.metadata["backend"] == "mlir"


def test_nvrtc_leaves_python_bytes_intact():
    """Regression: NVRTC once wrote its empty log into Python's shared one-byte b" " object."""
    mytriton.compile(basic.add_kernel, signature=SIG, constexprs={"BLOCK": 64}).asm["cubin"]
    assert b" "[0] == 32 and " ".encode()[0] == 32 and bytes([32])[0] == 32


def test_half_precision_compiles_with_the_cuda_backend():
    """fp16 + fp32 computes in fp32 (Triton's promotion) and NVRTC finds cuda_fp16.h."""
    ck = mytriton.compile(basic.add_kernel, signature=dict(SIG, x_ptr="*fp16"), constexprs={"BLOCK": 64})
    assert "__half2float(" in ck.asm["cu"] and ck.asm["cubin"][:4] == b"\x7fELF"


def test_integer_division_compiles_for_every_integer_type():
    """mt_div/mt_mod instantiate for signed and unsigned types of every width (NVRTC accepts them)."""
    for t in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
        sig = {"a_ptr": f"*{t}", "b_ptr": f"*{t}", "out_ptr": f"*{t}", "n": "i32"}
        for op in ("floordiv", "mod"):
            ck = mytriton.compile(basic.op_kernel, signature=sig, constexprs={"OP": op, "BLOCK": 64})
            assert ck.asm["cubin"][:4] == b"\x7fELF"


def test_nvrtc_errors_name_the_kernel_line_they_came_from():
    from mytriton.backends.cuda import nvrtc
    src = ('extern "C" __global__ void k(float* x) {\n'
           "  // kern.py:12: y = tl.load(x + offs)\n"
           "  float v1 = undefined_thing;\n"
           "}\n")
    import pytest
    with pytest.raises(mytriton.NVRTCError) as info:
        nvrtc.compile_cubin(src, "/mytriton/k.cu", "sm_90")
    text = str(info.value)
    assert 'identifier "undefined_thing" is undefined' in text
    assert "(generated from kern.py:12: y = tl.load(x + offs))" in text
