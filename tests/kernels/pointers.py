"""Kernels of tests/test_pointers.py: pointers converted to and from 64-bit integers, chosen by
``tl.where`` and stored as addresses; sums in a narrow ``dtype=``."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def select_addresses(cond_ptr, a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Each lane: the address held in a or b (int64), chosen by cond, read as an int32 pointer and
    stored back as its address (Triton's test_where with pointers)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.pi32_t)
    b = tl.load(b_ptr + offs, mask=mask).to(tl.pi32_t)
    tl.store(out_ptr + offs, tl.where(tl.load(cond_ptr + offs, mask=mask), a, b), mask=mask)


@triton.jit
def gather_rows(table_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Program i: the row whose address is table[i] (a float32 array of n elements), doubled."""
    i = tl.program_id(0)
    row = tl.load(table_ptr + i).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + i * n + offs, tl.load(row + offs, mask=mask) * 2, mask=mask)


@triton.jit
def round_trip(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """A pointer through int64 and back (and through another pointer type of the same width)."""
    offs = tl.arange(0, BLOCK)
    address = (x_ptr + offs).to(tl.int64)
    back = address.to(tl.pointer_type(tl.uint32)).to(tl.pointer_type(tl.int32), bitcast=True)
    tl.store(out_ptr + offs, tl.load(back) + 1)


@triton.jit
def narrow_sums(out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    """Sums of ones in int1 (modulo 2), int8 (wrapping) and the default (int32)."""
    ones = tl.full((ROWS, COLS), 1, dtype=tl.int1)
    tl.store(out_ptr + 0, tl.sum(ones, dtype=tl.int1).to(tl.int32))
    tl.store(out_ptr + 1, tl.sum(ones, dtype=tl.int8).to(tl.int32))
    tl.store(out_ptr + 2, tl.sum(ones))
    tl.store(out_ptr + 3, tl.sum(tl.sum(ones, axis=1, dtype=tl.int1).to(tl.int32)))


@triton.jit
def cap_int32(x):
    """Triton's short-circuiting idiom: compile-time tests of the argument (None, its dtype), then
    a run-time one; x[0] capped at 42 when x points to int32."""
    if (x is not None) and hasattr(x, "dtype") and isinstance(x.dtype, tl.pointer_type) and \
            (x.dtype.element_ty == tl.int32) and (tl.load(x) > 42):
        tl.store(x, 42)
