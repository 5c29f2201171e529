"""Kernels whose pointers come from memory (a table of addresses), so that only the user's
promises (tl.multiple_of / tl.max_contiguous) can prove their alignment. HINT: 0 no promise,
1 the promise's result dropped (as Triton's tutorial 08 writes it: the value itself is marked),
2 the promise's result used."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def table_copy_kernel(table, out_ptr, BLOCK: tl.constexpr, HINT: tl.constexpr):
    base = tl.load(table).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    ptrs = base + offs
    if HINT == 1:
        tl.multiple_of(ptrs, 16)
    if HINT == 2:
        ptrs = tl.max_contiguous(tl.multiple_of(ptrs, [16]), BLOCK)
    tl.store(out_ptr + offs, tl.load(ptrs))


@triton.jit
def table_dot_kernel(table, c_ptr, K, lda, BLOCK: tl.constexpr, HINT: tl.constexpr):
    """C (BLOCK x BLOCK) = A @ B for fp16 A (BLOCK x K, row stride lda) and B (K x BLOCK, contiguous),
    their addresses read from ``table``; the A pointers are carried by the loop."""
    a_base = tl.load(table).to(tl.pointer_type(tl.float16))
    b_base = tl.load(table + 1).to(tl.pointer_type(tl.float16))
    rows = tl.arange(0, BLOCK)
    ks = tl.arange(0, 32)
    a_ptrs = a_base + rows[:, None] * lda + ks[None, :]
    b_ptrs = b_base + ks[:, None] * BLOCK + rows[None, :]
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, 32):
        if HINT == 1:
            tl.multiple_of(a_ptrs, [16, 16])
            tl.multiple_of(b_ptrs, [16, 16])
        if HINT == 3:
            a_ptrs = tl.multiple_of(a_ptrs, [16])          # one value for a rank-2 tensor: an error
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += 32
        b_ptrs += 32 * BLOCK
    tl.store(c_ptr + rows[:, None] * BLOCK + rows[None, :], acc)
