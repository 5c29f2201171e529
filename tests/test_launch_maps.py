"""Tensor descriptors made in the kernel whose tensor maps the runtime encodes at launch
(``frontend/launch_maps.py``): the recipes the compiler records, the TMA copies they give on the
sm_90a target, the launch's evaluation and encoding (a fake driver), its refusals, and a built
package whose images differ in whether they copy through the maps."""
import struct

import numpy as np
import pytest

import mytriton
from mytriton.runtime import driver as rt
from tests import cuda_emulator
from tests.kernels import made_descriptors as K
from tests.test_runtime_cpu import FakeCAI, FakeDriver, fake_tensor_map, install_fake_driver

RNG = np.random.default_rng(5)
EMULATOR = pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
COPY = {"x_ptr": "*fp16:16", "y_ptr": "*fp16:16", "M": "i32", "N": "i32"}


@pytest.fixture
def fake(monkeypatch):
    drv = install_fake_driver(monkeypatch, FakeDriver())
    monkeypatch.delenv("MYTRITON_INTERPRET", raising=False)
    for fn in (K.scaled_copy, K.batched_copy, K.per_program_copy):
        fn._cache.clear()
        fn._fast.clear()
    drv.cc = (9, 0)
    return drv


def test_the_recipes_of_descriptors_made_of_parameters():
    ck = mytriton.compile(K.scaled_copy, COPY, {"BM": 16, "BN": 64}, target="sm_90a")
    assert list(ck.metadata["signature"].items())[4:] == [("d0__made_tmap", "tmap"), ("d1__made_tmap", "tmap")]
    common = {"dtype": "fp16", "block": [16, 64], "padding": "zero", "shape": [["param", "M"], ["param", "N"]],
              "strides": [["cast", "i64", ["param", "N"]]], "box": [16, 64], "swizzle": 0}
    assert ck.metadata["made_tensor_maps"] == [
        {"name": "d0__made_tmap", "base": ["param", "x_ptr"], "where": "made_descriptors.py:11", **common},
        {"name": "d1__made_tmap", "base": ["param", "y_ptr"], "where": "made_descriptors.py:12", **common}]
    cu = ck.asm["cu"]
    assert "const __grid_constant__ mt_tmap p_d0__made_tmap" in cu and "mt_tma_load_2d(tile, &p_d0__made_tmap" in cu
    assert "cp.async.bulk.tensor.2d" in ck.asm["ptx"]


def test_expressions_of_parameters_and_one_map_per_distinct_descriptor():
    ck = mytriton.compile(K.batched_copy, {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "B": "i32", "M": "i32",
                                           "N": "i32", "ROW0": "i32"}, {"BM": 16, "BN": 32}, target="sm_90a")
    made = ck.metadata["made_tensor_maps"]
    assert [m["name"] for m in made] == ["d0__made_tmap", "d1__made_tmap"]      # (made twice: one map each)
    rows = ["sub", "i32", ["mul", "i32", ["param", "B"], ["param", "M"]], ["param", "ROW0"]]
    assert made[0]["base"] == ["addptr", 4, ["param", "x_ptr"], ["mul", "i32", ["param", "ROW0"], ["param", "N"]]]
    assert made[0]["shape"] == [rows, ["param", "N"]] and made[0]["strides"] == [["cast", "i64", ["param", "N"]]]
    assert made[1]["base"] == ["param", "y_ptr"] and made[1]["shape"] == [rows, ["param", "N"]]


def test_a_descriptor_that_depends_on_the_program_keeps_its_copies_in_the_threads():
    ck = mytriton.compile(K.per_program_copy, COPY, {"BM": 16, "BN": 64}, target="sm_90a")
    assert [m["base"] for m in ck.metadata["made_tensor_maps"]] == [["param", "y_ptr"]]
    assert ck.asm["cu"].count("mt_tma_load_") == 0 and "mt_tma_store_2d(" in ck.asm["cu"]


