"""Kernels with run-time control flow: if/elif/else merges, while loops, early returns, run-time
and negative loop steps, and their combinations inside loops. The source is plain Triton (only the
two imports differ), so the GPU tests also run it through Triton where it is installed."""
import numpy as np

import mytriton as triton
import mytriton.language as tl


@triton.jit
def branches(x_ptr, out_ptr, flags_ptr, n, thr, BLOCK: tl.constexpr):
    """if/elif/else on a per-program reduction, merging a block and a scalar; an if for its side
    effects only."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    s = tl.sum(x, axis=0)
    if s > thr:
        y = x * 2.0
        c = 1
    elif s < -thr:
        y = x - 1.0
        c = 2
    else:
        y = tl.where(x > 0, x, 0.0)
        c = 3
    if pid % 2 == 0:
        tl.store(flags_ptr + pid, c)
    else:
        tl.store(flags_ptr + pid, -c)
    tl.store(out_ptr + offs, y + c, mask=mask)


@triton.jit
def countdown(x_ptr, out_ptr, steps_ptr, n, BLOCK: tl.constexpr):
    """A while loop whose trip count each program reads from memory, carrying a block and a scalar,
    with a reduction (block barriers) in its body."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    k = tl.load(steps_ptr + pid)
    total = 0.0
    while k > 0:
        x = x * 0.5 + 1.0
        total += tl.sum(x, axis=0)
        k -= 1
    tl.store(out_ptr + offs, x + total, mask=mask)


@triton.jit
def clamp(x, lo, hi):
    if x < lo:
        return lo
    elif x > hi:
        return hi
    return x


@triton.jit
def early_exit(x_ptr, out_ptr, n_valid, lo, hi, BLOCK: tl.constexpr):
    """Returns under run-time conditions: at the top, in an inlined helper, and after a store."""
    pid = tl.program_id(0)
    if pid >= n_valid:
        return
    v = clamp(tl.load(x_ptr + pid), lo, hi)
    offs = tl.arange(0, BLOCK)
    if v == lo:
        tl.store(out_ptr + pid * BLOCK + offs, tl.zeros((BLOCK,), tl.float32) + v)
        return
    tl.store(out_ptr + pid * BLOCK + offs, v * offs.to(tl.float32))


@triton.jit
def nested_return(c1_ptr, c2_ptr, c3_ptr, out_ptr):
    """Triton's test_nested_if_else_return, one combination of the three conditions per program."""
    pid = tl.program_id(0)
    val = 0
    if tl.load(c1_ptr + pid):
        if tl.load(c2_ptr + pid):
            val = tl.load(c1_ptr + pid) * 10
        else:
            return
    else:
        if tl.load(c3_ptr + pid):
            val = 2
        else:
            val = 3
    tl.store(out_ptr + pid, val)


