"""Whole kernels in the CPU interpreter against numpy: 2-D tiles, reductions, run-time loops,
loop-carried pointers, factories, program-dependent loop bounds; the bounds checker; views;
argument handling. Sizes are awkward (not multiples of the block) so masked tails are exercised."""
import os

import numpy as np
import pytest

import mytriton as triton
import mytriton.language as tl
from mytriton.backends.interpreter import InterpreterError, executor, infer_type

RNG = np.random.default_rng(1234)
HERE = os.path.abspath(__file__)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# --- 2-D tiles and broadcasting ------------------------------------------------------------------

@triton.jit
def outer_kernel(x, y, out, M, N, scale, BM: tl.constexpr, BN: tl.constexpr):
    """out[i, j] = x[i] * y[j] + scale, over BM×BN tiles."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    xv = tl.load(x + rows, mask=rows < M, other=0.0)
    yv = tl.load(y + cols, mask=cols < N, other=0.0)
    tile = xv[:, None] * yv[None, :] + scale
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(out + rows[:, None] * N + cols[None, :], tile, mask=mask)


def test_2d_tiles_broadcast_scalar_and_vectors():
    M, N = 37, 53
    x, y = randn(M), randn(N)
    out = np.full((M, N), np.nan, np.float32)
    outer_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 8))](x, y, out, M, N, 0.25, BM=16, BN=8)
    np.testing.assert_array_equal(out, x[:, None] * y[None, :] + np.float32(0.25))


@triton.jit
def transpose_kernel(x, out, M, N, B: tl.constexpr):
    rows = tl.program_id(0) * B + tl.arange(0, B)[:, None]
    cols = tl.program_id(1) * B + tl.arange(0, B)[None, :]
    mask = (rows < M) & (cols < N)
    tile = tl.load(x + rows * N + cols, mask=mask)
    tl.store(out + cols * M + rows, tile, mask=mask)


def test_transpose_int32():
    M, N = 45, 19
    x = RNG.integers(-1000, 1000, (M, N), dtype=np.int32)
    out = np.zeros((N, M), np.int32)
    transpose_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](x, out, M, N, B=16)
    np.testing.assert_array_equal(out, x.T)


# --- integer semantics in kernels ---------------------------------------------------------------

@triton.jit
def int_mix_kernel(a_ptr, b_ptr, q_ptr, r_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0)
    b = tl.load(b_ptr + offs, mask=mask, other=1)
    tl.store(q_ptr + offs, a // b, mask=mask)
    tl.store(r_ptr + offs, a % b, mask=mask)
    tl.store(c_ptr + offs, (a < b) & (a != 0) | (b > 100), mask=mask)


def test_int32_division_remainder_comparisons():
    n = 333
    a = RNG.integers(-10_000, 10_000, n, dtype=np.int32)
    b = RNG.integers(-300, 300, n, dtype=np.int32)
    b[b == 0] = 7
    q, r, c = np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.bool_)
    int_mix_kernel[(triton.cdiv(n, 64),)](a, b, q, r, c, n, BLOCK=64)
    want_q = np.trunc(a / b).astype(np.int32)
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(r, a - b * want_q)
    np.testing.assert_array_equal(c, ((a < b) & (a != 0)) | (b > 100))


@triton.jit
def wrap_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x * 65536 + 2147483647)


def test_i32_arithmetic_wraps_around():
    x = np.array([0, 1, 2, -1, 32768, 65536, -65536, 12345], np.int32)
    out = np.zeros_like(x)
    wrap_kernel[(1,)](x, out, BLOCK=8)
    want = ((x.astype(np.int64) * 65536 + 2147483647 + 2**31) % 2**32 - 2**31).astype(np.int32)
    np.testing.assert_array_equal(out, want)


@triton.jit
def fp32_chain_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, (x + y) - x)


def test_fp32_rounds_at_every_op():
    """(x + y) - x is 0 in fp32 for y far below x's ulp; float64 intermediates would give y."""
    x = np.full(4, 1.0, np.float32)
    y = np.array([1e-8, 3e-9, -1e-9, 2.0], np.float32)
    out = np.zeros(4, np.float32)
    fp32_chain_kernel[(1,)](x, y, out, BLOCK=4)
    np.testing.assert_array_equal(out, (x + y) - x)
    assert out[0] == 0.0 and out[3] == 2.0


