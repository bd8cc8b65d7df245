// cute_py generated kernel: TiledCopy through a shared-memory tile (registers -> smem, 16-byte loads, 16-byte stores)
// load TiledCopy(Copy_Atom(UniversalCopy<uint128>, 'float32'), Layout(((16, 16), (4, 4)), ((4, 256), (1, 64))), (64,64)), store TiledCopy(Copy_Atom(UniversalCopy<uint128>, 'float32'), Layout(((16, 16), (4, 4)), ((256, 4), (64, 1))), (64,64))
// domain (8192, 8192), tile (64, 64), 256 threads, grid 16384
//   src (Thr,Val,Rest) -> offset: ((16,16),(4,4),(128,128)):((4,32768),(1,8192),(64,524288))
//   dst (Thr,Val,Rest) -> offset: ((16,16),(4,4),(128,128)):((4,32768),(1,8192),(524288,64))
//   smem written at ((16,16),(4,4),(1,1)):((4,256),(1,64),(0,0)), read at ((16,16),(4,4),(1,1)):((256,4),(64,1),(0,0)), swizzle (3, 2, 6), offset 0
#include "cute_py/prelude.cuh"
using namespace cute_py;

extern "C" __global__ void __launch_bounds__(256) cute_tcopy_smem_v4x4_e4_67541cf0(
    const u32* __restrict__ src, u32* __restrict__ dst) {
  __shared__ __align__(16) u32 tile[4096];
  const int tid = threadIdx.x;
  const int bid = blockIdx.x;
  const int t = tid & 15;
  const int t_1 = t * 4;
  const int t_2 = tid >> 4;
  const int t_3 = t_1 + t_2 * 32768;
  const int t_4 = bid & 127;
  const int t_5 = bid >> 7;
  const int t_6 = t_3 + (t_4 * 64 + t_5 * 524288);
  const int t_7 = t_1 + t_2 * 256;
  const int t_8 = t_7 + 1;
  const int t_9 = t_7 + 2;
  const int t_10 = t_7 + 3;
  const int t_11 = t_7 + 64;
  const int t_12 = t_7 + 65;
  const int t_13 = t_7 + 66;
  const int t_14 = t_7 + 67;
  const int t_15 = t_7 + 128;
  const int t_16 = t_7 + 129;
  const int t_17 = t_7 + 130;
  const int t_18 = t_7 + 131;
  const int t_19 = t_7 + 192;
  const int t_20 = t_7 + 193;
  const int t_21 = t_7 + 194;
  const int t_22 = t_7 + 195;
  const int t_23 = t_3 + (t_4 * 524288 + t_5 * 64);
  const int t_24 = t * 256 + t_2 * 4;
  const int t_25 = t_24 + 64;
  const int t_26 = t_24 + 128;
  const int t_27 = t_24 + 192;
  const int t_28 = t_24 + 1;
  const int t_29 = t_24 + 65;
  const int t_30 = t_24 + 129;
  const int t_31 = t_24 + 193;
  const int t_32 = t_24 + 2;
  const int t_33 = t_24 + 66;
  const int t_34 = t_24 + 130;
  const int t_35 = t_24 + 194;
  const int t_36 = t_24 + 3;
  const int t_37 = t_24 + 67;
  const int t_38 = t_24 + 131;
  const int t_39 = t_24 + 195;
  // global -> shared (the load copy's partitions of src and of the smem tile)
  u128 a0;
  u128 a1;
  u128 a2;
  u128 a3;
  a0 = ld_global_128(src + t_6);
  a1 = ld_global_128(src + t_6 + 8192);
  a2 = ld_global_128(src + t_6 + 16384);
  a3 = ld_global_128(src + t_6 + 24576);
  *reinterpret_cast<u128*>(&tile[t_7 ^ ((t_7 & 1792) >> 6)]) = a0;
  *reinterpret_cast<u128*>(&tile[t_11 ^ ((t_11 & 1792) >> 6)]) = a1;
  *reinterpret_cast<u128*>(&tile[t_15 ^ ((t_15 & 1792) >> 6)]) = a2;
  *reinterpret_cast<u128*>(&tile[t_19 ^ ((t_19 & 1792) >> 6)]) = a3;
  __syncthreads();
  // shared -> global (the store copy's partitions of the smem tile and of dst)
  st_global_128(dst + t_23, make_uint4(tile[t_24 ^ ((t_24 & 1792) >> 6)], tile[t_25 ^ ((t_25 & 1792) >> 6)], tile[t_26 ^ ((t_26 & 1792) >> 6)], tile[t_27 ^ ((t_27 & 1792) >> 6)]));
  st_global_128(dst + t_23 + 8192, make_uint4(tile[t_28 ^ ((t_28 & 1792) >> 6)], tile[t_29 ^ ((t_29 & 1792) >> 6)], tile[t_30 ^ ((t_30 & 1792) >> 6)], tile[t_31 ^ ((t_31 & 1792) >> 6)]));
  st_global_128(dst + t_23 + 16384, make_uint4(tile[t_32 ^ ((t_32 & 1792) >> 6)], tile[t_33 ^ ((t_33 & 1792) >> 6)], tile[t_34 ^ ((t_34 & 1792) >> 6)], tile[t_35 ^ ((t_35 & 1792) >> 6)]));
  st_global_128(dst + t_23 + 24576, make_uint4(tile[t_36 ^ ((t_36 & 1792) >> 6)], tile[t_37 ^ ((t_37 & 1792) >> 6)], tile[t_38 ^ ((t_38 & 1792) >> 6)], tile[t_39 ^ ((t_39 & 1792) >> 6)]));
}
