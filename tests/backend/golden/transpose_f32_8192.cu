// cute_py generated kernel: transpose through a swizzled 64x64 shared-memory tile (Swizzle<3,2,6>), 16-byte loads, 16-byte stores
// common modes (size, src stride, dst stride): ((8192, 8192, 1), (8192, 1, 8192))
//   src layout (8192, 8192):(8192, 1)
//   dst layout (8192, 8192):(1, 8192)
// plan: CopyPlan(kind='transpose', elem_bytes=4, modes=((8192, 8192, 1), (8192, 1, 8192)), threads=256, vec=1, vecs_per_thread=1, mode_a=1, mode_b=0, vec_a=4, vec_b=4, tile=64)
#include "cute_py/prelude.cuh"
using namespace cute_py;

extern "C" __global__ void __launch_bounds__(256) cute_copy_tr64_v4x4_e4_66462183(
    const u32* __restrict__ src, u32* __restrict__ dst) {
  __shared__ __align__(16) u32 tile[4096];
  const int tid = threadIdx.x;
  const int bid = blockIdx.x;
  const int t = (bid & 127) * 64;
  const int t_1 = (tid & 15) * 4;
  const int t_2 = (bid >> 7) * 64;
  const int t_3 = tid >> 4;
  const int t_4 = t + t_1 + (t_2 + t_3) * 8192;
  const int t_5 = t_3 * 64 + t_1;
  const int t_6 = t_5 + 1024;
  const int t_7 = t_5 + 2048;
  const int t_8 = t_5 + 3072;
  const int t_9 = ((tid >> 3) & 3) + (tid >> 6) * 4;
  const int t_10 = (tid & 7) + ((tid >> 5) & 1) * 8;
  const int t_11 = (t + t_9) * 8192 + (t_2 + t_10 * 4);
  const int t_12 = t_10 * 256 + t_9;
  const int t_13 = t_12 + 64;
  const int t_14 = t_12 + 128;
  const int t_15 = t_12 + 192;
  const int t_16 = t_12 + 16;
  const int t_17 = t_12 + 80;
  const int t_18 = t_12 + 144;
  const int t_19 = t_12 + 208;
  const int t_20 = t_12 + 32;
  const int t_21 = t_12 + 96;
  const int t_22 = t_12 + 160;
  const int t_23 = t_12 + 224;
  const int t_24 = t_12 + 48;
  const int t_25 = t_12 + 112;
  const int t_26 = t_12 + 176;
  const int t_27 = t_12 + 240;
  // global -> shared: 4-element vectors along the source's contiguous mode
  u128 a0;
  u128 a1;
  u128 a2;
  u128 a3;
  a0 = ld_global_128(src + t_4);
  a1 = ld_global_128(src + t_4 + 131072);
  a2 = ld_global_128(src + t_4 + 262144);
  a3 = ld_global_128(src + t_4 + 393216);
  *reinterpret_cast<u128*>(&tile[t_5 ^ ((t_5 & 1792) >> 6)]) = a0;
  *reinterpret_cast<u128*>(&tile[t_6 ^ ((t_6 & 1792) >> 6)]) = a1;
  *reinterpret_cast<u128*>(&tile[t_7 ^ ((t_7 & 1792) >> 6)]) = a2;
  *reinterpret_cast<u128*>(&tile[t_8 ^ ((t_8 & 1792) >> 6)]) = a3;
  __syncthreads();
  // shared -> global: 4 rows gathered per thread, stored along the destination's contiguous mode
  const u32 b0_0 = tile[t_12 ^ ((t_12 & 1792) >> 6)];
  const u32 b0_1 = tile[t_13 ^ ((t_13 & 1792) >> 6)];
  const u32 b0_2 = tile[t_14 ^ ((t_14 & 1792) >> 6)];
  const u32 b0_3 = tile[t_15 ^ ((t_15 & 1792) >> 6)];
  st_global_128(dst + t_11, make_uint4(b0_0, b0_1, b0_2, b0_3));
  const u32 b1_0 = tile[t_16 ^ ((t_16 & 1792) >> 6)];
  const u32 b1_1 = tile[t_17 ^ ((t_17 & 1792) >> 6)];
  const u32 b1_2 = tile[t_18 ^ ((t_18 & 1792) >> 6)];
  const u32 b1_3 = tile[t_19 ^ ((t_19 & 1792) >> 6)];
  st_global_128(dst + t_11 + 131072, make_uint4(b1_0, b1_1, b1_2, b1_3));
  const u32 b2_0 = tile[t_20 ^ ((t_20 & 1792) >> 6)];
  const u32 b2_1 = tile[t_21 ^ ((t_21 & 1792) >> 6)];
  const u32 b2_2 = tile[t_22 ^ ((t_22 & 1792) >> 6)];
  const u32 b2_3 = tile[t_23 ^ ((t_23 & 1792) >> 6)];
  st_global_128(dst + t_11 + 262144, make_uint4(b2_0, b2_1, b2_2, b2_3));
  const u32 b3_0 = tile[t_24 ^ ((t_24 & 1792) >> 6)];
  const u32 b3_1 = tile[t_25 ^ ((t_25 & 1792) >> 6)];
  const u32 b3_2 = tile[t_26 ^ ((t_26 & 1792) >> 6)];
  const u32 b3_3 = tile[t_27 ^ ((t_27 & 1792) >> 6)];
  st_global_128(dst + t_11 + 393216, make_uint4(b3_0, b3_1, b3_2, b3_3));
}
