"""The index maps of the SM90 TMA epilogue, as algebra objects lowered to IR.

* **subtiles**: ``flat_divide`` of the CTA tile by the epilogue tile (``shared/seeds/004``:
  ``flat_divide(gD, EpilogueTile)``); the rest modes ``(tile_m/epi_m, tile_n/epi_n)`` enumerate
  the subtiles n-outer, m-inner, and the divided layout gives each subtile's origin.
* **smem staging**: one subtile of a C / D / aux buffer is the byte layout
  ``Swizzle<B,4,3> o 0 o (epi_m, epi_n):(row_bytes, elem_bytes)`` with ``B = log2(row_bytes/16)``
  (the TMA swizzle for 32, 64 or 128-byte rows); :func:`composed_apply` lowers it.
* **thread offsets**: the accumulator fragment's per-thread row / column offsets as CuTe layouts
  of the thread index (:func:`thread_layouts`, fitted to the fragment's tables and checked on
  every thread), lowered by :mod:`backends.cuda.lower`.

Laws (``tests/backend/test_epilogue_sm90.py``): ``ir.evaluate(composed_apply(L, (m, n)))``
equals ``L((m, n))`` on every coordinate of a subtile; ``layout(t)`` of each thread layout
equals the fragment table on every thread; the subtile origins are ``(i * epi_m, j * epi_n)``.
"""

from __future__ import annotations

from cute_py import Layout, Swizzle, coalesce, flat_divide, make_composed_layout, make_layout
from cute_py.composed import ComposedLayout
from cute_py.errors import LayoutError

from ... import ir, lower

__all__ = ["staging_layout", "composed_apply", "subtile_origins", "subtile_origin_ir", "thread_layouts",
           "thread_offsets"]


def staging_layout(rows: int, cols: int, elem_bytes: int) -> ComposedLayout:
    """Byte offset of element (row, col) of a row-major ``rows x cols`` subtile staged for TMA:
    ``Swizzle<log2(row_bytes/16), 4, 3> o 0 o (rows, cols):(row_bytes, elem_bytes)``."""
    rb = cols * elem_bytes
    if rb not in (16, 32, 64, 128):   # TMA epilogue buffers: 32, 64, 128 (Sm90Epilogue checks)
        raise LayoutError("staging_layout", "cols", "gives rows the TMA swizzle does not cover",
                          expected="16|32|64|128 bytes", actual=rb)
    return make_composed_layout(Swizzle(rb.bit_length() - 5, 4, 3), 0,
                                make_layout((rows, cols), (rb, elem_bytes)))


composed_apply = lower.composed_apply     # the one lowering of a (composed) layout


def subtile_origins(tile_m: int, tile_n: int, epi_m: int, epi_n: int) -> list:
    """``[(i, j), (m0, n0)]`` per subtile, n-outer / m-inner: the rest modes of
    ``flat_divide((tile_m, tile_n):(1, tile_m), (epi_m, epi_n))`` (a column-major coordinate
    layout of the tile), each origin read back from the divided layout."""
    div = flat_divide(make_layout((tile_m, tile_n), (1, tile_m)), (epi_m, epi_n))
    rm, rn = div.shape[2], div.shape[3]
    out = []
    for j in range(rn):
        for i in range(rm):
            idx = div((0, 0, i, j))
            out.append(((i, j), (idx % tile_m, idx // tile_m)))
    return out


def _fit(table) -> Layout:
    """The layout ``(2,2,...):(d0,d1,...)`` (coalesced) of a map linear over the bits of the
    thread index, i.e. ``table[t] = sum_k bit_k(t) * d_k``; raises when ``table`` is not."""
    n = len(table)
    if n & (n - 1) or n == 0:
        raise LayoutError("thread_layouts", "fragment", "needs a power-of-2 thread count",
                          actual=n)
    bits = n.bit_length() - 1
    base = table[0]
    strides = tuple(table[1 << k] - base for k in range(bits))
    lay = make_layout(tuple([2] * bits), strides) if bits else make_layout(1, 0)
    for t in range(n):
        if base + lay(t) != table[t]:
            raise LayoutError("thread_layouts", "fragment", "per-thread offsets are not a "
                              "layout of the thread index", actual=(t, table[t]))
    return base, coalesce(lay)


def thread_layouts(fragment) -> tuple:
    """``((m_base, m_layout), (n_base, n_layout))``: the fragment's per-thread row and column
    offsets as ``base + layout(tid)``."""
    return _fit(fragment.m_thr), _fit(fragment.n_thr)


def thread_offsets(fragment, tid: ir.Node) -> tuple:
    """The thread's (row, column) offsets in the CTA tile as IR of ``tid``."""
    (mb, ml), (nb, nl) = thread_layouts(fragment)
    return (ir.add(lower.layout_apply(ml, tid), mb), ir.add(lower.layout_apply(nl, tid), nb))


def subtile_origin_ir(tile_m: int, tile_n: int, epi_m: int, epi_n: int, s) -> tuple:
    """The origin (row, column) in the tile of subtile ``s`` (an IR index over the rest modes of
    :func:`subtile_origins`' divided layout, m fastest) as IR."""
    div = flat_divide(make_layout((tile_m, tile_n), (1, tile_m)), (epi_m, epi_n))
    rest = make_layout(tuple(div.shape[2:4]), tuple(div.stride[2:4]))
    idx = lower.layout_apply(rest, s)
    return ir.mod(idx, tile_m), ir.floordiv(idx, tile_m)
