// mytriton device helpers (shipped inside every generated translation unit).
// Signed integer + - * wrap around as in Triton; C++ leaves signed overflow undefined, so they are
// computed in the unsigned type. Integer / and % truncate toward zero, as C and Triton do; a zero
// divisor yields -1 (all ones) / the dividend, and a signed MIN / -1 wraps to MIN (as Triton gives),
// instead of undefined behaviour.
template <typename T> struct mt_unsigned { typedef T type; };          // unsigned types map to themselves
template <> struct mt_unsigned<signed char> { typedef unsigned char type; };
template <> struct mt_unsigned<short> { typedef unsigned short type; };
template <> struct mt_unsigned<int> { typedef unsigned int type; };
template <> struct mt_unsigned<long long> { typedef unsigned long long type; };
template <typename T> __device__ __forceinline__ T mt_add(T a, T b) {
  typedef typename mt_unsigned<T>::type U; return (T)((U)a + (U)b);
}
template <typename T> __device__ __forceinline__ T mt_sub(T a, T b) {
  typedef typename mt_unsigned<T>::type U; return (T)((U)a - (U)b);
}
template <typename T> __device__ __forceinline__ T mt_mul(T a, T b) {
  typedef typename mt_unsigned<T>::type U; return (T)((U)a * (U)b);
}
template <typename T> __device__ __forceinline__ bool mt_minus_one(T b) { return (T)-1 < (T)0 && b == (T)-1; }
template <typename T> __device__ __forceinline__ T mt_div(T a, T b) {
  return b == 0 ? (T)-1 : mt_minus_one(b) ? mt_sub((T)0, a) : a / b;
}
template <typename T> __device__ __forceinline__ T mt_mod(T a, T b) {
  return b == 0 ? a : mt_minus_one(b) ? (T)0 : a % b;
}
// N contiguous elements moved as one access (ld/st.global.v2/.v4 when N * sizeof(T) is 8 or 16).
template <typename T, int N> struct __align__(sizeof(T) * N) mt_vec { T v[N]; };
__device__ __forceinline__ bool mt_aligned(const void* p, unsigned long long bytes) {
  return (reinterpret_cast<unsigned long long>(p) & (bytes - 1)) == 0;
}
// x.to(T, bitcast=True): the same bits read as T (of the same width).
template <typename D, typename S> __device__ __forceinline__ D mt_bitcast(S s) {
  static_assert(sizeof(D) == sizeof(S), "a bitcast keeps the width");
  D d; memcpy(&d, &s, sizeof(D)); return d;
}
// What Triton compiles fp32 `/`, tl.sqrt, tl.rsqrt and tl.exp2 to: div.full.f32 (within 2 ulp),
// sqrt/rsqrt/ex2.approx.ftz.f32 (subnormals flushed). Host compilers (the CPU emulator of the
// tests) get the exact operations.
__device__ __forceinline__ float mt_div_full(float a, float b) {
#ifdef __CUDA_ARCH__
  float r; asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
#else
  return a / b;
#endif
}
#ifdef __CUDA_ARCH__
#define MT_APPROX(name, ptx, exact) __device__ __forceinline__ float name(float a) { float r; asm(ptx " %0, %1;" : "=f"(r) : "f"(a)); return r; }
#else
#define MT_APPROX(name, ptx, exact) __device__ __forceinline__ float name(float a) { return exact; }
#endif
MT_APPROX(mt_sqrt_approx, "sqrt.approx.ftz.f32", sqrtf(a))
MT_APPROX(mt_rsqrt_approx, "rsqrt.approx.ftz.f32", 1.0f / sqrtf(a))
MT_APPROX(mt_exp2_approx, "ex2.approx.ftz.f32", exp2f(a))
#undef MT_APPROX
// What a masked-off chunk of a vector load in a loop reads instead of its address (16 zero bytes,
// always valid): an ordinary load, no branch around it.
__device__ const mt_vec<unsigned, 4> mt_masked_off = {};
// A masked load of N 32-bit words: zeros, then a load predicated on `pred` (as Triton's `@p
// ld.global`): no branch around it (ptxas can overlap the loads of an unrolled loop) and no
// select of another address.
template <int N>
__device__ __forceinline__ void mt_load_pred(mt_vec<unsigned, N>& w, const void* p, bool pred) {
#ifdef __CUDA_ARCH__
  if constexpr (N == 4)
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %5, 0; mov.b32 %0, 0; mov.b32 %1, 0; mov.b32 %2, 0; mov.b32 %3, 0;"
                 " @q ld.global.v4.u32 { %0, %1, %2, %3 }, [%4]; }"
                 : "=r"(w.v[0]), "=r"(w.v[1]), "=r"(w.v[2]), "=r"(w.v[3]) : "l"(p), "r"((int)pred) : "memory");
  else if constexpr (N == 2)
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %3, 0; mov.b32 %0, 0; mov.b32 %1, 0;"
                 " @q ld.global.v2.u32 { %0, %1 }, [%2]; }"
                 : "=r"(w.v[0]), "=r"(w.v[1]) : "l"(p), "r"((int)pred) : "memory");
  else
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; mov.b32 %0, 0; @q ld.global.u32 %0, [%1]; }"
                 : "=r"(w.v[0]) : "l"(p), "r"((int)pred) : "memory");
