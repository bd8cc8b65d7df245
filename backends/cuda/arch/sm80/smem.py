"""Shared-memory layouts of SM80 GEMM operand tiles.

One stage of an operand tile ``(R, BK)`` (R = BM for A, BN for B) is CuTe's
``composition(Swizzle<B,M,S>, tile_to_shape(atom, (R, BK)))`` with the SM80 atoms
``(8,W):(W,1)`` (K-major) or ``(W,8):(1,W)`` (MN-major), W = the contiguous extent capped at
128 bytes.  The default swizzle is ``B = log2(W*eb/16), M = log2(16/eb), S = 3``: the eight
16-byte rows of every ``ldmatrix`` land in distinct banks.  ``swizzle=None`` gives the plain
(bank-conflicted) layout; any ``(B, M, S)`` may be given.

Law: :func:`offset` lowered at ``(r, k)`` evaluates (``ir.evaluate``) to ``L((r, k))`` for every
coordinate of the tile.
"""

from __future__ import annotations

from cute_py.errors import AtomError

from ... import ir, lower

__all__ = ["DEFAULT", "smem_layout", "default_swizzle", "swizzle_of", "plain_of", "offset",
           "offset_function", "atom_width", "log2i"]

#: marker for "the SM80 default swizzle"
DEFAULT = "default"


def log2i(x: int) -> int:
    """log2 of a power of two (raises ValueError otherwise)."""
    if x <= 0 or x & (x - 1):
        raise ValueError(f"{x} is not a power of two")
    return x.bit_length() - 1


def atom_width(R: int, BK: int, major: str, elem_bytes: int) -> int:
    """W: elements of the atom's contiguous mode (the tile's, capped at 128 bytes)."""
    return min(BK if major == "K" else R, 128 // elem_bytes)


def default_swizzle(R: int, BK: int, major: str, elem_bytes: int) -> tuple[int, int, int]:
    W = atom_width(R, BK, major, elem_bytes)
    return (log2i(max(1, W * elem_bytes // 16)), log2i(max(1, 16 // elem_bytes)), 3)


def smem_layout(R: int, BK: int, major: str, elem_bytes: int, swizzle=DEFAULT):
    """The layout object ``(r, k) -> element offset`` of one stage (see the module docstring).
    ``swizzle``: :data:`DEFAULT`, ``None`` (no swizzle) or ``(B, M, S)``."""
    from cute_py.algebra import composition, tile_to_shape
    from cute_py.layout import make_layout
    from cute_py.swizzle import Swizzle
    if major not in ("K", "MN"):
        raise AtomError("smem_layout", "major", "must be 'K' or 'MN'", actual=major)
    W = atom_width(R, BK, major, elem_bytes)
    if R % (8 if major == "K" else W) or BK % (W if major == "K" else 8):
        raise AtomError("smem_layout", "tile", "does not divide into the SM80 smem atom",
                        expected=f"(8, {W}) K-major / ({W}, 8) MN-major", actual=(R, BK))
    atom = make_layout((8, W), (W, 1)) if major == "K" else make_layout((W, 8), (1, W))
    base = tile_to_shape(atom, (R, BK))
    if swizzle == DEFAULT:
        swizzle = default_swizzle(R, BK, major, elem_bytes)
    if swizzle is None or swizzle[0] == 0:
        return base
    return composition(Swizzle(*swizzle), base)


def swizzle_of(L) -> tuple[int, int, int]:
    """``(B, M, S)`` of a (possibly unswizzled) smem layout (``(0, 0, 0)`` when plain)."""
    from cute_py.composed import get_swizzle_portion
    sw = get_swizzle_portion(L)
    return (sw.bits, sw.base, sw.shift) if hasattr(sw, "bits") else (sw.B, sw.M, sw.S)


def plain_of(L):
    """The layout under the swizzle."""
    from cute_py.composed import get_nonswizzle_portion
    return get_nonswizzle_portion(L)


def offset(L, r, k) -> ir.Node:
    """``L((r, k))`` as an IR node (``r``, ``k``: nodes or ints)."""
    B, M, S = swizzle_of(L)
    lin = lower.layout_apply(plain_of(L), (r, k))
    return lower.swizzle_apply(lin, (B, M, S)) if B else lin


def offset_function(L, name: str) -> str:
    """A CUDA ``__device__`` function ``int name(int r, int k)`` computing ``L((r, k))``,
    lowered from the layout object (``offset`` rendered by ``render.render_expr``)."""
    from ...render import render_expr
    R, BK = (L.shape if hasattr(L, "shape") else plain_of(L).shape)
    R = _size(R)
    BK = _size(BK)
    node = offset(L, ir.var("r", 0, R - 1), ir.var("k", 0, BK - 1))
    B, M, S = swizzle_of(L)
    P = plain_of(L)
    doc = f"// Sw<{B},{M},{S}> o {P}".replace(" ", "").replace("//", "// ", 1)
    return (f"{doc}  [lowered from cute_py.algebra]\n"
            f"CUTE_PY_DEVICE int {name}(int r, int k) {{\n"
            f"  return {render_expr(node)};\n}}\n")


def _size(s) -> int:
    if isinstance(s, tuple):
        out = 1
        for x in s:
            out *= _size(x)
        return out
    return int(s)
