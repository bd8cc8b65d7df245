"""A copy kernel written as a CuTe TiledCopy: the algebra's partitions become the CUDA kernel.

    python examples/tiled_copy.py [M N] [--show-source] [--bench]

1. ``make_tiled_copy(Copy_Atom(UniversalCopy(128), "float16"), thr (16,8):(8,1), val (1,8))``:
   128 threads, each moving one 128-bit vector of 8 halves, tile 16x64.  ``copy(src, dst, tc)``
   tiles the matrix by 16x64 (one tile per CTA), lowers ``tc.tidfrg_S(src)`` /
   ``tc.tidfrg_D(dst)`` (= every thread's ``partition_S``/``partition_D`` of every
   ``local_tile``) at ``(threadIdx.x, value, blockIdx.x)`` and predicates residue tiles with the
   identity tensor partitioned the same way.
2. A transpose through a swizzled shared-memory tile: a load TiledCopy vectorised along the
   source's rows, a store TiledCopy vectorised along the destination's rows, and
   ``Sw<3,2,6> o (64,64):(1,64)`` for the tile.

Without a GPU it prints the plans and the generated source of the first kernel.
"""

import argparse

import numpy as np

import cute_py as cute
from cute_py.atom.copy_atom import Copy_Atom
from cute_py.atom.copy_traits import UniversalCopy
from cute_py.atom.tiled_copy import make_tiled_copy
from cute_py.composed import make_composed_layout
from cute_py.swizzle import Swizzle
from cute_py.backends.cuda.device import has_gpu
from cute_py.backends.cuda.kernels.tiled_copy import plan_tiled_copy, tiled_copy_source


def tiled_copies():
    row16 = make_tiled_copy(Copy_Atom(UniversalCopy(128), "float16"),
                            cute.make_layout((16, 8), (8, 1)), cute.make_layout((1, 8)))
    load32 = make_tiled_copy(Copy_Atom(UniversalCopy(128), "float32"),     # 4 floats along m
                             cute.make_layout((16, 16), (1, 16)), cute.make_layout((4, 4), (1, 4)))
    store32 = make_tiled_copy(Copy_Atom(UniversalCopy(128), "float32"),    # 4 floats along n
                              cute.make_layout((16, 16), (16, 1)), cute.make_layout((4, 4), (4, 1)))
    smem = make_composed_layout(Swizzle(3, 2, 6), 0, cute.make_layout((64, 64)))
    return row16, (load32, store32), smem


def _bench(fn, reps=20):
    import cupy as cp
    fn()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", nargs="*", type=int, default=[1000, 776])
    ap.add_argument("--show-source", action="store_true")
    ap.add_argument("--bench", action="store_true", help="8192x8192 timings against CuPy")
    args = ap.parse_args()
    M, N = args.shape if len(args.shape) == 2 else (1000, 776)
    row16, pair32, smem = tiled_copies()
    print(row16)
    p1 = plan_tiled_copy(row16, ((M, N), (N, 1)), ((M, N), (N, 1)), 2)
    p2 = plan_tiled_copy(pair32, ((N, M), (1, N)), ((N, M), (M, 1)), 4, smem_layout=smem)
    print(f"copy plan: {p1.kind}, grid {p1.grid}, {p1.vec_s * 2}-byte vectors, "
          f"src (Thr,Val,Rest) -> offset {p1.src_tv}")
    print(f"transpose plan: {p2.kind}, grid {p2.grid}, smem {p2.smem_elems * 4} bytes, "
          f"vector smem writes {p2.smem_vec_w}, vector smem reads {p2.smem_vec_r}")
    if args.show_source or not has_gpu():
        print(tiled_copy_source(p1))
    if not has_gpu():
        print("no GPU: generated the source only")
        return
    import cupy as cp
    from cute_py.backends.cuda.kernels.copy import copy
    rng = cp.random.default_rng(0)
    a16 = rng.standard_normal((M, N), dtype=cp.float32).astype(cp.float16)
    out16 = cp.empty_like(a16)
    out16.view(cp.uint8).fill(0xA5)
    copy(a16, out16, row16)
    a32 = rng.standard_normal((M, N), dtype=cp.float32)
    out32 = cp.empty((N, M), cp.float32)
    out32.view(cp.uint8).fill(0xA5)
    copy(a32.T, out32, pair32, smem_layout=smem)
    cp.cuda.runtime.deviceSynchronize()
    ok1 = np.array_equal(out16.get(), a16.get())
    ok2 = np.array_equal(out32.get(), a32.get().T)
    print(f"TiledCopy copy {M}x{N} float16: {'OK' if ok1 else 'MISMATCH'}")
    print(f"TiledCopy transpose {M}x{N} float32 through Sw<3,2,6> smem: "
          f"{'OK' if ok2 else 'MISMATCH'}")
    if not (ok1 and ok2):
        raise SystemExit(1)
    if args.bench:
        n = 8192
        b16 = cp.ones((n, n), cp.float16)
        o16 = cp.empty_like(b16)
        b32 = cp.ones((n, n), cp.float32)
        o32 = cp.empty_like(b32)
        rows = [("TiledCopy copy f16", lambda: copy(b16, o16, row16), 2),
                ("cupy d2d copy f16", lambda: o16.__setitem__(Ellipsis, b16), 2),
                ("TiledCopy smem transpose f32", lambda: copy(b32.T, o32, pair32,
                                                              smem_layout=smem), 4),
                ("planner transpose f32", lambda: copy(b32.T, o32), 4),
                ("cupy d2d copy f32", lambda: o32.__setitem__(Ellipsis, b32), 4)]
        print(f"{'8192x8192':32s} {'ms':>8s} {'GB/s (read+write)':>18s}")
        for name, fn, e in rows:
            ms = _bench(fn)
            print(f"{name:32s} {ms:8.3f} {2 * n * n * e / ms / 1e6:18.1f}")


if __name__ == "__main__":
    main()
