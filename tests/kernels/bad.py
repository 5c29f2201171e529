"""Kernels that must fail to compile. Each offending line carries an `# ERR <case>` marker; the
tests find the expected line number from it."""
import mytriton as triton
import mytriton.language as tl


def host_helper(x):
    return x


@triton.jit
def while_loop(x, n):
    i = 0
    while i < n:
        i += 1
        if i > 3:
            break  # ERR while_break


@triton.jit
def while_continue(x, n):
    i = 0
    while i < n:
        i += 1
        continue  # ERR while_continue


@triton.jit
def while_tile(x, n):
    offs = tl.arange(0, 8)
    while offs < n:  # ERR while_tile
        offs += 1


@triton.jit
def while_constant(x, n):
    while 1 < 2:  # ERR while_constant
        tl.store(x, 1.0)


@triton.jit
def break_in_loop(x, n):
    for i in range(n):
        break  # ERR break


@triton.jit
def undefined_name(x, n):
    tl.store(x, undefined_thing)  # ERR undefined


@triton.jit
def load_non_pointer(x, n):
    v = tl.load(n)  # ERR load_non_pointer
    tl.store(x, v)


@triton.jit
def mask_not_bool(x, n):
    offs = tl.arange(0, 16)
    v = tl.load(x + offs, mask=offs)  # ERR mask_not_bool
    tl.store(x + offs, v)


@triton.jit
def shape_mismatch(x, n):
    a = tl.arange(0, 8)
    b = tl.arange(0, 16)
    tl.store(x + a, a + b)  # ERR shape_mismatch


@triton.jit
def exp_of_int(x, n):
    offs = tl.arange(0, 16)
    tl.store(x + offs, tl.exp(offs))  # ERR exp_int


