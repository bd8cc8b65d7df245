"""PTX wrappers the epilogue emits (a static prelude; names prefixed ``cute_epi_``).

mbarrier (init / arrive / arrive.expect_tx / try_wait.parity spin), TMA 2-D load and store,
bulk async-group commit / wait, ``fence.proxy.async``, named barriers, ``stmatrix``, predicated
global pair loads and 16-byte quad loads with their in-quad shuffle transpose (the direct C / aux
path).  The SM80 epilogue's ``cp.async`` / shared loads are the wrappers of
``cute_py/ptx_sm80.cuh`` and ``cute_py/ptx_common.cuh``.
"""

__all__ = ["PRELUDE_COMMON", "PRELUDE_SM90"]

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

PRELUDE_SM90 = r"""
struct alignas(64) CuteTmaDesc { cute_u64 opaque[16]; };

__device__ __forceinline__ void cute_epi_mbar_init(cute_u32 bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void cute_epi_fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void cute_epi_mbar_wait(cute_u32 bar, cute_u32 phase) {
  asm volatile(
    "{\n .reg .pred P1;\n"
    "LAB_WAIT:\n"
    " mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1, 0x989680;\n"
    " @P1 bra DONE;\n bra LAB_WAIT;\n"
    "DONE:\n}\n" :: "r"(bar), "r"(phase) : "memory");
}
__device__ __forceinline__ void cute_epi_mbar_arrive(cute_u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void cute_epi_mbar_arrive_expect_tx(cute_u32 bar, cute_u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cute_epi_tma_load_2d(const CuteTmaDesc* desc, cute_u32 dst,
                                                     cute_u32 bar, int x, int y) {
  asm volatile(
    "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
    " [%0], [%1, {%3, %4}], [%2];"
    :: "r"(dst), "l"(reinterpret_cast<cute_u64>(desc)), "r"(bar), "r"(x), "r"(y) : "memory");
}
__device__ __forceinline__ cute_u64 cute_epi_l2_evict_first() {
  // a pure value (not volatile): one policy register serves every hinted access
  cute_u64 p; asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p)); return p;
}
__device__ __forceinline__ void cute_epi_tma_load_2d_ef(const CuteTmaDesc* desc, cute_u32 dst,
                                                        cute_u32 bar, int x, int y) {
  // as cute_epi_tma_load_2d, with an L2 evict_first cache hint (streamed once)
  asm volatile(
    "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
    " [%0], [%1, {%3, %4}], [%2], %5;"
    :: "r"(dst), "l"(reinterpret_cast<cute_u64>(desc)), "r"(bar), "r"(x), "r"(y),
       "l"(cute_epi_l2_evict_first()) : "memory");
}
__device__ __forceinline__ void cute_epi_tma_store_2d_ef(const CuteTmaDesc* desc, cute_u32 src,
                                                         int x, int y) {
  asm volatile(
    "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint [%0, {%2, %3}], [%1], %4;"
    :: "l"(reinterpret_cast<cute_u64>(desc)), "r"(src), "r"(x), "r"(y),
       "l"(cute_epi_l2_evict_first()) : "memory");
}
__device__ __forceinline__ void cute_epi_tma_prefetch_l2_2d(const CuteTmaDesc* desc, int x,
                                                            int y) {
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global [%0, {%1, %2}];"
               :: "l"(reinterpret_cast<cute_u64>(desc)), "r"(x), "r"(y) : "memory");
}
// direct C / aux loads (EpilogueConfig.load_path="direct"): one predicated access per pair of
// adjacent values at element column OFF of a row pointer; ``rem`` = columns left in the row
// from the pointer (0 for a row outside the problem; a single value passes min(rem, OFF + 1)).
// Values outside are zero, as TMA fills them.  Volatile: issued where they are written (ahead of the subtile that reads them).
#define CUTE_EPI_LDG16(HINT, POL, ...)                                                         \
  cute_u32 v;                                                                               \
  asm volatile("{ .reg .pred p2, p1;\n"                                                      \
               "  setp.gt.s32 p2, %2, %3; setp.eq.s32 p1, %2, %3; mov.b32 %0, 0;\n"          \
               "  @p2 ld.global" HINT ".b32 %0, [%1+%4]" POL ";\n"                           \
               "  @p1 ld.global" HINT ".u16 %0, [%1+%4]" POL "; }"                           \
               : "=r"(v) : "l"(row), "r"(rem), "n"(OFF + 1), "n"(2 * OFF) __VA_ARGS__);      \
  return v;
#define CUTE_EPI_LDG32(HINT, POL, ...)                                                         \
  float2 v;                                                                                 \
  asm volatile("{ .reg .pred p2, p1;\n"                                                     \
               "  setp.gt.s32 p2, %3, %4; setp.eq.s32 p1, %3, %4;\n"                        \
               "  mov.b32 %0, 0; mov.b32 %1, 0;\n"                                          \
               "  @p2 ld.global" HINT ".v2.f32 {%0, %1}, [%2+%5]" POL ";\n"                 \
               "  @p1 ld.global" HINT ".f32 %0, [%2+%5]" POL "; }"                          \
               : "=f"(v.x), "=f"(v.y) : "l"(row), "r"(rem), "n"(OFF + 1), "n"(4 * OFF)      \
               __VA_ARGS__);                                                                \
  return v;
template <int OFF> __device__ __forceinline__ cute_u32
cute_epi_ldg_pair16(const unsigned short* row, int rem) { CUTE_EPI_LDG16("", "") }
template <int OFF> __device__ __forceinline__ cute_u32
cute_epi_ldg_pair16_ef(const unsigned short* row, int rem) {
  CUTE_EPI_LDG16(".L2::cache_hint", ", %5", , "l"(cute_epi_l2_evict_first())) }
template <int OFF> __device__ __forceinline__ float2
cute_epi_ldg_pair32(const float* row, int rem) { CUTE_EPI_LDG32("", "") }
template <int OFF> __device__ __forceinline__ float2
cute_epi_ldg_pair32_ef(const float* row, int rem) {
  CUTE_EPI_LDG32(".L2::cache_hint", ", %6", , "l"(cute_epi_l2_evict_first())) }
// quad loads (16-bit C / aux with an MMA accumulator fragment, EpilogueConfig.direct_vector):
// the four lanes of a quad hold two columns of each of four 8-column groups of a row; lane q
// loads the 16 bytes of group q instead (``row`` = its own pointer, OFF = the quad's first
// column, ``rem`` = columns left from ``row``), and cute_epi_quad_transpose hands every lane
// its words.  One request per 16 bytes instead of one per 4: the SM's miss tracking, not DRAM,
// limited the 4-byte loads (docs/performance.md, "Epilogue", v3).  Falls back to pair loads for a
// group that crosses N or a matrix that is not 16-byte aligned (``vec`` false).
#define CUTE_EPI_LDQ16(HINT, POL, PAIR, ...)                                                   \
  if (vec && rem >= OFF + 8) {                                                              \
    asm volatile("ld.global" HINT ".v4.b32 {%0, %1, %2, %3}, [%4+%5]" POL ";"               \
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(row), "n"(2 * OFF) __VA_ARGS__); \
  } else {                                                                                  \
    a = PAIR<OFF>(row, rem); b = PAIR<OFF + 2>(row, rem);                                   \
    c = PAIR<OFF + 4>(row, rem); d = PAIR<OFF + 6>(row, rem);                               \
  }
template <int OFF> __device__ __forceinline__ void
cute_epi_ldg_quad16(const unsigned short* row, int rem, bool vec, cute_u32& a, cute_u32& b,
                    cute_u32& c, cute_u32& d) { CUTE_EPI_LDQ16("", "", cute_epi_ldg_pair16) }
template <int OFF> __device__ __forceinline__ void
cute_epi_ldg_quad16_ef(const unsigned short* row, int rem, bool vec, cute_u32& a, cute_u32& b,
                       cute_u32& c, cute_u32& d) {
  CUTE_EPI_LDQ16(".L2::cache_hint", ", %6", cute_epi_ldg_pair16_ef, ,
                 "l"(cute_epi_l2_evict_first())) }
// 4x4 transpose of 32-bit words across the lanes of a quad (lane bit k <-> word bit k, one
// xor-shuffle round per bit): before, lane q's word j belongs to lane j; after, lane q's word
// j is lane j's word q.  Every lane of the warp must call it.
__device__ __forceinline__ void cute_epi_quad_transpose(cute_u32& w0, cute_u32& w1, cute_u32& w2,
                                                        cute_u32& w3, int q) {
  const bool b0 = (q & 1) != 0, b1 = (q & 2) != 0;
  cute_u32 r = __shfl_xor_sync(0xffffffffu, b0 ? w0 : w1, 1);
  if (b0) w0 = r; else w1 = r;
  r = __shfl_xor_sync(0xffffffffu, b0 ? w2 : w3, 1);
  if (b0) w2 = r; else w3 = r;
  r = __shfl_xor_sync(0xffffffffu, b1 ? w0 : w2, 2);
  if (b1) w0 = r; else w2 = r;
  r = __shfl_xor_sync(0xffffffffu, b1 ? w1 : w3, 2);
  if (b1) w1 = r; else w3 = r;
}
__device__ __forceinline__ void cute_epi_tma_store_2d(const CuteTmaDesc* desc, cute_u32 src,
                                                      int x, int y) {
  asm volatile(
    "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
    :: "l"(reinterpret_cast<cute_u64>(desc)), "r"(src), "r"(x), "r"(y) : "memory");
}
__device__ __forceinline__ void cute_epi_bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N> __device__ __forceinline__ void cute_epi_bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}
template <int N> __device__ __forceinline__ void cute_epi_bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
}
__device__ __forceinline__ void cute_epi_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void cute_epi_prefetch_tma(const CuteTmaDesc* desc) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<cute_u64>(desc)) : "memory");
}
__device__ __forceinline__ void cute_epi_stmatrix_x4(cute_u32 a, cute_u32 r0, cute_u32 r1,
                                                     cute_u32 r2, cute_u32 r3) {
  asm volatile("stmatrix.sync.aligned.x4.m8n8.shared.b16 [%0], {%1, %2, %3, %4};"
               :: "r"(a), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}
"""
