"""tl.load / tl.store with cache_modifier= and eviction_policy=: checked as Triton checks them,
kept as the op's attributes, emitted by the CUDA backend as the PTX qualifiers Triton emits
(ld.global.cg, st.global.cs, .L1::evict_first with an L2 cache hint, ...) on every access path
(vector chunks, their element-by-element tails, scalars, block pointers), the MLIR backend as
inline PTX, and computing the same values as the plain accesses (CPU emulator against the
interpreter; the GPU: tests/test_cache_hints_gpu.py, and tests/test_mlir_gpu.py's hints_* cases)."""
import re

import numpy as np
import pytest

import mytriton
from mytriton.compiler import build_ssa
from mytriton.ir.printer import print_function
from mytriton.ir.ssa import walk
from tests import cuda_emulator
from tests.kernel_files import compile_error
from tests.kernels import cache_hints as K

EMULATOR = pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")


def hints(load_cache="", load_evict="", store_cache="", store_evict=""):
    return {"LOAD_CACHE": load_cache, "LOAD_EVICT": load_evict, "STORE_CACHE": store_cache, "STORE_EVICT": store_evict}


def qualifiers(ptx: str, op: str) -> set:
    """The qualifiers between `ld.global` / `st.global` and the vector width and type of each global
    access (`.nc`, the read-only path, left out)."""
    found = set()
    for token in re.findall(rf"\b{op}\.global[.\w:]*", ptx):
        parts = token.split(".")[2:]
        while parts and re.fullmatch(r"v[248]|[bsuf]\d+", parts[-1]):
            parts.pop()
        found.add("".join("." + p for p in parts if p != "nc"))
    return found


SIG = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "n": "i32"}


@pytest.mark.parametrize("dt", ["fp32", "fp16", "i8"])
@pytest.mark.parametrize("load_cache,load_evict,store_cache,store_evict,want_ld,want_st", [
    ("", "", "", "", {""}, {""}),
    (".ca", "", ".wb", "", {".ca"}, {".wb"}),
    (".cg", "", ".cg", "", {".cg"}, {".cg"}),
    (".cv", "", ".cs", "", {".cv"}, {".cs"}),
    ("", "evict_first", ".wt", "", {".L1::evict_first.L2::cache_hint"}, {".wt"}),
    ("", "evict_last", "", "evict_first", {".L1::evict_last.L2::cache_hint"}, {".L1::evict_first.L2::cache_hint"}),
])
def test_every_access_carries_the_ptx_qualifiers(dt, load_cache, load_evict, store_cache, store_evict, want_ld,
                                                 want_st):
    # n unaligned: vector chunks with an element-by-element tail, both qualified
    sig = {"x_ptr": f"*{dt}:16", "y_ptr": f"*{dt}:16", "n": "i32"}
    ptx = mytriton.compile(K.scaled_copy, sig, {**hints(load_cache, load_evict, store_cache, store_evict),
                                                "BLOCK": 512}, num_warps=4).asm["ptx"]
    assert qualifiers(ptx, "ld") == want_ld and qualifiers(ptx, "st") == want_st
    policies = re.findall(r"createpolicy\.fractional\.L2::(\w+)\.b64", ptx)
    assert set(policies) == {e for e in (load_evict, store_evict) if e}


def test_only_the_hints_used_get_a_helper_and_loads_are_unpredicated():
    """A kernel's source holds the helpers of the hints it uses (backends/cuda/hints.py), none for
    plain accesses. Hinted loads are never predicated in the PTX (a masked-off one reads a zero
    constant): ptxas then schedules them as plain loads, ahead of the code before them."""
    sig = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "n": "i32"}
    ck = mytriton.compile(K.scaled_copy, sig, {**hints(".cg", "", "", "evict_last"), "BLOCK": 512}, num_warps=4)
    hinted = r"__forceinline__ \w+ (mt_(?:load|store)_(?:ca|cg|cv|wb|cs|wt|evict_\w+))\("
    assert set(re.findall(hinted, ck.asm["cu"])) == {"mt_load_cg", "mt_store_evict_last"}
    assert not re.search(r"@%?\w+ ld\.global\.cg", ck.asm["ptx"]) and "ld.global.cg.v4.u32" in ck.asm["ptx"]
    plain = mytriton.compile(K.scaled_copy, sig, {**hints(), "BLOCK": 512}, num_warps=4).asm["cu"]
    assert not re.search(hinted, plain)


def test_every_cache_modifier_has_its_intrinsic():
    from mytriton.backends.cuda import hints as H
    from mytriton.ir.ops import LOAD_CACHE_MODIFIERS, STORE_CACHE_MODIFIERS
    assert set(H._LOAD_INTRINSICS) == set(LOAD_CACHE_MODIFIERS)
    assert set(H._STORE_INTRINSICS) == set(STORE_CACHE_MODIFIERS)


