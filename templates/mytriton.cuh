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
__device__ __forceinline__ float mt_sqrt_approx(float a) {
#ifdef __CUDA_ARCH__
  float r; asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a)); return r;
#else
  return sqrtf(a);
#endif
}
__device__ __forceinline__ float mt_rsqrt_approx(float a) {
#ifdef __CUDA_ARCH__
  float r; asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a)); return r;
#else
  return 1.0f / sqrtf(a);
#endif
}
__device__ __forceinline__ float mt_exp2_approx(float a) {
#ifdef __CUDA_ARCH__
  float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a)); return r;
#else
  return exp2f(a);
#endif
}
// Masked global accesses as one predicated instruction each (Triton's `@p ld.global.v4.b32`): a C++
// `if` around a load or store becomes a branch, and ptxas does not overlap the loads of an unrolled
// loop across branches. T is 2, 4, 8 or 16 bytes (a scalar or an mt_vec of them); other sizes, and
// host compilers (the tests' CPU emulator), take the plain `if`. The asm is volatile: it keeps its
// place among the kernel's other memory accesses.
template <int N> struct mt_words { unsigned v[N]; };
template <typename T> __device__ __forceinline__ T mt_load(const T* p, bool pred, T other) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 2) {
    unsigned short w; memcpy(&w, &other, 2);
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q ld.global.b16 %0, [%1]; }" : "+h"(w) : "l"(p), "r"((int)pred));
    T r; memcpy(&r, &w, 2); return r;
  } else if constexpr (sizeof(T) == 4) {
    unsigned w; memcpy(&w, &other, 4);
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q ld.global.b32 %0, [%1]; }" : "+r"(w) : "l"(p), "r"((int)pred));
    T r; memcpy(&r, &w, 4); return r;
  } else if constexpr (sizeof(T) == 8) {
    mt_words<2> w; memcpy(&w, &other, 8);
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %3, 0; @q ld.global.v2.b32 { %0, %1}, [%2]; }"
                 : "+r"(w.v[0]), "+r"(w.v[1]) : "l"(p), "r"((int)pred));
    T r; memcpy(&r, &w, 8); return r;
  } else if constexpr (sizeof(T) == 16) {
    mt_words<4> w; memcpy(&w, &other, 16);
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %5, 0; @q ld.global.v4.b32 { %0, %1, %2, %3}, [%4]; }"
                 : "+r"(w.v[0]), "+r"(w.v[1]), "+r"(w.v[2]), "+r"(w.v[3]) : "l"(p), "r"((int)pred));
    T r; memcpy(&r, &w, 16); return r;
  }
#endif
  return pred ? *p : other;
}
template <typename T> __device__ __forceinline__ void mt_store(T* p, bool pred, T value) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(T) == 2) {
    unsigned short w; memcpy(&w, &value, 2);
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q st.global.b16 [%0], %1; }" :: "l"(p), "h"(w), "r"((int)pred) : "memory");
    return;
  } else if constexpr (sizeof(T) == 4) {
    unsigned w; memcpy(&w, &value, 4);
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %2, 0; @q st.global.b32 [%0], %1; }" :: "l"(p), "r"(w), "r"((int)pred) : "memory");
    return;
  } else if constexpr (sizeof(T) == 8) {
    mt_words<2> w; memcpy(&w, &value, 8);
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %3, 0; @q st.global.v2.b32 [%0], { %1, %2}; }"
                 :: "l"(p), "r"(w.v[0]), "r"(w.v[1]), "r"((int)pred) : "memory");
    return;
  } else if constexpr (sizeof(T) == 16) {
    mt_words<4> w; memcpy(&w, &value, 16);
    asm volatile("{ .reg .pred q; setp.ne.b32 q, %5, 0; @q st.global.v4.b32 [%0], { %1, %2, %3, %4}; }"
                 :: "l"(p), "r"(w.v[0]), "r"(w.v[1]), "r"(w.v[2]), "r"(w.v[3]), "r"((int)pred) : "memory");
    return;
  }
#endif
  if (pred) *p = value;
}
