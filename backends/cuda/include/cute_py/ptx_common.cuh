// cute_py/ptx_common.cuh: architecture-neutral helpers (sm_80 and later).
//
// Fixed-width integer types, 16/8/4-byte global and shared loads/stores through inline PTX,
// generic->shared address conversion, fp16/bf16 <-> fp32 conversions (bit patterns held in
// unsigned short, so no cuda_fp16.h is needed), lane/warp ids and named barriers.
#pragma once

#define CUTE_PY_DEVICE __device__ __forceinline__
#define CUTE_PY_HOST_DEVICE __host__ __device__ __forceinline__

namespace cute_py {

typedef signed char        i8;
typedef unsigned char      u8;
typedef short              i16;
typedef unsigned short     u16;
typedef int                i32;
typedef unsigned int       u32;
typedef long long          i64;
typedef unsigned long long u64;

// A 16-byte vector (four 32-bit words); uint4 is an NVRTC builtin vector type.
typedef uint4 u128;

// ---- address spaces -------------------------------------------------------------------------

// Generic pointer into shared memory -> 32-bit shared-window address (for ld/st.shared, cp.async,
// ldmatrix, mbarrier ...).
CUTE_PY_DEVICE u32 cvta_to_shared_u32(const void* ptr) {
  u32 addr;
  asm volatile("{ .reg .u64 a64; cvta.to.shared.u64 a64, %1; cvt.u32.u64 %0, a64; }"
               : "=r"(addr) : "l"(ptr));
  return addr;
}

// ---- global memory --------------------------------------------------------------------------

CUTE_PY_DEVICE u128 ld_global_128(const void* ptr) {
  u128 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(ptr));
  return v;
}

// Read-only (non-coherent) path; use only for data no thread of the grid writes.
CUTE_PY_DEVICE u128 ld_global_nc_128(const void* ptr) {
  u128 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(ptr));
  return v;
}

CUTE_PY_DEVICE void st_global_128(void* ptr, u128 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};"
               :: "l"(ptr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// Streaming store (evict-first): output that is not read again soon.
CUTE_PY_DEVICE void st_global_cs_128(void* ptr, u128 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};"
               :: "l"(ptr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

CUTE_PY_DEVICE uint2 ld_global_64(const void* ptr) {
  uint2 v;
  asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(ptr));
  return v;
}

CUTE_PY_DEVICE void st_global_64(void* ptr, uint2 v) {
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" :: "l"(ptr), "r"(v.x), "r"(v.y) : "memory");
}

CUTE_PY_DEVICE u32 ld_global_32(const void* ptr) {
  u32 v;
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(ptr));
  return v;
}

CUTE_PY_DEVICE void st_global_32(void* ptr, u32 v) {
  asm volatile("st.global.u32 [%0], %1;" :: "l"(ptr), "r"(v) : "memory");
}

// ---- shared memory --------------------------------------------------------------------------

CUTE_PY_DEVICE u128 ld_shared_128(u32 saddr) {
  u128 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(saddr));
  return v;
}

CUTE_PY_DEVICE void st_shared_128(u32 saddr, u128 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};"
               :: "r"(saddr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

CUTE_PY_DEVICE u32 ld_shared_32(u32 saddr) {
  u32 v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(saddr));
  return v;
}

CUTE_PY_DEVICE void st_shared_32(u32 saddr, u32 v) {
  asm volatile("st.shared.u32 [%0], %1;" :: "r"(saddr), "r"(v) : "memory");
}

// ---- conversions (fp16/bf16 as bit patterns in u16) -----------------------------------------

CUTE_PY_DEVICE u16 f32_to_f16_bits(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

CUTE_PY_DEVICE float f16_bits_to_f32(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

CUTE_PY_DEVICE u16 f32_to_bf16_bits(float f) {
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

CUTE_PY_DEVICE float bf16_bits_to_f32(u16 h) {
  return __uint_as_float(((u32)h) << 16);
}

// Two floats -> packed f16x2 (lo in bits 0..15), as mma.sync/wgmma operands want them.
CUTE_PY_DEVICE u32 pack_f16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

CUTE_PY_DEVICE u32 pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// ---- threads ---------------------------------------------------------------------------------

CUTE_PY_DEVICE u32 lane_id() {
  u32 r;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));
  return r;
}

// Warp index within the block, made warp-uniform by a shuffle so the compiler knows it.
CUTE_PY_DEVICE int warp_id() {
  return __shfl_sync(0xffffffffu, (int)(threadIdx.x / 32), 0);
}

// Named barrier over `count` threads (a multiple of 32); id 0 is __syncthreads().
CUTE_PY_DEVICE void named_barrier_sync(u32 id, u32 count) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(count) : "memory");
}

