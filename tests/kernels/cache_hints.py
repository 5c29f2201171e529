"""Kernels of tests/test_cache_hints.py: loads and stores with Triton's cache_modifier= and
eviction_policy= (through pointers and block pointers)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def scaled_copy(x_ptr, y_ptr, n, LOAD_CACHE: tl.constexpr, LOAD_EVICT: tl.constexpr, STORE_CACHE: tl.constexpr,
                STORE_EVICT: tl.constexpr, BLOCK: tl.constexpr):
    """y = 2 * x where x is in bounds; masked-off elements read `other` (3), stored to the tail."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=3, cache_modifier=LOAD_CACHE, eviction_policy=LOAD_EVICT)
    tl.store(y_ptr + offs, x * 2, mask=offs < n + 5, cache_modifier=STORE_CACHE, eviction_policy=STORE_EVICT)


@triton.jit
def scalar_copy(x_ptr, y_ptr, LOAD_CACHE: tl.constexpr, STORE_CACHE: tl.constexpr):
    """One element per program, loaded and stored as scalars."""
    i = tl.program_id(0)
    tl.store(y_ptr + i, tl.load(x_ptr + i, cache_modifier=LOAD_CACHE) + 1, cache_modifier=STORE_CACHE)


@triton.jit
def block_copy(x_ptr, y_ptr, m, n, LOAD_CACHE: tl.constexpr, STORE_EVICT: tl.constexpr, BM: tl.constexpr,
               BN: tl.constexpr):
    """y[block] = x[block] through block pointers, bounds checked in both dimensions."""
    src = tl.make_block_ptr(x_ptr, (m, n), (n, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(y_ptr, (m, n), (n, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    tl.store(dst, tl.load(src, boundary_check=(0, 1), cache_modifier=LOAD_CACHE), boundary_check=(0, 1),
             eviction_policy=STORE_EVICT)