def test_a_descriptor_made_under_a_runtime_if_keeps_its_copies_in_the_threads():
    ck = mytriton.compile(K.guarded_copy, COPY, {"BM": 16, "BN": 64}, target="sm_90a")
    assert ck.metadata["made_tensor_maps"] == [] and "cp.async.bulk" not in ck.asm["ptx"]


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
def test_targets_without_tma_have_no_maps_unless_a_build_declares_them(target):
    ck = mytriton.compile(K.scaled_copy, COPY, {"BM": 16, "BN": 64}, target=target)
    assert ck.metadata["made_tensor_maps"] == [] and "tmap" not in ck.metadata["signature"].values()
    both = mytriton.compile(K.scaled_copy, COPY, {"BM": 16, "BN": 64}, target=target, hoist_tensor_maps=True)
    assert list(both.metadata["signature"])[4:] == ["d0__made_tmap", "d1__made_tmap"]
    assert "cp.async.bulk" not in both.asm["ptx"]          # (declared, unused: plain loads and stores)


def test_wrapping_evaluation_of_recipes():
    env = {"a": 2**31 - 1, "b": 3, "p": 0x1000}
    assert rt._evaluate(["add", "i32", ["param", "a"], ["const", 1]], env) == -2**31
    assert rt._evaluate(["mul", "i64", ["param", "a"], ["param", "b"]], env) == 3 * (2**31 - 1)
    assert rt._evaluate(["cast", "u32", ["sub", "i32", ["const", 0], ["param", "b"]]], env) == 2**32 - 3
    assert rt._evaluate(["cast", "i64", ["mul", "i32", ["param", "a"], ["param", "b"]]], env) == 2**31 - 3
    assert rt._evaluate(["addptr", 4, ["param", "p"], ["param", "b"]], env) == 0x100c