CUTE_PY_DEVICE void named_barrier_arrive(u32 id, u32 count) {
  asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(count) : "memory");
}

}  // namespace cute_py

// ---- epilogue -----------------------------------------------------------------------------------
// The EVT epilogues' shared-memory accesses of 2-, 4- and 8-byte values (16-bit halves as bits in
// u16, floats), packed 16-bit pair conversions and the tanh approximation of GELU.  The 4-byte
// integer accesses and the single conversions are the wrappers above (ld_shared_32,
// st_shared_32, pack_f16x2, f32_to_f16_bits, ...).  The shared loads carry a "memory" clobber:
// they read what other threads wrote before a named barrier.

namespace cute_py {

CUTE_PY_DEVICE u16 ld_shared_16(u32 saddr) {
  u16 v;
  asm volatile("ld.shared.b16 %0, [%1];" : "=h"(v) : "r"(saddr) : "memory");
  return v;
}

CUTE_PY_DEVICE float ld_shared_f32(u32 saddr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(saddr) : "memory");
  return v;
}

CUTE_PY_DEVICE float2 ld_shared_f32x2(u32 saddr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(saddr) : "memory");
  return v;
}

CUTE_PY_DEVICE void st_shared_16(u32 saddr, u16 v) {
  asm volatile("st.shared.b16 [%0], %1;" :: "r"(saddr), "h"(v) : "memory");
}

// The low byte of v (an 8-bit float's bits).
CUTE_PY_DEVICE void st_shared_8(u32 saddr, u16 v) {
  asm volatile("st.shared.b8 [%0], %1;" :: "r"(saddr), "h"(v) : "memory");
}

CUTE_PY_DEVICE void st_shared_f32(u32 saddr, float x) {
  asm volatile("st.shared.f32 [%0], %1;" :: "r"(saddr), "f"(x) : "memory");
}

CUTE_PY_DEVICE void st_shared_f32x2(u32 saddr, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(saddr), "f"(x), "f"(y) : "memory");
}

// A packed f16x2 / bf16x2 word (lo in bits 0..15) -> two floats.
CUTE_PY_DEVICE float2 f16x2_bits_to_f32x2(u32 w) {
  return make_float2(f16_bits_to_f32((u16)(w & 0xffffu)), f16_bits_to_f32((u16)(w >> 16)));
}

CUTE_PY_DEVICE float2 bf16x2_bits_to_f32x2(u32 w) {
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}

// tanh.approx.f32 (sm_75+): GELU's tanh form.
CUTE_PY_DEVICE float tanh_approx_f32(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 4x4 transpose of 32-bit words across the lanes of a quad (lane bit k <-> word bit k, one
// xor-shuffle round per bit): before, lane q's word j belongs to lane j; after, lane q's word
// j is lane j's word q.  Every lane of the warp must call it.
CUTE_PY_DEVICE void quad_transpose_u32(u32& w0, u32& w1, u32& w2, u32& w3, int q) {
  const bool b0 = (q & 1) != 0, b1 = (q & 2) != 0;
  u32 r = __shfl_xor_sync(0xffffffffu, b0 ? w0 : w1, 1);
  if (b0) w0 = r; else w1 = r;
  r = __shfl_xor_sync(0xffffffffu, b0 ? w2 : w3, 1);
  if (b0) w2 = r; else w3 = r;
  r = __shfl_xor_sync(0xffffffffu, b1 ? w0 : w2, 2);
  if (b1) w0 = r; else w2 = r;
  r = __shfl_xor_sync(0xffffffffu, b1 ? w1 : w3, 2);
  if (b1) w1 = r; else w3 = r;
}

}  // namespace cute_py
