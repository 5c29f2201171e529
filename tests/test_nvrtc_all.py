"""Every test kernel that compiles at all compiles through NVRTC to an sm_90 cubin (ELF) and PTX."""
import pytest

import mytriton
from tests.kernels import basic, lang, passes

F = "*fp32"
CASES = [
    (basic.add_kernel, {"x_ptr": F, "y_ptr": F, "out_ptr": F, "n": "i32"}, {"BLOCK": 256}),
    (basic.leaky_relu_kernel, {"x_ptr": F, "out_ptr": F, "n": "i32", "slope": "fp32"}, {"BLOCK": 1024}),
    (basic.factories_kernel, {"out": F, "value": "fp32"}, {"BLOCK": 8}),
    (basic.matmul_kernel, {"a": F, "b": F, "c": F, "M": "i32", "N": "i32", "K": "i32"}, {"BM": 32, "BN": 64}),
    (basic.swap_kernel, {"out": "*i32", "n": "i32"}, {}),
    (basic.nested_kernel, {"out": "*i32", "m": "i32", "n": "i32"}, {}),
    (basic.literal_kernel, {"x_ptr": "*i8", "out_ptr": "*i8", "n": "i32"}, {"BLOCK": 64}),
    (lang.unrolled, {"out": "*i32", "n": "i32"}, {"COUNT": 1000}),
    (lang.factory, {"out": F}, {"SHAPE": (4, 8), "KIND": "zeros"}),
    (lang.reductions, {"x": F, "out": F}, {"AXIS": 0, "KEEP": True}),
    (lang.broadcast_any_value, {"x": F, "out": F}, {}),
    (lang.calls_helper, {"x": F, "out": F}, {}),
    (lang.scaled, {"x": F, "out": F}, {"S": 2.5}),
    (lang.negative_index_arith, {"out": "*i32"}, {}),
    (lang.sum_size_one_axis, {"x": F, "out_rows": F, "out_all": F}, {"BLOCK": 32}),
    (passes.invariant_in_loop, {"x_ptr": F, "out": F, "n": "i32", "stride": "i32"}, {}),
    (passes.invariant_load, {"x_ptr": F, "scale_ptr": F, "out": F, "n": "i32"}, {}),
    (passes.load_after_store, {"x_ptr": F, "out": F, "n": "i32"}, {}),
    (passes.cse_across_loop, {"x_ptr": F, "out": F, "n": "i32", "m": "i32"}, {}),
]


@pytest.mark.parametrize("kernel,sig,ce", CASES, ids=[c[0].__name__ for c in CASES])
def test_cubin_and_ptx(kernel, sig, ce):
    ck = mytriton.compile(kernel, signature=sig, constexprs=ce)
    assert ck.asm["cubin"][:4] == b"\x7fELF"
    assert ".target sm_90" in ck.asm["ptx"] and f".entry k_{kernel.__name__}(" in ck.asm["ptx"]
