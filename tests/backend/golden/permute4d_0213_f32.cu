// cute_py generated kernel: tiled copy through registers, 4 x 16-byte vectors per thread
// common modes (size, src stride, dst stride): ((64, 1, 1), (16, 2048, 64), (32, 64, 1024), (8, 32768, 32768))
//   src layout (64, 16, 32, 8):(1, 2048, 64, 32768)
//   dst layout (64, 16, 32, 8):(1, 64, 1024, 32768)
// plan: CopyPlan(kind='register', elem_bytes=4, modes=((64, 1, 1), (16, 2048, 64), (32, 64, 1024), (8, 32768, 32768)), threads=256, vec=4, vecs_per_thread=4, mode_a=-1, mode_b=-1, vec_a=1, vec_b=1, tile=0)
#include "cute_py/prelude.cuh"
using namespace cute_py;

extern "C" __global__ void __launch_bounds__(256) cute_copy_reg_v4_e4_c538f187(
    const u32* __restrict__ src, u32* __restrict__ dst) {
  const int tid = threadIdx.x;
  const int bid = blockIdx.x;
  const int t = (tid & 15) * 4;
  const int t_1 = tid >> 4;
  const int t_2 = t + t_1 * 2048;
  const int t_3 = bid & 7;
  const int t_4 = (bid >> 3) * 32768;
  const int t_5 = t + t_1 * 64;
  const int t_6 = bid * 4;
  const int t_7 = t_6 + 1;
  const int t_8 = t_7 & 31;
  const int t_9 = (t_7 >> 5) * 32768;
  const int t_10 = t_6 + 2;
  const int t_11 = t_10 & 31;
  const int t_12 = (t_10 >> 5) * 32768;
  const int t_13 = t_6 + 3;
  const int t_14 = t_13 & 31;
  const int t_15 = (t_13 >> 5) * 32768;
  u128 v0;
  u128 v1;
  u128 v2;
  u128 v3;
  v0 = ld_global_128(src + t_2 + t_3 * 256 + t_4);
  v1 = ld_global_128(src + t_2 + t_8 * 64 + t_9);
  v2 = ld_global_128(src + t_2 + t_11 * 64 + t_12);
  v3 = ld_global_128(src + t_2 + t_14 * 64 + t_15);
  st_global_128(dst + t_5 + t_3 * 4096 + t_4, v0);
  st_global_128(dst + t_5 + t_8 * 1024 + t_9, v1);
  st_global_128(dst + t_5 + t_11 * 1024 + t_12, v2);
  st_global_128(dst + t_5 + t_14 * 1024 + t_15, v3);
}