def test_scalar_and_block_pointer_accesses_carry_them():
    ptx = mytriton.compile(K.scalar_copy, {"x_ptr": "*fp32", "y_ptr": "*fp32"},
                           {"LOAD_CACHE": ".cg", "STORE_CACHE": ".cs"}).asm["ptx"]
    assert qualifiers(ptx, "ld") == {".cg"} and qualifiers(ptx, "st") == {".cs"}
    ptx = mytriton.compile(K.block_copy, {"x_ptr": "*fp16", "y_ptr": "*fp16", "m": "i32", "n": "i32"},
                           {"LOAD_CACHE": ".cv", "STORE_EVICT": "evict_last", "BM": 16, "BN": 64}).asm["ptx"]
    assert qualifiers(ptx, "ld") == {".cv"} and qualifiers(ptx, "st") == {".L1::evict_last.L2::cache_hint"}


def test_the_hints_are_the_ops_attributes():
    fn = build_ssa(K.scaled_copy, SIG, {**hints(".cg", "", "", "evict_first"), "BLOCK": 128})
    (load,) = [op for op in walk(fn.body) if op.name == "load"]
    (store,) = [op for op in walk(fn.body) if op.name == "store"]
    assert load.attrs == {"cache": "cg"} and store.attrs == {"evict": "evict_first"}
    text = print_function(fn)
    assert "%6 = load %4, %5, 3.0 {cache=cg} : vector<128 x f32>\n" in text, text
    assert "store %7, %8, %10 {evict=evict_first}\n" in text, text


@pytest.mark.parametrize("dt", ["fp32", "fp16", "i8", "i64"])
@pytest.mark.parametrize("combo,want_ld,want_st,policies", [
    (hints(".cg", "", ".cs", ""), {".cg"}, {".cs"}, 0),
    (hints("", "evict_first", "", "evict_last"), {".L1::evict_first.L2::cache_hint"},
     {".L1::evict_last.L2::cache_hint"}, 8),
])
def test_the_mlir_backend_emits_them_as_inline_ptx(dt, combo, want_ld, want_st, policies):
    from tests.test_mlir_support import tools_missing_reason
    if tools_missing_reason() is not None:
        pytest.skip(tools_missing_reason())
    ck = mytriton.compile(K.scaled_copy, {"x_ptr": f"*{dt}:16", "y_ptr": f"*{dt}:16", "n": "i32"},
                          {**combo, "BLOCK": 256}, num_warps=2, backend="mlir")
    assert ck.asm["mlir"].count("llvm.inline_asm has_side_effects") == 8      # 4 elements a thread, each way
    ptx = ck.asm["ptx"]
    assert qualifiers(ptx, "ld") == want_ld and qualifiers(ptx, "st") == want_st
    assert len(re.findall(r"createpolicy\.fractional", ptx)) == policies


HEAD = "import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\ndef k(x, y):\n"


@pytest.mark.parametrize("body,message", [
    ("    tl.store(y, tl.load(x, cache_modifier='.cs'))",
     "tl.load: cache_modifier must be one of '.ca', '.cg', '.cv' (or ''), got '.cs'"),
    ("    tl.store(y, tl.load(x), cache_modifier='.ca')",
     "tl.store: cache_modifier must be one of '.wb', '.cg', '.cs', '.wt' (or ''), got '.ca'"),
    ("    tl.store(y, tl.load(x, eviction_policy='evict_normal'))",
     "tl.load: eviction_policy must be one of 'evict_first', 'evict_last' (or ''), got 'evict_normal'"),
    ("    tl.store(y, tl.load(x, cache_modifier='.cg', eviction_policy='evict_first'))",
     "tl.load: cache_modifier='.cg' and eviction_policy='evict_first' cannot be combined"),
    ("    tl.store(y, tl.load(x), cache_modifier='cs')",
     "tl.store: cache_modifier must be one of"),
])
def test_unknown_or_combined_hints_are_located_errors(tmp_path, body, message):
    err = compile_error(tmp_path / "hints.py", HEAD + body + "\n", {"x": "*fp32", "y": "*fp32"})
    assert message in err and "hints.py:7" in err, err


@EMULATOR
@pytest.mark.parametrize("dt", ["fp32", "fp16", "i8", "i64"])
@pytest.mark.parametrize("combo", [hints(".cg", "", ".cs", ""), hints("", "evict_first", "", "evict_last"),
                                   hints(".cv", "", ".wt", "")])
def test_emulated_hinted_accesses_agree_with_the_interpreter(dt, combo):
    npd = {"fp32": np.float32, "fp16": np.float16, "i8": np.int8, "i64": np.int64}[dt]
    n, block = 1000, 256
    x = np.random.default_rng(5).integers(-20, 20, n + 40).astype(npd)
    got, want = np.zeros(n + 40, npd), np.zeros(n + 40, npd)
    sig = {"x_ptr": f"*{dt}:16", "y_ptr": f"*{dt}:16", "n": "i32"}
    ck = mytriton.compile(K.scaled_copy, sig, {**combo, "BLOCK": block}, num_warps=2)
    grid = (-(-(n + 5) // block),)
    cuda_emulator.run(ck.asm["cu"], [x, got, n], grid)
    K.scaled_copy[grid](x, want, n, **combo, BLOCK=block, num_warps=2)
    expect = np.zeros(n + 40, npd)
    expect[:n] = x[:n] * 2
    expect[n:n + 5] = 6                        # masked-off loads read `other` (3)
    np.testing.assert_array_equal(want, expect)
    np.testing.assert_array_equal(got, want)
