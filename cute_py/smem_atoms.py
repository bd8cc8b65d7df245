"""Shared-memory layout atoms: Hopper GMMA atoms (``GMMA::Layout_*_Atom<T>``) and the swizzled
SM80 (``ldmatrix``/``cp.async``-friendly) atoms.

Hopper (``include/cute/atom/mma_traits_sm90_gmma.hpp``): each atom is defined on *bits* and
upcast to the element width, exactly as CuTe does::

    Layout_K_SW128_Atom_Bits  = Sw<3,4,3> o smem_ptr_flag o (8,1024):(1024,1)
    Layout_K_SW128_Atom<T>    = upcast<sizeof_bits<T>>(Layout_K_SW128_Atom_Bits)
                              = Sw<3,4,3> o smem_ptr[16b](unset) o (8,64):(64,1)   for 16-bit T

The swizzle acts on the *byte* address of the shared-memory pointer; tensors built on these
layouts use the position-independent form (``Sw<3,3,3> o 0 o (8,64):(64,1)`` for 16-bit), see
:func:`cute_py.composed.as_position_independent_swizzle_layout`. ``tile_to_shape(atom, (128, 64))``
gives the operand's shared-memory tile.

SM80: ``composition(Swizzle(B, M, 3), (8, K):(K, 1))`` with ``M = log2(16 bytes / element)``
(16-byte vectors stay contiguous for ``cp.async`` and ``ldmatrix``) and ``2**B`` 16-byte chunks per
row: CUTLASS's ``DefaultGemm_TensorOpSm80_OperandA<half_t, RowMajor, 8, 64>`` atom is
``Sw<3,3,3> o 0 o (8,64):(64,1)``.
"""

from __future__ import annotations

from .algebra import upcast
from .composed import _compose3, ComposedLayout, make_composed_layout, smem_ptr_flag_bits
from .errors import LayoutError
from .layout import Layout, size
from .numeric import sizeof_bits
from .swizzle import Swizzle

__all__ = ["GMMA", "sizeof_bits", "ss_smem_selector", "make_sm80_smem_layout_atom"]


def _bits_atom(B: int, k_major: bool, contig_bits: int) -> ComposedLayout:
    if k_major:
        lay = Layout((8, contig_bits), (contig_bits, 1))
    else:
        lay = Layout((contig_bits, 8), (1, contig_bits))
    return make_composed_layout(Swizzle(B, 4, 3), smem_ptr_flag_bits(1), lay)


def _upcast_atom(bits_atom, T, name):
    b = sizeof_bits(T)
    if 128 % b:
        raise LayoutError(f"GMMA.{name}", "T", f"element width {b} bits does not divide the 128-bit "
                          "core-matrix row", actual=b)
    return upcast(bits_atom, b)


class _Major:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"GMMA.Major.{self.name}"


class GMMA:
    """CuTe's ``SM90::GMMA`` namespace for shared-memory layout atoms.

    ``GMMA.Layout_K_SW128_Atom(T)`` etc. take an element type (bits, a name such as ``"f16"``
    or a NumPy dtype). ``GMMA.Layout_SW128_Atom(T, GMMA.Major.K)`` selects by major-ness.
    Law: ``size(atom) * sizeof_bits(T) == 8 * 128 * (1 << B)`` bits for the ``SW{16<<B}`` atoms
    (INTER: B = 0), the contiguous extent holds ``128 << B`` bits, and ``tile_to_shape`` of an atom
    keeps its swizzle and offset.
    """

    class Major:
        K = _Major("K")
        MN = _Major("MN")

    Layout_MN_INTER_Atom_Bits = _bits_atom(0, False, 128)
    Layout_MN_SW32_Atom_Bits = _bits_atom(1, False, 256)
    Layout_MN_SW64_Atom_Bits = _bits_atom(2, False, 512)
    Layout_MN_SW128_Atom_Bits = _bits_atom(3, False, 1024)
    Layout_K_INTER_Atom_Bits = _bits_atom(0, True, 128)
    Layout_K_SW32_Atom_Bits = _bits_atom(1, True, 256)
    Layout_K_SW64_Atom_Bits = _bits_atom(2, True, 512)
    Layout_K_SW128_Atom_Bits = _bits_atom(3, True, 1024)

    @staticmethod
    def Layout_MN_INTER_Atom(T):  # noqa: N802 - CuTe's names
        """``Sw<0,4,3> o smem_ptr o (128/b, 8):(1, 128/b)``."""
        return _upcast_atom(GMMA.Layout_MN_INTER_Atom_Bits, T, "Layout_MN_INTER_Atom")

    @staticmethod
    def Layout_MN_SW32_Atom(T):  # noqa: N802
        return _upcast_atom(GMMA.Layout_MN_SW32_Atom_Bits, T, "Layout_MN_SW32_Atom")

    @staticmethod
    def Layout_MN_SW64_Atom(T):  # noqa: N802
        return _upcast_atom(GMMA.Layout_MN_SW64_Atom_Bits, T, "Layout_MN_SW64_Atom")

    @staticmethod
    def Layout_MN_SW128_Atom(T):  # noqa: N802
        """``Sw<3,4,3> o smem_ptr o (1024/b, 8):(1, 1024/b)`` — 64 x 8 for 16-bit elements."""
        return _upcast_atom(GMMA.Layout_MN_SW128_Atom_Bits, T, "Layout_MN_SW128_Atom")

    @staticmethod
    def Layout_K_INTER_Atom(T):  # noqa: N802
        """``Sw<0,4,3> o smem_ptr o (8, 128/b):(128/b, 1)``."""
        return _upcast_atom(GMMA.Layout_K_INTER_Atom_Bits, T, "Layout_K_INTER_Atom")

    @staticmethod
    def Layout_K_SW32_Atom(T):  # noqa: N802
        return _upcast_atom(GMMA.Layout_K_SW32_Atom_Bits, T, "Layout_K_SW32_Atom")

    @staticmethod
    def Layout_K_SW64_Atom(T):  # noqa: N802
        return _upcast_atom(GMMA.Layout_K_SW64_Atom_Bits, T, "Layout_K_SW64_Atom")

    @staticmethod
    def Layout_K_SW128_Atom(T):  # noqa: N802
        """``Sw<3,4,3> o smem_ptr o (8, 1024/b):(1024/b, 1)`` — 8 x 64 for 16-bit elements."""
        return _upcast_atom(GMMA.Layout_K_SW128_Atom_Bits, T, "Layout_K_SW128_Atom")

    @staticmethod
    def Layout_INTER_Atom(T, major):  # noqa: N802
        return GMMA.Layout_MN_INTER_Atom(T) if _is_mn(major) else GMMA.Layout_K_INTER_Atom(T)

    @staticmethod
    def Layout_SW32_Atom(T, major):  # noqa: N802
        return GMMA.Layout_MN_SW32_Atom(T) if _is_mn(major) else GMMA.Layout_K_SW32_Atom(T)

    @staticmethod
    def Layout_SW64_Atom(T, major):  # noqa: N802
        return GMMA.Layout_MN_SW64_Atom(T) if _is_mn(major) else GMMA.Layout_K_SW64_Atom(T)

    @staticmethod
    def Layout_SW128_Atom(T, major):  # noqa: N802
        return GMMA.Layout_MN_SW128_Atom(T) if _is_mn(major) else GMMA.Layout_K_SW128_Atom(T)


