// cute_py generated kernel: TiledCopy through registers, 4 x 16-byte vectors per thread
// TiledCopy TiledCopy(Copy_Atom(UniversalCopy<uint128>, 'float16'), Layout(((8, 32), (8, 4)), ((1024, 4), (128, 1))), (128,64))
// domain (1001, 136), tile (128, 64), 256 threads, grid 24
//   src (Thr,Val,Rest) -> offset: ((8,32),(8,4),(8,3)):((8,544),(1,136),(17408,64))
//   dst (Thr,Val,Rest) -> offset: ((8,32),(8,4),(8,3)):((8,544),(1,136),(17408,64))
//   load predicate: coord 0 < 1001, coord = ((8,32),(8,4),(8,3)):((0,4),(0,1),(128,0))
//   load predicate: coord 1 < 136, coord = ((8,32),(8,4),(8,3)):((8,0),(1,0),(0,64))
#include "cute_py/prelude.cuh"
using namespace cute_py;

extern "C" __global__ void __launch_bounds__(256) cute_tcopy_reg_v8_e2_bc296f26(
    const u16* __restrict__ src, u16* __restrict__ dst) {
  const int tid = threadIdx.x;
  const int bid = blockIdx.x;
  const int t = (tid & 7) * 8;
  const int t_1 = tid >> 3;
  const int t_2 = bid & 7;
  const int t_3 = (bid >> 3) * 64;
  const int t_4 = t + t_1 * 544 + (t_2 * 17408 + t_3);
  const int t_5 = t_1 * 4 + t_2 * 128;
  const int t_6 = t + t_3 < 136;
  const int t_7 = t_5 < 1001 && t_6;
  const int t_8 = t_4 + 136;
  const int t_9 = t_5 + 1 < 1001 && t_6;
  const int t_10 = t_4 + 272;
  const int t_11 = t_5 + 2 < 1001 && t_6;
  const int t_12 = t_4 + 408;
  const int t_13 = t_5 + 3 < 1001 && t_6;
  u128 v0;
  u128 v1;
  u128 v2;
  u128 v3;
  if (t_7) v0 = ld_global_128(src + t_4);
  if (t_9) v1 = ld_global_128(src + t_8);
  if (t_11) v2 = ld_global_128(src + t_10);
  if (t_13) v3 = ld_global_128(src + t_12);
  if (t_7) st_global_128(dst + t_4, v0);
  if (t_9) st_global_128(dst + t_8, v1);
  if (t_11) st_global_128(dst + t_10, v2);
  if (t_13) st_global_128(dst + t_12, v3);
}
