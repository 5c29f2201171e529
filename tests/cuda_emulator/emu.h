// A CPU stand-in for the CUDA runtime features mytriton's generated kernels use, so that a kernel's
// C++ can run under g++ with each CUDA thread a std::thread (tests/cuda_emulator/__init__.py):
// threadIdx/blockIdx/gridDim, __syncthreads(_or) and __syncwarp as a std::barrier of the block,
// __shfl_xor_sync and __shfl_sync through an exchange array and two barriers, the dynamic shared
// memory buffer, and the few intrinsics the code calls (halves: cuda_fp16.h beside this file). The
// atomics' inline PTX is rewritten to mt_atom calls by tests/cuda_emulator/__init__.py; they run
// under one lock.
#pragma once
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
using std::max; using std::min;
using std::sqrt; using std::exp; using std::log; using std::sin; using std::cos; using std::floor; using std::ceil;
using std::fabs; using std::fmod; using std::exp2; using std::log2;
// fmax/fmin as the GPU's max.f32/min.f32: NaN-ignoring, and -0 < +0 (the C library may return either zero)
template <typename T> inline T fmax(T a, T b) {
  if (a == 0 && b == 0) return std::signbit(a) ? b : a;
  return std::fmax(a, b);
}
template <typename T> inline T fmin(T a, T b) {
  if (a == 0 && b == 0) return std::signbit(a) ? a : b;
  return std::fmin(a, b);
}
struct mt_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local mt_dim3 threadIdx, blockIdx;
static mt_dim3 gridDim, blockDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__
#define __align__(n) alignas(n)
alignas(16) static unsigned char mt_smem[1 << 18];
static std::barrier<>* mt_bar;
static inline void __syncthreads() { mt_bar->arrive_and_wait(); }
// (the generated code calls __syncwarp only in blocks of one warp, where it is the block's barrier)
static inline void __syncwarp(unsigned = 0xffffffffu) { mt_bar->arrive_and_wait(); }
static std::atomic<int> mt_or_acc{0};
static inline int __syncthreads_or(int p) {
  if (p) mt_or_acc = 1;
  mt_bar->arrive_and_wait();
  int r = mt_or_acc.load();
  mt_bar->arrive_and_wait();
  if (threadIdx.x == 0) mt_or_acc = 0;
  mt_bar->arrive_and_wait();
  return r;
}
static unsigned long long mt_exch[1024];
// mma.sync for the warp of each thread: every thread posts its fragments, then computes its own four
// results from its warp's (the block's threads all call it together, as the generated code does).
static unsigned mt_mma_slots[1024][6];
static inline float mt_half_bits(unsigned h, bool bf16) {
  if (bf16) { unsigned u = h << 16; float f; memcpy(&f, &u, 4); return f; }
  const int e = (h >> 10) & 31, m = h & 1023;          // IEEE binary16
  const float mag = e == 0 ? std::ldexp((float)m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                      : std::ldexp((float)(m | 1024), e - 25);
  return (h & 0x8000) ? -mag : mag;
}
// The three mma.sync shapes share one fragment geometry, P elements of an operand per 32-bit word
// along K (fp16/bf16: 2, tf32: 1, s8: 4; K = 8P): A (row, k) is in lane (row % 8) * 4 + (k % 4P) / P,
// word (row >= 8) + 2 (k >= 4P); B (k, n) in lane n * 4 + (k % 4P) / P, word 4 + (k >= 4P); lane l's
// accumulators c0..c3 are (l / 4 [+ 8], 2 (l % 4) [+ 1]). Sums run over k in order, in Sum.
template <typename Acc, typename Sum, typename Elem>
static inline void mt_warp_mma(Acc& d0, Acc& d1, Acc& d2, Acc& d3, const unsigned (&mine)[6], unsigned P, Elem elem) {
  const unsigned me = threadIdx.x, base = me & ~31u, lane = me & 31u;
  memcpy(mt_mma_slots[me], mine, sizeof(mine));
  mt_bar->arrive_and_wait();
  auto A = [&](unsigned row, unsigned k) {
    return elem(mt_mma_slots[base + (row % 8) * 4 + (k % (4 * P)) / P][(row >= 8) + 2 * (k >= 4 * P)], k % P);
  };
  auto B = [&](unsigned k, unsigned n) { return elem(mt_mma_slots[base + n * 4 + (k % (4 * P)) / P][4 + (k >= 4 * P)], k % P); };
  Acc* d[4] = {&d0, &d1, &d2, &d3};
  for (unsigned i = 0; i < 4; ++i) {
    const unsigned row = lane / 4 + 8 * (i / 2), col = 2 * (lane % 4) + i % 2;
    Sum s = (Sum)*d[i];
    for (unsigned k = 0; k < 8 * P; ++k) s += (Sum)(A(row, k) * B(k, col));
    *d[i] = (Acc)s;
  }
  mt_bar->arrive_and_wait();
}
// mma.sync.m16n8k16, fp16 or bf16 into fp32
static inline void mt_emulated_mma(float& d0, float& d1, float& d2, float& d3, unsigned a0, unsigned a1,
                                   unsigned a2, unsigned a3, unsigned b0, unsigned b1, bool bf16) {
  mt_warp_mma<float, float>(d0, d1, d2, d3, {a0, a1, a2, a3, b0, b1}, 2,
                            [bf16](unsigned w, unsigned i) { return mt_half_bits(i ? w >> 16 : w & 0xffff, bf16); });
}
// mma.sync.m16n8k8.tf32: each fp32 operand read with its low 13 mantissa bits dropped, as the tensor cores do
static inline void mt_emulated_mma_tf32(float& d0, float& d1, float& d2, float& d3, unsigned a0, unsigned a1,
                                        unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  mt_warp_mma<float, float>(d0, d1, d2, d3, {a0, a1, a2, a3, b0, b1}, 1, [](unsigned w, unsigned) {
    w &= 0xffffe000u; float f; memcpy(&f, &w, 4); return f;
  });
}
// mma.sync.m16n8k32.s8: int32 sums that wrap
static inline void mt_emulated_mma_s8(int& d0, int& d1, int& d2, int& d3, unsigned a0, unsigned a1,
                                      unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  mt_warp_mma<int, unsigned>(d0, d1, d2, d3, {a0, a1, a2, a3, b0, b1}, 4, [](unsigned w, unsigned i) {
    return (int)(signed char)((w >> (8 * i)) & 0xff);
  });
}
// ldmatrix for the warp of each thread: every thread posts its row address, then reads its words
// of the count matrices from its warp's rows (the block's threads all call it together).
static const unsigned char* mt_ldmatrix_rows[1024];
static inline void mt_emulated_ldmatrix(unsigned* r, unsigned count, bool trans, const void* row) {
  const unsigned me = threadIdx.x, base = me & ~31u, lane = me & 31u;
  mt_ldmatrix_rows[me] = static_cast<const unsigned char*>(row);
  mt_bar->arrive_and_wait();
  for (unsigned j = 0; j < count; ++j) {
    const unsigned char* const* rows = mt_ldmatrix_rows + base + 8 * j;
    if (!trans) {
      memcpy(&r[j], rows[lane / 4] + 4 * (lane % 4), 4);
    } else {
      unsigned short lo, hi;
      memcpy(&lo, rows[2 * (lane % 4)] + 2 * (lane / 4), 2);
      memcpy(&hi, rows[2 * (lane % 4) + 1] + 2 * (lane / 4), 2);
      r[j] = lo | (unsigned)hi << 16;
    }
  }
  mt_bar->arrive_and_wait();
}
// cp.async, deferred as on the GPU: a copy reads its source when issued and writes shared memory
// only when a wait retires its group (so a kernel that reads a buffer before waiting for it reads
// stale bytes here too); a null source is a masked-off copy (zeros).
struct mt_pending_copy { void* dst; unsigned char bytes[16]; unsigned n; };
static thread_local std::vector<std::vector<mt_pending_copy>> mt_copy_groups;
static thread_local std::vector<mt_pending_copy> mt_open_group;
static inline void mt_emulated_cp_async(void* dst, const void* src, unsigned n) {
  mt_pending_copy c{dst, {}, n};
  if (src) memcpy(c.bytes, src, n);
  mt_open_group.push_back(c);
}
static inline void mt_emulated_cp_async_commit() {
  mt_copy_groups.push_back(std::move(mt_open_group));
  mt_open_group.clear();
}
static inline void mt_emulated_cp_async_wait(unsigned n) {
  while (mt_copy_groups.size() > n) {
    for (const mt_pending_copy& c : mt_copy_groups.front()) memcpy(c.dst, c.bytes, c.n);
    mt_copy_groups.erase(mt_copy_groups.begin());
  }
}
// TMA copies into a dot's ring (backends/cuda/tma.py) and their mbarriers, as on the GPU: a
// barrier's phase completes once its arrivals (one an armed copy) came and the bytes they announced
// were copied; a wait for a phase's parity blocks until that phase completed. A copy reads its box
// when issued and writes shared memory only when a thread's wait passes the phase it belongs to (so
// a kernel that reads a buffer before waiting reads stale bytes here too). The tensor map is the
// emulator's (tests/cuda_emulator: EmulatedTensorMap): words 0 the address, 1 the element bytes,
// 2-3 the dimensions (innermost first), 4 the outer stride in bytes, 5-6 the box, 7 the swizzle
// (bytes; 16-byte chunks XORed with address bits 7.., as wgmma reads them), 8 the bits of an
// element out of bounds.
struct mt_emu_barrier { unsigned count = 1, arrived = 0; long long tx = 0; unsigned long long completed = 0; };
struct mt_pending_tma { const void* bar; unsigned long long phase; size_t dst; unsigned swizzle; std::vector<unsigned char> bytes; };
static std::mutex mt_tma_lock;
static std::vector<std::pair<const void*, mt_emu_barrier>> mt_emu_barriers;
static std::vector<mt_pending_tma> mt_tma_pending;
static inline mt_emu_barrier& mt_emu_barrier_of(const void* bar) {   // (under mt_tma_lock)
  for (auto& b : mt_emu_barriers) if (b.first == bar) return b.second;
  mt_emu_barriers.push_back({bar, mt_emu_barrier{}});
  return mt_emu_barriers.back().second;
}
static inline void mt_emu_barrier_check(mt_emu_barrier& b) {
  if (b.arrived == b.count && b.tx == 0) { b.arrived = 0; ++b.completed; }
}
static inline void mt_emulated_mbarrier_init(const void* bar, unsigned arrivals) {
  std::lock_guard<std::mutex> hold(mt_tma_lock);
  mt_emu_barrier_of(bar) = mt_emu_barrier{arrivals, 0, 0, 0};
}
static inline void mt_emulated_mbarrier_expect_tx(const void* bar, unsigned bytes) {
  std::lock_guard<std::mutex> hold(mt_tma_lock);
  mt_emu_barrier& b = mt_emu_barrier_of(bar);
  ++b.arrived;
  b.tx += bytes;
  mt_emu_barrier_check(b);
}
static inline void mt_emulated_tma_copy_2d(unsigned char* tile, const void* map, const void* bar, int c0, int c1) {
  const unsigned long long* w = (const unsigned long long*)map;
  const unsigned char* base = (const unsigned char*)w[0];
  const long long eb = w[1], d0 = w[2], d1 = w[3], s1 = w[4], b0 = w[5], b1 = w[6];
  mt_pending_tma copy{bar, 0, (size_t)(tile - mt_smem), (unsigned)w[7], std::vector<unsigned char>(b0 * b1 * eb)};
  for (long long r = 0; r < b1; ++r)
    for (long long i = 0; i < b0; ++i) {
      const long long g0 = c0 + i, g1 = c1 + r;
      unsigned char* to = copy.bytes.data() + (r * b0 + i) * eb;
      if (g0 >= 0 && g0 < d0 && g1 >= 0 && g1 < d1) memcpy(to, base + g1 * s1 + g0 * eb, eb);
      else memcpy(to, &w[8], eb);
    }
  std::lock_guard<std::mutex> hold(mt_tma_lock);
  mt_emu_barrier& b = mt_emu_barrier_of(bar);
  copy.phase = b.completed;
  b.tx -= (long long)copy.bytes.size();
  mt_tma_pending.push_back(std::move(copy));
  mt_emu_barrier_check(b);
}
static inline void mt_emulated_mbarrier_wait(const void* bar, unsigned parity) {
  for (;;) {
    {
      std::lock_guard<std::mutex> hold(mt_tma_lock);
      mt_emu_barrier& b = mt_emu_barrier_of(bar);
      if ((b.completed & 1) != parity) {              // (phase `parity` of the current pair completed)
        for (size_t c = 0; c < mt_tma_pending.size();) {
          const mt_pending_tma& t = mt_tma_pending[c];
          if (t.bar != bar || t.phase >= b.completed) { ++c; continue; }
          for (size_t k = 0; k < t.bytes.size(); ++k) {
            const size_t a = t.dst + k;
            mt_smem[t.swizzle ? a ^ (((a >> 7) & (t.swizzle / 16 - 1)) << 4) : a] = t.bytes[k];
          }
          mt_tma_pending.erase(mt_tma_pending.begin() + c);
        }
        return;
      }
    }
    std::this_thread::yield();
  }
}
// wgmma for the warpgroup of each thread: the operands are read from shared memory through their
// descriptors (address, LBO, SBO in 16-byte units at bits 0, 16, 32; swizzle mode at bit 62:
// 1/2/3 = 128/64/32-byte rows whose 16-byte chunks are XORed with address bits 7..), each thread
// adds its accumulators' products: warp w of the group holds rows 16 (w % 4) + l/4 (+ 8) and
// columns 8 j + 2 (l % 4) (+ 1) of the m64nN tile, as registers 4 j + 0..3. kind: the operand
// type, 0 fp16, 1 bf16, 2 tf32 (fp32 read with its low 13 mantissa bits dropped), 3 s8 (int32
// sums that wrap); K per instruction: 32 bytes of each operand row.
static inline size_t __cvta_generic_to_shared(const void* p) { return (const unsigned char*)p - mt_smem; }
static unsigned mt_wgmma_a[1024][4];
static inline float mt_wgmma_elem(const unsigned char* at, int kind) {
  if (kind == 3) return (float)(signed char)*at;
  if (kind == 2) { unsigned w; memcpy(&w, at, 4); w &= 0xffffe000u; float f; memcpy(&f, &w, 4); return f; }
  unsigned short h;
  memcpy(&h, at, 2);
  return mt_half_bits(h, kind == 1);
}
template <typename Acc>
static inline void mt_emulated_wgmma(Acc* const* d, unsigned n, unsigned long long da, unsigned long long db,
                                     int kind, bool trans_b, bool a_regs = false) {
  auto field = [](unsigned long long desc, int at) { return (unsigned)((desc >> at) & 0x3FFF) << 4; };
  auto width = [](unsigned long long desc) { unsigned m = desc >> 62; return m == 1 ? 128u : m == 2 ? 64u : 32u; };
  const unsigned eb = kind == 2 ? 4 : kind == 3 ? 1 : 2, kk = 32 / eb;
  auto at = [&](unsigned long long desc, unsigned addr) {
    const unsigned w = width(desc), phys = addr ^ (((addr >> 7) & (w / 16 - 1)) << 4);
    return mt_wgmma_elem(mt_smem + phys, kind);
  };
  const unsigned wa = width(da), wb = width(db);
  auto A = [&](unsigned r, unsigned k) {
    if (a_regs) {   // A from registers: the fragment words of the warp's lanes (mma.sync's m16k16 A)
      const unsigned word = mt_wgmma_a[(threadIdx.x & ~31u) + (r % 8) * 4 + (k % 8) / 2][(r % 16 >= 8) + 2 * (k >= 8)];
      return mt_half_bits(k % 2 ? word >> 16 : word & 0xffff, kind == 1);
    }
    return at(da, field(da, 0) + r / 8 * field(da, 32) + r % 8 * wa + eb * k);
  };
  auto B = [&](unsigned k, unsigned c) {
    if (trans_b)
      return at(db, field(db, 0) + c % (wb / 2) * 2 + c / (wb / 2) * field(db, 16) + k % 8 * wb + k / 8 * field(db, 32));
    return at(db, field(db, 0) + c / 8 * field(db, 32) + c % 8 * wb + eb * k);
  };
  const unsigned lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3;
  for (unsigned j = 0; j < n / 8; ++j)
    for (unsigned c = 0; c < 4; ++c) {
      const unsigned row = 16 * w + lane / 4 + 8 * (c / 2), col = 8 * j + 2 * (lane % 4) + c % 2;
      if (kind == 3) {
        unsigned s = (unsigned)*d[4 * j + c];
        for (unsigned k = 0; k < kk; ++k) s += (unsigned)((int)A(row, k) * (int)B(k, col));
        *d[4 * j + c] = (Acc)(int)s;
      } else {
        float s = (float)*d[4 * j + c];
        for (unsigned k = 0; k < kk; ++k) s += A(row, k) * B(k, col);
        *d[4 * j + c] = (Acc)s;
      }
    }
}
// wgmma with A in registers: every thread posts its four words (rows l/4 and +8 of its warp's 16,
// K pairs 2 (l%4) and +8), then reads its warp's (fp16 / bf16 only).
static inline void mt_emulated_wgmma_ra(float* const* d, unsigned n, const unsigned (&a)[4], unsigned long long db,
                                        int kind, bool trans_b) {
  memcpy(mt_wgmma_a[threadIdx.x], a, sizeof(a));
  mt_bar->arrive_and_wait();
  mt_emulated_wgmma(d, n, 0, db, kind, trans_b, true);
  mt_bar->arrive_and_wait();
}
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int m) {
  unsigned long long b = 0;
  memcpy(&b, &v, sizeof(T));
  mt_exch[threadIdx.x] = b;
  mt_bar->arrive_and_wait();
  unsigned long long o = mt_exch[threadIdx.x ^ m];
  mt_bar->arrive_and_wait();
  T r;
  memcpy(&r, &o, sizeof(T));
  return r;
}
template <class T> static inline T __shfl_sync(unsigned, T v, int lane) {   // (lane of the caller's warp)
  unsigned long long b = 0;
  memcpy(&b, &v, sizeof(T));
  mt_exch[threadIdx.x] = b;
  mt_bar->arrive_and_wait();
  unsigned long long o = mt_exch[(threadIdx.x & ~31u) | (lane & 31)];
  mt_bar->arrive_and_wait();
  T r;
  memcpy(&r, &o, sizeof(T));
  return r;
}
static inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
static inline int __float_as_int(float x) { int f; memcpy(&f, &x, 4); return f; }
static inline float __uint_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
static inline unsigned __float_as_uint(float x) { unsigned f; memcpy(&f, &x, 4); return f; }
static inline double __longlong_as_double(long long x) { double f; memcpy(&f, &x, 8); return f; }
static inline long long __double_as_longlong(double x) { long long f; memcpy(&f, &x, 8); return f; }
static inline float rsqrt(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __double2float_rz(double d) {
  float f = (float)d;
  if (std::fabs((double)f) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return f;
}
static inline float mt_expf(float x) { return expf(x); }
#define __expf mt_expf

// An asm operand as the instruction's type: its bits when the widths agree (a float in a .b32
// register), else its value (a literal 1 for a .u64 add).
template <class T, class S> static inline T mt_as(S s) {
  if constexpr (sizeof(T) == sizeof(S)) { T t; memcpy(&t, &s, sizeof(T)); return t; }
  else return (T)s;
}
// One atomic read-modify-write of the sizeof(T) bytes at p: out gets the old bits, p gets f(old).
static std::mutex mt_atom_lock;
template <class T, class O, class F> static inline void mt_atom(O& out, void* p, F f) {
  std::lock_guard<std::mutex> guard(mt_atom_lock);
  T old;
  memcpy(&old, p, sizeof(T));
  T updated = f(old);
  memcpy(p, &updated, sizeof(T));
  static_assert(sizeof(O) == sizeof(T), "an atomic's result has its operand's width");
  memcpy(&out, &old, sizeof(T));
}
// CUDA's device-side assertion (tl.device_assert): CUDA's message; the thread goes on (the GPU
// stops the kernel: a test reads the message)
extern "C" void __assertfail(const char* message, const char* file, unsigned int line, const char* function,
                             unsigned long) {
  printf("%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n", file, line, function,
         blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, message);
  fflush(stdout);
}
// CUDA's atomicAdd on an int (tl.histogram's shared-memory counters)
static inline int atomicAdd(int* p, int v) {
  int old;
  mt_atom<int>(old, p, [v](int x) { return x + v; });
  return old;
}
static inline unsigned short mt_f16_add(unsigned short a, unsigned short b) {
  _Float16 x, y;
  memcpy(&x, &a, 2);
  memcpy(&y, &b, 2);
  _Float16 r = (_Float16)((float)x + (float)y);
  unsigned short out;
  memcpy(&out, &r, 2);
  return out;
}
// libdevice's functions (the generated code declares and calls them under __CUDA_ARCH__ only):
// the C library's, which compute the same functions (within an ulp or two of libdevice's).
#define MT_NV1(name, expr)                                                       \
  static inline float __nv_##name##f(float x) { return (float)(expr); }          \
  static inline double __nv_##name(double x) { return (double)(expr); }
#define MT_NV2(name, expr)                                                       \
  static inline float __nv_##name##f(float x, float y) { return (float)(expr); } \
  static inline double __nv_##name(double x, double y) { return (double)(expr); }
MT_NV1(tanh, std::tanh(x)) MT_NV1(exp, std::exp(x)) MT_NV1(exp2, std::exp2(x)) MT_NV1(expm1, std::expm1(x))
MT_NV1(log, std::log(x)) MT_NV1(log2, std::log2(x)) MT_NV1(log10, std::log10(x)) MT_NV1(log1p, std::log1p(x))
MT_NV1(sin, std::sin(x)) MT_NV1(cos, std::cos(x)) MT_NV1(tan, std::tan(x)) MT_NV1(asin, std::asin(x))
MT_NV1(acos, std::acos(x)) MT_NV1(atan, std::atan(x)) MT_NV1(sinh, std::sinh(x)) MT_NV1(cosh, std::cosh(x))
MT_NV1(asinh, std::asinh(x)) MT_NV1(acosh, std::acosh(x)) MT_NV1(atanh, std::atanh(x)) MT_NV1(cbrt, std::cbrt(x))
MT_NV1(sqrt, std::sqrt(x)) MT_NV1(rsqrt, 1 / std::sqrt(x)) MT_NV1(erf, std::erf(x)) MT_NV1(erfc, std::erfc(x))
MT_NV1(exp10, std::pow(10.0, (double)x)) MT_NV1(trunc, std::trunc(x)) MT_NV1(round, std::round(x))
MT_NV1(rint, std::rint(x)) MT_NV1(nearbyint, std::nearbyint(x)) MT_NV1(floor, std::floor(x)) MT_NV1(ceil, std::ceil(x))
MT_NV1(fabs, std::fabs(x))
MT_NV2(atan2, std::atan2(x, y)) MT_NV2(hypot, std::hypot(x, y)) MT_NV2(fmod, std::fmod(x, y))
MT_NV2(copysign, std::copysign(x, y))
MT_NV2(pow, std::pow(x, y))
static inline float __nv_fmaf(float x, float y, float z) { return std::fma(x, y, z); }
static inline double __nv_fma(double x, double y, double z) { return std::fma(x, y, z); }
static inline float __nv_powif(float x, int n) { return (float)std::pow((double)x, n); }
static inline double __nv_powi(double x, int n) { return std::pow(x, n); }
static inline int __nv_isnanf(float x) { return std::isnan(x); }
static inline int __nv_isnand(double x) { return std::isnan(x); }
static inline int __nv_isinff(float x) { return std::isinf(x); }
static inline int __nv_isinfd(double x) { return std::isinf(x); }
static inline int __nv_signbitf(float x) { return std::signbit(x); }
static inline int __nv_signbitd(double x) { return std::signbit(x); }
static inline float __nv_fast_expf(float x) { return std::exp(x); }
static inline float __nv_fast_logf(float x) { return std::log(x); }
static inline float __nv_fsqrt_rn(float x) { return std::sqrt(x); }
static inline float __nv_fdiv_rn(float x, float y) { return x / y; }
static inline unsigned __nv_umulhi(unsigned x, unsigned y) { return (unsigned)(((unsigned long long)x * y) >> 32); }
static inline int __nv_mulhi(int x, int y) { return (int)(((long long)x * y) >> 32); }
static inline long long __nv_mul64hi(long long x, long long y) { return (long long)(((__int128)x * y) >> 64); }
static inline unsigned long long __nv_umul64hi(unsigned long long x, unsigned long long y) {
  return (unsigned long long)(((unsigned __int128)x * y) >> 64);
}
