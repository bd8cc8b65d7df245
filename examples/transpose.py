"""Matrix transpose through a swizzled shared-memory tile, generated from layouts.

    python examples/transpose.py [M N] [--dtype float16] [--show-source]

The source matrix viewed transposed is the layout (N,M):(1,N); the destination is the compact
row-major (N,M):(M,1).  Their contiguous modes differ, so the copy planner picks the shared-memory
path: 16-byte loads along the source's rows, Swizzle<3,2,6> (fp32) on the 64x64 tile, 16-byte
stores along the destination's rows.  Without a GPU it prints the plan and the generated source.
"""

import argparse

import numpy as np

from cute_py.backends.cuda.device import has_gpu
from cute_py.backends.cuda.kernels.copy import copy_source, plan_copy, transpose


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", nargs="*", type=int, default=[1000, 777])
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--show-source", action="store_true")
    args = ap.parse_args()
    M, N = args.shape if len(args.shape) == 2 else (1000, 777)
    dtype = np.dtype(args.dtype)
    plan = plan_copy(((N, M), (1, N)), ((N, M), (M, 1)), dtype.itemsize)
    print("plan:", plan)
    if args.show_source or not has_gpu():
        print(copy_source(plan))
    if not has_gpu():
        print("no GPU: generated the source only")
        return
    import cupy as cp
    a = cp.random.default_rng(0).standard_normal((M, N), dtype=cp.float32).astype(dtype)
    out = cp.empty((N, M), dtype)
    out.view(cp.uint8).fill(0xA5)
    transpose(a, out)
    cp.cuda.runtime.deviceSynchronize()
    ok = np.array_equal(out.get(), a.get().T)
    print(f"transpose {M}x{N} {dtype}: {'OK' if ok else 'MISMATCH'}")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
