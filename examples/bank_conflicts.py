"""Is a shared-memory layout bank-conflict free for ldmatrix? Answered on the CPU.

    python examples/bank_conflicts.py

A K-major 128x64 fp16 tile (each row of K is 128 bytes) read by ldmatrix.x4 for an SM80
TiledMMA: without a swizzle the 8 rows of every 8x8 matrix sit in the same 4 banks (8-way
conflict: 32 wavefronts per instruction instead of 4); Swizzle<3,3,3> on element offsets
(= Swizzle<3,4,3> on byte addresses, CuTe's SW128) makes it conflict-free.
"""

import cute_py as cute
from cute_py import Layout

mma = cute.make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN(), (2, 2, 1), (32, 32, 16))
ldsm = cute.make_tiled_copy_A(cute.Copy_Atom(cute.SM75_U32x4_LDSM_N, "f16"), mma)

plain = Layout((128, 64), (64, 1))
swizzled = cute.tile_to_shape(cute.make_composed_layout(cute.Swizzle(3, 3, 3), 0,
                                                        Layout((8, 64), (64, 1))), (128, 64))
for name, rep in [("no swizzle", cute.copy_bank_conflicts(ldsm, plain)),
                  ("Swizzle<3,3,3> (elements)", cute.copy_bank_conflicts(ldsm, swizzled)),
                  ("Swizzle<3,4,3> (bytes)", cute.copy_bank_conflicts(ldsm, plain,
                                                                     byte_swizzle=cute.Swizzle(3, 4, 3))),
                  ("GMMA Layout_K_SW128_Atom", cute.copy_bank_conflicts(
                      ldsm, cute.tile_to_shape(cute.GMMA.Layout_K_SW128_Atom("f16"), (128, 64))))]:
    print(f"--- {name}\n{rep}\n")

g2s = cute.make_tiled_copy(cute.Copy_Atom(cute.SM80_CP_ASYNC_CACHEGLOBAL(), "f16"),
                           Layout((16, 8), (8, 1)), Layout((1, 8)))
print("--- cp.async 128-bit stores into the swizzled tile\n", cute.copy_bank_conflicts(g2s, swizzled))
print("\nvector width gmem (row-major) -> swizzled smem:",
      cute.vector_width(Layout((128, 64), (64, 1)), swizzled, 16), "bits")
print("vector width gmem (column-major) -> swizzled smem:",
      cute.vector_width(Layout((128, 64), (1, 128)), swizzled, 16), "bits")
