"""Kernels that use atomics (tests/test_atomics*.py)."""
import mytriton as triton
import mytriton.language as tl

SEMS = ("acq_rel", "acquire", "release", "relaxed")
SCOPES = ("gpu", "cta", "sys")


@triton.jit
def histogram(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bins = tl.load(x_ptr + offs, mask=mask)
    tl.atomic_add(hist_ptr + bins, 1, mask=mask)


@triton.jit
def histogram_old(x_ptr, hist_ptr, old_ptr, n, BLOCK: tl.constexpr):
    """The histogram, and each element's slot: the count of its bin before it (the old value)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bins = tl.load(x_ptr + offs, mask=mask)
    old = tl.atomic_add(hist_ptr + bins, 1, mask=mask)
    tl.store(old_ptr + offs, old, mask=mask)


@triton.jit
def ticket(counter_ptr, out_ptr, BLOCK: tl.constexpr):
    """A scalar atomic: once per program; every thread sees the program's ticket."""
    t = tl.atomic_add(counter_ptr, 1)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, t + tl.zeros((BLOCK,), tl.int32))


@triton.jit
def rmw_tile(dst_ptr, val_ptr, old_ptr, n, KIND: tl.constexpr, SEM: tl.constexpr, SCOPE: tl.constexpr,
             BLOCK: tl.constexpr):
    """dst[offs % n] (op)= val, masked to offs < n; the old values out."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    val = tl.load(val_ptr + offs, mask=mask)
    ptr = dst_ptr + offs % 8
    if KIND == "add":
        old = tl.atomic_add(ptr, val, mask=mask, sem=SEM, scope=SCOPE)
    elif KIND == "max":
        old = tl.atomic_max(ptr, val, mask=mask, sem=SEM, scope=SCOPE)
    elif KIND == "min":
        old = tl.atomic_min(ptr, val, mask=mask, sem=SEM, scope=SCOPE)
    elif KIND == "and":
        old = tl.atomic_and(ptr, val, mask=mask, sem=SEM, scope=SCOPE)
    elif KIND == "or":
        old = tl.atomic_or(ptr, val, mask=mask, sem=SEM, scope=SCOPE)
    elif KIND == "xor":
        old = tl.atomic_xor(ptr, val, mask=mask, sem=SEM, scope=SCOPE)
    else:
        old = tl.atomic_xchg(ptr, val, mask=mask, sem=SEM, scope=SCOPE)
    tl.store(old_ptr + offs, old, mask=mask)


@triton.jit
def sum_then_add(z_ptr, x_ptr, old_ptr, AXIS: tl.constexpr, SHAPE0: tl.constexpr, SHAPE1: tl.constexpr):
    """Triton's tensor atomic test: a reduction's result (a sliced layout) added atomically."""
    off0 = tl.arange(0, SHAPE0)
    off1 = tl.arange(0, SHAPE1)
    x = tl.load(x_ptr + off0[:, None] * SHAPE1 + off1[None, :])
    z = tl.sum(x, axis=AXIS)
    if AXIS == 1:
        old = tl.atomic_add(z_ptr + off0, z)
        tl.store(old_ptr + off0, old)
    else:
        old = tl.atomic_add(z_ptr + off1, z)
        tl.store(old_ptr + off1, old)


@triton.jit
def cas_tile(dst_ptr, cmp_ptr, val_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_cas(dst_ptr + offs, tl.load(cmp_ptr + offs), tl.load(val_ptr + offs))
    tl.store(old_ptr + offs, old)


@triton.jit
def every_atomic(ptr, val_ptr, out_ptr, KINDS: tl.constexpr, BLOCK: tl.constexpr):
    """Every kind in KINDS with every sem and scope (for the PTX tests)."""
    offs = tl.arange(0, BLOCK)
    v = tl.load(val_ptr + offs)
    acc = tl.zeros((BLOCK,), tl.int32)
    for i in tl.static_range(len(SEMS) * len(SCOPES)):
        sem: tl.constexpr = SEMS[i // len(SCOPES)]
        scope: tl.constexpr = SCOPES[i % len(SCOPES)]
        for j in tl.static_range(len(KINDS)):
            kind: tl.constexpr = KINDS[j]
            if kind == "add":
                a = tl.atomic_add(ptr + offs, v, sem=sem, scope=scope)
            elif kind == "max":
                a = tl.atomic_max(ptr + offs, v, sem=sem, scope=scope)
            elif kind == "min":
                a = tl.atomic_min(ptr + offs, v, sem=sem, scope=scope)
            elif kind == "and":
                a = tl.atomic_and(ptr + offs, v, sem=sem, scope=scope)
            elif kind == "or":
                a = tl.atomic_or(ptr + offs, v, sem=sem, scope=scope)
            elif kind == "xor":
                a = tl.atomic_xor(ptr + offs, v, sem=sem, scope=scope)
            elif kind == "xchg":
                a = tl.atomic_xchg(ptr + offs, v, sem=sem, scope=scope)
            else:
                a = tl.atomic_cas(ptr + offs, v, v, sem=sem, scope=scope)
            acc += (a == v).to(tl.int32)
    tl.store(out_ptr + offs, acc)


@triton.jit
def spin_lock(data_ptr, lock_ptr, BLOCK: tl.constexpr):
    """Triton's serialized add: one program at a time in the critical section."""
    ptrs = data_ptr + tl.arange(0, BLOCK)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(ptrs, tl.load(ptrs) + 1.0)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


# --- kernels that must not compile (each error's line ends with its marker) ---------------------

@triton.jit
def bad_sem(x):
    tl.atomic_add(x, 1.0, sem="seq_cst")  # ERR bad_sem


@triton.jit
def bad_scope(x):
    tl.atomic_cas(x, 0.0, 1.0, scope="device")  # ERR bad_scope


@triton.jit
def bad_dtype_i8(x):
    tl.atomic_add(x, 1)  # ERR bad_dtype_i8


@triton.jit
def bad_dtype_fp16_max(x):
    tl.atomic_max(x, 1.0)  # ERR bad_dtype_fp16_max


@triton.jit
def bad_float_and(x):
    tl.atomic_and(x, 1.0)  # ERR bad_float_and


@triton.jit
def bad_pointer_value(x):
    tl.atomic_xchg(x, x)  # ERR bad_pointer_value


@triton.jit
def bad_not_pointer(x):
    v = tl.load(x)
    tl.atomic_add(v, 1.0)  # ERR bad_not_pointer


@triton.jit
def bad_block_into_scalar(x):
    tl.atomic_add(x, tl.zeros((8,), tl.float32))  # ERR bad_block_into_scalar


@triton.jit
def bad_mask(x):
    tl.atomic_or(x + tl.arange(0, 8), 1, mask=tl.arange(0, 8))  # ERR bad_mask


@triton.jit
def spin_lock_body(data_ptr, lock_ptr, BLOCK: tl.constexpr):
    """The spin lock without its `while` (one attempt): a compare-and-swap, a critical section, a
    barrier, the release."""
    ptrs = data_ptr + tl.arange(0, BLOCK)
    got = tl.atomic_cas(lock_ptr, 0, 1, sem="acquire")
    tl.store(ptrs, tl.load(ptrs) + 1.0, mask=got == 0)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0, mask=got == 0, sem="release")
