"""TMA loads of one pipeline stage, derived from the smem layout and the TmaAtom.

A :class:`TmaLoad` holds the operand's :class:`~backends.cuda.tma.TmaAtom` (box and global
modes, from ``make_tma_atom`` on the smem layout) and the smem layout.  The box covers
``box_rows`` rows of the tile (the whole tile, or one MN chunk of an MN-major operand); a stage
of ``rows`` rows takes ``rows / box_rows`` boxes, box ``i`` written at the smem layout's byte
offset of row ``i * box_rows`` and read at global row ``row0 + i * box_rows``.  Coordinates are
IR expressions ordered by the box's global modes (``g_modes``: mode 0 rows, 1 K, 2 batch).

A K-major operand whose swizzle row is narrower than the stage's K extent (SW64, SW32,
interleaved at BK 64; any swizzle when BK is wider than its row, e.g. SW128 at BK 128) takes one
box per swizzle row along K as well, box ``(r0, k0)`` written at the smem layout's byte offset
of ``(r0, k0)`` (the atom's repeat along K).

Law (``tests/backend/test_arch_sm90.py``): the boxes' smem ranges ``[offset, offset +
box bytes)`` tile the stage's bytes exactly once, and their origins cover the tile once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...tma import TmaAtom
from .wgmma import GmmaOperand

__all__ = ["TmaLoad"]


@dataclass(frozen=True)
class TmaLoad:
    """The loads of ``rows`` rows of an operand: ``atom`` (its TMA box), ``smem`` (the
    :class:`GmmaOperand` the boxes land in)."""

    atom: TmaAtom
    smem: GmmaOperand
    rows: int

    @property
    def box_rows(self) -> int:
        return self.atom.box[list(self.atom.g_modes).index(0)]

    @property
    def box_k(self) -> int:
        return self.atom.box[list(self.atom.g_modes).index(1)]

    def boxes(self, tile_k: int | None = None) -> list:
        """``[(row offset, k offset, smem byte offset), ...]`` of the boxes of one stage
        (``tile_k``: the stage's K extent, default one box)."""
        ks = range(0, tile_k or self.box_k, self.box_k)
        return [(r0, k0, self.smem.offset(r0, k0)) for k0 in ks
                for r0 in range(0, self.rows, self.box_rows)]

    def emit(self, kb, dst, desc: str, bar, row0, k0, l, mask: str | None = None,
             tile_k: int | None = None) -> None:
        """The loads into the smem address ``dst`` (IR or C) completing on barrier ``bar``;
        ``row0`` / ``k0`` / ``l``: the stage's global coordinates (IR); ``mask``: multicast to
        the CTAs of this cluster mask; ``tile_k``: the stage's K extent."""
        for r0, kk, off in self.boxes(tile_k):
            d = dst + off if off else dst
            by_mode = {0: row0 + r0 if r0 else row0, 1: k0 + kk if kk else k0, 2: l}
            coords = [by_mode[m] for m in self.atom.g_modes]
            if mask is not None:
                kb.call(f"tma_load_{self.atom.rank}d_multicast", d, desc, bar, f"(u16){mask}",
                        *coords)
            else:
                kb.call(f"tma_load_{self.atom.rank}d", d, desc, bar, *coords)