@triton.jit
def row_softmax(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    """Tutorial 02's persistent loop: rows start at the program id, step by the number of programs."""
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(start, n_rows, step, num_stages=2):
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
        z = x - tl.max(x, axis=0)
        e = tl.exp(z)
        tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def strides(out_ptr, start, stop, step, n):
    """Order-sensitive sums over range() with a run-time step of either sign (or zero) and with a
    constant negative step."""
    acc = 0
    count = 0
    for i in range(start, stop, step):
        acc = (acc * 7 + i + 50) % 1000003
        count += 1
    back = 0
    for j in tl.range(n - 1, -1, -3, loop_unroll_factor=2):
        back = (back * 5 + j) % 1000003
    tl.store(out_ptr, acc)
    tl.store(out_ptr + 1, count)
    tl.store(out_ptr + 2, back)


@triton.jit
def nested(x_ptr, out_ptr, n, m, BLOCK: tl.constexpr):
    """if/elif/else and a while loop inside a for loop, carrying a block through all of them."""
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(m):
        x = tl.load(x_ptr + i * n + offs, mask=mask, other=0.0)
        if i % 3 == 0:
            acc += x
        elif tl.sum(x, axis=0) > 0:
            j = 0
            while j < i:
                acc = acc + x * 0.5
                j += 1
        else:
            acc = tl.maximum(acc, x)
    tl.store(out_ptr + offs, acc, mask=mask)


@triton.jit
def select(x_ptr, out_ptr):
    """Conditional expressions on run-time scalars (one with values, one with stores) and Python's
    min/max on run-time values."""
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    w = v * 2.0 if v > 0 else -v
    m = max(w, 1.0)
    k = min(pid, 3)
    tl.store(out_ptr + pid, m + k) if pid % 2 == 0 else tl.store(out_ptr + pid, m - k)


@triton.jit
def dead_lane(out, n):
    i = 0
    dead = 0
    while i < n:
        dead = dead + 3
        i += 1
    tl.store(out, i)


# --- numpy references (same arguments as the kernels, numpy arrays) ----------------------------

def branches_ref(x, n, thr, block):
    out = x.copy()
    programs = -(-n // block)
    flags = []
    for p in range(programs):
        xs = x[p * block:min(n, (p + 1) * block)]
        s = xs.sum(dtype=np.float64)
        if s > thr:
            y, c = xs * np.float32(2.0), 1
        elif s < -thr:
            y, c = xs - np.float32(1.0), 2
        else:
            y, c = np.where(xs > 0, xs, np.float32(0)), 3
        out[p * block:p * block + len(xs)] = y + np.float32(c)
        flags.append(c if p % 2 == 0 else -c)
    return out, np.array(flags, np.int32)


def countdown_ref(x, steps, n, block):
    out = x.copy()
    for p in range(len(steps)):
        xs = x[p * block:min(n, (p + 1) * block)].copy()
        total = np.float32(0)
        padded = np.zeros(block, np.float32)
        for _ in range(max(0, steps[p])):
            padded[:len(xs)] = xs
            padded = padded * np.float32(0.5) + np.float32(1.0)
            xs = padded[:len(xs)].copy()
            total = np.float32(total + padded.sum(dtype=np.float64))
        out[p * block:p * block + len(xs)] = xs + total
    return out


def early_exit_ref(x, out, n_valid, lo, hi, block):
    out = out.copy()
    for p in range(min(n_valid, len(out) // block)):
        v = min(max(x[p], lo), hi)
        offs = np.arange(block, dtype=np.float32)
        out[p * block:(p + 1) * block] = v if v == lo else v * offs
    return out


def nested_return_ref(c1, c2, c3, out):
    out = out.copy()
    for p in range(len(out)):
        if c1[p]:
            if c2[p]:
                out[p] = c1[p] * 10
        else:
            out[p] = 2 if c3[p] else 3
    return out


def row_softmax_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def strides_ref(start, stop, step, n):
    acc = count = 0
    for i in (range(start, stop, step) if step else ()):
        acc = (acc * 7 + i + 50) % 1000003
        count += 1
    back = 0
    for j in range(n - 1, -1, -3):
        back = (back * 5 + j) % 1000003
    return np.array([acc, count, back], np.int32)


def nested_ref(x, n, m, block):
    acc = np.zeros(block, np.float32)
    for i in range(m):
        xs = np.zeros(block, np.float32)
        xs[:n] = x[i * n:(i + 1) * n]
        if i % 3 == 0:
            acc = acc + xs
        elif xs.sum(dtype=np.float64) > 0:
            for _ in range(i):
                acc = acc + xs * np.float32(0.5)
        else:
            acc = np.maximum(acc, xs)
    return acc[:n]


def select_ref(x):
    out = np.zeros_like(x)
    for p, v in enumerate(x):
        w = v * np.float32(2) if v > 0 else -v
        m = max(w, np.float32(1))
        k = min(p, 3)
        out[p] = m + k if p % 2 == 0 else m - k
    return out



@triton.jit
def int64_loop(out, lo, hi, STEP: tl.constexpr):
    """A run-time loop over int64 bounds (Triton's index takes the promoted type of the bounds)."""
    acc = tl.zeros([1], tl.int64)
    n = tl.zeros([1], tl.int32)
    for i in range(lo, hi, STEP):
        acc += i
        n += 1
    tl.store(out + tl.arange(0, 1), acc)
    tl.store(out + 1 + tl.arange(0, 1), n.to(tl.int64))


@triton.jit
def one_element_conditions(x_ptr):
    """An `if` on a block of one element (Triton takes the element): x[0] capped at 42, then
    x[1] = how many steps bring the reloaded x[0] to 45."""
    if tl.load(x_ptr + tl.arange(0, 1)) > 42:
        tl.store(x_ptr, 42)
    n = 0
    while tl.load(x_ptr) + n < 45:
        n += 1
    tl.store(x_ptr + 1, n)


@triton.jit
def reassigned_loop_variables(x_ptr, n, BLOCK: tl.constexpr):
    """The loop variable assigned in the body (Triton's tutorials: `start_n = tl.multiple_of(start_n,
    BLOCK_N)`): the new value holds for the rest of the iteration, the next takes the next index.
    x[2 * i] += 1 for i < n (a run-time loop), x[2 * j + 1] += 10 for j < 3 (unrolled)."""
    for i in range(n):
        i = tl.multiple_of(i * 2, 2)
        tl.store(x_ptr + i, tl.load(x_ptr + i) + 1)
    for j in range(3):
        j = 2 * j + 1
        tl.store(x_ptr + j, tl.load(x_ptr + j) + 10)


@triton.jit
def same_value_both_branches(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A name new in a run-time `if` that both branches bind to one value from before it (`r = x`,
    and `q = x.to(x.dtype)`, a conversion that is no op), and a Python number both bind: defined
    after the `if`."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if n > 3:
        r = x
        q = x.to(tl.float32)
        one = 1
    else:
        r = x
        q = x.to(tl.float32)
        one = 1
    tl.store(out_ptr + offs, r + q + one)
