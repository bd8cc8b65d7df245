"""Partition a GEMM the way CuTe's GEMM tutorial does, with NumPy data (checked) and with
symbolic sizes (the index expressions the backend lowers into CUDA).

    python examples/partition_gemm.py
"""

import numpy as np
import sympy as sp

import cute_py as cute
from cute_py import _


def numeric(M=256, N=128, K=64):
    A = np.random.default_rng(0).standard_normal((M, K)).astype(np.float32)
    B = np.random.default_rng(1).standard_normal((N, K)).astype(np.float32)
    C = np.zeros((M, N), dtype=np.float32)
    mA, mB, mC = cute.make_tensor(A), cute.make_tensor(B), cute.make_tensor(C)  # row-major views
    cta_tiler = (128, 64, 16)
    tC = cute.make_layout((16, 16))                     # 256 threads computing C
    for bm in range(M // 128):
        for bn in range(N // 64):
            coord = (bm, bn, _)
            gA = cute.local_tile(mA, cta_tiler, coord, (1, None, 1))   # (128,16,k)
            gB = cute.local_tile(mB, cta_tiler, coord, (None, 1, 1))   # (64,16,k)
            gC = cute.local_tile(mC, cta_tiler, coord, (1, 1, None))   # (128,64)
            for tid in range(cute.size(tC)):
                tCgA = cute.local_partition(gA, tC, tid, (1, None))    # (8,16,k)
                tCgB = cute.local_partition(gB, tC, tid, (None, 1))    # (4,16,k)
                tCgC = cute.local_partition(gC, tC, tid, (1, 1))       # (8,4)
                a = tCgA.to_numpy().reshape(8, -1)
                b = tCgB.to_numpy().reshape(4, -1)
                acc = a @ b.T
                for m in range(8):
                    for n in range(4):
                        tCgC[m, n] = acc[m, n]
    np.testing.assert_allclose(C, A @ B.T, rtol=1e-5, atol=1e-4)
    print(f"numeric GEMM {M}x{N}x{K} through local_tile/local_partition: OK")


def symbolic():
    M, K = cute.symbols("M K")
    bm, tid, i, j, k = cute.symbols("bm tid i j k", nonnegative=True)
    mA = cute.make_tensor(cute.make_gmem_ptr("f16", "A"), cute.make_layout((M, K), (K, 1)))
    gA = cute.local_tile(mA, (128, 64, 32), (bm, 0, _), (1, None, 1))
    print("gA   =", gA)
    tA = cute.local_partition(gA, cute.make_layout((32, 8), (8, 1)), tid)
    print("tAgA =", tA)
    idx = cute.simplify(tA(i, j, k).index, bounds={tid: 256})
    print("tAgA(i,j,k) index =", sp.factor_terms(idx))
    I = cute.make_identity_tensor((M, K))
    cA = cute.local_partition(cute.local_tile(I, (128, 64, 32), (bm, 0, _), (1, None, 1)),
                              cute.make_layout((32, 8), (8, 1)), tid)
    print("predicate coordinate of (i,j,k):",
          tuple(cute.simplify(c, bounds={tid: 256}) for c in cA(i, j, k)), "< (M, K)")


if __name__ == "__main__":
    numeric()
    symbolic()
