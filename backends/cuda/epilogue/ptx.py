"""PTX wrappers the SM80 epilogue still pastes (a static prelude; names prefixed ``cute_epi_``).

The SM90 epilogue calls the PTX library instead (``include/cute_py/ptx_common.cuh`` and
``ptx_sm90.cuh``, sections ``epilogue``): every wrapper of ``PRELUDE_COMMON`` has a header
counterpart there (``cute_epi_lds32`` -> ``ld_shared_32``, ``cute_epi_pack_half2`` ->
``pack_f16x2``, ``cute_epi_named_bar`` -> ``named_barrier_sync``, ...).  This module goes away
when ``epilogue/sm80.py`` moves to them.
"""

__all__ = ["PRELUDE_COMMON"]

PRELUDE_COMMON = r"""
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
typedef unsigned int cute_u32;
typedef unsigned long long cute_u64;

__device__ __forceinline__ cute_u32 cute_epi_smem_u32(const void* p) {
  return static_cast<cute_u32>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cute_epi_named_bar(int id, int nthreads) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(nthreads) : "memory");
}
__device__ __forceinline__ cute_u32 cute_epi_lds32(cute_u32 a) {
  cute_u32 v; asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(a) : "memory"); return v;
}
__device__ __forceinline__ unsigned short cute_epi_lds16(cute_u32 a) {
  unsigned short v; asm volatile("ld.shared.b16 %0, [%1];" : "=h"(v) : "r"(a) : "memory"); return v;
}
__device__ __forceinline__ float2 cute_epi_lds64f(cute_u32 a) {
  float2 v; asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ float cute_epi_lds32f(cute_u32 a) {
  float v; asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory"); return v;
}
__device__ __forceinline__ void cute_epi_sts32(cute_u32 a, cute_u32 v) {
  asm volatile("st.shared.b32 [%0], %1;" :: "r"(a), "r"(v) : "memory");
}
__device__ __forceinline__ void cute_epi_sts16(cute_u32 a, unsigned short v) {
  asm volatile("st.shared.b16 [%0], %1;" :: "r"(a), "h"(v) : "memory");
}
__device__ __forceinline__ void cute_epi_sts64f(cute_u32 a, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(a), "f"(x), "f"(y) : "memory");
}
__device__ __forceinline__ void cute_epi_sts32f(cute_u32 a, float x) {
  asm volatile("st.shared.f32 [%0], %1;" :: "r"(a), "f"(x) : "memory");
}
__device__ __forceinline__ cute_u32 cute_epi_pack_half2(float lo, float hi) {
  cute_u32 r; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
__device__ __forceinline__ cute_u32 cute_epi_pack_bf162(float lo, float hi) {
  cute_u32 r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
__device__ __forceinline__ unsigned short cute_epi_pack_half(float a) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(a)); return h;
}
__device__ __forceinline__ unsigned short cute_epi_pack_bf16(float a) {
  unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(a)); return h;
}
__device__ __forceinline__ float cute_epi_unpack_half(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ float cute_epi_unpack_bf16(unsigned short h) {
  return __uint_as_float(static_cast<cute_u32>(h) << 16);
}
__device__ __forceinline__ float2 cute_epi_unpack_half2(cute_u32 w) {
  return make_float2(cute_epi_unpack_half(static_cast<unsigned short>(w & 0xffffu)),
                     cute_epi_unpack_half(static_cast<unsigned short>(w >> 16)));
}
__device__ __forceinline__ float2 cute_epi_unpack_bf162(cute_u32 w) {
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}
"""