def test_a_jit_launch_encodes_the_maps_from_the_arguments(fake):
    """On compute capability 9.0 (sm_90a) the kernel takes its two maps after the caller's
    arguments; each is encoded once per distinct value of what it reads, in boxes of the block."""
    x, y = rt.DeviceArray(48 * 64, "fp16"), rt.DeviceArray(48 * 64, "fp16")
    fake.param_sizes = [8, 8, 4, 4, 128, 128]
    k = K.scaled_copy[(3, 1)](x, y, 45, 64, BM=16, BN=64)
    assert [(n, str(t)) for n, t in k.params][4:] == [("d0__made_tmap", "tmap"), ("d1__made_tmap", "tmap")]
    common = dict(dtype="CU_TENSOR_MAP_DATA_TYPE_FLOAT16", rank=2, dims=[64, 45], strides=[128], box=[64, 16],
                  element_strides=[1, 1], interleave="CU_TENSOR_MAP_INTERLEAVE_NONE",
                  swizzle="CU_TENSOR_MAP_SWIZZLE_NONE", l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_L2_128B",
                  fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")
    want = [dict(common, address=x.ptr), dict(common, address=y.ptr)]
    assert fake.tensor_maps == want
    expected = [struct.pack("<Q", x.ptr), struct.pack("<Q", y.ptr), struct.pack("<i", 45), struct.pack("<i", 64),
                fake_tensor_map(want[0]), fake_tensor_map(want[1])]
    assert fake.launches[-1]["args"] == expected
    K.scaled_copy[(3, 1)](x, y, 45, 64, BM=16, BN=64)                 # the same values: no new encoding
    assert fake.launches[-1]["args"] == expected and len(fake.tensor_maps) == 2
    K.scaled_copy[(3, 1)](x, y, 40, 64, BM=16, BN=64)                 # another M: both encoded again
    assert [m["dims"] for m in fake.tensor_maps[2:]] == [[64, 40], [64, 40]]
    with pytest.raises(TypeError, match=r"scaled_copy\(\) takes 4 runtime arguments \(x_ptr, y_ptr, M, N\) but 3"):
        k.launch((3, 1), [x, y, 45])


def test_a_descriptor_tma_cannot_copy_is_refused_at_launch_naming_its_line(fake):
    x = rt.DeviceArray(48 * 64 + 8, "fp16")
    fake.param_sizes = [8, 8, 4, 4, 128, 128]
    k = K.scaled_copy[(1, 1)](x, x, 16, 64, BM=16, BN=64)
    launched = len(fake.launches)
    where = r"scaled_copy: the tensor descriptor made at made_descriptors.py:11 \(tl.make_tensor_descriptor\)"
    with pytest.raises(ValueError, match=where + r" is copied by TMA in this kernel, and TMA cannot copy it: "
                                              r"its strides \[60, 1\] are not multiples of 16 bytes"):
        K.scaled_copy[(1, 1)](x, x, 16, 60, BM=16, BN=64)
    with pytest.raises(ValueError, match=r"its shape \[0, 64\] has a dimension outside 1..2\*\*32"):
        K.scaled_copy[(1, 1)](x, x, 0, 64, BM=16, BN=64)
    with pytest.raises(ValueError, match=r"its base 0x[0-9a-f]*2 is not 16-byte aligned"):
        K.scaled_copy[(1, 1)](FakeCAI(x.ptr + 2, "<f2"), x, 16, 64, BM=16, BN=64)
    with pytest.raises(TypeError, match=r"parameter 'M' expects i32:16, got float 16.0"):
        k.launch((1, 1), [x, x, 16.0, 64])
    assert len(fake.launches) == launched


def test_without_tma_the_jit_passes_no_maps(fake):
    fake.cc = (8, 0)
    x = rt.DeviceArray(48 * 60, "fp16")
    k = K.scaled_copy[(1, 1)](x, x, 16, 60, BM=16, BN=64)      # (strides TMA refuses: plain loads need none)
    assert "tmap" not in [str(t) for _, t in k.params] and not fake.tensor_maps


def two_image_family(recipe):
    """scaled_copy's family as a package built for sm_80 and sm_90a has it (fake images)."""
    return rt.KernelFamily("scaled_copy", list(COPY.items()), ["BM", "BN"], [
        {"id": "s0", "constexprs": {"BM": 16, "BN": 64}, "num_warps": 4, "shared": 0, "symbol": "scaled_copy",
         "images": {"sm_90a": b"\x7fELF a", "sm_80": b"\x7fELF b"}, "made_tensor_maps": recipe,
         "tma_images": ["sm_90a"]}])


def test_images_that_do_not_copy_through_the_maps_get_zeros_for_a_descriptor_tma_refuses(fake):
    """A package built for sm_90a and sm_80 declares the maps in both images; on compute
    capability 8.0 a descriptor TMA cannot copy is passed as zeros (its image reads plain memory),
    on 9.0 it is refused."""
    recipe = mytriton.compile(K.scaled_copy, COPY, {"BM": 16, "BN": 64}, target="sm_90a").metadata["made_tensor_maps"]
    k = rt.Kernel("scaled_copy", list(COPY.items()), 4, 0, {"sm_90a": b"\x7fELF a", "sm_80": b"\x7fELF b"},
                  made_tensor_maps=recipe, tma_images=["sm_90a"])
    fam = two_image_family(recipe)
    x, y = rt.DeviceArray(48 * 64, "fp16"), rt.DeviceArray(48 * 64, "fp16")
    fake.param_sizes = [8, 8, 4, 4, 128, 128]
    fake.cc = (8, 0)
    for launch in (lambda: k.launch((1, 1), [x, y, 16, 60]), lambda: fam[(1, 1)](x, y, 16, 60, BM=16, BN=64)):
        launch()
        assert fake.launches[-1]["args"][4:] == [bytes(128)] * 2
    fam[(1, 1)](x, y, 16, 64, BM=16, BN=64)                  # (maps TMA can copy: encoded, unused)
    assert fake.launches[-1]["args"][4:] == [fake_tensor_map(m) for m in fake.tensor_maps]


def test_on_hopper_a_family_refuses_what_its_sm_90a_image_cannot_copy(fake):
    recipe = mytriton.compile(K.scaled_copy, COPY, {"BM": 16, "BN": 64}, target="sm_90a").metadata["made_tensor_maps"]
    fam = two_image_family(recipe)
    x, y = rt.DeviceArray(48 * 64, "fp16"), rt.DeviceArray(48 * 64, "fp16")
    fake.param_sizes = [8, 8, 4, 4, 128, 128]
    fam[(1, 1)](x, y, 16, 64, BM=16, BN=64)
    assert fake.launches[-1]["args"][4:] == [fake_tensor_map(m) for m in fake.tensor_maps]
    with pytest.raises(ValueError, match=r"made_descriptors.py:11 .* its strides \[60, 1\]"):
        fam[(1, 1)](x, y, 16, 60, BM=16, BN=64)


@EMULATOR
def test_emulated_sm_90a_cuda_with_made_maps_agrees_with_numpy():
    """The sm_90a kernel's CUDA on the CPU (TMA copies take their element-wise path there; the map
    parameters are passed and not read)."""
    m, n = 45, 64
    x = RNG.standard_normal((m, n)).astype(np.float16)
    y = np.zeros_like(x)
    ck = mytriton.compile(K.scaled_copy, COPY, {"BM": 16, "BN": 64}, target="sm_90a")
    cuda_emulator.run(ck.asm["cu"], [x, y, m, n, None, None], (3, 1))
    np.testing.assert_array_equal(y, x * np.float16(2))


MANIFEST = """\
package: made
targets: [sm_80, sm_90a]
kernels:
  - kernel: kernels/k.py:scaled_copy
    signature: {x_ptr: "*fp16:16", y_ptr: "*fp16:16", M: i32, N: i32}
    constexprs: {BM: [16], BN: [64]}
"""


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """The package ``made`` (sm_80 and sm_90a) of scaled_copy, built twice: the second build takes
    every compile from the first's output and from the shared cache."""
    from mytriton.aot import build_packages
    from tests.test_aot_support import write_project
    folder = tmp_path_factory.mktemp("made")
    manifest = write_project(folder, MANIFEST, kernels=open(K.__file__).read())
    reports = []
    for out in ("out", "out", "again"):
        reports += build_packages([str(manifest)], out_dir=str(folder / out), jobs=1, echo=lambda line: None,
                                  cache_dir=folder / "cache")
    return folder, reports


def test_a_build_with_sm_90a_declares_the_maps_in_every_image_and_records_the_recipes(package):
    import json
    folder, reports = package
    made = folder / "out" / "made"
    spec = json.loads((made / "manifest.json").read_text())["kernels"]["scaled_copy"]["specializations"][0]
    assert [m["name"] for m in spec["made_tensor_maps"]] == ["d0__made_tmap", "d1__made_tmap"]
    assert spec["made_tensor_maps"][0]["where"] == "k.py:11" and spec["tma_images"] == ["sm_90a"]
    assert all(spec["build"][t]["made_tensor_maps"] == spec["made_tensor_maps"] for t in ("sm_80", "sm_90a"))
    cu = (made / spec["source"]).read_text()                   # (the PTX target's: sm_80)
    assert "const __grid_constant__ mt_tmap p_d1__made_tmap" in cu and "cp.async.bulk" not in cu
    loader = (made / "__init__.py").read_text()
    assert "'made_tensor_maps': [{'base': ['param', 'x_ptr']" in loader and "'tma_images': ['sm_90a']" in loader
    for out in ("out", "again"):                               # (the previous build's, the shared cache's)
        assert (folder / out / "made" / "__init__.py").read_text() == loader


def test_the_built_loader_encodes_on_hopper_and_passes_zeros_elsewhere(package, monkeypatch):
    import importlib
    import sys
    from tests.test_runtime_cpu import install_fake_driver
    folder, _ = package
    monkeypatch.syspath_prepend(str(folder / "out"))
    for name in [m for m in sys.modules if m == "made" or m.startswith("made.")]:
        monkeypatch.delitem(sys.modules, name)
    made = importlib.import_module("made")
    drv = install_fake_driver(monkeypatch, FakeDriver(), made._runtime)
    drv.param_sizes = [8, 8, 4, 4, 128, 128]
    x, y = made.DeviceArray(48 * 64, "fp16"), made.DeviceArray(48 * 64, "fp16")
    drv.cc = (9, 0)
    made.scaled_copy[(3, 1)](x, y, 45, 64, BM=16, BN=64)
    assert drv.launches[-1]["args"][4:] == [fake_tensor_map(m) for m in drv.tensor_maps] and len(drv.tensor_maps) == 2
    assert [m["address"] for m in drv.tensor_maps] == [x.ptr, y.ptr]
    with pytest.raises(ValueError, match=r"k.py:11 .* its strides \[60, 1\]"):
        made.scaled_copy[(3, 1)](x, y, 45, 60, BM=16, BN=64)
    drv.cc = (8, 0)            # (another process: a GPU of compute capability 8.0 loads the sm_80 image)
    made.scaled_copy.kernel(made.scaled_copy.select({"BM": 16, "BN": 64}))._loaded.clear()
    monkeypatch.setattr(made._runtime, "_device_info", {})
    made.scaled_copy[(3, 1)](x, y, 45, 60, BM=16, BN=64)
    assert drv.launches[-1]["args"][4:] == [bytes(128)] * 2


def test_the_c_api_encodes_the_maps_it_computes_from_its_arguments(tmp_path):
    import shutil
    import subprocess
    from mytriton.aot import build_packages
    from tests.test_aot_support import write_project
    from tests.test_capi import cuda_include
    source = open(K.__file__).read()
    manifest = write_project(tmp_path, MANIFEST.replace("scaled_copy", "batched_copy").replace(
        '{x_ptr: "*fp16:16", y_ptr: "*fp16:16", M: i32, N: i32}',
        '{x_ptr: "*fp32:16", y_ptr: "*fp32:16", B: i32, M: i32, N: i32, ROW0: i32}').replace(
        "{BM: [16], BN: [64]}", "{BM: [16], BN: [32]}"), kernels=source)
    build_packages([str(manifest)], out_dir=str(tmp_path / "out"), jobs=1, echo=lambda line: None, emit_c=True)
    c = (tmp_path / "out" / "made" / "c" / "made.c").read_text()
    assert c.count("err = mt_made_tensor_map(&made_maps[") == 2
    # (innermost first: N, then B * M - ROW0 wrapping in 32 bits; the base offset in bytes)
    assert ("(const int64_t[]){ p_N, (int32_t)((uint32_t)((int32_t)((uint32_t)(p_B) * (uint32_t)(p_M))) - "
            "(uint32_t)(p_ROW0)) }, (const int64_t[]){ (int64_t)(p_N) }") in c
    assert "((uint64_t)(p_x_ptr) + (uint64_t)(int64_t)((int32_t)((uint32_t)(p_ROW0) * (uint32_t)(p_N))) * 4u)" in c
    assert "void *params[] = { &p_x_ptr, &p_y_ptr, &p_B, &p_M, &p_N, &p_ROW0, &made_maps[0], &made_maps[1] };" in c
    if shutil.which("cc"):
        result = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", cuda_include(),
                                 "-c", str(tmp_path / "out" / "made" / "c" / "made.c"), "-o", str(tmp_path / "made.o")],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
