"""Random numbers (``tl.philox``, ``tl.randint4x`` … ``tl.randn4x``): Philox4x32-10 against the
Random123 library's known-answer vectors, every entry point against a pure-Python Philox and
Triton's documented mapping of seeds and offsets, the generated CUDA (CPU emulator) against the
interpreter, and the distributions' first moments."""
import math

import numpy as np
import pytest

import mytriton
from tests import cuda_emulator
from tests.kernel_files import kernel_from_source
from tests.kernels import random_kernels as R

M = {32: (0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85),
     64: (0xD2E7470EE14C6C93, 0xCA5A826395121157, 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)}


def philox_reference(ctr, key, bits=32, rounds=10):
    """Philox4xW (Salmon et al. 2011) in Python integers."""
    mask = (1 << bits) - 1
    (ma, mb, ka, kb), (c0, c1, c2, c3), (k0, k1) = M[bits], ctr, key
    for _ in range(rounds):
        p0, p1 = ma * c0, mb * c2
        c0, c1, c2, c3 = (p1 >> bits) ^ c1 ^ k0, p1 & mask, (p0 >> bits) ^ c3 ^ k1, p0 & mask
        k0, k1 = (k0 + ka) & mask, (k1 + kb) & mask
    return c0, c1, c2, c3


def randint4x_reference(seed, offset):
    """Triton's mapping: key (seed's low, high 32 bits), counters (offset's low and high words, 0, 0)."""
    seed %= 2**64
    return philox_reference((offset % 2**32, (offset >> 32) % 2**32, 0, 0), (seed & 0xFFFFFFFF, seed >> 32))


def uniform_reference(x):
    x = np.asarray(x, np.uint32).view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


# Random123's known answers for Philox4x32-10: (counter, key) -> output
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_philox4x32_10_gives_random123s_known_answers(ctr, key, want):
    assert philox_reference(ctr, key) == want                      # (the reference itself)
    out = np.zeros(4, np.uint32)
    R.philox_kernel[(1,)](out, np.array(ctr, np.uint32), np.uint64(key[1] << 32 | key[0]), 1, N_ROUNDS=10, BLOCK=1)
    assert tuple(int(v) for v in out) == want


@pytest.mark.parametrize("seed", [0, 42, -7, 2**40 + 3])
def test_randint4x_is_philox_of_the_offsets_under_the_seed(seed):
    n = 300
    out = np.zeros(4 * n, np.uint32)
    R.randint4x_kernel[(3,)](out, seed, n, BLOCK=128)
    want = np.array([randint4x_reference(seed, i) for i in range(n)], np.uint32).T.ravel()
    np.testing.assert_array_equal(out, want)


def test_64_bit_offsets_take_their_high_words():
    n, base = 200, 2**33 - 100
    out = np.zeros(n, np.uint32)
    R.offsets64_kernel[(2,)](out, 11, base, n, BLOCK=128)
    np.testing.assert_array_equal(out, [randint4x_reference(11, base + i)[0] for i in range(n)])


def test_rand_is_the_uniform_map_of_randint():
    """x (as int32, negatives folded to -x - 1) times fp32(4.6566127342e-10), a hair under 2^-31:
    in [0, 1) — 2^31 - 1 (whose fp32 is 2^31) gives 0.99999994."""
    n = 4096
    got = np.zeros(n, np.float32)
    R.floats_kernel[(32,)](got, 5, n, KIND="rand", BLOCK=128)
    ints = np.array([randint4x_reference(5, i)[0] for i in range(n)], np.uint32)
    np.testing.assert_array_equal(got, uniform_reference(ints))
    assert uniform_reference([0x7FFFFFFF])[0] == np.float32(1 - 2**-24) and uniform_reference([0xFFFFFFFF])[0] == 0
    assert 0 <= got.min() and got.max() < 1 and abs(got.mean() - 0.5) < 0.02


@pytest.mark.parametrize("kind", ["randn", "randn4x"])
def test_randn_is_box_muller_of_the_uniform_pairs(kind):
    n = 8192
    got = np.zeros(n, np.float32)
    R.floats_kernel[(64,)](got, 9, n, KIND=kind, BLOCK=128)
    words = np.array([randint4x_reference(9, i) for i in range(n)], np.uint32)
    u1, u2 = (uniform_reference(words[:, 0]), uniform_reference(words[:, 1])) if kind == "randn" else \
        (uniform_reference(words[:, 2]), uniform_reference(words[:, 3]))
    u1 = np.maximum(np.float32(1e-7), u1).astype(np.float64)
    th = np.float32(6.283185307179586) * u2.astype(np.float64)
    r = np.sqrt(-2 * np.log(u1))
    want = r * (np.cos(th) if kind == "randn" else np.sin(th))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert abs(got.mean()) < 0.05 and abs(got.std() - 1) < 0.05


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("kind", ["randint", "rand", "rand4x", "randn"])
def test_generated_cuda_draws_what_the_interpreter_draws(kind):
    n = 1000
    sig = {"out_ptr": "*fp32", "seed": "i64", "n": "i32"}
    ck = mytriton.compile(R.floats_kernel, sig, {"KIND": kind, "BLOCK": 128}, target="sm_80")
    got, want = np.zeros(n, np.float32), np.zeros(n, np.float32)
    cuda_emulator.run(ck.asm["cu"], [got, 2**35 + 17, n], (8,))
    R.floats_kernel[(8,)](want, 2**35 + 17, n, KIND=kind, BLOCK=128)
    if kind == "randn":                      # (the emulator's log/cos are the C library's)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_philox_of_64_bit_counters():
    """64-bit counters: Philox4x64 keyed by (seed, 0)."""
    sig = {"out_ptr": "*u64", "c_ptr": "*u64", "seed": "u64", "n": "i32"}
    rng = np.random.default_rng(3)
    c = rng.integers(0, 2**63, (4, 50), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    out = np.zeros(4 * 50, np.uint64)
    R.philox_kernel[(1,)](out, c.ravel(), np.uint64(2**63 + 5), 50, N_ROUNDS=7, BLOCK=64)
    want = [philox_reference(tuple(int(v) for v in c[:, i]), (2**63 + 5, 0), 64, 7) for i in range(50)]
    np.testing.assert_array_equal(out.reshape(4, 50).T, np.array(want, np.uint64))
    assert mytriton.compile(R.philox_kernel, sig, {"N_ROUNDS": 7, "BLOCK": 64}).asm["cubin"]


def test_a_float_seed_is_an_error_at_its_line(tmp_path):
    k = kernel_from_source(tmp_path / "rng_kernel.py",
                           "import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\ndef k(out_ptr):\n"
                           "    offs = tl.arange(0, 32)\n    tl.store(out_ptr + offs, tl.rand(1.5, offs))\n")
    with pytest.raises(mytriton.CompilationError) as e:
        mytriton.compile(k, {"out_ptr": "*fp32"}, {})
    assert "philox: the seed must be an integer, got f32" in str(e.value) and "rng_kernel.py:8" in str(e.value)


def test_moments_of_many_draws():
    n = 1 << 15
    got = np.zeros(n, np.float32)
    R.floats_kernel[(n // 128,)](got, 1234, n, KIND="rand4x", BLOCK=128)
    assert abs(got.mean() - 0.5) < 0.01 and abs(got.var() - 1 / 12) < 0.005
    assert not math.isnan(float(got.sum()))
