// CPU stand-in for CUDA's cuda_fp16.h and cuda_bf16.h (tests/cuda_emulator): the storage types and
// the conversions mytriton's generated code calls, each rounding as its CUDA namesake (fp16 through
// GCC's _Float16, whose conversions round once to nearest even; bf16 on the bits).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
struct __half { unsigned short x; };
struct __nv_bfloat16 { unsigned short x; };
static inline _Float16 mt_h(__half h) { _Float16 f; memcpy(&f, &h.x, 2); return f; }
static inline __half mt_from_h(_Float16 f) { __half h; memcpy(&h.x, &f, 2); return h; }
static inline float __half2float(__half h) { return (float)mt_h(h); }
static inline __half __float2half_rn(float f) { return mt_from_h((_Float16)f); }
static inline __half __float2half_rz(float f) {
  __half h = __float2half_rn(f);
  if (!std::isnan(f) && std::fabs((float)mt_h(h)) > std::fabs(f)) h.x -= 1;   // one step toward zero
  return h;
}
static inline __half __double2half(double d) { return mt_from_h((_Float16)d); }
static inline __half __int2half_rn(int i) { return mt_from_h((_Float16)i); }
static inline __half __uint2half_rn(unsigned i) { return mt_from_h((_Float16)i); }
static inline __half __ll2half_rn(long long i) { return mt_from_h((_Float16)i); }
static inline __half __ull2half_rn(unsigned long long i) { return mt_from_h((_Float16)i); }
static inline __half __ushort_as_half(unsigned short x) { return __half{x}; }
// fma.rn.f16: the product of halves is exact in double, and the sum rounds there first (as the
// interpreter computes it)
static inline __half __hfma(__half a, __half b, __half c) {
  return __double2half(std::fma((double)__half2float(a), (double)__half2float(b), (double)__half2float(c)));
}
static inline unsigned short __half_as_ushort(__half h) { return h.x; }

static inline float __bfloat162float(__nv_bfloat16 b) {
  uint32_t u = (uint32_t)b.x << 16; float f; memcpy(&f, &u, 4); return f;
}
static inline uint32_t mt_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t u = mt_bits(f);
  if (std::isnan(f)) return __nv_bfloat16{(unsigned short)((u >> 16) | 0x40)};
  u += 0x7fff + ((u >> 16) & 1);
  return __nv_bfloat16{(unsigned short)(u >> 16)};
}
static inline __nv_bfloat16 __float2bfloat16_rz(float f) {
  uint32_t u = mt_bits(f);
  if (std::isnan(f)) return __nv_bfloat16{(unsigned short)((u >> 16) | 0x40)};
  return __nv_bfloat16{(unsigned short)(u >> 16)};
}
static inline __nv_bfloat16 __double2bfloat16(double d) {     // one rounding: to fp32 by round-to-odd first
  float f = (float)d;
  if (!std::isnan(d) && std::fabs((double)f) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  if ((double)f != d && !std::isnan(d) && !std::isinf(f)) { uint32_t u = mt_bits(f) | 1; memcpy(&f, &u, 4); }
  return __float2bfloat16_rn(f);
}
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short x) { return __nv_bfloat16{x}; }
static inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __double2bfloat16(std::fma((double)__bfloat162float(a), (double)__bfloat162float(b),
                                    (double)__bfloat162float(c)));
}
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.x; }
