"""Index maps of the Hopper GEMM, derived from the layout algebra.

- shared-memory tiles, per operand major: K-major ``tile_to_shape(GMMA.Layout_K_SW128_Atom(T),
  (rows, BK))``; MN-major (A stored M-contiguous, B N-contiguous, e.g. a row-major ``(K, N)``
  B) ``tile_to_shape(GMMA.Layout_MN_SW128_Atom(T), (rows, BK), order=(1, 0))``: 64-element
  MN chunks of ``BK`` rows of 128 bytes each, the chunks one after another;
- ``BK`` (``tile_k``): any multiple of the wgmma K up to 256 the atoms tile
  (:func:`tile_k_rule`): a K-major atom is one swizzle row wide along K, so it must divide BK
  (and repeats along K when narrower); the other swizzles / MN-major atoms likewise;
- TMA boxes: :func:`cute_py.backends.cuda.tma.make_tma_atom` on those tiles (K-major: one box
  per swizzle row along K -- the whole tile for SW128 at BK 64; MN-major: one box per
  swizzle-width chunk, since a 128-byte-swizzled box is at most 128 bytes wide), derived once on a global tensor of symbolic (sympy, ``cute_py.symbolic``)
  extents ``(rows, K, L)`` and strides ``ld`` / ``ldl`` and bound to the real tensor at launch;
- wgmma descriptors, read off the non-swizzle part of the smem layout: K-major SW128 is the
  canonical ``Sw<3,4,3> o ((8,m),(T,2))`` whose stride-byte-offset (SBO) is the byte distance
  between 8-row core-matrix groups; MN-major SW128 is ``Sw<3,4,3> o ((T,8,m),(8,k))`` whose
  leading-byte-offset (LBO) is the distance between 64-element MN chunks and SBO the distance
  between groups of 8 k-rows (and the wgmma transpose bit is set).  The start address of the
  operand for m-slab ``j`` and k-step ``kk`` is the smem layout evaluated at ``(64*j, 16*kk)``
  (bytes; the hardware applies the swizzle to the address, as CuTe's descriptor iterator
  assumes);
- accumulator fragment: the wgmma C layout ``CLayout_64xN`` per 64-row slab, slabs of one
  warpgroup stacked along M, warpgroups stacked along M (an ``AccFragment``, the object the
  epilogue emitter consumes).
"""

from __future__ import annotations

from dataclasses import dataclass

import cute_py as cute
from cute_py.smem_atoms import GMMA

from ..epilogue.fragment import AccFragment, wgmma_fragment
from ..tma import TmaAtom, make_tma_atom

__all__ = ["Sm90Maps", "derive_maps", "smem_tile", "fragment_from_clayout"]


def _symbolic_operand(major: str):
    """``(shape, stride)`` of a global operand with runtime extents ``(rows, K, L)``, leading
    stride ``ld`` and batch stride ``ldl`` (sympy symbols): the contiguous mode gets 1."""
    rows, K, L, ld, ldl = cute.symbols("rows K L ld ldl")
    return (rows, K, L), ((ld, 1, ldl) if major == "K" else (1, ld, ldl))


#: operand majors: "K" (K contiguous in global memory) or "MN" (M for A / N for B contiguous)
MAJORS = ("K", "MN")


#: swizzle bits B of the GMMA smem atom Sw<B,4,3> -> the atom's name part
SWIZZLES = {3: "SW128", 2: "SW64", 1: "SW32", 0: "INTER"}


def smem_atom(dtype: str, major: str = "K", swizzle: int = 3):
    """The canonical GMMA smem layout atom ``Layout_{major}_{SW128|SW64|SW32|INTER}_Atom``."""
    return getattr(GMMA, f"Layout_{major}_{SWIZZLES[swizzle]}_Atom")(dtype)


def swizzle_width(swizzle: int, elem_bytes: int = 2) -> int:
    """Elements of one swizzle row (the widest TMA box row / MN chunk of the atom)."""
    return (16 << swizzle) // elem_bytes if swizzle else 16 // elem_bytes


