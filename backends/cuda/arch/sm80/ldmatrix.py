"""smem->register copies of the SM80 GEMM: ``ldmatrix`` (and scalar 32-bit loads).

The copies are ``make_tiled_copy_A/B(atom, tiled_mma)`` of the TiledMMA (:mod:`.mma`):

* 16-bit K-major operands and all K-major tf32 operands: ``SM75_U32x4_LDSM_N`` (``ldmatrix.x4``;
  an 8x8 b16 matrix is 8 rows of 4 floats for tf32);
* 16-bit MN-major operands: ``SM75_U16x8_LDSM_T`` (``ldmatrix.x4.trans``);
* tf32 MN-major operands: ``UniversalCopy<uint32>`` (``ld.shared.b32`` per value: ``ldmatrix``
  has no 32-bit transpose).

``tidfrg_S`` of the ``(R, BK)`` tile is ``(Thr, Frg, KBlock) -> r + R*k``; value
``i * atom_values`` of thread ``tid`` is the first element of the row that lane hands to its
``i``-th ``ldmatrix`` of k block ``kb`` (:func:`row_coord`).

Law (tested): the lowered row coordinates, emulated through ``ldmatrix`` over a smem array
filled through the layout, put in every register the elements the MMA atom's TV layouts assign
to it, for every warp, lane, k block and load.
"""

from __future__ import annotations

import numpy as np

from cute_py.errors import AtomError

from ... import ir, lower
from . import smem as _smem

__all__ = ["ldmatrix_copy", "is_scalar", "partition", "loads_per_kblock", "row_coord",
           "row_offsets", "check_rows"]

_VT = {2: "float16", 4: "float32"}


def is_scalar(major: str, elem_bytes: int) -> bool:
    """True when the operand is read with 32-bit scalar loads (tf32 MN-major)."""
    return major != "K" and elem_bytes == 4


def ldmatrix_copy(tmma, operand: str, major: str, elem_bytes: int):
    """``make_tiled_copy_A/B`` of the operand's smem->register atom (see the docstring)."""
    from cute_py.atom.copy_atom import make_copy_atom
    from cute_py.atom.copy_traits import SM75_U16x8_LDSM_T, SM75_U32x4_LDSM_N, UniversalCopy
    from cute_py.atom.tiled_copy import make_tiled_copy_A, make_tiled_copy_B
    if is_scalar(major, elem_bytes):
        op = UniversalCopy(32)
    elif major == "K":
        op = SM75_U32x4_LDSM_N()
    else:
        op = SM75_U16x8_LDSM_T()
    mk = make_tiled_copy_A if operand == "A" else make_tiled_copy_B
    return mk(make_copy_atom(op, _VT[elem_bytes]), tmma)


def partition(tc, R: int, BK: int):
    from cute_py.layout import make_layout
    tile = tc.tile_shape
    if R % tile[0] or BK % tile[1]:
        raise AtomError("ldmatrix_copy", "tile", "is not divisible by the tiled MMA's tile",
                        expected=f"multiples of {tile}", actual=(R, BK))
    return tc.tidfrg_S(make_layout((R, BK)))


def loads_per_kblock(tc) -> int:
    """Copy-atom issues per thread per k block (FrgX)."""
    return tc.num_values // tc.atom_num_val


def row_coord(tc, R: int, BK: int, tid, i, kb):
    """``(r, k)`` (IR) of the first element of load ``i`` of k block ``kb`` of thread ``tid``:
    the row address of ``ldmatrix``, or the element of a scalar load."""
    F = partition(tc, R, BK)
    idx = lower.layout_apply(F, (tid, ir.mul(ir.as_node(i), tc.atom_num_val), kb))
    return ir.mod(idx, R), ir.floordiv(idx, R)


def _grid(tc, R, BK):
    T = tc.num_threads
    n = loads_per_kblock(tc)
    KB = BK // tc.tile_shape[1]
    return T, n, KB


def row_offsets(tc, L, R: int, BK: int, v=0):
    """NumPy array ``(threads, loads, kblocks)`` of smem element offsets of each load's row
    (value ``v`` of it), evaluated from the lowered maps."""
    T, n, KB = _grid(tc, R, BK)
    tid, i, kb = ir.var("tid", 0, T - 1), ir.var("i", 0, n - 1), ir.var("kb", 0, KB - 1)
    F = partition(tc, R, BK)
    idx = lower.layout_apply(F, (tid, ir.add(ir.mul(i, tc.atom_num_val), v), kb))
    env = {"tid": np.arange(T).reshape(T, 1, 1), "i": np.arange(n).reshape(1, n, 1),
           "kb": np.arange(KB).reshape(1, 1, KB)}
    r = ir.evaluate(ir.mod(idx, R), env)
    k = ir.evaluate(ir.floordiv(idx, R), env)
    rr, kk = ir.var("r", 0, R - 1), ir.var("k", 0, BK - 1)
    return np.broadcast_to(ir.evaluate(_smem.offset(L, rr, kk), {"r": r, "k": k}), (T, n, KB))


def check_rows(tc, L, R: int, BK: int, elem_bytes: int, name: str = "smem_layout"):
    """Raise :class:`AtomError` unless every ``ldmatrix`` row (16 bytes a lane addresses) is
    contiguous and 16-byte aligned in the smem layout ``L``."""
    if tc.atom.op.kind != "ldmatrix":
        return
    per = 16 // elem_bytes
    base = row_offsets(tc, L, R, BK, 0)
    if np.any((base * elem_bytes) % 16):
        raise AtomError("make_gemm_sm80", name, "an ldmatrix row is not 16-byte aligned in "
                        "the shared-memory layout", expected="16-byte aligned rows",
                        actual=str(L))
    for v in range(1, per):
        if not np.array_equal(row_offsets(tc, L, R, BK, v), base + v):
            raise AtomError("make_gemm_sm80", name, "an ldmatrix row is not contiguous in the "
                            "shared-memory layout", expected=f"{per} consecutive elements",
                            actual=str(L))