@triton.jit
def float_floordiv(x, n):
    offs = tl.arange(0, 16)
    v = tl.load(x + offs)
    tl.store(x + offs, v // 2.0)  # ERR float_floordiv


@triton.jit
def static_range_runtime(x, n):
    for i in tl.static_range(0, n):  # ERR static_range
        tl.store(x + i, 1.0)


@triton.jit
def carried_type_change(x, n):
    offs = tl.arange(0, 16)
    acc = 0
    for i in range(n):  # ERR carried
        acc = acc + tl.load(x + offs)
    tl.store(x + offs, acc)


@triton.jit
def for_else(x, n):
    for i in range(n):  # ERR for_else
        tl.store(x + i, 1.0)
    else:
        pass


@triton.jit
def tile_condition(x, n):
    offs = tl.arange(0, 16)
    if offs < n:  # ERR tile_if
        tl.store(x, 1.0)


@triton.jit
def branch_types(x, n):
    if n > 0:  # ERR branch_types
        v = 1.0
    else:
        v = 1
    tl.store(x, v)


@triton.jit
def branch_redefines(x, n):
    v = 0
    if n > 0:  # ERR branch_redefines
        v = tl.load(x)
    tl.store(x, v)


@triton.jit
def one_branch_name(x, n):
    if n > 0:
        v = 1.0
    tl.store(x, v)  # ERR one_branch


@triton.jit
def return_in_loop(x, n):
    for i in range(n):
        if i > 2:  # ERR return_in_loop
            return
        tl.store(x + i, 1.0)


@triton.jit
def ifexp_types(x, n):
    tl.store(x, 1.0 if n > 0 else n)  # ERR ifexp_types


@triton.jit
def call_host_function(x, n):
    tl.store(x, host_helper(n))  # ERR host_call


@triton.jit
def arange_not_pow2(x, n):
    offs = tl.arange(0, 12)  # ERR arange_pow2
    tl.store(x + offs, 1.0)


@triton.jit
def zeros_bad_shape(x, n):
    v = tl.zeros((4, 0), tl.float32)  # ERR zeros_shape
    tl.store(x, tl.sum(v))


@triton.jit
def full_block_value(x, n):
    v = tl.full((4,), tl.arange(0, 4), tl.float32)  # ERR full_block
    tl.store(x + tl.arange(0, 4), v)


@triton.jit
def store_shape_mismatch(x, n):
    tl.store(x + tl.arange(0, 4), tl.zeros((8,), tl.float32))  # ERR store_shape


@triton.jit
def zero_step(x, n):
    for i in range(0, n, 0):  # ERR zero_step
        tl.store(x + i, 1.0)


@triton.jit
def float_step(x, n):
    for i in range(0, n, 1.5):  # ERR float_step
        tl.store(x + i, 1.0)


@triton.jit
def bool_and_tensors(x, n):
    offs = tl.arange(0, 16)
    m = (offs < n) and x  # ERR and_tensors
    tl.store(x + offs, 1.0, mask=m)


@triton.jit
def _bad_callee(p):
    return tl.load(p, mask=3)  # ERR in_callee


@triton.jit
def calls_bad_callee(x, n):
    tl.store(x, _bad_callee(x))


@triton.jit
def needs_block(x, BLOCK: tl.constexpr):
    tl.store(x + tl.arange(0, BLOCK), 1.0)


@triton.jit
def slow_to_compile(x, N: tl.constexpr):
    """NVRTC takes about 0.5 s on N=10 (tests/test_limits.py: exiting during an abandoned compile)."""
    offs = tl.arange(0, 256)
    v = tl.load(x + offs)
    for i in tl.static_range(N):
        v = tl.sin(v) * 1.5 + tl.exp(v * 0.5)
    tl.store(x + offs, v)


# --- issue #11: limits (tests/test_limits.py) ---------------------------------------------------

@triton.jit
def huge_arange(x, n):
    offs = tl.arange(0, 2**24)  # ERR huge_numel
    tl.store(x + offs, 1.0)


@triton.jit
def huge_broadcast(x, n):
    a = tl.arange(0, 2048)
    tl.store(x + a[:, None] + a[None, :], 1.0)  # ERR huge_broadcast


@triton.jit
def block_per_thread(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)  # ERR per_thread
    tl.store(x + offs, 1.0)


@triton.jit
def loop_step_beyond_i64(x, n):
    for i in range(0, n, 2**64):  # ERR step_i64
        tl.store(x + i, 1.0)


@triton.jit
def arange_beyond_i32(x, n):
    tl.store(x + tl.arange(2**31 - 8, 2**31 + 8), 1.0)  # ERR arange_i32


@triton.jit
def list_repeat(x, n):
    big = [0] * 2**33  # ERR list_repeat
    tl.store(x, len(big))


@triton.jit
def str_repeat(x, n):
    s = "a" * 2**34  # ERR str_repeat
    tl.store(x, len(s))


@triton.jit
def huge_power(x, n):
    v = 10 ** 10 ** 8  # ERR huge_power
    tl.store(x, v % 7)


@triton.jit
def pow_with_none_modulus(x, n):
    v = pow(7, 200000, None)  # ERR pow_none
    tl.store(x, v % 7)


@triton.jit
def pow_by_keyword(x, n):
    v = pow(base=7, exp=200000)  # ERR pow_keywords
    tl.store(x, v % 7)


@triton.jit
def format_star_width(x, n):
    s = "%*d" % (3000000, 1)  # ERR format_star
    tl.store(x, len(s))


@triton.jit
def tuple_doubling(x, n):
    t = (0,)
    for i in tl.static_range(40):
        t = t + t  # ERR tuple_doubling
    tl.store(x, len(t))


@triton.jit
def endless_unroll(x, n):
    for i in tl.static_range(2**40):
        pass  # ERR trace_steps


@triton.jit
def print_in_kernel(x, n):
    print("printed on the host at build time")  # ERR print


@triton.jit
def calls_the_compiler(x, n):
    triton.compile(needs_block)  # ERR compiler_call


@triton.jit
def opens_a_file(x, n):
    open("/tmp/mytriton-kernel-wrote-this", "w")  # ERR open_call


@triton.jit
def sorted_with_host_key(x, n):
    t = sorted((3, 1, 2), key=host_helper)  # ERR host_key
    tl.store(x, t[0])


@triton.jit
def launch_option_parameter(x, num_stages):  # ERR launch_option
    tl.store(x, 1.0)


@triton.jit
def _nest(n, D: tl.constexpr):
    acc = 0
    for a in range(n):  # ERR loop_nesting
        for b in range(n):
            for c in range(n):
                for d in range(n):
                    for e in range(n):
                        for f in range(n):
                            for g in range(n):
                                for h in range(n):
                                    if D > 0:
                                        acc += _nest(n, D - 1)
                                    else:
                                        acc += 1
    return acc


@triton.jit
def deeply_nested_loops(x, n):
    tl.store(x, _nest(n, 8).to(tl.float32))


class Evil:
    """A host object whose special methods record that they ran (tests/test_limits.py)."""
    ran: list = []

    def _ran(self, what):
        Evil.ran.append(what)

    def __str__(self):
        self._ran("__str__")
        return "evil"

    __repr__ = __str__

    @property
    def prop(self):
        self._ran("prop")
        return 1

    def __getattr__(self, name):
        self._ran("__getattr__")
        return 1

    def __add__(self, other):
        self._ran("__add__")
        return 1

    def __len__(self):
        self._ran("__len__")
        return 1

    def __getitem__(self, index):
        self._ran("__getitem__")
        return 1

    def __hash__(self):
        self._ran("__hash__")
        return 1

    def __eq__(self, other):
        self._ran("__eq__")
        return False

    @property
    def __class__(self):        # isinstance() reads it
        self._ran("__class__")
        return int


E = Evil()
EVILS = (1, E)
THIS = __import__("sys").modules[__name__]


@triton.jit
def host_object_str(x, n):
    s = str(E)  # ERR evil_str


@triton.jit
def host_object_property(x, n):
    v = E.prop  # ERR evil_prop


@triton.jit
def host_object_add(x, n):
    v = E + 1  # ERR evil_add


@triton.jit
def host_object_len(x, n):
    v = len(E)  # ERR evil_len


@triton.jit
def host_object_in_tuple(x, n):
    v = EVILS[0]  # ERR evil_tuple


@triton.jit
def host_object_of_module(x, n):
    v = THIS.E  # ERR evil_module


@triton.jit
def host_object_constexpr(x, n, C: tl.constexpr):  # ERR evil_constexpr
    tl.store(x, 1.0)


@triton.jit
def _evil_default(x, C: tl.constexpr = E):
    return x


@triton.jit
def host_object_default(x, n):
    v = _evil_default(1)  # ERR evil_default


@triton.jit
def host_object_getattr(x, n):
    v = getattr(THIS, "E")  # ERR evil_getattr
