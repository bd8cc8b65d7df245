// cute_py generated kernel: transpose through a swizzled 64x64 shared-memory tile (Swizzle<3,3,6>), 16-byte loads, 16-byte stores
// common modes (size, src stride, dst stride): ((8192, 8192, 1), (8192, 1, 8192))
//   src layout (8192, 8192):(8192, 1)
//   dst layout (8192, 8192):(1, 8192)
// plan: CopyPlan(kind='transpose', elem_bytes=2, modes=((8192, 8192, 1), (8192, 1, 8192)), threads=256, vec=1, vecs_per_thread=1, mode_a=1, mode_b=0, vec_a=8, vec_b=8, tile=64)
#include "cute_py/prelude.cuh"
using namespace cute_py;

extern "C" __global__ void __launch_bounds__(256) cute_copy_tr64_v8x8_e2_c24ff0ef(
    const u16* __restrict__ src, u16* __restrict__ dst) {
  __shared__ __align__(16) u16 tile[4096];
  const int tid = threadIdx.x;
  const int bid = blockIdx.x;
  const int t = (bid & 127) * 64;
  const int t_1 = tid & 7;
  const int t_2 = t_1 * 8;
  const int t_3 = (bid >> 7) * 64;
  const int t_4 = tid >> 3;
  const int t_5 = t + t_2 + (t_3 + t_4) * 8192;
  const int t_6 = t_4 * 64 + t_2;
  const int t_7 = t_6 + 2048;
  const int t_8 = (t_4 & 3) + (tid >> 5) * 4;
  const int t_9 = (t + t_8) * 8192 + (t_3 + t_2);
  const int t_10 = t_1 * 512 + t_8;
  const int t_11 = t_10 + 64;
  const int t_12 = t_10 + 128;
  const int t_13 = t_10 + 192;
  const int t_14 = t_10 + 256;
  const int t_15 = t_10 + 320;
  const int t_16 = t_10 + 384;
  const int t_17 = t_10 + 448;
  const int t_18 = t_10 + 32;
  const int t_19 = t_10 + 96;
  const int t_20 = t_10 + 160;
  const int t_21 = t_10 + 224;
  const int t_22 = t_10 + 288;
  const int t_23 = t_10 + 352;
  const int t_24 = t_10 + 416;
  const int t_25 = t_10 + 480;
  // global -> shared: 8-element vectors along the source's contiguous mode
  u128 a0;
  u128 a1;
  a0 = ld_global_128(src + t_5);
  a1 = ld_global_128(src + t_5 + 262144);
  *reinterpret_cast<u128*>(&tile[t_6 ^ ((t_6 & 3584) >> 6)]) = a0;
  *reinterpret_cast<u128*>(&tile[t_7 ^ ((t_7 & 3584) >> 6)]) = a1;
  __syncthreads();
  // shared -> global: 8 rows gathered per thread, stored along the destination's contiguous mode
  const u16 b0_0 = tile[t_10 ^ ((t_10 & 3584) >> 6)];
  const u16 b0_1 = tile[t_11 ^ ((t_11 & 3584) >> 6)];
  const u16 b0_2 = tile[t_12 ^ ((t_12 & 3584) >> 6)];
  const u16 b0_3 = tile[t_13 ^ ((t_13 & 3584) >> 6)];
  const u16 b0_4 = tile[t_14 ^ ((t_14 & 3584) >> 6)];
  const u16 b0_5 = tile[t_15 ^ ((t_15 & 3584) >> 6)];
  const u16 b0_6 = tile[t_16 ^ ((t_16 & 3584) >> 6)];
  const u16 b0_7 = tile[t_17 ^ ((t_17 & 3584) >> 6)];
  st_global_128(dst + t_9, make_uint4((u32)b0_0 | ((u32)b0_1 << 16), (u32)b0_2 | ((u32)b0_3 << 16), (u32)b0_4 | ((u32)b0_5 << 16), (u32)b0_6 | ((u32)b0_7 << 16)));
  const u16 b1_0 = tile[t_18 ^ ((t_18 & 3584) >> 6)];
  const u16 b1_1 = tile[t_19 ^ ((t_19 & 3584) >> 6)];
  const u16 b1_2 = tile[t_20 ^ ((t_20 & 3584) >> 6)];
  const u16 b1_3 = tile[t_21 ^ ((t_21 & 3584) >> 6)];
  const u16 b1_4 = tile[t_22 ^ ((t_22 & 3584) >> 6)];
  const u16 b1_5 = tile[t_23 ^ ((t_23 & 3584) >> 6)];
  const u16 b1_6 = tile[t_24 ^ ((t_24 & 3584) >> 6)];
  const u16 b1_7 = tile[t_25 ^ ((t_25 & 3584) >> 6)];
  st_global_128(dst + t_9 + 262144, make_uint4((u32)b1_0 | ((u32)b1_1 << 16), (u32)b1_2 | ((u32)b1_3 << 16), (u32)b1_4 | ((u32)b1_5 << 16), (u32)b1_6 | ((u32)b1_7 << 16)));
}