def _is_mn(major) -> bool:
    if major is GMMA.Major.MN or (isinstance(major, str) and major.upper() == "MN"):
        return True
    if major is GMMA.Major.K or (isinstance(major, str) and major.upper() == "K"):
        return False
    raise LayoutError("GMMA", "major", "must be GMMA.Major.K or GMMA.Major.MN (or 'K'/'MN')",
                      actual=repr(major))


def ss_smem_selector(major, T, blk_mn: int, blk_k: int):
    """CUTLASS's ``ss_smem_selector<major, T, BLK_MN, BLK_K>()``: the widest GMMA atom whose
    contiguous extent divides the tile (MN-major: ``blk_mn``; K-major: ``blk_k``)."""
    for name, v in (("blk_mn", blk_mn), ("blk_k", blk_k)):
        if not isinstance(v, int) or v % 8:
            raise LayoutError("ss_smem_selector", name, "must be a multiple of 8", actual=v)
    mn = _is_mn(major)
    makers = ([GMMA.Layout_MN_SW128_Atom, GMMA.Layout_MN_SW64_Atom, GMMA.Layout_MN_SW32_Atom,
               GMMA.Layout_MN_INTER_Atom] if mn else
              [GMMA.Layout_K_SW128_Atom, GMMA.Layout_K_SW64_Atom, GMMA.Layout_K_SW32_Atom,
               GMMA.Layout_K_INTER_Atom])
    extent = blk_mn if mn else blk_k
    for mk in makers:
        atom = mk(T)
        if extent % size(atom, 0 if mn else 1) == 0:
            return atom
    raise LayoutError("ss_smem_selector", "blk_mn" if mn else "blk_k",
                      "is not a multiple of the INTER atom's contiguous extent",
                      expected=size(makers[-1](T), 0 if mn else 1), actual=extent)


def make_sm80_smem_layout_atom(T, major="K", extent: int = 64):
    """The swizzled SM80 shared-memory atom for ``cp.async`` + ``ldmatrix``: 8 rows of
    ``min(extent * bytes, 128)`` contiguous bytes, ``Swizzle(B, log2(16 / bytes), 3)`` with
    ``2**B`` 16-byte chunks per row. ``extent`` is the tile's contiguous extent (``BLK_K`` for
    K-major, ``BLK_MN`` for MN-major).

    ``make_sm80_smem_layout_atom("f16", "K", 64) == Sw<3,3,3> o 0 o (8,64):(64,1)`` and
    ``(..., "K", 32) == Sw<2,3,3> o 0 o (8,32):(32,1)`` (CUTLASS's DefaultGemm_TensorOpSm80
    half_t atoms); ``("f16", "MN", 64) == Sw<3,3,3> o 0 o (64,8):(1,64)``;
    ``("tf32", "K", 32) == Sw<3,2,3> o 0 o (8,32):(32,1)``.
    """
    bits = sizeof_bits(T)
    if bits % 8 or bits > 128:
        raise LayoutError("make_sm80_smem_layout_atom", "T", "must be a whole number of bytes "
                          "up to 16", actual=bits)
    nbytes = bits // 8
    vec = 16 // nbytes
    if not isinstance(extent, int) or extent < vec or extent % vec:
        raise LayoutError("make_sm80_smem_layout_atom", "extent", f"must be a multiple of the "
                          f"{vec} elements of a 16-byte vector", actual=extent)
    row_bytes = min(extent * nbytes, 128)
    while row_bytes & (row_bytes - 1):  # largest power-of-two row that divides
        row_bytes -= 16
    while (extent * nbytes) % row_bytes:
        row_bytes //= 2
    chunks = row_bytes // 16
    B = chunks.bit_length() - 1
    M = vec.bit_length() - 1
    n = row_bytes // nbytes
    lay = Layout((n, 8), (1, n)) if _is_mn(major) else Layout((8, n), (n, 1))
    return _compose3(Swizzle(B, M, 3), 0, lay)
