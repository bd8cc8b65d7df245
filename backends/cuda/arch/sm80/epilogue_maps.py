"""The index maps of the SM80 epilogue (:mod:`backends.cuda.epilogue.sm80`), as algebra objects
lowered to IR.

A subtile buffer is ``rows x cols`` elements, row-major, ``bm = tile_m / pm`` period blocks of
``epi_m`` rows by ``bn = tile_n / pn`` blocks of ``epi_n`` columns (``pm`` / ``pn``: the
fragment's warp period).

* **staging**: the byte offset of element ``(row, col)`` of a buffer is the ComposedLayout
  ``Swizzle<B,M,S> o 0 o (rows, cols):(row_bytes, elem_bytes)`` (:func:`staging_layout`; the
  swizzle is chosen per buffer by the bank model of the epilogue); a 16-byte chunk ``(row, c)``
  is element ``(row, c * 16 / elem_bytes)``.  :func:`composed_apply` lowers it.
* **thread rows / columns**: the buffer row of tile row ``mt`` of a period block is the layout
  ``(pm, bm):(1, epi_m)`` of ``mt`` (:func:`tile_to_buffer`), the tile row of buffer row ``br``
  the layout ``(epi_m, bm):(1, pm)`` of ``br`` (:func:`buffer_to_tile`; likewise for columns
  with ``vec``-element chunks: ``(cps, bn):(vec, pn)``).
* **chunks**: chunk ``c`` of a buffer with ``cpr`` chunks per row is ``(c // cpr, c % cpr)``:
  ``idx2crd(c, (cpr, rows))`` (:func:`chunk_coord`).

Laws (``tests/backend/test_epilogue_maps_sm80.py``): ``ir.evaluate(composed_apply(L, (r, c)))``
equals ``L((r, c))`` on every coordinate of the buffer (NumPy arrays); the row / column maps
are inverse on the rows a subtile holds.
"""

from __future__ import annotations

from cute_py import Swizzle, coalesce, make_composed_layout, make_layout
from cute_py.composed import ComposedLayout

from ... import lower

__all__ = ["staging_layout", "composed_apply", "tile_to_buffer", "buffer_to_tile",
           "chunk_coord"]


def staging_layout(rows: int, cols: int, elem_bytes: int, bits: int, base: int,
                   shift: int) -> ComposedLayout:
    """Byte offset of element (row, col) of a row-major ``rows x cols`` buffer swizzled with
    ``Swizzle<bits, base, shift>``: ``Sw o 0 o (rows, cols):(cols * elem_bytes, elem_bytes)``."""
    return make_composed_layout(Swizzle(bits, base, shift), 0,
                                make_layout((rows, cols), (cols * elem_bytes, elem_bytes)))


composed_apply = lower.composed_apply     # the one lowering of a (composed) layout


def tile_to_buffer(period: int, epi: int, blocks: int):
    """Tile row (column) -> buffer row (column) base of the thread: ``(period, blocks):(1,
    epi)`` (row ``a + period * b`` of block ``b`` is buffer row ``a + epi * b``; the subtile's
    own offset ``-i * epi`` is added per value), coalesced."""
    return coalesce(make_layout((period, blocks), (1, epi)))


def buffer_to_tile(epi: int, period: int, blocks: int, vec: int = 1):
    """Buffer row (chunk column) -> tile row (column) relative to the subtile origin:
    ``(epi/vec, blocks):(vec, period)``, coalesced."""
    return coalesce(make_layout((epi // vec, blocks), (vec, period)))


def chunk_coord(c, cpr: int, rows: int) -> tuple:
    """``(row, chunk)`` of chunk index ``c`` of a buffer with ``cpr`` 16-byte chunks per row."""
    cc, br = lower.idx2crd(c, (cpr, rows))
    return br, cc