# --- reductions -----------------------------------------------------------------------------------

@triton.jit
def reduce_kernel(x, out, M, N, KIND: tl.constexpr, AXIS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    mask = (rows < M) & (cols < N)
    if KIND == "sum":
        tile = tl.load(x + rows * N + cols, mask=mask, other=0)
        r = tl.sum(tile, axis=AXIS)
    elif KIND == "max":
        tile = tl.load(x + rows * N + cols, mask=mask, other=-float("inf"))
        r = tl.max(tile, axis=AXIS)
    else:
        tile = tl.load(x + rows * N + cols, mask=mask, other=float("inf"))
        r = tl.min(tile, axis=AXIS)
    if AXIS is None:
        tl.store(out, r)
    elif AXIS == 0:
        tl.store(out + tl.arange(0, BN), r)
    else:
        tl.store(out + tl.arange(0, BM), r)


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_reductions_over_2d_tile(kind, axis):
    M, N, BM, BN = 13, 29, 16, 32
    x = randn(M, N)
    x[3, 4] = np.nan                                  # max/min ignore NaN; sum propagates it
    full = np.full((BM, BN), {"sum": 0.0, "max": -np.inf, "min": np.inf}[kind], np.float32)
    full[:M, :N] = x
    out = np.zeros({0: BN, 1: BM, None: 1}[axis], np.float32)
    reduce_kernel[(1,)](x, out, M, N, KIND=kind, AXIS=axis, BM=BM, BN=BN)
    ref = {"sum": np.sum, "max": np.nanmax, "min": np.nanmin}[kind]
    want = np.asarray(ref(full.astype(np.float64), axis=axis), np.float32).reshape(-1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    assert out.dtype == np.float32


def test_max_of_all_nan_is_nan():
    x = np.full((4, 8), np.nan, np.float32)
    x[1, 2] = 5.0
    out = np.zeros(8, np.float32)
    reduce_kernel[(1,)](x, out, 4, 8, KIND="max", AXIS=0, BM=4, BN=8)
    assert out[2] == 5.0
    assert np.isnan(np.delete(out, 2)).all()


def test_integer_and_bool_sums_accumulate_in_int32():
    x = np.full((4, 8), 2**30, np.int32)             # the sum wraps around in int32
    out = np.zeros(1, np.int32)
    reduce_kernel[(1,)](x, out, 4, 8, KIND="sum", AXIS=None, BM=4, BN=8)
    assert out[0] == (32 * 2**30 + 2**31) % 2**32 - 2**31
    b = RNG.random((4, 8)) < 0.4
    cnt = np.zeros(8, np.int32)
    reduce_kernel[(1,)](b, cnt, 4, 8, KIND="sum", AXIS=0, BM=4, BN=8)
    np.testing.assert_array_equal(cnt, b.sum(axis=0))


@triton.jit
def row_sum_loop_kernel(x, out, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(out + row, tl.sum(acc, axis=0))


def test_row_sum_with_runtime_loop_over_long_rows():
    rows, cols = 7, 5000
    x = randn(rows, cols)
    out = np.zeros(rows, np.float32)
    row_sum_loop_kernel[(rows,)](x, out, cols, BLOCK=256)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-4, atol=1e-3)


# --- run-time loops ---------------------------------------------------------------------------

@triton.jit
def fib_swap_kernel(out_a, out_b, n_steps, BLOCK: tl.constexpr):
    """Two carried values and a swap: (a, b) ← (b, a + b), elementwise from per-lane seeds."""
    offs = tl.arange(0, BLOCK)
    a = offs
    b = offs * 0 + 1
    for i in range(n_steps):
        t = a
        a = b
        b = t + b
    tl.store(out_a + offs, a)
    tl.store(out_b + offs, b)


@pytest.mark.parametrize("steps", [0, 1, 2, 9])
def test_loop_with_two_carried_values_and_a_swap(steps):
    out_a, out_b = np.zeros(8, np.int32), np.zeros(8, np.int32)
    fib_swap_kernel[(1,)](out_a, out_b, steps, BLOCK=8)
    a, b = np.arange(8), np.ones(8, np.int64)
    for _ in range(steps):
        a, b = b, a + b
    np.testing.assert_array_equal(out_a, a)
    np.testing.assert_array_equal(out_b, b)


@triton.jit
def dot_rows_ptr_kernel(x, y, out, K, BLOCK_K: tl.constexpr):
    """out[row] = sum_k x[row, k] * y[k], walking both with loop-carried pointers."""
    row = tl.program_id(0)
    ks = tl.arange(0, BLOCK_K)
    x_ptrs = x + row * K + ks
    y_ptrs = y + ks
    acc = tl.zeros((BLOCK_K,), tl.float32)
    for k in range(0, K, BLOCK_K):
        mask = k + ks < K
        acc += tl.load(x_ptrs, mask=mask, other=0.0) * tl.load(y_ptrs, mask=mask, other=0.0)
        x_ptrs += BLOCK_K
        y_ptrs += BLOCK_K
    tl.store(out + row, tl.sum(acc, axis=0))


def test_loop_carried_pointers():
    rows, K = 9, 301
    x, y = randn(rows, K), randn(K)
    out = np.zeros(rows, np.float32)
    dot_rows_ptr_kernel[(rows,)](x, y, out, K, BLOCK_K=32)
    np.testing.assert_allclose(out, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)


@triton.jit
def nested_kernel(x, out, R, C, BR: tl.constexpr):
    """out[0:BR] = sum over tiles of x (R×C, row-major) of their row sums; nested run-time loops."""
    rows = tl.arange(0, BR)
    total = tl.zeros((BR,), tl.float32)
    for r0 in range(0, R, BR):
        r = r0 + rows
        part = tl.zeros((BR,), tl.float32)
        for c in range(C):
            part += tl.load(x + r * C + c, mask=r < R, other=0.0)
        total += part
    tl.store(out + rows, total)


def test_nested_loops():
    R, C, BR = 23, 11, 8
    x = randn(R, C)
    out = np.zeros(BR, np.float32)
    nested_kernel[(1,)](x, out, R, C, BR=BR)
    padded = np.zeros((triton.cdiv(R, BR) * BR, C), np.float64)
    padded[:R] = x
    want = padded.sum(axis=1).reshape(-1, BR).sum(axis=0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@triton.jit
def triangle_kernel(x, out, n, BLOCK: tl.constexpr):
    """out[i] = sum(x[0:i+1]) with a loop whose bound depends on the program id."""
    i = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for j in range(0, i + 1, BLOCK):
        offs = j + tl.arange(0, BLOCK)
        acc += tl.load(x + offs, mask=offs < i + 1, other=0.0)
    tl.store(out + i, tl.sum(acc, axis=0))


def test_loop_bounds_depending_on_program_id_run_per_program():
    n = 41
    x = randn(n)
    out = np.zeros(n, np.float32)
    triangle_kernel[(n,)](x, out, n, BLOCK=8)
    np.testing.assert_allclose(out, np.cumsum(x.astype(np.float64)), rtol=1e-5, atol=1e-5)
    (program,) = triangle_kernel._interpreter_programs.values()
    assert not program.batchable and program.batch_size == 1
    (program,) = row_sum_loop_kernel._interpreter_programs.values()
    assert program.batchable


# --- factories, program ids, scalars ---------------------------------------------------------

@triton.jit
def factories_kernel(out_f, out_i, value, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    z = tl.zeros((BLOCK,), tl.float32)
    f = tl.full((BLOCK,), 2.5, tl.float32)
    v = tl.full((BLOCK,), value, tl.float32)
    tl.store(out_f + offs, z + f + v + tl.zeros_like(z))
    e = tl.full((2, BLOCK), 7, tl.int32)
    tl.store(out_i + tl.arange(0, 2)[:, None] * BLOCK + offs[None, :], e + tl.full_like(e, -3))


def test_factories():
    out_f, out_i = np.zeros(16, np.float32), np.zeros((2, 16), np.int32)
    factories_kernel[(1,)](out_f, out_i, 1.25, BLOCK=16)
    np.testing.assert_array_equal(out_f, np.full(16, 3.75, np.float32))
    np.testing.assert_array_equal(out_i, np.full((2, 16), 4, np.int32))


@triton.jit
def grid_kernel(out, BLOCK: tl.constexpr):
    p0, p1, p2 = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    n0, n1, n2 = tl.num_programs(0), tl.num_programs(1), tl.num_programs(2)
    linear = p0 + n0 * (p1 + n1 * p2)
    offs = tl.arange(0, BLOCK)
    tl.store(out + linear * BLOCK + offs, linear * 1000 + p0 * 100 + p1 * 10 + p2 + offs * 0 + n2 * 0)


@pytest.mark.parametrize("grid", [(5,), (3, 4), (2, 3, 4), 6, [2, 2]])
def test_grids_and_program_ids(grid):
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    dims = dims + (1,) * (3 - len(dims))
    total = dims[0] * dims[1] * dims[2]
    out = np.zeros((total, 4), np.int32)
    grid_kernel[grid](out, BLOCK=4)
    for z in range(dims[2]):
        for y in range(dims[1]):
            for x in range(dims[0]):
                lin = x + dims[0] * (y + dims[1] * z)
                assert (out[lin] == lin * 1000 + x * 100 + y * 10 + z).all()


def test_callable_grid():
    out = np.zeros((6, 4), np.int32)
    grid_kernel[lambda meta: (triton.cdiv(24, meta["BLOCK"]),)](out, BLOCK=4)
    assert (out[:, 0] == np.arange(6) * 1000 + np.arange(6) * 100).all()


@triton.jit
def scalar_kernel(x, out, i, a, flag):
    v = tl.load(x + i)
    tl.store(out + i, tl.where(flag, v * a, v - a))


def test_scalar_loads_and_stores_and_scalar_params():
    x, out = randn(10), np.zeros(10, np.float32)
    scalar_kernel[(1,)](x, out, 3, 2.0, True)
    scalar_kernel[(1,)](x, out, 4, np.float32(2.0), np.bool_(False))
    assert out[3] == x[3] * 2 and out[4] == x[4] - 2
    assert (np.delete(out, [3, 4]) == 0).all()


@triton.jit
def copy_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask), mask=mask)


def test_many_programs_in_several_batches(monkeypatch):
    @triton.jit
    def fresh_copy(x, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)
    monkeypatch.setattr(executor, "BATCH_ELEMENTS", 64)
    n = 1000
    x, out = randn(n), np.zeros(n, np.float32)
    fresh_copy[(triton.cdiv(n, 16),)](x, out, n, BLOCK=16)
    (program,) = fresh_copy._interpreter_programs.values()
    assert program.batch_size == 4
    np.testing.assert_array_equal(out, x + 1)


# --- masks and the bounds checker ---------------------------------------------------------------

@triton.jit
def unmasked_load_kernel(x, out, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.store(out + offs, v, mask=offs < 10)


@triton.jit
def unmasked_store_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n, other=0.0)
    tl.store(out + offs, v)


@triton.jit
def wrong_mask_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs - 1, mask=offs <= n, other=0.0)
    tl.store(out + offs, v, mask=offs < n)


def _line_of(kernel, text: str) -> int:
    lines, first = __import__("inspect").getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_unmasked_out_of_bounds_load_raises_with_location_program_and_offset():
    x, out = randn(10), np.zeros(16, np.float32)
    with pytest.raises(InterpreterError) as e:
        unmasked_load_kernel[(2,)](x, out, BLOCK=8)
    msg = str(e.value)
    line = _line_of(unmasked_load_kernel, "v = tl.load(x + offs)")
    assert f"{HERE}:{line}:" in msg
    assert "program (1, 0, 0)" in msg
    assert "element offset 10 is outside 'x' (10 elements of fp32" in msg
    assert "v = tl.load(x + offs)" in msg and "^" in msg
    assert "no mask" in msg and "unmasked_load_kernel" in msg
    assert isinstance(e.value, IndexError)
    assert (e.value.program_id, e.value.offset, e.value.size, e.value.array) == ((1, 0, 0), 10, 10, "x")
    assert e.value.loc.line == line
    frames = [f.filename for f in __import__("traceback").extract_tb(e.tb)]
    assert not any(f.endswith(("executor.py", "memory.py")) for f in frames), frames


def test_unmasked_out_of_bounds_store_raises_and_writes_nothing_out_of_bounds():
    x = randn(20)
    backing = np.zeros(24, np.float32)
    out = backing[:20]
    with pytest.raises(InterpreterError) as e:
        unmasked_store_kernel[(3,)](x, out, 20, BLOCK=8)
    line = _line_of(unmasked_store_kernel, "tl.store(out + offs, v)")
    msg = str(e.value)
    assert f"{HERE}:{line}:" in msg and "out-of-bounds store" in msg
    assert "program (2, 0, 0)" in msg and "element offset 20 is outside 'out' (20 elements" in msg
    assert (backing[20:] == 0).all()


def test_wrongly_masked_access_is_caught_and_negative_offsets_too():
    x, out = randn(12), np.zeros(12, np.float32)
    with pytest.raises(InterpreterError) as e:
        wrong_mask_kernel[(2,)](x, out, 12, BLOCK=8)
    msg = str(e.value)
    assert "program (0, 0, 0)" in msg and "element offset -1 is outside 'x'" in msg
    assert "enabled by the mask" in msg and "block index (0,)" in msg


def test_correctly_masked_tail_does_not_raise_and_masked_lanes_never_touch_memory():
    n = 13
    x, out = randn(n), np.full(16, -5.0, np.float32)
    copy_kernel[(triton.cdiv(n, 8),)](x, out[:n], n, BLOCK=8)
    np.testing.assert_array_equal(out[:n], x)
    assert (out[n:] == -5.0).all()


@triton.jit
def far_masked_kernel(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    far = offs * 1000000 - 5000000
    v = tl.load(x + far, mask=far == 0, other=3.0)
    tl.store(out + offs, v)


def test_masked_off_lanes_read_other_whatever_their_address():
    x, out = np.array([42.0] * 2, np.float32), np.zeros(8, np.float32)
    far_masked_kernel[(1,)](x, out, BLOCK=8)
    np.testing.assert_array_equal(out, [3, 3, 3, 3, 3, 42, 3, 3])


@triton.jit
def select_ptr_kernel(x, y, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.where(offs % 2 == 0, x + offs, y + offs // 2)
    tl.store(out + offs, tl.load(p))


def test_pointers_into_two_arrays_in_one_block():
    x, y = np.arange(8, dtype=np.float32), np.arange(100, 104, dtype=np.float32)
    out = np.zeros(8, np.float32)
    select_ptr_kernel[(1,)](x, y, out, BLOCK=8)
    np.testing.assert_array_equal(out, [0, 100, 2, 101, 4, 102, 6, 103])
    with pytest.raises(InterpreterError, match=r"offset 2 is outside 'y' \(2 elements.* block index \(5,\)"):
        select_ptr_kernel[(1,)](x, y[:2], out, BLOCK=8)


# --- views and memory ---------------------------------------------------------------------------

def test_results_land_in_views():
    n = 20
    x = randn(n + 3)
    out = np.zeros(n + 3, np.float32)
    copy_kernel[(triton.cdiv(n, 8),)](x[3:], out[3:], n, BLOCK=8)
    np.testing.assert_array_equal(out[3:], x[3:])
    assert (out[:3] == 0).all()


@triton.jit
def strided_col_kernel(x, out, n, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs * stride, tl.load(x + offs * stride, mask=mask) * 2.0, mask=mask)


def test_strided_view_is_a_pointer_to_its_first_element():
    a = randn(5, 4)
    before = a.copy()
    col = a[:, 2]                                     # non-contiguous: elements 4 apart in memory
    strided_col_kernel[(1,)](col, col, 5, 4, BLOCK=8)
    np.testing.assert_array_equal(a[:, 2], before[:, 2] * 2)
    np.testing.assert_array_equal(np.delete(a, 2, axis=1), np.delete(before, 2, axis=1))
    with pytest.raises(InterpreterError, match=r"element offset 20 is outside 'x' \(17 elements"):
        strided_col_kernel[(1,)](col, col, 6, 4, BLOCK=8)


def test_2d_array_arguments_are_flat_memory():
    x = randn(3, 7)
    out = np.zeros((3, 7), np.float32)
    copy_kernel[(3,)](x, out, 21, BLOCK=8)
    np.testing.assert_array_equal(out, x)


def test_read_only_output_is_an_error():
    x = randn(8)
    out = np.zeros(8, np.float32)
    out.flags.writeable = False
    with pytest.raises(InterpreterError, match="read-only"):
        copy_kernel[(1,)](x, out, 8, BLOCK=8)


# --- arguments, signature inference, cache ------------------------------------------------------

def test_type_inference():
    assert infer_type(np.zeros(2, np.float32)) == "*fp32"
    assert infer_type(np.zeros(2, np.bool_)) == "*i1"
    assert infer_type(np.zeros(2, np.int64)) == "*i64"
    assert infer_type(np.zeros(2, np.float64)) == "*fp64"
    assert infer_type(True) == "i1"
    assert infer_type(5) == "i32" and infer_type(-2**31) == "i32"
    assert infer_type(2**31) == "i64" and infer_type(2**63) == "u64"
    assert infer_type(1.5) == "fp32"
    assert infer_type(np.float64(1.5)) == "fp64" and infer_type(np.int64(3)) == "i64"
    assert infer_type(np.bool_(True)) == "i1" and infer_type(np.uint8(3)) == "u8"
    with pytest.raises(TypeError, match="complex"):
        infer_type(np.zeros(2, np.complex64))
    with pytest.raises(TypeError, match="cannot pass str"):
        infer_type("x")


def test_specializations_are_cached_per_signature_and_constexprs():
    @triton.jit
    def k(x, out, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n, other=0) * 2, mask=offs < n)
    for _ in range(3):
        k[(1,)](np.ones(4, np.float32), np.zeros(4, np.float32), 4, BLOCK=4)
    assert len(k._interpreter_programs) == 1
    out = np.zeros(4, np.int32)
    k[(1,)](np.ones(4, np.int32), out, 4, BLOCK=4)
    k[(1,)](np.ones(4, np.float32), np.zeros(4, np.float32), 4, BLOCK=8)
    assert len(k._interpreter_programs) == 3
    assert (out == 2).all()


def test_large_int_argument_becomes_i64():
    @triton.jit
    def k(out, v):
        tl.store(out, v + 1)
    out = np.zeros(1, np.int64)
    k[(1,)](out, 2**40)
    assert out[0] == 2**40 + 1


def test_bad_grids_and_arguments():
    x = np.zeros(8, np.float32)
    for grid in [(0,), (1, 2, 3, 4), (), (2.0,), -1]:
        with pytest.raises(ValueError, match="grid must be 1 to 3 positive ints"):
            copy_kernel[grid](x, x, 8, BLOCK=8)
    with pytest.raises(TypeError, match="parameter 'n'"):
        copy_kernel[(1,)](x, x, "8", BLOCK=8)


def test_compile_errors_surface_as_compilation_errors():
    @triton.jit
    def bad(x, BLOCK: tl.constexpr):
        tl.store(x + tl.arange(0, BLOCK), 1.0)
    with pytest.raises(triton.CompilationError, match="power of 2"):
        bad[(1,)](np.zeros(8, np.float32), BLOCK=3)


def test_interpret_env_var_accepts_torch_cpu_tensors(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("MYTRITON_INTERPRET", "1")
    x = torch.randn(19)
    out = torch.zeros(19)
    copy_kernel[(3,)](x, out, 19, BLOCK=8)
    assert torch.equal(out, x)


@triton.jit
def ragged_kernel(x, lens, out, MAXLEN: tl.constexpr):
    """out[row] = sum of the first lens[row] entries of x[row, :]: a loop bound read from memory."""
    row = tl.program_id(0)
    n = tl.load(lens + row)
    acc = 0.0
    for j in range(n):
        acc += tl.load(x + row * MAXLEN + j)
    tl.store(out + row, acc)


@triton.jit
def carried_bound_kernel(out, K):
    """A loop bound that depends on the program id only through another loop's carried value."""
    pid = tl.program_id(0)
    b = 0
    for i in range(K):
        b = b + pid
    total = 0
    for j in range(b):
        total += 1
    tl.store(out + pid, total)


def test_loop_bounds_from_memory_and_carried_values_run_per_program():
    rows, maxlen = 6, 9
    x = randn(rows, maxlen)
    lens = np.array([0, 9, 3, 1, 7, 5], np.int32)
    out = np.zeros(rows, np.float32)
    ragged_kernel[(rows,)](x, lens, out, MAXLEN=maxlen)
    want = [x[r, :lens[r]].astype(np.float64).sum() for r in range(rows)]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    out = np.zeros(5, np.int32)
    carried_bound_kernel[(5,)](out, 3)
    np.testing.assert_array_equal(out, np.arange(5) * 3)
    for k in (ragged_kernel, carried_bound_kernel):
        (program,) = k._interpreter_programs.values()
        assert not program.batchable
