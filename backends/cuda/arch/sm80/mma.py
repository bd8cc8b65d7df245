"""SM80 ``mma.sync`` atoms, the TiledMMA of a warp arrangement, the accumulator fragment.

:func:`tiled_mma` lays the atom over ``warps = (WARPS_M, WARPS_N)`` with the permutation
``M: (16, WARPS_M, MI):(1, WM, 16)``, ``N: (8, WARPS_N, NI):(1, WN, 8)`` -- warp ``(wm, wn)``
owns the contiguous block ``[wm*WM, (wm+1)*WM) x [wn*WN, (wn+1)*WN)`` of the ``BM x BN`` tile,
and each thread holds its ``MI x NI`` atoms' values (so ``make_tiled_copy_A/B`` of an
``ldmatrix`` atom see 8 values per thread).  ``permutation=False`` gives the plain interleaved
arrangement (warps step by one atom).

Law (tested): :func:`accumulator_coord` lowered at ``(lane, v)`` evaluates to the ``(m, n)`` of
the atom's ``layout_C`` -- the PTX ISA fragment table -- for every lane and value.
"""

from __future__ import annotations

from cute_py.errors import AtomError

from ... import ir, lower

__all__ = ["ATOMS", "WRAPPERS", "mma_atom", "tiled_mma", "atom_dtype", "accumulator_coord",
           "accumulator_c_exprs", "fragment_coord"]

#: operand type -> atom class name in ``cute_py.atom.mma_traits_sm80``
ATOMS = {"f16": "SM80_16x8x16_F32F16F16F32_TN", "bf16": "SM80_16x8x16_F32BF16BF16F32_TN",
         "tf32": "SM80_16x8x8_F32TF32TF32F32_TN"}
#: operand type -> the PTX-library wrapper issuing one atom
WRAPPERS = {"f16": "mma_m16n8k16_f16f32", "bf16": "mma_m16n8k16_bf16f32",
            "tf32": "mma_m16n8k8_tf32f32"}


def mma_atom(dtype: str):
    from cute_py.atom import mma_traits_sm80 as t
    if dtype not in ATOMS:
        raise AtomError("mma_atom", "dtype", "has no SM80 mma.sync atom", expected=sorted(ATOMS),
                        actual=dtype)
    return getattr(t, ATOMS[dtype])()


def atom_dtype(tiled) -> str:
    """The operand type of a TiledMMA's (or atom's) SM80 atom; AtomError for any other atom."""
    atom = getattr(tiled, "atom", tiled)
    name = getattr(atom, "name", None) or type(atom).__name__
    for dt, key in ATOMS.items():
        if name and key in str(name):
            return dt
    raise AtomError("make_gemm_sm80", "tiled_mma", "has an MMA atom the SM80 generator does not "
                    "emit", expected=sorted(ATOMS.values()), actual=name)


def tiled_mma(dtype: str, warps, tile_mn=None, permutation: bool = True):
    """The TiledMMA of ``warps`` atoms over a ``tile_mn = (BM, BN)`` tile (see the docstring)."""
    from cute_py.atom import make_tiled_mma
    from cute_py.layout import make_layout
    wm, wn = warps
    atom = mma_atom(dtype)
    if not permutation or tile_mn is None:
        return make_tiled_mma(atom, (wm, wn, 1))
    BM, BN = tile_mn
    WM, WN = BM // wm, BN // wn
    if WM % 16 or WN % 8 or WM * wm != BM or WN * wn != BN:
        raise AtomError("tiled_mma", "tile", "is not divisible by the tiled MMA's tile",
                        expected=f"multiples of ({16 * wm}, {8 * wn})", actual=tile_mn)
    perm = (make_layout((16, wm, WM // 16), (1, WM, 16)),
            make_layout((8, wn, WN // 8), (1, WN, 8)), None)
    return make_tiled_mma(atom, (wm, wn, 1), perm)


def accumulator_coord(dtype: str, lane, v: int):
    """``(m, n)`` of accumulator value ``v`` of ``lane`` in one atom, as IR nodes, lowered from
    the atom's ``layout_C`` (``(thr, val) -> m + 16 n``)."""
    L = mma_atom(dtype).layout_C
    idx = lower.layout_apply(L, (lane, v))
    return ir.mod(idx, 16), ir.floordiv(idx, 16)


def fragment_coord(dtype: str, operand: str, lane, v: int):
    """``(mn, k)`` of value ``v`` of ``lane`` in one atom's A (``m + 16 k``) or B (``n + 8 k``)
    fragment, as IR nodes lowered from the atom's TV layout."""
    atom = mma_atom(dtype)
    L, rows = (atom.layout_A, 16) if operand == "A" else (atom.layout_B, 8)
    idx = lower.layout_apply(L, (lane, v))
    return ir.mod(idx, rows), ir.floordiv(idx, rows)


def accumulator_c_exprs(dtype: str):
    """C expressions (in ``lane``) of the (m, n) of accumulator pairs ``c{2h}, c{2h+1}``,
    h = 0, 1, lowered from the atom's ``layout_C``; checks that ``c{2h+1}`` is the next column.
    """
    from ...render import render_expr
    L = mma_atom(dtype).layout_C
    for lane in range(32):
        for h in range(2):
            i0, i1 = L((lane, 2 * h)), L((lane, 2 * h + 1))
            if (i1 % 16, i1 // 16) != (i0 % 16, i0 // 16 + 1):
                raise AtomError("accumulator_c_exprs", "dtype", "accumulator pairs are not "
                                "adjacent columns", actual=dtype)
    lane = ir.var("lane", 0, 31)
    out = []
    for h in range(2):
        m, n = accumulator_coord(dtype, lane, 2 * h)
        out.append((f"({render_expr(m)})", f"({render_expr(n)})"))
    return out
