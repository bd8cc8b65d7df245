"""Index maps of the Hopper GEMM, derived from the layout algebra.

- shared-memory tiles: ``tile_to_shape(GMMA.Layout_K_SW128_Atom(T), (BM, BK))`` for A and
  ``(BN, BK)`` for B (K-major, 128-byte swizzle);
- TMA boxes: :func:`cute_py.backends.cuda.tma.make_tma_atom` on those tiles, derived once with
  symbolic (basis-like) global strides and bound to the real tensor at launch;
- wgmma descriptors: the canonical K-major SW128 form ``Sw<3,4,3> o ((8,m),(T,2))``: the
  stride-byte-offset (SBO) is the byte distance between 8-row core-matrix groups, read off the
  non-swizzle part of the smem layout; the start address of the operand for m-slab ``j`` and
  k-step ``kk`` is the smem layout evaluated at ``(64*j, 16*kk)`` (bytes; the hardware applies
  the swizzle to the address, as CuTe's descriptor iterator assumes);
- accumulator fragment: the wgmma C layout ``CLayout_64xN`` per 64-row slab, slabs of one
  warpgroup stacked along M, warpgroups stacked along M (an ``AccFragment``, the object the
  epilogue emitter consumes).
"""

from __future__ import annotations

from dataclasses import dataclass

import cute_py as cute
from cute_py.composed import get_nonswizzle_portion, get_swizzle_portion
from cute_py.smem_atoms import GMMA

from ..epilogue.fragment import AccFragment, wgmma_fragment
from ..tma import TmaAtom, make_tma_atom

__all__ = ["Sm90Maps", "derive_maps", "smem_tile", "fragment_from_clayout"]

# symbolic strides for deriving boxes: distinct, far apart, so no coincidental coalescing
_SYM_ROW = 1 << 24
_SYM_BATCH = 1 << 36


def smem_tile(dtype: str, rows: int, cols: int):
    """The K-major SW128 smem tile ``rows x cols`` (cols = K extent)."""
    return cute.tile_to_shape(GMMA.Layout_K_SW128_Atom(dtype), (rows, cols))


def fragment_from_clayout(tile_n: int, num_warpgroups: int, m_per_wg: int) -> list:
    """``(t, v) -> (m, n)`` for every consumer thread and accumulator value, evaluated from the
    algebra's ``CLayout_64xN`` (``cute_py``): the table the hand-written fragment must equal."""
    cl = cute.CLayout_64xN(tile_n)
    slabs = m_per_wg // 64
    nv = cute.size(cl, 1)
    out = []
    for t in range(128 * num_warpgroups):
        wg, r = divmod(t, 128)
        row = []
        for j in range(slabs):
            for v in range(nv):
                idx = cl(r, v)
                m, n = idx % 64, idx // 64
                row.append((wg * m_per_wg + 64 * j + m, n))
        out.append(row)
    return out


@dataclass(frozen=True)
class Sm90Maps:
    dtype: str
    tile_m: int
    tile_n: int
    tile_k: int
    consumer_wgs: int
    smem_a: object
    smem_b: object
    atom_a: TmaAtom
    atom_b: TmaAtom
    sbo: int
    lbo: int
    layout_type: int
    frag: AccFragment

    @property
    def slabs(self) -> int:
        return self.tile_m // self.consumer_wgs // 64

    def _byte_offset(self, L, m, k) -> int:
        return cute.crd2idx((m, k), get_nonswizzle_portion(L)) * 2

    def desc_a_offset(self, j: int, kk: int) -> int:
        """Byte offset, inside one warpgroup's A rows, of m-slab ``j`` at k-step ``kk``."""
        return self._byte_offset(self.smem_a, 64 * j, 16 * kk)

    def wg_a_offset(self, w: int) -> int:
        """Byte offset of consumer warpgroup ``w``'s first A row (0 when there is no such
        warpgroup)."""
        if w >= self.consumer_wgs:
            return 0
        return self._byte_offset(self.smem_a, w * (self.tile_m // self.consumer_wgs), 0)

    def desc_b_offset(self, kk: int) -> int:
        return self._byte_offset(self.smem_b, 0, 16 * kk)

    def tma_load(self, which, dst, desc, bar, kc, rc, lc, mask=None) -> str:
        """The TMA load of one stage (``mask``: multicast to the CTAs of the cluster mask):
        coordinates ordered by the box's global modes."""
        atom = self.atom_a if which == "A" else self.atom_b
        by_mode = {0: rc, 1: kc, 2: lc}
        cs = ", ".join(by_mode[m] for m in atom.g_modes)
        if mask is not None:
            return f"tma_load_{atom.rank}d_multicast({dst}, {desc}, {bar}, (u16){mask}, {cs});"
        return f"tma_load_{atom.rank}d({dst}, {desc}, {bar}, {cs});"

    @property
    def b_box_rows(self) -> int:
        """Rows of B one TMA box covers (the whole tile, or a 1/cluster slice multicast)."""
        return self.atom_b.box[list(self.atom_b.g_modes).index(0)]

    def b_slice_offset(self, rank: int) -> int:
        """Byte offset in the B tile of the slice CTA ``rank`` of the cluster loads."""
        if rank * self.b_box_rows >= self.tile_n:
            return 0
        return self._byte_offset(self.smem_b, rank * self.b_box_rows, 0)

    def tma_atom(self, which, rows, K, L, ld, batch_stride) -> TmaAtom:
        atom = self.atom_a if which == "A" else self.atom_b
        if L == 1:
            batch_stride = rows * ld
        return atom.bind((rows, K, L), (ld, 1, batch_stride), op=f"Sm90Gemm({which})")


def derive_maps(cfg) -> Sm90Maps:
    dt = "f16" if cfg.dtype in ("f16", "float16") else "bf16"
    sa = smem_tile(dt, cfg.tile_m, cfg.tile_k)
    sb = smem_tile(dt, cfg.tile_n, cfg.tile_k)
    ta = make_tma_atom(dt, (1 << 20, 1 << 20, 1 << 10), (_SYM_ROW, 1, _SYM_BATCH), sa)
    # with a cluster of `cluster_m` CTAs along M, each CTA loads 1/cluster_m of the B tile and
    # multicasts it to every CTA of the cluster: the box is that slice of the smem tile
    sb_slice = smem_tile(dt, cfg.tile_n // getattr(cfg, "cluster_m", 1), cfg.tile_k)
    tb = make_tma_atom(dt, (1 << 20, 1 << 20, 1 << 10), (_SYM_ROW, 1, _SYM_BATCH), sb_slice)
    sw = get_swizzle_portion(sa)
    inner = get_nonswizzle_portion(sa)
    # canonical K-major SW128: ((8,m),(T,2)) -> SBO = stride between 8-row groups (bytes)
    sbo = cute.crd2idx((8, 0), inner) * 2
    layout_type = {3: 1, 2: 2, 1: 3, 0: 0}[sw.B]
    rows = cfg.tile_m // cfg.consumer_wgs
    frag = wgmma_fragment(cfg.consumer_wgs, cfg.tile_n, rows)
    return Sm90Maps(dt, cfg.tile_m, cfg.tile_n, cfg.tile_k, cfg.consumer_wgs, sa, sb, ta, tb,
                    sbo, 16, layout_type, frag)
