"""mytriton.compile: stages, metadata, backends."""
import mytriton
from tests.kernels import basic

SIG = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32"}


def test_cuda_stages_and_metadata():
    ck = mytriton.compile(basic.add_kernel, signature=SIG, constexprs={"BLOCK": 512}, num_warps=2)
    assert set(ck.asm) >= {"ssa", "ssa_layout", "cu"}
    assert isinstance(ck.asm["cubin"], bytes) and ck.asm["ptx"].startswith("//")
    assert ck.metadata == {"name": "add_kernel", "num_warps": 2, "shared": 0, "target": "sm_90", "backend": "cuda",
                           "signature": SIG, "constexprs": {"BLOCK": 512}}
    assert "#blocked<spt=[4], tpw=[32], wpc=[2], order=[0]>" in ck.asm["ssa_layout"]


def test_positional_signature_and_sm80():
    ck = mytriton.compile(basic.add_kernel, signature="*fp32, *fp32, *fp32, i32", constexprs={"BLOCK": 64},
                          target="sm_80")
    assert ".target sm_80" in ck.asm["ptx"] and ck.asm["cubin"][:4] == b"\x7fELF"


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