#: the widest TMA box dimension (elements), and so the widest MN-major stage along K
TMA_BOX_MAX = 256


def wgmma_k(elem_bytes: int) -> int:
    """Elements of K one wgmma reads (32 bytes of an operand row: k16 / k32 for 8-bit)."""
    return 32 // elem_bytes


def tile_k_rule(tile_k: int, elem_bytes: int, major: str, swizzle: int) -> str | None:
    """``None`` when ``tile_to_shape(GMMA.Layout_{major}_{swizzle}_Atom, (rows, tile_k))`` is a
    canonical GMMA operand tile the mainloop takes, else the rule it breaks:

    - the wgmma K (16 elements, 32 for 8-bit) divides ``tile_k`` (a stage is whole k-steps);
    - ``tile_k <= 256`` (a TMA box dimension: an MN-major box spans the stage's K);
    - K-major: the atom's K extent (one swizzle row: 128 / 64 / 32 bytes for SW128 / SW64 /
      SW32, one 16-byte core matrix interleaved) divides ``tile_k``: a narrower stage is not a
      tiling of the atom (a K-major SW128 tile needs ``tile_k * elem_bytes`` a multiple of 128);
      a wider one repeats the atom along K, each repeat its own TMA box;
    - MN-major: the atom's K extent (8 k-rows) divides ``tile_k`` (implied by the first rule).
    """
    k = wgmma_k(elem_bytes)
    if tile_k < k or tile_k % k:
        return f"must be a multiple of the wgmma K ({k} elements of {elem_bytes}-byte type)"
    if tile_k > TMA_BOX_MAX:
        return f"must be at most {TMA_BOX_MAX} (a TMA box dimension)"
    if major == "K":
        W = swizzle_width(swizzle, elem_bytes)
        if tile_k % W:
            return (f"a K-major {SWIZZLES[swizzle]} smem atom is {W * elem_bytes} bytes ({W} "
                    f"elements) wide along K: tile_k * elem_bytes must be a multiple of "
                    f"{W * elem_bytes} bytes (use a narrower swizzle)")
    elif tile_k % 8:
        return "an MN-major smem atom is 8 k-rows deep: tile_k must be a multiple of 8"
    return None


def widest_swizzle(tile_k: int, elem_bytes: int, major: str) -> int:
    """The widest swizzle whose atom tiles a ``tile_k`` stage (3 = SW128 when it fits)."""
    for B in (3, 2, 1, 0):
        if tile_k_rule(tile_k, elem_bytes, major, B) is None:
            return B
    return 3


def check_tile_k(cfg, op: str) -> None:
    """``LaunchError`` (``tile_k`` / ``smem_swizzle``) when ``cfg.tile_k`` does not fit both
    operands' smem atoms (:func:`tile_k_rule`)."""
    from cute_py.errors import LaunchError
    eb = cfg.elem_bytes
    for which, major, B in (("A", cfg.a_major, cfg.smem_swizzle[0]),
                            ("B", cfg.b_major, cfg.smem_swizzle[1])):
        why = tile_k_rule(cfg.tile_k, eb, major, B)
        if why is not None:
            arg = "tile_k" if tile_k_rule(cfg.tile_k, eb, "MN", 3) else "smem_swizzle"
            raise LaunchError(op, arg, f"{which}: {why}",
                              expected=f"tile_k in multiples of {wgmma_k(eb)} up to "
                              f"{TMA_BOX_MAX}, K-major swizzle rows dividing it",
                              actual=(cfg.tile_k, major, SWIZZLES[B]))


