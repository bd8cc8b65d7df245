"""The wgmma atom and its shared-memory matrix descriptors, read off the smem layouts.

:class:`GmmaOperand` is one smem operand of ``wgmma.mma_async``: its ``Swizzle o Layout``
(a canonical GMMA layout, ``cute_py.smem_atoms.GMMA``) tiled to the CTA tile, its major mode
and element size.  Everything the descriptor needs comes from that layout:

* ``layout_type``: from the swizzle (``Sw<3,4,3>`` SW128 -> 1, ``Sw<2,4,3>`` SW64 -> 2,
  ``Sw<1,4,3>`` SW32 -> 3, none (interleaved) -> 0);
* LBO / SBO (bytes), the canonical forms of CuTe's ``make_gmma_desc`` (``T`` = 16 bytes of
  elements, ``W`` = the swizzle width in elements):

  - K-major, swizzled ``((8,m),(T,2k))``: SBO = offset of row 8 (next 8-row core-matrix
    group); LBO unused (16);
  - K-major, interleaved: SBO as above, LBO = offset of element ``(0, T)`` (next core matrix
    along K);
  - MN-major, swizzled ``((T,W/T,m),(8,k))``: LBO = offset of MN element ``W`` (the next
    ``W``-wide chunk; a tile one chunk wide gives its byte size), SBO = offset of k-row 8;
  - MN-major, interleaved: SBO = offset of MN element ``T`` (next core matrix along MN),
    LBO = offset of k-row 8;

* the start address of the slab ``j`` / k-step ``kk`` operand: the layout's non-swizzle part
  evaluated at ``(64*j, 16*kk)`` (bytes; the hardware applies the swizzle to the address, as
  CuTe's descriptor iterator assumes).

Law (``tests/backend/test_arch_sm90.py``): offsets equal the layout evaluated; LBO / SBO equal
the layout's strides of the canonical modes.

:class:`WgmmaAtom` is ``wgmma.mma_async.m64n{N}k16`` with f32 accumulators and 16-bit
operands from descriptors; :meth:`WgmmaAtom.emit_k_block` emits the calls of one k-block.
"""

from __future__ import annotations

from dataclasses import dataclass

import cute_py as cute
from cute_py.composed import get_nonswizzle_portion, get_swizzle_portion, is_composed_layout

__all__ = ["GmmaOperand", "WgmmaAtom", "LAYOUT_TYPES", "FP8_FORMATS"]

#: 8-bit wgmma input formats (``wgmma ... k32``)
FP8_FORMATS = ("e4m3", "e5m2")

#: swizzle bits B of Sw<B,4,3> -> the descriptor's layout type (GMMA::LayoutType)
LAYOUT_TYPES = {3: 1, 2: 2, 1: 3, 0: 0}


@dataclass(frozen=True)
class GmmaOperand:
    """One smem operand: ``layout`` (ComposedLayout or Layout, (rows, K) coordinates to
    element offsets), ``major`` ("K" or "MN"), ``elem_bytes``."""

    layout: object
    major: str = "K"
    elem_bytes: int = 2

    @property
    def inner(self):
        return get_nonswizzle_portion(self.layout) if is_composed_layout(self.layout) \
            else self.layout

    @property
    def swizzle_bits(self) -> int:
        if not is_composed_layout(self.layout):
            return 0
        return get_swizzle_portion(self.layout).B

    @property
    def layout_type(self) -> int:
        return LAYOUT_TYPES[self.swizzle_bits]

    def offset(self, m: int, k: int) -> int:
        """Byte offset of element ``(m, k)`` before the swizzle (a descriptor start)."""
        return cute.crd2idx((m, k), self.inner) * self.elem_bytes

    def lbo_sbo(self) -> tuple[int, int]:
        """``(lbo, sbo)`` in bytes (see the module docstring)."""
        T = 16 // self.elem_bytes
        B = self.swizzle_bits
        if self.major == "K":
            sbo = self.offset(8, 0)
            return (16 if B else self.offset(0, T)), sbo
        if not B:
            return self.offset(0, 8), self.offset(T, 0)
        W = (16 << B) // self.elem_bytes
        sbo = self.offset(0, 8)
        if cute.size(self.layout, 0) <= W:
            return cute.cosize(self.inner) * self.elem_bytes, sbo
        return self.offset(W, 0), sbo

    def desc_args(self) -> str:
        """``lbo, sbo, layout_type`` arguments of ``make_gmma_desc``."""
        lbo, sbo = self.lbo_sbo()
        return f"{lbo}u, {sbo}u, {self.layout_type}u"


