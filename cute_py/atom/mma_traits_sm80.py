"""SM80 ``mma.sync`` atoms (CuTe ``include/cute/atom/mma_traits_sm80.hpp``).

Each constructor returns a frozen :class:`~cute_py.atom.mma_atom.MMA_Atom` with CuTe's exact
traits; the named layouts below are CuTe's (``SM80_16x8_Row`` ...). All are warp-wide
(``ThrID = 32:1``) with ``row.col`` (A row-major = K-major, B column-major = K-major) operands.
"""

from __future__ import annotations

from ..layout import Layout
from ..numeric import PTX
from .mma_atom import MMA_Atom

__all__ = [
    "SM80_16x8x8_F16F16F16F16_TN", "SM80_16x8x16_F16F16F16F16_TN",
    "SM80_16x8x8_F32F16F16F32_TN", "SM80_16x8x16_F32F16F16F32_TN",
    "SM80_16x8x8_F32BF16BF16F32_TN", "SM80_16x8x16_F32BF16BF16F32_TN",
    "SM80_16x8x8_F32TF32TF32F32_TN",
    "SM80_8x4", "SM80_8x8_Row", "SM80_8x16_Row", "SM80_16x8_Row",
]

#: (T32,V1) -> (M8,N8)
SM80_8x4 = Layout(((4, 8), 1), ((8, 1), 0))
#: (T32,V2) -> (M8,N8)
SM80_8x8_Row = Layout(((4, 8), 2), ((16, 1), 8))
#: (T32,V4) -> (M8,N16)
SM80_8x16_Row = Layout(((4, 8), 4), ((32, 1), 8))
#: (T32,V4) -> (M16,N8)
SM80_16x8_Row = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))

_A_16x8x16 = Layout(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))
_B_16x8x16 = Layout(((4, 8), (2, 2)), ((16, 1), (8, 64)))
_WARP = Layout(32)


def _ptx(m, n, k, d, a, b, c):
    return f"mma.sync.aligned.m{m}n{n}k{k}.row.col.{d}.{a}.{b}.{c}"


def _f16_16x8x8(name, d, a, c, regs):
    return MMA_Atom(name=name, thr_id=_WARP, shape_mnk=(16, 8, 8),
                    layout_A=SM80_16x8_Row, layout_B=SM80_8x8_Row, layout_C=SM80_16x8_Row,
                    d_type=d, a_type=a, b_type=a, c_type=c,
                    ptx=_ptx(16, 8, 8, _P[d], _P[a], _P[a], _P[c]), arch=80, registers=regs)


def _f16_16x8x16(name, d, a, c, regs):
    return MMA_Atom(name=name, thr_id=_WARP, shape_mnk=(16, 8, 16),
                    layout_A=_A_16x8x16, layout_B=_B_16x8x16, layout_C=SM80_16x8_Row,
                    d_type=d, a_type=a, b_type=a, c_type=c,
                    ptx=_ptx(16, 8, 16, _P[d], _P[a], _P[a], _P[c]), arch=80, registers=regs)


_P = PTX


def SM80_16x8x8_F16F16F16F16_TN() -> MMA_Atom:
    """``mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16``: D,C fp16 (u32[2]), A u32[2], B u32[1]."""
    return _f16_16x8x8("SM80_16x8x8_F16F16F16F16_TN", "float16", "float16", "float16",
                       (("uint32", 2), ("uint32", 2), ("uint32", 1), ("uint32", 2)))


def SM80_16x8x16_F16F16F16F16_TN() -> MMA_Atom:
    """``mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16``: D,C u32[2], A u32[4], B u32[2].

    ``ALayout = ((4,8),(2,2,2)):((32,1),(16,8,128))``, ``BLayout = ((4,8),(2,2)):((16,1),(8,64))``,
    ``CLayout = SM80_16x8_Row``.
    """
    return _f16_16x8x16("SM80_16x8x16_F16F16F16F16_TN", "float16", "float16", "float16",
                        (("uint32", 2), ("uint32", 4), ("uint32", 2), ("uint32", 2)))


def SM80_16x8x8_F32F16F16F32_TN() -> MMA_Atom:
    """``mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32`` (layouts of the F16 16x8x8 atom)."""
    return _f16_16x8x8("SM80_16x8x8_F32F16F16F32_TN", "float32", "float16", "float32",
                       (("float32", 4), ("uint32", 2), ("uint32", 1), ("float32", 4)))


def SM80_16x8x16_F32F16F16F32_TN() -> MMA_Atom:
    """``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``: D,C f32[4], A u32[4], B u32[2].

    Thread 0 holds C at (m,n) = (0,0),(0,1),(8,0),(8,1) and A at (0,0),(0,1),(8,0),(8,1),
    (0,8),(0,9),(8,8),(8,9).
    """
    return _f16_16x8x16("SM80_16x8x16_F32F16F16F32_TN", "float32", "float16", "float32",
                        (("float32", 4), ("uint32", 4), ("uint32", 2), ("float32", 4)))


def SM80_16x8x8_F32BF16BF16F32_TN() -> MMA_Atom:
    """``mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32``."""
    return _f16_16x8x8("SM80_16x8x8_F32BF16BF16F32_TN", "float32", "bfloat16", "float32",
                       (("float32", 4), ("uint32", 2), ("uint32", 1), ("float32", 4)))


def SM80_16x8x16_F32BF16BF16F32_TN() -> MMA_Atom:
    """``mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`` (layouts of the F16 16x8x16 atom)."""
    return _f16_16x8x16("SM80_16x8x16_F32BF16BF16F32_TN", "float32", "bfloat16", "float32",
                        (("float32", 4), ("uint32", 4), ("uint32", 2), ("float32", 4)))


def SM80_16x8x8_F32TF32TF32F32_TN() -> MMA_Atom:
    """``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``: D,C f32[4], A u32[4], B u32[2].

    ``ALayout = ((4,8),(2,2)):((16,1),(8,64))``, ``BLayout = ((4,8),2):((8,1),32)``.
    """
    return MMA_Atom(name="SM80_16x8x8_F32TF32TF32F32_TN", thr_id=_WARP, shape_mnk=(16, 8, 8),
                    layout_A=Layout(((4, 8), (2, 2)), ((16, 1), (8, 64))),
                    layout_B=Layout(((4, 8), 2), ((8, 1), 32)),
                    layout_C=SM80_16x8_Row,
                    d_type="float32", a_type="tfloat32", b_type="tfloat32", c_type="float32",
                    ptx=_ptx(16, 8, 8, "f32", "tf32", "tf32", "f32"), arch=80,
                    registers=(("float32", 4), ("uint32", 4), ("uint32", 2), ("float32", 4)))
