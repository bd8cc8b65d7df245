// cute_py generated kernel: tiled copy through registers, 4 x 16-byte vectors per thread
// common modes (size, src stride, dst stride): ((67108864, 1, 1),)
//   src layout (67108864,):(1,)
//   dst layout (67108864,):(1,)
// plan: CopyPlan(kind='register', elem_bytes=4, modes=((67108864, 1, 1),), threads=256, vec=4, vecs_per_thread=4, mode_a=-1, mode_b=-1, vec_a=1, vec_b=1, tile=0)
#include "cute_py/prelude.cuh"
using namespace cute_py;

extern "C" __global__ void __launch_bounds__(256) cute_copy_reg_v4_e4_3fae5c85(
    const u32* __restrict__ src, u32* __restrict__ dst) {
  const int tid = threadIdx.x;
  const int bid = blockIdx.x;
  const int t = (bid * 1024 + tid) * 4;
  const int t_1 = t + 1024;
  const int t_2 = t + 2048;
  const int t_3 = t + 3072;
  u128 v0;
  u128 v1;
  u128 v2;
  u128 v3;
  v0 = ld_global_128(src + t);
  v1 = ld_global_128(src + t_1);
  v2 = ld_global_128(src + t_2);
  v3 = ld_global_128(src + t_3);
  st_global_128(dst + t, v0);
  st_global_128(dst + t_1, v1);
  st_global_128(dst + t_2, v2);
  st_global_128(dst + t_3, v3);
}
