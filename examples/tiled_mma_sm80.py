"""The SM80 tiled MMA of a 128x128x32 GEMM tile, built and checked on the CPU.

    python examples/tiled_mma_sm80.py [out_dir]

4 warps (2x2) of mma.sync m16n8k16 (fp16 in, fp32 accumulate), N doubled by the permutation so a
warp covers 16x16 per k-step: one TiledMMA call covers 32x32x16 and the 128x128x32 CTA tile
is (MMA=(2,2), MMA_M=4, MMA_N=8) accumulators per thread over 2 k-blocks.
"""

import sys

import numpy as np

import cute_py as cute
from cute_py import Layout

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."

atom = cute.SM80_16x8x16_F32F16F16F32_TN()
print(atom, "\n")
mma = cute.make_tiled_mma(atom, (2, 2, 1), (32, 32, 16))
print(mma, "\n")
print("tile (M,N,K) per call:", mma.tile_shape, " threads:", mma.size())
print("C partition of 128x128:", cute.partition_shape_C(mma, (128, 128)))
print("A partition of 128x32: ", cute.partition_shape_A(mma, (128, 32)))
print("B partition of 128x32: ", cute.partition_shape_B(mma, (128, 32)))
print(cute.check_tiled_mma(mma), "\n")

# Which thread holds which accumulator of one atom (first rows)
print("\n".join(cute.format_tv_layout(cute.make_tiled_mma(atom).get_layoutC_TV(), (16, 8)).splitlines()[:8]))

# Thread 37's view of a real 128x32 A tile (K-major)
A = np.arange(128 * 32, dtype=np.float32)
tA = cute.make_tensor(A, Layout((128, 32), (32, 1)))
thr = mma.get_slice(37)
tCrA = thr.partition_A(tA)
print("\nthread 37 partition_A:", tCrA)
print("its first 8 A values (m*32+k):", [int(tCrA((v, 0, 0))) for v in range(8)])

# Execute the whole 128x128x32 tile thread by thread and compare with A @ B.T
rng = np.random.default_rng(0)
Am = rng.integers(-3, 4, (128, 32)).astype(float)
Bm = rng.integers(-3, 4, (128, 32)).astype(float)
D = cute.execute_tiled_mma(mma, Am, Bm)
print("\nexecutor == A @ B.T:", np.array_equal(D, Am @ Bm.T))

# ldmatrix for A from a K-major 128x32 smem tile, with and without a swizzle
ld = cute.make_tiled_copy_A(cute.Copy_Atom(cute.SM75_U32x4_LDSM_N, "f16"), mma)
print(ld.get_layoutS_TV(), "(ldmatrix source TV)")
sw = cute.tile_to_shape(cute.make_composed_layout(cute.Swizzle(2, 3, 3), 0, Layout((8, 32), (32, 1))), (128, 32))
print(cute.copy_bank_conflicts(ld, Layout((128, 32), (32, 1))))
print(cute.copy_bank_conflicts(ld, sw))

cute.write_svg(mma, f"{out_dir}/tiled_mma_sm80.svg")
cute.write_svg(ld, f"{out_dir}/tiled_copy_ldsm_sm80.svg")
print(f"\nwrote {out_dir}/tiled_mma_sm80.svg and {out_dir}/tiled_copy_ldsm_sm80.svg")
