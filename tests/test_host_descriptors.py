"""Tensor descriptors made on the host (``mytriton.tools.tensor_descriptor.TensorDescriptor``,
Triton's host-side descriptors) passed to kernels: the checks Triton makes when one is built, the
``tensordesc<...>`` parameter type, the interpreter against numpy, and the generated CUDA (CPU
emulator) against the interpreter, the descriptor passed as its leaves."""
import struct

import numpy as np
import pytest

import mytriton
from mytriton.compiler import build_ssa
from mytriton.frontend import descriptors
from mytriton.runtime import driver as rt
from mytriton.tools.tensor_descriptor import TensorDescriptor
from tests import cuda_emulator
from tests.kernel_files import compile_error
from tests.kernels import host_descriptors as K

RNG = np.random.default_rng(23)
EMULATOR = pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")


def padded(m, n, dtype, pad_to=16):
    """An (m, n) array stored in rows padded to 16 bytes (as descriptors want), its values and view."""
    per_row = -(-n * np.dtype(dtype).itemsize // pad_to) * pad_to // np.dtype(dtype).itemsize
    storage = np.zeros((m, per_row), dtype)
    storage[:, :n] = RNG.standard_normal((m, n)).astype(dtype)
    return storage, per_row


@pytest.mark.parametrize("padding", ["zero", "nan"])
@pytest.mark.parametrize("dt", [np.float16, np.float32])
def test_copy_through_host_descriptors_in_the_interpreter(padding, dt):
    m, n = 37, 50
    x, stride = padded(m, n, dt)
    y = np.full_like(x, 7)
    K.copy_add[(3, 2)](TensorDescriptor(x, [m, n], [stride, 1], [16, 32], padding),
                       TensorDescriptor(y, [m, n], [stride, 1], [16, 32]), BM=16, BN=32)
    np.testing.assert_array_equal(y[:, :n], x[:, :n] + dt(1))
    assert np.all(y[:, n:] == 7)                       # (out of bounds: not written)


def test_from_tensor_and_a_descriptor_walked_in_a_loop():
    x = RNG.standard_normal((40, 96)).astype(np.float32)
    out = np.zeros(64, np.float32)
    K.row_sums[(2,)](TensorDescriptor.from_tensor(x, [32, 32]), out, BM=32, BN=32)
    np.testing.assert_allclose(out[:40], x.sum(1), rtol=1e-5, atol=1e-5)


@EMULATOR
@pytest.mark.parametrize("dt,name", [(np.float16, "fp16"), (np.float32, "fp32")])
def test_emulated_cuda_agrees_with_the_interpreter(dt, name):
    m, n = 37, 50
    x, stride = padded(m, n, dt)
    got, want = np.zeros_like(x), np.zeros_like(x)
    ty = f"tensordesc<{name}[16, 32]>"
    ck = mytriton.compile(K.copy_add, {"in_desc": ty, "out_desc": ty}, {"BM": 16, "BN": 32}, num_warps=4)
    # the kernel takes each descriptor as its leaves: base, shape, strides but the last
    cuda_emulator.run(ck.asm["cu"], [x, m, n, stride, got, m, n, stride], (3, 2))
    K.copy_add[(3, 2)](TensorDescriptor(x, [m, n], [stride, 1], [16, 32]),
                       TensorDescriptor(want, [m, n], [stride, 1], [16, 32]), BM=16, BN=32)
    np.testing.assert_array_equal(got, want)


def test_a_descriptor_parameter_is_its_leaves():
    fn = build_ssa(K.copy_add, {"in_desc": "tensordesc<fp16[16, 32]>", "out_desc": "tensordesc<fp16[16, 32],nan>"},
                   {"BM": 16, "BN": 32})
    assert [(p.name, str(p.type), p.align) for p in fn.params] == [
        ("in_desc__base", "ptr<f16>", 16), ("in_desc__shape0", "i32", 0), ("in_desc__shape1", "i32", 0),
        ("in_desc__stride0", "i64", 8),
        ("out_desc__base", "ptr<f16>", 16), ("out_desc__shape0", "i32", 0), ("out_desc__shape1", "i32", 0),
        ("out_desc__stride0", "i64", 8)]
    t = descriptors.parse("tensordesc<fp16[16, 32],nan>")
    assert (t.dtype, t.block_shape, t.padding, t.text()) == ("fp16", (16, 32), "nan", "tensordesc<fp16[16, 32],nan>")
    assert descriptors.parse("*fp16:16") is None


@pytest.mark.parametrize("text,message", [
    ("tensordesc<fp16[16, 24]>", "the block shape must hold powers of 2"),
    ("tensordesc<half[16]>", "unknown element type 'half'"),
    ("tensordesc<fp16>", "expected tensordesc<dtype[d0, d1, ...]>"),
    ("tensordesc<fp16[2, 2, 2, 2, 2, 16]>", "at most 5 dimensions"),
])
def test_a_bad_descriptor_type_is_an_error_naming_the_parameter(text, message):
    with pytest.raises(mytriton.CompilationError) as e:
        mytriton.compile(K.copy_add, {"in_desc": text, "out_desc": "tensordesc<fp16[16, 32]>"}, {"BM": 16, "BN": 32})
    assert "parameter 'in_desc'" in str(e.value) and message in str(e.value)


def test_a_leaf_named_like_another_parameter_is_an_error(tmp_path):
    src = ("import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\n"
           "def k(d, d__base):\n    d.store([0], tl.zeros((16,), tl.float32))\n")
    err = compile_error(tmp_path / "clash.py", src, {"d": "tensordesc<fp32[16]>", "d__base": "i32"})
    assert "parameter 'd': its leaf 'd__base' has the name of another parameter" in err


X = np.zeros((8, 16), np.float32)


@pytest.mark.parametrize("args,message", [
    ((X, [8, 16], [16, 2], [8, 16]), "the last dimension must be contiguous"),
    ((X, [8, 16], [3, 1], [8, 16]), "every stride but the last must be a multiple of 16 bytes"),
    ((X, [8, 16], [16, 1], [8, 2]), "must hold at least 16 bytes"),
    ((X, [8, 16], [16, 1], [8, 12]), "block_shape must hold powers of 2"),
    ((X, [8, 0], [16, 1], [8, 16]), "shape must be positive"),
    ((X, [8, 16], [16, 1], [8]), "must have the same length"),
    ((X[:, 1:], [8, 15], [16, 1], [8, 16]), "the base must be 16-byte aligned"),
    ((X, [8] * 6, [16] * 5 + [1], [8] * 6), "1 to 5 dimensions"),
    ((X, [8, 16], [16, 1], [8, 16], "inf"), "padding must be 'zero' or 'nan'"),
])
def test_tensor_descriptors_are_checked_as_triton_checks_them(args, message):
    with pytest.raises(ValueError, match=message):
        TensorDescriptor(*args)


@pytest.fixture
def fake(monkeypatch):
    from tests.test_runtime_cpu import FakeDriver, install_fake_driver
    drv = install_fake_driver(monkeypatch, FakeDriver())
    monkeypatch.delenv("MYTRITON_INTERPRET", raising=False)
    K.copy_add._cache.clear()
    K.copy_add._fast.clear()
    return drv


def test_a_jit_launch_passes_each_descriptor_as_its_leaves(fake):
    """The JIT's launch path on the CPU (the fake driver of tests/test_runtime_cpu.py; NVRTC compiles
    for real): device arrays behind the descriptors, the kernel compiled for their type, the
    launch's arguments the leaves in order, on the full path and on the fast one. A device of
    compute capability 8.0: plain loads and stores, no tensor maps."""
    fake.cc = (8, 0)
    x, y = rt.DeviceArray(37 * 56, "fp16"), rt.DeviceArray(37 * 56, "fp16")
    fake.param_sizes = [8, 4, 4, 8] * 2
    k = K.copy_add[(3, 2)](TensorDescriptor(x, [37, 50], [56, 1], [16, 32]),
                           TensorDescriptor(y, [37, 50], [56, 1], [16, 32], "nan"), BM=16, BN=32)
    assert [(n, str(t)) for n, t in k.params] == [
        ("in_desc__base", "*fp16:16"), ("in_desc__shape0", "i32"), ("in_desc__shape1", "i32"),
        ("in_desc__stride0", "i64:8"), ("out_desc__base", "*fp16:16"), ("out_desc__shape0", "i32"),
        ("out_desc__shape1", "i32"), ("out_desc__stride0", "i64:8")]
    assert "cp.async.bulk.tensor" not in k.asm["cu"] and not fake.tensor_maps
    leaves = [struct.pack("<Q", x.ptr), struct.pack("<i", 37), struct.pack("<i", 50), struct.pack("<q", 56)]
    assert fake.launches[-1]["args"] == leaves + [struct.pack("<Q", y.ptr)] + leaves[1:]
    again = K.copy_add[(3, 2)](TensorDescriptor(x, [37, 50], [56, 1], [16, 32]),
                               TensorDescriptor(y, [37, 50], [56, 1], [16, 32], "nan"), BM=16, BN=32)
    other = K.copy_add[(3, 2)](TensorDescriptor(x, [37, 50], [56, 1], [16, 32]),
                               TensorDescriptor(y, [37, 50], [56, 1], [16, 32]), BM=16, BN=32)
    assert again is k and other is not k                 # (the padding is part of the specialization)
    assert len(K.copy_add._fast) == 2                    # both remembered by the JIT's fast path,
    fake.launches.clear()
    assert K.copy_add[(3, 2)](TensorDescriptor(x, [37, 50], [56, 1], [16, 32]),
                              TensorDescriptor(y, [37, 50], [56, 1], [16, 32], "nan"), BM=16, BN=32) is k
    assert fake.launches[-1]["args"] == leaves + [struct.pack("<Q", y.ptr)] + leaves[1:]   # which flattens too


def test_on_hopper_a_jit_launch_passes_each_descriptor_with_its_tensor_map(fake):
    """Compute capability 9.0 (the sm_90a target): each descriptor's loads and stores are TMA
    copies, and its leaves end with its tensor map, encoded once per distinct argument (dimensions
    and box innermost first, strides in bytes, NaN padding as TMA's NaN fill) and passed by value."""
    from tests.test_runtime_cpu import fake_tensor_map
    x, y = rt.DeviceArray(37 * 56, "fp16"), rt.DeviceArray(37 * 56, "fp16")
    fake.param_sizes = [8, 4, 4, 8, 128] * 2
    k = K.copy_add[(3, 2)](TensorDescriptor(x, [37, 50], [56, 1], [16, 32], "nan"),
                           TensorDescriptor(y, [37, 50], [56, 1], [16, 32]), BM=16, BN=32)
    assert [(n, str(t)) for n, t in k.params][3:6] == [("in_desc__stride0", "i64:8"), ("in_desc__tmap", "tmap"),
                                                      ("out_desc__base", "*fp16:16")]
    cu = k.asm["cu"]
    assert "const __grid_constant__ mt_tmap p_in_desc__tmap" in cu
    assert "mt_tma_load_2d(tile, &p_in_desc__tmap, bar, 1024u, v3, v1)" in cu      # (innermost coordinate first)
    assert "mt_tma_store_2d(tile + 0, &p_out_desc__tmap, v3, v1);" in cu       # (only stored: swizzled)
    common = dict(dtype="FLOAT16", rank=2, dims=[50, 37], strides=[112], box=[32, 16], element_strides=[1, 1],
                  interleave="CU_TENSOR_MAP_INTERLEAVE_NONE", swizzle="CU_TENSOR_MAP_SWIZZLE_NONE",
                  l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_L2_128B")
    want = [dict(common, address=x.ptr, fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"),
            dict(common, address=y.ptr, fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE", swizzle="CU_TENSOR_MAP_SWIZZLE_64B")]
    for call in want:
        call["dtype"] = "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"
    assert fake.tensor_maps == want
    leaves = [struct.pack("<i", 37), struct.pack("<i", 50), struct.pack("<q", 56)]
    expected = ([struct.pack("<Q", x.ptr), *leaves, fake_tensor_map(want[0])]
                + [struct.pack("<Q", y.ptr), *leaves, fake_tensor_map(want[1])])
    assert fake.launches[-1]["args"] == expected
    fake.launches.clear()                                # the fast path: the same bytes, no new encoding
    K.copy_add[(3, 2)](TensorDescriptor(x, [37, 50], [56, 1], [16, 32], "nan"),
                       TensorDescriptor(y, [37, 50], [56, 1], [16, 32]), BM=16, BN=32)
    assert fake.launches[-1]["args"] == expected and len(fake.tensor_maps) == 2
    K.copy_add[(3, 2)](TensorDescriptor(x, [37, 48], [56, 1], [16, 32], "nan"),     # another shape: encoded
                       TensorDescriptor(y, [37, 50], [56, 1], [16, 32]), BM=16, BN=32)
    assert fake.tensor_maps[-1]["dims"] == [48, 37] and len(fake.tensor_maps) == 3


def test_a_block_tma_cannot_copy_keeps_plain_loads(fake):
    """A block dimension over 256 elements (TMA's box limit): the descriptor has no tensor map,
    also on Hopper."""
    x = rt.DeviceArray(64 * 512, "fp32")
    k = K.copy_add[(1, 1)](TensorDescriptor(x, [64, 512], [512, 1], [2, 512]),
                           TensorDescriptor(x, [64, 512], [512, 1], [2, 512]), BM=2, BN=512)
    assert "tmap" not in [str(t) for _, t in k.params] and "cp.async.bulk" not in k.asm["cu"]
    assert not fake.tensor_maps


def test_a_tensor_map_parameter_takes_128_bytes_by_value(fake):
    """The runtime's packing of a ``tmap`` parameter: its 128 bytes between 8-byte slots; anything
    else is refused before a launch, naming the parameter; the type grammar of manifests and
    signatures does not know it."""
    fake.param_sizes = [8, 128, 4]
    k = rt.Kernel("k", [("p", "*fp32"), ("m", "tmap"), ("n", "i32")], 4, 0, {"sm_90": b"\x7fELF"})
    data = bytes(range(128))
    k.launch(1, [0x1000, data, 5])
    assert fake.launches[-1]["args"] == [struct.pack("<Q", 0x1000), data, struct.pack("<i", 5)]
    for bad in (data[:64], bytearray(data), None):
        with pytest.raises(TypeError, match=r"parameter 'm' expects a tensor map \(128 bytes"):
            k.launch(1, [0x1000, bad, 5])
    assert len(fake.launches) == 1
    with pytest.raises(ValueError, match="unknown type 'tmap'"):
        rt.parse_type("tmap")


MATMUL_SIG = {"a_desc": "tensordesc<fp16[64, 32]>", "b_desc": "tensordesc<fp16[32, 64]>",
              "c_desc": "tensordesc<fp16[64, 64]>", "K": "i32"}


def test_a_descriptor_matmul_copies_its_operands_by_tma_into_the_rings_of_wgmma():
    """A's and B's blocks in the K loop: TMA copies issued S - 1 iterations ahead straight into the
    dot's swizzled rings, one box per 128-byte swizzle atom, each stage's mbarrier waited on at
    the loop's top (no element-wise fallback: the offsets along the rows are multiples of 16
    bytes); the host encodes their tensor maps in those boxes and swizzles. C's store is a TMA
    copy of its tile written swizzled too (with the element-wise copy beside it, for offsets TMA
    cannot take); sm_90: plain loads and stores."""
    ck = mytriton.compile(K.desc_matmul, MATMUL_SIG, {"BM": 64, "BN": 64, "BK": 32}, target="sm_90a", num_stages=3)
    assert [n for n in ck.metadata["signature"] if n.endswith("__tmap")] == ["a_desc__tmap", "b_desc__tmap",
                                                                               "c_desc__tmap"]
    # A: 64 rows of 32 halves (64-byte rows: swizzled by 64 bytes); B: 32 rows of 64 halves
    assert ck.metadata["tensor_maps"] == {"a_desc__tmap": {"box": [64, 32], "swizzle": 64},
                                          "b_desc__tmap": {"box": [32, 64], "swizzle": 128},
                                          "c_desc__tmap": {"box": [64, 64], "swizzle": 128}}
    cu = ck.asm["cu"]
    assert "mt_tma_load_2d(" not in cu and cu.count("if (tid == 0) { mt_tma_store_2d(tile + 0, ") == 1
    # two copies in front of the loop (iterations 0 and 1) and one in it (i + 2), for each operand
    assert cu.count("mt_tma_copy_2d(reinterpret_cast<unsigned char*>(") == 6
    assert cu.count("mt_mbarrier_wait_parity(reinterpret_cast") == 1 and "wgmma.mma_async" in cu
    assert "mt_cp_async" not in cu.split("int main")[0].split("__global__")[1]
    ptx = ck.asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == 6
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx and "wgmma.mma_async" in ptx
    plain = mytriton.compile(K.desc_matmul, MATMUL_SIG, {"BM": 64, "BN": 64, "BK": 32}, target="sm_90", num_stages=3)
    assert not [n for n in plain.metadata["signature"] if n.endswith("__tmap")] and "tma" not in plain.asm["cu"]
    assert plain.metadata["tensor_maps"] == {}


@pytest.mark.parametrize("block, swizzled", [((64, 128), False), ((16, 32), True)])
def test_a_store_tile_is_swizzled_only_for_values_of_narrow_runs(block, swizzled):
    """copy_add's 64x128 fp16 blocks on 4 warps hold 16-byte runs: their row-major tile is written
    a warp's 512 consecutive bytes at a time, and stays row-major (its map unswizzled); 16x32 blocks
    hold 8-byte runs, whose rows would meet in a bank: swizzled by their 64-byte rows."""
    ty = f"tensordesc<fp16[{block[0]}, {block[1]}]>"
    ck = mytriton.compile(K.copy_add, {"in_desc": ty, "out_desc": ty}, {"BM": block[0], "BN": block[1]},
                          target="sm_90a", num_warps=4)
    want = {"out_desc__tmap": {"box": [block[0], block[1]], "swizzle": 64}} if swizzled else {}
    assert ck.metadata["tensor_maps"] == want
    assert ("mt_align_up(mt_smem, 1024)" in ck.asm["cu"]) == swizzled


def test_a_descriptor_read_outside_the_ring_keeps_its_own_tma_copies():
    """A's descriptor is also read after the loop, in its block's box: its tensor map cannot be
    the ring's swizzled one, so its copies in the loop stay TMA copies of the block (through
    registers), and without A's ring the dot is no wgmma: B's copies stay too."""
    sig = dict(MATMUL_SIG, first_ptr="*fp16")
    ck = mytriton.compile(K.desc_matmul_and_first_block, sig, {"BM": 64, "BN": 64, "BK": 32}, target="sm_90a",
                          num_stages=3)
    cu = ck.asm["cu"]
    assert list(ck.metadata["tensor_maps"]) == ["c_desc__tmap"] and "mt_tma_copy_2d(reinterpret_cast" not in cu
    assert "mt_tma_load_2d(tile, &p_a_desc__tmap, bar, 4096u" in cu and "wgmma.mma_async" not in cu


def test_a_row_offset_not_proven_16_byte_aligned_keeps_the_element_wise_fallback():
    """TMA refuses a box at an offset along the rows that is not a multiple of 16 bytes, and a ring
    has no element-wise fallback: ``k + shift`` (shift a run-time int) keeps A's copies where they
    are, with the run-time test that picks the element-wise copy (and B's with them, as above);
    with ``shift`` promised divisible by 16 (``i32:16``) both fill rings."""
    ck = mytriton.compile(K.desc_matmul_shifted, dict(MATMUL_SIG, shift="i32"), {"BM": 64, "BN": 64, "BK": 32},
                          target="sm_90a", num_stages=3)
    assert list(ck.metadata["tensor_maps"]) == ["c_desc__tmap"] and "mt_tma_load_2d(tile, &p_a_desc__tmap" in ck.asm["cu"]
    ck = mytriton.compile(K.desc_matmul_shifted, dict(MATMUL_SIG, shift="i32:16"), {"BM": 64, "BN": 64, "BK": 32},
                          target="sm_90a", num_stages=3)
    assert set(ck.metadata["tensor_maps"]) == {"a_desc__tmap", "b_desc__tmap", "c_desc__tmap"}


@EMULATOR
@pytest.mark.parametrize("m, n, k, bm, bn, bk, warps, kernel", [
    (100, 72, 96, 64, 64, 32, 4, "nn"),        # ragged edges: boxes partly out of bounds read zeros
    (64, 128, 160, 64, 128, 64, 4, "nn"),      # B's 256-byte rows: two 128-byte swizzle atoms a box row
    (128, 80, 100, 128, 64, 32, 8, "nt"),      # B^T read through tl.trans, 4 stages, two warpgroups
    (64, 64, 16, 64, 64, 32, 4, "nn"),         # K smaller than BK: one iteration, copies ahead skipped
    (200, 136, 80, 64, 64, 32, 4, "persistent"),   # 2 programs over 12 tiles: rings begin again a tile
])
def test_emulated_tma_rings_compute_the_matmul(m, n, k, bm, bn, bk, warps, kernel):
    """The generated sm_90a code on the CPU (tests/cuda_emulator: TMA copies deferred until their
    mbarrier is waited on, written swizzled; wgmma read through its descriptors) against numpy."""
    from tests.cuda_emulator import EmulatedTensorMap
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    want = a.astype(np.float32) @ b.astype(np.float32)
    constexprs = {"BM": bm, "BN": bn, "BK": bk}
    grid = (-(-m // bm), -(-n // bn))
    if kernel in ("nn", "persistent"):
        sig = {"a_desc": f"tensordesc<fp16[{bm}, {bk}]>", "b_desc": f"tensordesc<fp16[{bk}, {bn}]>",
               "c_desc": f"tensordesc<fp16[{bm}, {bn}]>", "K": "i32"}
        fn, sizes = K.desc_matmul, [k]
        if kernel == "persistent":
            fn, sizes, grid = K.desc_matmul_persistent, [m, n, k], (2,)
            sig = {**{p: t for p, t in sig.items() if p != "K"}, "M": "i32", "N": "i32", "K": "i32"}
        ck = mytriton.compile(fn, sig, constexprs, target="sm_90a", num_warps=warps, num_stages=3)
        maps = ck.metadata["tensor_maps"]
        c = np.full((m, n), 7, np.float16)
        cuda_emulator.run(ck.asm["cu"], [
            a, m, k, k, EmulatedTensorMap(a, maps["a_desc__tmap"]["box"], maps["a_desc__tmap"]["swizzle"]),
            b, k, n, n, EmulatedTensorMap(b, maps["b_desc__tmap"]["box"], maps["b_desc__tmap"]["swizzle"]),
            c, m, n, n, None, *sizes], grid)
        np.testing.assert_allclose(c.astype(np.float32), want, rtol=1e-2, atol=3e-2)
    else:
        bt = np.ascontiguousarray(b.T)
        sig = {"a_desc": f"tensordesc<fp16[{bm}, {bk}]>", "bt_desc": f"tensordesc<fp16[{bn}, {bk}]>",
               "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "stride_cm": "i32"}
        ck = mytriton.compile(K.desc_matmul_nt, sig, constexprs, target="sm_90a", num_warps=warps)
        maps = ck.metadata["tensor_maps"]
        assert set(maps) == {"a_desc__tmap", "bt_desc__tmap"} and "mt_tma_load_2d(" not in ck.asm["cu"]
        c = np.zeros((m, n), np.float32)
        cuda_emulator.run(ck.asm["cu"], [
            a, m, k, k, EmulatedTensorMap(a, maps["a_desc__tmap"]["box"], maps["a_desc__tmap"]["swizzle"]),
            bt, n, k, k, EmulatedTensorMap(bt, maps["bt_desc__tmap"]["box"], maps["bt_desc__tmap"]["swizzle"]),
            c, m, n, k, n], grid)
        np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3)


def test_on_hopper_a_jit_launch_encodes_ring_tensor_maps_in_their_box_and_swizzle(fake):
    """The JIT's launch of the descriptor matmul on compute capability 9.0: A's and B's tensor maps
    are encoded with the ring's boxes and swizzles (the kernel's ``tensor_maps``), C's (only
    stored) swizzled by 128 bytes."""
    a, b, c = rt.DeviceArray(128 * 96, "fp16"), rt.DeviceArray(96 * 64, "fp16"), rt.DeviceArray(128 * 64, "fp16")
    fake.param_sizes = [8, 4, 4, 8, 128] * 3 + [4]
    K.desc_matmul._cache.clear()
    K.desc_matmul._fast.clear()
    K.desc_matmul[(2, 1)](TensorDescriptor(a, [128, 96], [96, 1], [64, 32]),
                          TensorDescriptor(b, [96, 64], [64, 1], [32, 64]),
                          TensorDescriptor(c, [128, 64], [64, 1], [64, 64]), 96, BM=64, BN=64, BK=32)
    got = [(t["address"], t["box"], t["swizzle"]) for t in fake.tensor_maps]
    assert got == [(a.ptr, [32, 64], "CU_TENSOR_MAP_SWIZZLE_64B"), (b.ptr, [64, 32], "CU_TENSOR_MAP_SWIZZLE_128B"),
                   (c.ptr, [64, 64], "CU_TENSOR_MAP_SWIZZLE_128B")]


def test_one_dimensional_descriptors_keep_ordinary_loads():
    ck = mytriton.compile(K.copy_1d, {"in_desc": "tensordesc<fp32[128]>", "out_desc": "tensordesc<fp32[128]>"},
                          {"B": 128}, target="sm_90a")
    assert "tmap" not in ck.metadata["signature"].values() and "mt_tma" not in ck.asm["cu"]


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("dtype, padding", [("float16", "zero"), ("float32", "nan"), ("int8", "zero"),
                                            ("float64", "zero")])
@pytest.mark.parametrize("shift", [0, 5, -3, 70])
def test_the_element_wise_path_of_tma_copies_as_the_interpreter(dtype, padding, shift):
    """The copy the threads make where TMA cannot (backends/cuda/tma.py), which the CPU emulator
    always takes: sm_90a code of loads off the block grid (negative, and wholly out of bounds with
    shift 70) and stores past the shape's edge, against the interpreter."""
    m, n, stride = 45, 70, 80
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((m, stride)) * 50).clip(-100, 100).astype(dtype)
    t = f"tensordesc<{rt.dtype_named(dtype)}[16, 64]{',nan' if padding == 'nan' else ''}>"
    ck = mytriton.compile(K.shifted_copy, {"in_desc": t, "out_desc": t.replace(",nan", ""), "shift": "i32"},
                          {"BM": 16, "BN": 64}, target="sm_90a")
    assert "mt_tma_load_2d" in ck.asm["cu"] and "mt_tma_store_2d" in ck.asm["cu"]
    grid = (3, 2)
    ours, want = np.full_like(x, 7), np.full_like(x, 7)
    leaves = lambda a: [a, m, n, stride, None]                       # (base, shape, stride 0, tensor map)
    cuda_emulator.run(ck.asm["cu"], [*leaves(x), *leaves(ours), shift], grid)
    K.shifted_copy[grid](TensorDescriptor(x, [m, n], [stride, 1], [16, 64], padding),
                         TensorDescriptor(want, [m, n], [stride, 1], [16, 64]), shift, BM=16, BN=64)
    np.testing.assert_array_equal(ours, want)
    assert (ours[:, n:] == 7).all()
