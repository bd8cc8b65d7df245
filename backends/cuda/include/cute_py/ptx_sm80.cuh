// cute_py/ptx_sm80.cuh -- thin wrappers over the SM80 PTX the GEMM mainloops use.
//
//   cp.async (4 / 8 / 16 bytes, .ca/.cg, zero-fill via src-size) + commit_group / wait_group
//   ldmatrix.sync.aligned.m8n8 .x1 / .x2 / .x4 (and .trans)
//   mma.sync.aligned.m16n8k16 f16 / bf16 -> f32,  m16n8k8 tf32 -> f32
//   cvt.rna.tf32.f32 (the operand transform of the tf32 path), f32 -> f16x2 / bf16x2 packs
//
// Self-contained: no CUDA headers, so it compiles under NVRTC without include paths.  Every
// wrapper takes shared-memory addresses as 32-bit shared-window addresses (see smem_u32).
// stmatrix and the SM90 instructions live in the Hopper engineer's header.
#pragma once
#ifndef CUTE_PY_PTX_SM80_CUH
#define CUTE_PY_PTX_SM80_CUH

#ifndef CUTE_PY_DEVICE
#define CUTE_PY_DEVICE __device__ __forceinline__
#endif

namespace cute_py { namespace sm80 {

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned long long u64;

// Convert a generic pointer into shared memory to the 32-bit address the PTX expects.
CUTE_PY_DEVICE u32 smem_u32(const void* ptr) {
  return static_cast<u32>(__cvta_generic_to_shared(ptr));
}

// ---------------------------------------------------------------------------------- cp.async
// dst: shared address, src: global pointer, src_bytes: bytes really read (the rest of the
// BYTES are zero-filled); src_bytes == 0 reads nothing (src may then be any mapped address).
template <int BYTES>
CUTE_PY_DEVICE void cp_async_zfill(u32 dst, const void* src, int src_bytes) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  if (BYTES == 16) {
    // .cg (L2 only) is allowed for 16-byte copies only.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n"
                 :: "r"(dst), "l"(src), "n"(BYTES), "r"(src_bytes) : "memory");
  }
}

// Predicated form: copies the whole BYTES when pred, else writes BYTES zeros.
template <int BYTES>
CUTE_PY_DEVICE void cp_async_pred_zfill(u32 dst, const void* src, bool pred) {
  cp_async_zfill<BYTES>(dst, src, pred ? BYTES : 0);
}

CUTE_PY_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
CUTE_PY_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

CUTE_PY_DEVICE void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// ---------------------------------------------------------------------------------- ldmatrix
CUTE_PY_DEVICE void ldmatrix_x1(u32& r0, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
               : "=r"(r0) : "r"(addr));
}
CUTE_PY_DEVICE void ldmatrix_x2(u32& r0, u32& r1, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r0), "=r"(r1) : "r"(addr));
}
CUTE_PY_DEVICE void ldmatrix_x4(u32& r0, u32& r1, u32& r2, u32& r3, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
CUTE_PY_DEVICE void ldmatrix_x1_trans(u32& r0, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(r0) : "r"(addr));
}
CUTE_PY_DEVICE void ldmatrix_x2_trans(u32& r0, u32& r1, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r0), "=r"(r1) : "r"(addr));
}
CUTE_PY_DEVICE void ldmatrix_x4_trans(u32& r0, u32& r1, u32& r2, u32& r3, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}

// Plain shared loads/stores by 32-bit address (the tf32 MN-major fragment path, register-staged
// copies).
CUTE_PY_DEVICE u32 lds32(u32 addr) {
  u32 v; asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr)); return v;
}
CUTE_PY_DEVICE void sts16(u32 addr, u16 v) {
  asm volatile("st.shared.b16 [%0], %1;\n" :: "r"(addr), "h"(v) : "memory");
}
CUTE_PY_DEVICE void sts32(u32 addr, u32 v) {
  asm volatile("st.shared.b32 [%0], %1;\n" :: "r"(addr), "r"(v) : "memory");
}
CUTE_PY_DEVICE void sts64(u32 addr, u32 a, u32 b) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" :: "r"(addr), "r"(a), "r"(b) : "memory");
}
CUTE_PY_DEVICE void sts128(u32 addr, u32 a, u32 b, u32 c, u32 d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n"
               :: "r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// ---------------------------------------------------------------------------------- mma.sync
// D = A * B + C, m16n8k16, A row (4 regs = 8 halves), B col (2 regs), C/D 4 floats.
CUTE_PY_DEVICE void mma_m16n8k16_f16f32(float* d, const u32* a, const u32* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
CUTE_PY_DEVICE void mma_m16n8k16_bf16f32(float* d, const u32* a, const u32* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// m16n8k8 tf32: A 4 regs, B 2 regs (each a tf32 bit pattern in a 32-bit register).
CUTE_PY_DEVICE void mma_m16n8k8_tf32f32(float* d, const u32* a, const u32* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---------------------------------------------------------------------------------- conversions
// fp32 bit pattern -> tf32 (round to nearest, ties away), the operand transform of the tf32 path.
CUTE_PY_DEVICE u32 cvt_tf32(u32 x) {
  u32 r; asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(x))); return r;
}
// Pack two floats into f16x2 / bf16x2 (lo in the low half), round to nearest even.
CUTE_PY_DEVICE u32 pack_f16x2(float lo, float hi) {
  u32 r; asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
CUTE_PY_DEVICE u32 pack_bf16x2(float lo, float hi) {
  u32 r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
CUTE_PY_DEVICE float f16_to_f32(u16 h) {
  float f; asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(h)); return f;
}
CUTE_PY_DEVICE float bf16_to_f32(u16 h) { return __uint_as_float(static_cast<u32>(h) << 16); }
CUTE_PY_DEVICE u16 f32_to_f16(float f) {
  u16 h; asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h) : "f"(f)); return h;
}
CUTE_PY_DEVICE u16 f32_to_bf16(float f) {
  u16 h; asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(h) : "f"(f)); return h;
}

}}  // namespace cute_py::sm80

#endif  // CUTE_PY_PTX_SM80_CUH
