"""The SM90 (wgmma) tiled MMA of a 128x128x32 GEMM tile, built and checked on the CPU.

    python examples/tiled_mma_sm90.py [out_dir]

Two warpgroups (atom layout 2x1x1) of wgmma m64n128k16 (A and B from shared-memory
descriptors, K-major, fp16 in, fp32 accumulate): one call covers 128x128x16, two k-blocks make
the 128x128x32 tile. A is a 64B-swizzled K-major smem tile (GMMA::Layout_K_SW64_Atom: 32 fp16 of K).
"""

import sys

import numpy as np

import cute_py as cute

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."

atom = cute.SM90_64x128x16_F32F16F16_SS(cute.GMMA.Major.K, cute.GMMA.Major.K)
print(atom, "\n")
mma = cute.make_tiled_mma(atom, (2, 1, 1))
print("tile (M,N,K) per call:", mma.tile_shape, " threads:", mma.size())
print("ThrLayoutVMNK:", mma.thr_layout_vmnk)
print("C partition of 128x128:", cute.partition_shape_C(mma, (128, 128)), "(64 fp32 registers/thread)")
print("C TV:", mma.get_layoutC_TV())
print("A TV:", mma.get_layoutA_TV(), "(every thread of a warpgroup sees its 64x16 A block)")
print(cute.check_tiled_mma(mma), "\n")

# Thread 130 (warpgroup 1) partitions a swizzled K-major 128x32 A tile in shared memory:
sA = cute.make_tensor(cute.make_smem_ptr("f16"),
                      cute.tile_to_shape(cute.GMMA.Layout_K_SW64_Atom("f16"), (128, 32)))
thr = mma.get_slice(130)
print("thread 130 partition_A (descriptor view):", thr.partition_fragment_A(sA))

# RS variant: A from registers (K-major only)
rs = cute.make_tiled_mma(cute.SM90_64x128x16_F32F16F16_RS(), (2, 1, 1))
print("RS A TV:", rs.get_layoutA_TV())

rng = np.random.default_rng(0)
A = rng.integers(-3, 4, (128, 32)).astype(float)
B = rng.integers(-3, 4, (128, 32)).astype(float)
for m in (mma, rs):
    D = cute.execute_tiled_mma(m, A, B)
    print(m.atom.name, "executor == A @ B.T:", np.array_equal(D, A @ B.T))

# The epilogue's stmatrix of the accumulators into a 128B-swizzled smem tile
st = cute.make_tiled_copy_C(cute.Copy_Atom(cute.SM90_U32x4_STSM_N, "f16"), mma)
print(cute.copy_bank_conflicts(st, cute.Layout((128, 128), (128, 1))))
print(cute.copy_bank_conflicts(st, cute.tile_to_shape(cute.GMMA.Layout_K_SW128_Atom("f16"), (128, 128))))

cute.write_svg(cute.make_tiled_mma(cute.SM90_64xNx16_F32F16F16_RS(16)), f"{out_dir}/tiled_mma_sm90_rs_64x16x16.svg")
print(f"\nwrote {out_dir}/tiled_mma_sm90_rs_64x16x16.svg")
