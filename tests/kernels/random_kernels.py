"""Random-number kernels (tests/test_random.py; the GPU test runs them through Triton too)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def randint4x_kernel(out_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(out_ptr + offs, a, mask=mask)
    tl.store(out_ptr + n + offs, b, mask=mask)
    tl.store(out_ptr + 2 * n + offs, c, mask=mask)
    tl.store(out_ptr + 3 * n + offs, d, mask=mask)


@triton.jit
def philox_kernel(out_ptr, c_ptr, seed, n, N_ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    """Philox of arbitrary counters (c_ptr: 4 x n uint32), keyed by a 64-bit seed."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c0 = tl.load(c_ptr + offs, mask=mask)
    c1 = tl.load(c_ptr + n + offs, mask=mask)
    c2 = tl.load(c_ptr + 2 * n + offs, mask=mask)
    c3 = tl.load(c_ptr + 3 * n + offs, mask=mask)
    a, b, c, d = tl.philox(seed, c0, c1, c2, c3, N_ROUNDS)
    tl.store(out_ptr + offs, a, mask=mask)
    tl.store(out_ptr + n + offs, b, mask=mask)
    tl.store(out_ptr + 2 * n + offs, c, mask=mask)
    tl.store(out_ptr + 3 * n + offs, d, mask=mask)


@triton.jit
def floats_kernel(out_ptr, seed, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    """rand, randn, randint (as its bits) and rand4x's / randn4x's last block, by KIND."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if KIND == "rand":
        x = tl.rand(seed, offs)
    elif KIND == "randn":
        x = tl.randn(seed, offs)
    elif KIND == "rand4x":
        _, _, _, x = tl.rand4x(seed, offs)
    elif KIND == "randn4x":
        _, _, _, x = tl.randn4x(seed, offs)
    else:
        x = tl.randint(seed, offs).to(tl.float32, bitcast=True)
    tl.store(out_ptr + offs, x, mask=mask)


@triton.jit
def offsets64_kernel(out_ptr, seed, base, n, BLOCK: tl.constexpr):
    """randint of 64-bit offsets (base + i): their high words take part."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.randint(seed, base + offs.to(tl.int64)), mask=mask)
