"""SM80 (Ampere) kernel components: one job per module, each built from algebra objects.

* :mod:`.smem`     -- the swizzled shared-memory layout of an operand tile (a ComposedLayout
  ``Swizzle o tile_to_shape(atom, (R, BK))``) and its offset lowered to IR;
* :mod:`.copy`     -- the gmem->smem tiled copy (``cp.async`` / vector loads): each thread's tile
  coordinates from the TiledCopy's partition (``tidfrg_S``), lowered to IR, and the hardware
  rules of the vector;
* :mod:`.ldmatrix` -- the smem->register ``ldmatrix`` copies (``make_tiled_copy_A/B`` of the
  TiledMMA): each lane's row address, lowered to IR; the 16-byte row rule;
* :mod:`.mma`      -- the ``mma.sync`` atoms, the TiledMMA of a warp arrangement (with the
  permutation that gives each warp a contiguous block) and the accumulator coordinates;
* :mod:`.pipeline` -- the ``cp.async`` commit / wait-group multistage pipeline.
* :mod:`.epilogue_maps` -- the epilogue's staging buffers (a ComposedLayout ``Swizzle o
  (rows, cols):(row_bytes, elem_bytes)``), the thread / chunk row and column maps, lowered to IR.
"""
