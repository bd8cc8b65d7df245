"""SM80 GEMM example: compose a GEMM from the library's objects, print what the kernel is made
of, and (with a GPU) run it and the high-level call against a float64 reference.

    python examples/gemm_sm80.py            # objects + generated source summary (CPU is enough)
    python examples/gemm_sm80.py --run      # also launch on the GPU
"""

import sys

from cute_py.algebra import composition, tile_to_shape
from cute_py.atom import (SM80_16x8x16_F32F16F16F32_TN, SM80_CP_ASYNC_CACHEGLOBAL_ZFILL,
                          make_copy_atom, make_tiled_copy, make_tiled_mma)
from cute_py.layout import make_layout
from cute_py.swizzle import Swizzle
from cute_py.backends.cuda.kernels.gemm_sm80 import GemmSm80, generate_source, kernel_name
from cute_py.backends.cuda.kernels.gemm_sm80_compose import describe, make_gemm_sm80


def compose():
    # 8 warps as 2 x 4, each owning a 64x64 block of a 128x256 tile; m16n8k16 fp16 -> fp32
    mma = make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN(), (2, 4, 1))
    # K-major smem tiles, 32 halves (64 bytes) per row, swizzled so ldmatrix is conflict-free
    atom = make_layout((8, 32), (32, 1))
    sA = composition(Swizzle(2, 3, 3), tile_to_shape(atom, (128, 32)))
    sB = composition(Swizzle(2, 3, 3), tile_to_shape(atom, (256, 32)))
    # 16-byte cp.async with zero-fill; 256 threads as 64 rows x 4 chunks
    cp = make_tiled_copy(make_copy_atom(SM80_CP_ASYNC_CACHEGLOBAL_ZFILL(128), "float16"),
                         make_layout((64, 4), (4, 1)), make_layout((1, 8)))
    return make_gemm_sm80(mma, (128, 256, 32), stages=3, mainloop="multistage",
                          smem_layout_A=sA, smem_layout_B=sB, copy_A=cp, copy_B=cp)


def main():
    cfg = compose()
    print("config:", cfg)
    for name, obj in describe(cfg).items():
        print(f"--- {name}\n{obj}")
    src = generate_source(cfg)
    print(f"--- {kernel_name(cfg)}: {len(src.splitlines())} lines of CUDA C, "
          f"{cfg.smem_bytes} bytes of shared memory, {cfg.threads} threads")
    if "--run" not in sys.argv:
        return
    import cupy as cp
    from cute_py.gemm import gemm
    rng = cp.random.default_rng(0)
    M, N, K = 1000, 777, 333
    A = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
    B = rng.standard_normal((K, N), dtype=cp.float32).astype(cp.float16)
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    for label, D in (("composed config", gemm(A, B, config=cfg)),
                     ("high-level gemm", gemm(A, B)),
                     ("single-stage", gemm(A, B, mainloop="singlestage")),
                     ("pipelined", gemm(A, B, mainloop="pipelined"))):
        err = float(cp.linalg.norm(D.astype(cp.float64) - ref) / cp.linalg.norm(ref))
        print(f"{label:16s} rel. error {err:.2e}")
    _ = GemmSm80  # the class the composed config compiles into


if __name__ == "__main__":
    main()
