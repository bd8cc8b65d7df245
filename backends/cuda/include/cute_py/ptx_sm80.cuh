// cute_py/ptx_sm80.cuh -- thin wrappers over the SM80 PTX the GEMM mainloops use.
//
//   cp.async (4 / 8 / 16 bytes, .ca/.cg, zero-fill via src-size) + commit_group / wait_group,
//   cp.async.mbarrier.arrive.noinc (completion on an mbarrier)
//   ldmatrix.sync.aligned.m8n8 .x1 / .x2 / .x4 (and .trans)
//   mma.sync.aligned.m16n8k16 f16 / bf16 -> f32,  m16n8k8 tf32 -> f32
//   cvt.rna.tf32.f32 (the operand transform of the tf32 path), 16/64-bit shared stores
//   (32/128-bit shared loads and stores, conversions and packs: ptx_common.cuh)
//
// No CUDA headers, so it compiles under NVRTC with the shipped include folder.  Every
// wrapper takes shared-memory addresses as 32-bit shared-window addresses (see smem_u32).
// stmatrix and the SM90 instructions live in the Hopper engineer's header.
#pragma once
#ifndef CUTE_PY_PTX_SM80_CUH
#define CUTE_PY_PTX_SM80_CUH

#include "cute_py/ptx_common.cuh"

namespace cute_py { namespace sm80 {

// Types and the wrappers shared with every architecture (one wrapper per PTX instruction:
// 32/128-bit shared loads and stores, fp16/bf16 conversions and f32x2 packs live in
// ptx_common.cuh and are visible here under the same names).
using cute_py::u32;
using cute_py::u16;
using cute_py::u64;
using cute_py::u128;
using cute_py::ld_shared_32;
using cute_py::ld_shared_128;
using cute_py::st_shared_32;
using cute_py::st_shared_16;
using cute_py::st_shared_128;
using cute_py::f16_bits_to_f32;
using cute_py::bf16_bits_to_f32;
using cute_py::f32_to_f16_bits;
using cute_py::f32_to_bf16_bits;
using cute_py::pack_f16x2;
using cute_py::pack_bf16x2;

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

// An arrival on the mbarrier `bar` (shared address) once every cp.async this thread issued
// before it has landed; .noinc: the barrier's expected count must include this arrival.
CUTE_PY_DEVICE void cp_async_mbarrier_arrive_noinc(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" :: "r"(bar) : "memory");
}

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

// Shared stores by 32-bit address of the widths ptx_common.cuh does not wrap (register-staged
// copies).
CUTE_PY_DEVICE void sts64(u32 addr, u32 a, u32 b) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" :: "r"(addr), "r"(a), "r"(b) : "memory");
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

}}  // namespace cute_py::sm80

#endif  // CUTE_PY_PTX_SM80_CUH