def smem_tile(dtype: str, rows: int, cols: int, major: str = "K", swizzle: int = 3):
    """The smem tile ``rows x cols`` (cols = K extent) of an operand of ``major`` tiled from the
    GMMA atom of ``swizzle`` (MN-major: K-rows of an MN chunk first, then the chunks)."""
    if major == "MN":
        return cute.tile_to_shape(smem_atom(dtype, "MN", swizzle), (rows, cols), (1, 0))
    return cute.tile_to_shape(smem_atom(dtype, "K", swizzle), (rows, cols))


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
    consumer_wgs: int             # warpgroups sharing one tile (1 in the ping-pong schedule)
    smem_a: object
    smem_b: object
    atom_a: TmaAtom
    atom_b: TmaAtom
    sbo: int                      # A's descriptor SBO / LBO (bytes)
    lbo: int
    layout_type: int
    frag: AccFragment
    a_major: str = "K"
    b_major: str = "K"
    sbo_b: int = 1024             # B's descriptor SBO / LBO (bytes)
    lbo_b: int = 16
    b_slice_rows: int = 0         # rows of the B tile one CTA loads (tile_n / cluster_m)
    elem_bytes: int = 2           # bytes of an operand element (1: 8-bit e4m3 / e5m2)
    dtype_b: str = ""             # B's wgmma input format when it differs from A's (FP8)
    a_slice_rows: int = 0         # rows of the A tile one CTA loads (tile_m / cluster_n, or
    #                               a_rows / tile_m without a cluster along N)

    def operand(self, which: str):
        """The :class:`~backends.cuda.arch.sm90.wgmma.GmmaOperand` of ``which`` ("A" / "B")."""
        from ..arch.sm90.wgmma import GmmaOperand
        return GmmaOperand(self.smem_a if which == "A" else self.smem_b,
                           self.a_major if which == "A" else self.b_major, self.elem_bytes)

    @property
    def wgmma_atom(self):
        """The :class:`~backends.cuda.arch.sm90.wgmma.WgmmaAtom` of the mainloop."""
        from ..arch.sm90.wgmma import WgmmaAtom
        return WgmmaAtom(self.tile_n, self.dtype, *self.transpose_bits, b=self.dtype_b)

    def desc_args(self, which: str) -> str:
        """``lbo, sbo, layout_type`` arguments of ``make_gmma_desc`` for operand ``which``."""
        return self.operand(which).desc_args()

    @property
    def transpose_bits(self) -> tuple[int, int]:
        """wgmma's ``imm-trans-a`` / ``imm-trans-b``: 1 for an MN-major operand."""
        return int(self.a_major == "MN"), int(self.b_major == "MN")

    @property
    def slabs(self) -> int:
        return self.tile_m // self.consumer_wgs // 64

    def _byte_offset(self, L, m, k) -> int:
        """Byte offset of ``(m, k)`` before the swizzle (``GmmaOperand.offset``)."""
        return self.operand("A" if L is self.smem_a else "B").offset(m, k)

    def desc_a_offset(self, j: int, kk: int) -> int:
        """Byte offset, inside one warpgroup's A rows, of m-slab ``j`` at k-step ``kk``."""
        return self._byte_offset(self.smem_a, 64 * j, self.wgmma_atom.k * kk)

    def wg_a_offset(self, w: int) -> int:
        """Byte offset of consumer warpgroup ``w``'s first A row (0 when there is no such
        warpgroup)."""
        if w >= self.consumer_wgs:
            return 0
        return self._byte_offset(self.smem_a, w * (self.tile_m // self.consumer_wgs), 0)

    def desc_b_offset(self, kk: int) -> int:
        return self._byte_offset(self.smem_b, 0, self.wgmma_atom.k * kk)

    def box_rows(self, which: str) -> int:
        """Rows (M or N) of the operand one TMA box covers."""
        atom = self.atom_a if which == "A" else self.atom_b
        return atom.box[list(atom.g_modes).index(0)]

    def b_slice_offset(self, rank: int) -> int:
        """Byte offset in the B tile of slice ``rank`` (the slice the CTA of cluster
        coordinate ``rank`` along M loads)."""
        if rank * self.b_slice_rows >= self.tile_n:
            return 0
        return self._byte_offset(self.smem_b, rank * self.b_slice_rows, 0)

    def a_slice_offset(self, rank: int) -> int:
        """Byte offset in the A tile of slice ``rank`` (the slice the CTA of cluster
        coordinate ``rank`` along N loads)."""
        if rank * self.a_slice_rows >= self.tile_m:
            return 0
        return self._byte_offset(self.smem_a, rank * self.a_slice_rows, 0)

    def tma_atom(self, which, rows, K, L, ld, batch_stride) -> TmaAtom:
        """Bind operand ``which`` (``rows x K``, ``L`` batches; ``ld`` = element stride of its
        non-contiguous mode, K for K-major, rows for MN-major)."""
        atom = self.atom_a if which == "A" else self.atom_b
        major = self.a_major if which == "A" else self.b_major
        if L == 1:
            batch_stride = (rows if major == "K" else K) * ld
        strides = (ld, 1, batch_stride) if major == "K" else (1, ld, batch_stride)
        return atom.bind((rows, K, L), strides, op=f"Sm90Gemm({which})")


def _box_tile(dt, rows, cols, major, swizzle=3, elem_bytes=2):
    """The smem region one TMA box fills: a K-major tile of one swizzle row along K (the whole
    tile for SW128 and 64-element K blocks, or 128-element K blocks of 8-bit elements), or one
    MN chunk of an MN-major tile."""
    W = swizzle_width(swizzle, elem_bytes)
    if major == "K":
        return smem_tile(dt, rows, min(cols, W), major, swizzle)
    return smem_tile(dt, min(rows, W), cols, major, swizzle)


#: the 8-bit operand formats (``Sm90GemmConfig.dtype`` / ``dtype_b``): smem atoms and TMA boxes
#: of 1-byte elements (TMA moves them as ``uint8``), wgmma ``k32``
FP8_DTYPES = ("e4m3", "e5m2")


def derive_maps(cfg) -> Sm90Maps:
    if cfg.dtype in FP8_DTYPES:
        # 1-byte elements: the GMMA atoms are defined on bits, so a 128-byte SW128 row holds
        # 128 elements; TMA has no FP8 type and moves the bytes as uint8
        return _derive(cfg, "uint8", 1, cfg.dtype, getattr(cfg, "dtype_b", "") or cfg.dtype)
    dt = "f16" if cfg.dtype in ("f16", "float16") else "bf16"
    return _derive(cfg, dt, 2, dt, "")


def _derive(cfg, dt, eb, mma_a, mma_b) -> Sm90Maps:
    am, bm = cfg.a_major, cfg.b_major
    swa, swb = getattr(cfg, "smem_swizzle", (3, 3))
    sa = smem_tile(dt, cfg.tile_m, cfg.tile_k, am, swa)
    sb = smem_tile(dt, cfg.tile_n, cfg.tile_k, bm, swb)

    # with a cluster of `cluster_n` CTAs along N, each CTA loads 1/cluster_n of the A tile and
    # multicasts it to the CTAs of its cluster row (the same m_blk); B likewise along M
    cn = getattr(cfg, "cluster_n", 1)
    a_slice = cfg.tile_m // cn if cn > 1 else getattr(cfg, "a_rows", 0) or cfg.tile_m
    ta = make_tma_atom(dt, *_symbolic_operand(am), _box_tile(dt, a_slice, cfg.tile_k, am, swa,
                                                             eb))
    slice_rows = cfg.tile_n // cfg.cluster_m
    tb = make_tma_atom(dt, *_symbolic_operand(bm),
                       _box_tile(dt, slice_rows, cfg.tile_k, bm, swb, eb))
    from ..arch.sm90.wgmma import GmmaOperand
    op_a, op_b = GmmaOperand(sa, am, eb), GmmaOperand(sb, bm, eb)
    lbo, sbo = op_a.lbo_sbo()          # descriptor fields read off the smem layouts
    lbo_b, sbo_b = op_b.lbo_sbo()
    layout_type = op_a.layout_type
    rows = cfg.tile_m // cfg.mma_wgs
    frag = wgmma_fragment(cfg.mma_wgs, cfg.tile_n, rows)
    return Sm90Maps(mma_a, cfg.tile_m, cfg.tile_n, cfg.tile_k, cfg.mma_wgs, sa, sb, ta, tb,
                    sbo, lbo, layout_type, frag, am, bm, sbo_b, lbo_b, slice_rows, eb, mma_b,
                    a_slice)
