"""Kernels of tests/test_inline_asm.py: tl.inline_asm_elementwise with one and several results,
packed narrow operands, pointer operands and scalars (Triton's spelling of the PTX: $i operands)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def funnel_shift(x_ptr, y_ptr, z_ptr, n: tl.constexpr, BLOCK: tl.constexpr):
    """z = (y << n) | (x >> (32 - n)): one 32-bit register per element and operand."""
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.load(y_ptr + tl.arange(0, BLOCK))
    s = tl.full([BLOCK], n, tl.int32)
    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", [x, y, s], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(z_ptr + tl.arange(0, BLOCK), z)


@triton.jit
def packed_shift(x_ptr, y_ptr, BLOCK: tl.constexpr):
    """Four uint8 per 32-bit register: (x & 0x1F) << 3 for each byte."""
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", "=r,r", [x], dtype=tl.int8,
                                  is_pure=True, pack=4)
    tl.store(y_ptr + tl.arange(0, BLOCK), y)


@triton.jit
def differences(a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: tl.constexpr):
    """Two results: a - b and b - a."""
    a = tl.load(a_ptr + tl.arange(0, BLOCK))
    b = tl.load(b_ptr + tl.arange(0, BLOCK))
    (c, d) = tl.inline_asm_elementwise(asm="sub.u32 $0, $2, $3; sub.u32 $1, $3, $2;", constraints="=r,=r,r,r",
                                       args=[a, b], dtype=(tl.uint32, tl.uint32), is_pure=True, pack=1)
    tl.store(c_ptr + tl.arange(0, BLOCK), c)
    tl.store(d_ptr + tl.arange(0, BLOCK), d)


@triton.jit
def unpack_and_max(a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: tl.constexpr):
    """pack=4 with two results: the bytes of a (one register in) widened to int32 (four out),
    and the max of each as float with b (four registers in, four out)."""
    a = tl.load(a_ptr + tl.arange(0, BLOCK))
    b = tl.load(b_ptr + tl.arange(0, BLOCK))
    (c, d) = tl.inline_asm_elementwise(
        asm="""
        {
            .reg .b8 tmp<4>;
            mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
            cvt.u32.u8 $0, tmp0;
            cvt.u32.u8 $1, tmp1;
            cvt.u32.u8 $2, tmp2;
            cvt.u32.u8 $3, tmp3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """,
        constraints="=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r", args=[a, b], dtype=(tl.int32, tl.float32), is_pure=True,
        pack=4)
    tl.store(c_ptr + tl.arange(0, BLOCK), c)
    tl.store(d_ptr + tl.arange(0, BLOCK), d)


@triton.jit
def copy_through_pointers(x_ptr, y_ptr, BLOCK: tl.constexpr):
    """Loads and stores in the PTX itself (is_pure=False: kept though its result is unused)."""
    tl.inline_asm_elementwise("ld.global.b8 $0, [$1]; shl.b32 $0, $0, 3; st.global.b8 [$2], $0;", "=r,l,l",
                              [x_ptr + tl.arange(0, BLOCK), y_ptr + tl.arange(0, BLOCK)], dtype=tl.int8,
                              is_pure=False, pack=1)


@triton.jit
def halves_and_scalars(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """int16 two per register (moved through unchanged, however many elements a thread holds), a
    scalar asm on a run-time scalar, and %laneid (a literal % in the PTX) checked to be a lane."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    same = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int16, is_pure=True, pack=2)
    tl.store(out_ptr + offs, same.to(tl.int32))
    plus = tl.inline_asm_elementwise("add.s32 $0, $1, 1;", "=r,r", [n], dtype=tl.int32, is_pure=True, pack=1)
    lane = tl.inline_asm_elementwise("mov.u32 $0, %laneid;", "=r", [], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out_ptr + BLOCK, plus + ((lane >= 0) & (lane < 32)).to(tl.int32))


@triton.jit
def special_registers(out_ptr, times_ptr):
    """tl.extra.cuda: num_threads() elements of ones, the SM of each program, the timer twice."""
    start = tl.extra.cuda.globaltimer()
    n: tl.constexpr = tl.extra.cuda.num_threads()
    tl.store(out_ptr + tl.arange(0, n), tl.full([n], tl.extra.cuda.num_warps(), tl.int32))
    tl.store(out_ptr + n + tl.program_id(0), tl.extra.cuda.smid())
    tl.store(times_ptr + 2 * tl.program_id(0), start)
    tl.store(times_ptr + 2 * tl.program_id(0) + 1, tl.extra.cuda.globaltimer())
