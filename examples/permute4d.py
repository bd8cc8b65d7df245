"""Permute a 4-D tensor (e.g. attention's (B,S,H,D) -> (B,H,S,D), or (B,C,H,W) -> (B,W,C,H)).

    python examples/permute4d.py [--perm 0 2 1 3] [--shape 8 128 16 64]

The permuted source is a layout over the same coordinates as the compact destination; the
planner jointly coalesces the two and picks registers (when the innermost mode stays put: 16-byte
vectors) or the swizzled shared-memory tile (when it moves).
"""

import argparse

import numpy as np

from cute_py.backends.cuda.device import has_gpu
from cute_py.backends.cuda.kernels.copy import copy, copy_source, plan_copy


def row_major(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", nargs=4, type=int, default=[8, 128, 16, 64])
    ap.add_argument("--perm", nargs=4, type=int, default=[0, 2, 1, 3])
    ap.add_argument("--dtype", default="float16")
    args = ap.parse_args()
    shape, perm, dtype = tuple(args.shape), tuple(args.perm), np.dtype(args.dtype)
    src_stride = row_major(shape)
    out_shape = tuple(shape[p] for p in perm)
    # source viewed in the output's coordinate order, destination compact
    plan = plan_copy((out_shape, tuple(src_stride[p] for p in perm)),
                     (out_shape, row_major(out_shape)), dtype.itemsize)
    print("plan:", plan.kind, "modes", plan.modes)
    if not has_gpu():
        print(copy_source(plan))
        print("no GPU: generated the source only")
        return
    import cupy as cp
    x = cp.random.default_rng(1).standard_normal(shape, dtype=cp.float32).astype(dtype)
    y = cp.empty(out_shape, dtype)
    y.view(cp.uint8).fill(0xA5)
    copy(x.transpose(perm), y)
    ok = np.array_equal(y.get(), np.transpose(x.get(), perm))
    print(f"permute {shape} by {perm}: {'OK' if ok else 'MISMATCH'}")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
