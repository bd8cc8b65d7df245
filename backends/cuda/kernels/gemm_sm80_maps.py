"""Index maps of the SM80 GEMM: thin functions returning the algebra objects.

Every address the generated kernel computes is lowered from these objects (components in
``backends/cuda/arch/sm80/``):

* :func:`smem_layout` -- one stage of an operand tile in shared memory, CuTe's
  ``composition(Swizzle<B,M,S>, tile_to_shape(atom, (R, BK)))`` (:mod:`..arch.sm80.smem`);
* :func:`gmem_copy` -- the gmem->smem TiledCopy (``cp.async`` or a universal copy);
  each thread's coordinates are its partition (:mod:`..arch.sm80.copy`);
* :func:`tiled_mma` -- the ``mma.sync`` atom over the warps (:mod:`..arch.sm80.mma`);
* :func:`smem_read_copy` -- ``make_tiled_copy_A/B`` of ``ldmatrix`` (or 32-bit loads) over the
  TiledMMA (:mod:`..arch.sm80.ldmatrix`);
* :func:`decompose_xor_add` -- strength reduction of a swizzled address: the offset of fragment
  ``(kb, i)`` equals ``(base ^ x) + a`` for compile-time ``x`` and ``a``, checked for every
  thread; the kernel then costs one XOR and one add per ``ldmatrix``.
"""

from __future__ import annotations

from ..arch.sm80 import copy as _copy
from ..arch.sm80 import ldmatrix as _ldmatrix
from ..arch.sm80 import mma as _mma
from ..arch.sm80 import smem as _smem
from ..arch.sm80.smem import log2i

__all__ = ["DTYPES", "smem_layout", "gmem_copy", "tiled_mma", "smem_read_copy",
           "decompose_xor_add", "log2i"]

#: operand type -> (element bytes, mma k, C storage type)
DTYPES = {
    "f16": (2, 16, "unsigned short"),
    "bf16": (2, 16, "unsigned short"),
    "tf32": (4, 8, "float"),
}


def smem_layout(R: int, BK: int, major: str, elem_bytes: int, swizzle=_smem.DEFAULT):
    """The smem layout object of one stage of an ``(R, BK)`` operand tile."""
    return _smem.smem_layout(R, BK, major, elem_bytes, swizzle)


def gmem_copy(R: int, BK: int, major: str, vec: int, threads: int, elem_bytes: int,
              asynchronous: bool = True):
    """The generator's gmem->smem TiledCopy of an ``(R, BK)`` operand tile."""
    return _copy.gmem_tiled_copy(R, BK, major, vec, threads, elem_bytes, asynchronous)


def tiled_mma(dtype: str, warps, tile_mn):
    """The TiledMMA of the ``mma.sync`` atom over ``warps`` (contiguous warp tiles)."""
    return _mma.tiled_mma(dtype, warps, tile_mn)


def smem_read_copy(dtype: str, warps, tile_mn, operand: str, major: str):
    """``make_tiled_copy_A/B`` of the smem->register atom of ``operand``."""
    eb = DTYPES[dtype][0]
    return _ldmatrix.ldmatrix_copy(_mma.tiled_mma(dtype, warps, tile_mn), operand, major, eb)


def decompose_xor_add(f, lanes, split_bit: int):
    """Find compile-time ``x < 2**split_bit`` and ``a`` with ``f(l) == (f0(l) ^ x) + a``.

    ``f`` maps a lane key to ``(offset, base_offset)``.  Returns ``(x, a)`` or ``None`` when no
    such pair holds for every key in ``lanes``.
    """
    lo = (1 << split_bit) - 1
    xs, adds = set(), set()
    for key in lanes:
        d, b = f(key)
        xs.add((d & lo) ^ (b & lo))
        adds.add((d & ~lo) - (b & ~lo))
        if len(xs) > 1 or len(adds) > 1:
            return None
    return xs.pop(), adds.pop()