#else
  if (pred) memcpy(&w, p, sizeof(w)); else memset(&w, 0, sizeof(w));
#endif
}
// A run-time loop's bound, read anew by each test (an empty volatile asm): NVVM then cannot count
// the loop's trips and leaves it rolled, and ptxas, which sees a plain counted loop, unrolls it
// and issues the loads of its unrolled iterations ahead of their arithmetic, as it does Triton's
// loops. (Unrolled by NVVM, each iteration's loads stayed between the previous one's FMAs.) The
// index stays an induction variable: NVVM still strength-reduces the addresses.
template <class T>
__device__ __forceinline__ T mt_rolled_bound(T b) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 8) asm volatile("" : "+l"(b)); else asm volatile("" : "+r"(b));
#endif
  return b;
}
// tl.load(..., volatile=True): the element's bytes read through a volatile pointer (ld.volatile:
// never kept in a register, hoisted or merged by the compiler).
template <int S> struct mt_uint_of_size;
template <> struct mt_uint_of_size<1> { typedef unsigned char type; };
template <> struct mt_uint_of_size<2> { typedef unsigned short type; };
template <> struct mt_uint_of_size<4> { typedef unsigned type; };
template <> struct mt_uint_of_size<8> { typedef unsigned long long type; };
template <class T>
__device__ __forceinline__ T mt_load_volatile(const T* p) {
  const typename mt_uint_of_size<sizeof(T)>::type b = *reinterpret_cast<const volatile typename mt_uint_of_size<sizeof(T)>::type*>(p);
  T t;
  memcpy(&t, &b, sizeof(T));
  return t;
}
// The unsigned word of 16 bytes (tl.load / tl.store with a cache modifier or an eviction policy move
// their elements and chunks as words: backends/cuda/hints.py writes their helpers into the kernel).
#ifdef __CUDA_ARCH__
template <> struct mt_uint_of_size<16> { typedef uint4 type; };
#endif
// cp.async (sm_80 and later): 4, 8 or 16 bytes from global to shared memory without passing
// through registers (16: .cg, past L1); a false predicate fills them with zeros: src-size 0, so
// no byte of the (masked-off, maybe out-of-bounds) source is read (as Triton passes its masked
// copies): no select of another address, two instructions a copy less. A commit closes a group of
// copies; wait<N> returns when at most N groups are in flight. Host compilers (the CPU emulator of
// the tests) get the emulator's deferred copies.
template <int BYTES>
__device__ __forceinline__ void mt_cp_async(void* dst, const void* src, bool pred) {
#ifdef __CUDA_ARCH__
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(d), "l"(src), "r"(pred ? 16 : 0));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" :: "r"(d), "l"(src), "n"(BYTES), "r"(pred ? BYTES : 0));
#else
  mt_emulated_cp_async(dst, pred ? src : nullptr, BYTES);