@dataclass(frozen=True)
class WgmmaAtom:
    """``wgmma.mma_async.m64n{n}k16.f32.{ab}.{ab}``, A and B from descriptors; ``trans_a`` /
    ``trans_b``: the transpose immediates (1 for an MN-major operand).

    8-bit inputs (``ab`` "e4m3" / "e5m2", ``b`` B's format when it differs):
    ``wgmma.mma_async.m64n{n}k32.f32.{ab}.{b}`` (the atom ``SM90_64xNx32_F32{A}{B}_SS_TN``):
    ``k`` = 32 elements per k-step (32 bytes, as 16 16-bit elements), both operands K-major
    (no transpose immediates: ``trans_a`` / ``trans_b`` must be 0)."""

    n: int
    ab: str = "f16"
    trans_a: int = 0
    trans_b: int = 0
    b: str = ""

    def __post_init__(self):
        if self.fp8 and (self.trans_a or self.trans_b):
            from cute_py.errors import AtomError
            raise AtomError("WgmmaAtom", "trans_a" if self.trans_a else "trans_b",
                            "8-bit wgmma reads K-major operands only (no transpose)",
                            expected=0, actual=1)

    @property
    def fp8(self) -> bool:
        return self.ab in FP8_FORMATS

    @property
    def k(self) -> int:
        """Elements of K per wgmma (32 bytes of the operand row)."""
        return 32 if self.fp8 else 16

    @property
    def name(self) -> str:
        if self.fp8:
            return f"wgmma_m64n{self.n}k32_f32_{self.ab}_{self.b or self.ab}_ss"
        return f"wgmma_m64n{self.n}k16_f32_{self.ab}_ss"

    @property
    def accumulators(self) -> int:
        """f32 accumulators per thread per 64-row slab."""
        return self.n // 2

    def emit_k_block(self, kb, acc: str, desc_a: str, desc_b: str, a: GmmaOperand,
                     b: GmmaOperand, slabs: int, k_steps: int, scale: str,
                     slab: int | None = None) -> None:
        """The wgmma calls of one k-block: for each k-step ``kk`` and slab ``j``,
        ``acc[j] += A(slab j, kk) * B(kk)`` (``scale`` decides the first k-step's
        accumulate, 1 after it); ``slab``: only that slab's, into ``acc[0]`` (a kernel that
        keeps one slab's accumulators and takes its slabs in turn)."""
        t = None if self.fp8 else f"{self.trans_a}, {self.trans_b}"
        k = self.k
        for kk in range(k_steps):
            for j in (range(slabs) if slab is None else (slab,)):
                # gmma_desc_add / make_gmma_desc are host-device helpers of ptx_sm90.cuh (no
                # PTX), outside the wrapper table ptx.FUNCTIONS checks
                kb.call(self.name, f"{acc}[{j if slab is None else 0}]",
                        f"gmma_desc_add({desc_a}, {a.offset(64 * j, k * kk)}u)",
                        f"gmma_desc_add({desc_b}, {b.offset(0, k * kk)}u)",
                        scale if kk == 0 else "1", template=t)


def accumulator_origin(tile_n: int, wgs: int, m_per_wg: int, tid):
    """``(m, n)`` IR expressions of value 0 of consumer thread ``tid`` (an IR variable in
    ``[0, 128 * wgs)``) in the ``(wgs * m_per_wg) x tile_n`` accumulator tile, lowered from the
    wgmma C layout ``CLayout_64xN`` (``(thread, value) -> m + 64 * n`` per 64-row slab):
    warpgroup ``tid // 128`` owns rows ``[wg * m_per_wg, (wg + 1) * m_per_wg)``.  Value ``v``
    of the thread is at ``(m + m_val[v], n + n_val[v])`` (the C layout's thread and value
    modes touch disjoint bits of ``m`` and ``n``)."""
    from ...lower import crd2idx
    cl = cute.CLayout_64xN(tile_n)
    r, wg = tid % 128, tid // 128
    idx0 = crd2idx((r, 0), cute.shape(cl), cute.stride(cl))
    return wg * m_per_wg + idx0 % 64, idx0 // 64