#endif
}
__device__ __forceinline__ void mt_cp_async_commit() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.commit_group;");
#else
  mt_emulated_cp_async_commit();
#endif
}
template <int N> __device__ __forceinline__ void mt_cp_async_wait() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_group %0;" :: "n"(N));
#else
  mt_emulated_cp_async_wait(N);
#endif
}
// Hopper's warpgroup tensor cores (wgmma, sm_90a): a shared-window address, the 64-bit matrix
// descriptor of an operand tile in shared memory from its two words (low: address and leading byte
// offset in 16-byte units; high: stride byte offset, swizzle mode 1/2/3 = 128/64/32 bytes in the
// top bits), the fence before wgmma
// touches registers, and the commit and wait of a group. fence.proxy.async orders this thread's
// shared-memory writes (cp.async included, once waited for) before wgmma's reads.
__device__ __forceinline__ unsigned mt_smem_address(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned mt_wgmma_desc_lo(unsigned address, unsigned lbo) {
  return ((address >> 4) & 0x3FFF) | ((lbo >> 4) & 0x3FFF) << 16;
}
__device__ __forceinline__ unsigned long long mt_desc64(unsigned lo, unsigned hi) {
  return (unsigned long long)hi << 32 | lo;
}
__device__ __forceinline__ void mt_wgmma_fence() {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void mt_wgmma_commit() {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void mt_wgmma_wait() {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
#endif
}
__device__ __forceinline__ void mt_fence_proxy_async() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
// tl.dot's fp32 operands as the tensor cores read them for input_precision="tf32" (the low 13
// mantissa bits dropped), and one product of "tf32x3": hi*hi + hi*lo + lo*hi of the operands split
// into tf32 parts rounded to nearest, ties away from zero (cvt.rna.tf32.f32).
__device__ __forceinline__ float mt_tf32_truncate(float x) {
  return __uint_as_float(__float_as_uint(x) & 0xffffe000u);
}
__device__ __forceinline__ float mt_tf32_nearest(float x) {
  const unsigned u = __float_as_uint(x);
  return (u & 0x7f800000u) == 0x7f800000u ? x : __uint_as_float((u + 0x1000u) & 0xffffe000u);
}
__device__ __forceinline__ float mt_tf32x3_product(float a, float b) {
  const float ah = mt_tf32_nearest(a), bh = mt_tf32_nearest(b);
  const float al = mt_tf32_nearest(a - ah), bl = mt_tf32_nearest(b - bh);
  return al * bh + ah * bl + ah * bh;
}
// One mma.sync on this lane's accumulators d0..d3 (constraint D: "f" for fp32, "r" for int32), A
// fragment words a0..a3 and B words b0, b1 (the tensor-core helpers below).
#define MT_MMA_ASM(shape_types, D) asm volatile("mma.sync.aligned." shape_types " { %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %0, %1, %2, %3 };" : "+" D(d0), "+" D(d1), "+" D(d2), "+" D(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))
// One tensor-core product of tl.dot: d (a 16x8 fp32 tile, c0..c3) += A (16x16) x B (16x8) in fp16 or
// bf16, each operand as this lane's fragment words (mma.sync.m16n8k16: sm_80 and later). Host
// compilers (the CPU emulator of the tests) get the emulator's warp-wide equivalent.
template <bool BF16>
__device__ __forceinline__ void mt_mma_m16n8k16(float& d0, float& d1, float& d2, float& d3, unsigned a0, unsigned a1,
                                                unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
#ifdef __CUDA_ARCH__
  if constexpr (BF16)
    MT_MMA_ASM("m16n8k16.row.col.f32.bf16.bf16.f32", "f");
  else
    MT_MMA_ASM("m16n8k16.row.col.f32.f16.f16.f32", "f");
#else
  mt_emulated_mma(d0, d1, d2, d3, a0, a1, a2, a3, b0, b1, BF16);
#endif
}
// tl.dot's fp32 operands on the tensor cores: d (16x8 fp32) += A (16x8) x B (8x8) as tf32
// (mma.sync.m16n8k8.tf32: the hardware reads the top 19 bits of each fp32 word), and the split of
// "tf32x3": x = hi + lo, both tf32 rounded to nearest (cvt.rna).
__device__ __forceinline__ void mt_mma_m16n8k8_tf32(float& d0, float& d1, float& d2, float& d3, unsigned a0, unsigned a1,
                                                    unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
#ifdef __CUDA_ARCH__
  MT_MMA_ASM("m16n8k8.row.col.f32.tf32.tf32.f32", "f");
#else
  mt_emulated_mma_tf32(d0, d1, d2, d3, a0, a1, a2, a3, b0, b1);
#endif
}
__device__ __forceinline__ void mt_tf32_split(unsigned x, unsigned& hi, unsigned& lo) {
  const float f = __uint_as_float(x), h = mt_tf32_nearest(f);
  hi = __float_as_uint(h);
  lo = __float_as_uint(mt_tf32_nearest(f - h));
}
// One 32-bit mma fragment word from the elements of an operand held in registers (two halves,
// one fp32, four int8), the first in the low bits.
template <typename T> __device__ __forceinline__ unsigned mt_pack_word(T a, T b) {
  unsigned short x, y;
  memcpy(&x, &a, 2); memcpy(&y, &b, 2);
  return x | (unsigned)y << 16;
}
__device__ __forceinline__ unsigned mt_pack_word(float a) { return __float_as_uint(a); }
__device__ __forceinline__ unsigned mt_pack_word(signed char a, signed char b, signed char c, signed char d) {
  return (unsigned char)a | (unsigned)(unsigned char)b << 8 | (unsigned)(unsigned char)c << 16 |
         (unsigned)(unsigned char)d << 24;
}
// ldmatrix: the fragment words of four (x4) or two (x2) 8x8 matrices of 16-bit elements in shared
// memory (sm_75 and later). Lanes 8j..8j+7 give the addresses of matrix j's eight rows of 16 bytes;
// lane l receives row l/4, elements 2(l%4) and +1 of each matrix (TRANS: column l/4, rows 2(l%4)
// and +1). Host compilers (the CPU emulator of the tests) get the emulator's warp-wide equivalent.
template <bool TRANS>
__device__ __forceinline__ void mt_ldmatrix_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, const void* row) {
#ifdef __CUDA_ARCH__
  const unsigned a = (unsigned)__cvta_generic_to_shared(row);
  if constexpr (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 { %0, %1, %2, %3 }, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 { %0, %1, %2, %3 }, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
#else
  unsigned r[4];
  mt_emulated_ldmatrix(r, 4, TRANS, row);
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
#endif
}
template <bool TRANS>
__device__ __forceinline__ void mt_ldmatrix_x2(unsigned& r0, unsigned& r1, const void* row) {
#ifdef __CUDA_ARCH__
  const unsigned a = (unsigned)__cvta_generic_to_shared(row);
  if constexpr (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 { %0, %1 }, [%2];" : "=r"(r0), "=r"(r1) : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 { %0, %1 }, [%2];" : "=r"(r0), "=r"(r1) : "r"(a));
#else
  unsigned r[2];
  mt_emulated_ldmatrix(r, 2, TRANS, row);
  r0 = r[0], r1 = r[1];
#endif
}
// tl.dot's int8 operands on the tensor cores: d (16x8 int32, wrapping) += A (16x32) x B (32x8), four
// int8 along K per fragment word (mma.sync.m16n8k32.s8).
__device__ __forceinline__ void mt_mma_m16n8k32_s8(int& d0, int& d1, int& d2, int& d3, unsigned a0, unsigned a1,
                                                   unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
#ifdef __CUDA_ARCH__
  MT_MMA_ASM("m16n8k32.row.col.s32.s8.s8.s32", "r");
#else
  mt_emulated_mma_s8(d0, d1, d2, d3, a0, a1, a2, a3, b0, b1);
#endif
}
// fp8 (tl.float8e4nv: e4m3 without infinities, largest 448; tl.float8e5: e5m2, largest 57344): one
// byte each, converted through fp32. Made from fp32 as cvt.rn.satfinite does: to nearest even,
// magnitudes beyond the largest finite value (infinities too) to it, NaN to 0x7f; on sm_89 and later
// by that instruction, elsewhere (and on the host) by the same arithmetic.
struct mt_fp8e4nv { unsigned char x; };
struct mt_fp8e5 { unsigned char x; };
__device__ __forceinline__ float mt_fp8_to_float(unsigned char b, int mbits, int bias, bool inf) {
  const int e = (b & 0x7f) >> mbits, m = b & ((1 << mbits) - 1), top = (1 << (7 - mbits)) - 1;
  float mag;
  if (inf && e == top)
    mag = m ? __int_as_float(0x7fc00000) : __int_as_float(0x7f800000);
  else if (!inf && e == top && m == (1 << mbits) - 1)
    mag = __int_as_float(0x7fc00000);
  else
    mag = e ? ldexpf((float)(m | 1 << mbits), e - bias - mbits) : ldexpf((float)m, 1 - bias - mbits);
  return (b & 0x80) ? -mag : mag;
}
__device__ __forceinline__ unsigned char mt_float_to_fp8(float f, int mbits, int bias, unsigned largest, unsigned char top) {
  unsigned u = __float_as_uint(f);
  const unsigned char sign = (u >> 24) & 0x80;
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return 0x7f;                        // NaN: the canonical one
  if (u >= largest) return sign | top;                      // saturate (infinities too)
  const float a = __uint_as_float(u);
  if (a < ldexpf(1.0f, 1 - bias))                           // subnormal: multiples of 2^(1 - bias - mbits)
    return sign | (unsigned char)rintf(ldexpf(a, bias - 1 + mbits));
  const int shift = 23 - mbits;
  const unsigned r = (u + (1u << (shift - 1)) - 1 + ((u >> shift) & 1)) >> shift;   // to nearest even
  return sign | (unsigned char)((((int)(r >> mbits) - 127 + bias) << mbits) | (r & ((1u << mbits) - 1)));
}
__device__ __forceinline__ float mt_to_float(mt_fp8e4nv v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short h;
  asm("{ .reg .b32 t; cvt.rn.f16x2.e4m3x2 t, %1; cvt.u16.u32 %0, t; }" : "=h"(h) : "h"((unsigned short)v.x));
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  return mt_fp8_to_float(v.x, 3, 7, false);
#endif
}
__device__ __forceinline__ float mt_to_float(mt_fp8e5 v) {
#ifdef __CUDA_ARCH__
  float f;                                                  // (e5m2 is the top byte of an fp16)
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)(v.x << 8)));
  return f;
#else
  return mt_fp8_to_float(v.x, 2, 15, true);
#endif
}
__device__ __forceinline__ mt_fp8e4nv mt_to_fp8e4nv(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short h;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(h) : "f"(0.0f), "f"(f));
  return mt_fp8e4nv{(unsigned char)(h & 0xff)};
#else
  return mt_fp8e4nv{mt_float_to_fp8(f, 3, 7, 0x43e00000u, 0x7e)};
#endif
}
__device__ __forceinline__ mt_fp8e5 mt_to_fp8e5(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short h;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(h) : "f"(0.0f), "f"(f));
  return mt_fp8e5{(unsigned char)(h & 0xff)};
#else
  return mt_fp8e5{mt_float_to_fp8(f, 2, 15, 0x47600000u, 0x7b)};
#endif
}
