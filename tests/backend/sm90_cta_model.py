"""A NumPy model of one Hopper GEMM CTA tile, driven by the maps the generator emits from.

``simulate_cta(cfg, A, B)`` computes the ``(tile_m, tile_n)`` tile ``A @ B.T`` the way the
kernel of ``cfg`` does, with a model of the hardware at each step:

- **TMA** (the producer): every box of ``TmaLoad(atom, operand, rows).boxes(tile_k)`` (for B,
  the boxes of every cluster rank's slice, at ``b_slice_offset``; for A with a cluster along N
  at ``a_slice_offset``) is written row by row, the
  box's inner global mode first, at the stage base plus the box's offset, with the swizzle
  applied to the byte address (:func:`tma_writes`);
- **wgmma** (the consumers): for each consumer warpgroup, m-slab and k-step, the descriptor
  the kernel builds (``make_gmma_desc`` of the stage base plus the warpgroup's offset, the
  operand's LBO / SBO / layout type, then ``gmma_desc_add`` of the k-step's offset) is
  decoded into the PTX canonical layout of its layout type (:func:`wgmma_reads`) and the
  elements at those swizzled addresses are multiplied;
- **accumulators**: register ``v`` of thread ``r`` of a slab holds the slab's element
  ``CLayout_64xN(r, v)`` (the PTX fragment, checked against CuTe C++); the epilogue writes it
  to the maps' fragment position ``(m_thr[t] + m_val[v], n_thr[t] + n_val[v])``.

The result equals ``A @ B.T`` (up to float64 rounding) exactly when every map the generator
uses agrees with the hardware's reading of the algebra.  Stage bases are 1024-byte aligned, as
in the kernel, and k-blocks rotate through the stages.
"""

import numpy as np

import cute_py as cute
from cute_py.backends.cuda.arch.sm90.tma import TmaLoad
from cute_py.backends.cuda.kernels.gemm_sm90_body import exchange_layout
from cute_py.backends.cuda.kernels.gemm_sm90_maps import derive_maps

#: descriptor layout type -> swizzle bits of Sw<B,4,3>
DESC_SWIZZLE_BITS = {1: 3, 2: 2, 3: 1, 0: 0}


def encode_desc(addr, lbo, sbo, layout_type):
    """``make_gmma_desc`` (ptx_sm90.cuh), bit for bit."""
    d = ((addr & 0x3FFFF) >> 4) | (((lbo & 0x3FFFF) >> 4) << 16)
    return d | (((sbo & 0x3FFFF) >> 4) << 32) | ((layout_type & 3) << 62)


def desc_add(d, nbytes):
    """``gmma_desc_add``: the start address field advanced by ``nbytes``."""
    return d + (nbytes >> 4)


def swizzle_bytes(addr, B):
    """``Sw<B,4,3>`` on byte addresses: bits [7, 7+B) xor-ed into bits [4, 4+B)."""
    return addr ^ ((addr >> 3) & (((1 << B) - 1) << 4)) if B else addr


def wgmma_reads(desc, major, rows, k, eb):
    """``addr[mn, kk]``: the byte address wgmma reads element ``(mn, kk)`` of an operand of
    ``rows x k`` at (PTX ISA, "matrix descriptor" canonical layouts, T = 16 bytes of
    elements, W = swizzle width): K-major ``((8,m),(T,2)) : ((W, SBO),(1, T | LBO))``,
    MN-major ``((W,m),(8,k)) : ((1, LBO),(W, SBO))`` (interleaved: ``((T,m),(8,k)) :
    ((1, SBO),(T, LBO))``), the swizzle on the resulting address."""
    start = (desc & 0x3FFF) << 4
    lbo = ((desc >> 16) & 0x3FFF) << 4
    sbo = ((desc >> 32) & 0x3FFF) << 4
    B = DESC_SWIZZLE_BITS[desc >> 62]
    t = 16 // eb
    mn, kk = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    if major == "K":
        row = (16 << B) if B else 16
        off = (mn % 8) * row + (mn // 8) * sbo + (kk % t) * eb + (kk // t) * (16 if B else lbo)
    elif B:
        w = (16 << B) // eb
        off = (mn % w) * eb + (mn // w) * lbo + (kk % 8) * (w * eb) + (kk // 8) * sbo
    else:
        off = (mn % t) * eb + (mn // t) * sbo + (kk % 8) * 16 + (kk // 8) * lbo
    return swizzle_bytes(start + off, B)


def tma_writes(atom, off, eb, base):
    """``addr[r, k]`` of box element ``(r, k)`` (rows, K coordinates): TMA fills the box row
    by row, inner (contiguous global) mode first, at ``base + off``, swizzled on the address."""
    dims = {m: atom.box[i] for i, m in enumerate(atom.g_modes)}
    rows, k = dims[0], dims[1]
    r, kk = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    lin = r * k + kk if atom.g_modes[0] == 1 else kk * rows + r   # inner mode first
    return swizzle_bytes(base + off + lin * eb, atom.swizzle_bits)


SMEM_BASE = 0x8000      # a 1024-aligned stage-0 base, as the kernel aligns its smem


def _load_stage(smem, maps, cfg, which, tile, base):
    """Write one stage of operand ``which`` (``tile``: its rows x tile_k values) into the
    byte-addressed ``smem`` (values stored at byte addresses) through the TMA boxes."""
    eb = maps.elem_bytes
    # (A with a_rows: boxes over the whole tile, so every accumulator row is checked)
    atom, rows = (maps.atom_a, maps.a_slice_rows if cfg.cluster_n > 1 else cfg.tile_m) \
        if which == "A" else (maps.atom_b, maps.b_slice_rows)
    op = maps.operand(which)
    # every CTA of the cluster sharing the tile writes its slice (its coordinate along the
    # other mode): B's cluster_m slices, A's cluster_n
    ranks = range(cfg.cluster_m if which == "B" else cfg.cluster_n)
    for rank in ranks:
        slice0 = rank * rows
        extra = maps.b_slice_offset(rank) if which == "B" else maps.a_slice_offset(rank)
        load = TmaLoad(atom, op, rows)
        for r0, k0, off in load.boxes(cfg.tile_k):
            addr = tma_writes(atom, extra + off, eb, base)
            br, bk = addr.shape
            smem[addr] = tile[slice0 + r0:slice0 + r0 + br, k0:k0 + bk]


def simulate_cta(cfg, A, B):
    """``D`` ``(tile_m, tile_n)`` of one CTA for A ``(tile_m, K)`` and B ``(tile_n, K)``
    (``K`` a multiple of ``tile_k``), computed through the model (see the module docstring)."""
    maps = derive_maps(cfg)
    atom = maps.wgmma_atom
    eb, k = maps.elem_bytes, atom.k
    a_bytes, b_bytes = cfg.tile_m * cfg.tile_k * eb, cfg.tile_n * cfg.tile_k * eb
    S = cfg.stages
    size = SMEM_BASE + S * (a_bytes + b_bytes) + 4096
    wgs = maps.consumer_wgs
    nv = cfg.tile_n // 2
    # "ksplit": warpgroup g of two sums the k-blocks of stages idx % 2 == g (its own partial)
    parts = 2 if cfg.schedule == "ksplit" else 1
    acc = np.zeros((parts, wgs, maps.slabs, 64, cfg.tile_n))
    op_a, op_b = maps.operand("A"), maps.operand("B")
    (lbo_a, sbo_a), (lbo_b, sbo_b) = op_a.lbo_sbo(), op_b.lbo_sbo()
    for kb in range(A.shape[1] // cfg.tile_k):
        smem = np.full(size, np.nan)
        idx = kb % S
        base_a = SMEM_BASE + idx * a_bytes
        base_b = SMEM_BASE + S * a_bytes + idx * b_bytes
        ks = slice(kb * cfg.tile_k, (kb + 1) * cfg.tile_k)
        _load_stage(smem, maps, cfg, "A", A[:, ks], base_a)
        _load_stage(smem, maps, cfg, "B", B[:, ks], base_b)
        db = encode_desc(base_b, lbo_b, sbo_b, op_b.layout_type)
        for w in range(wgs):
            da = encode_desc(base_a + maps.wg_a_offset(w), lbo_a, sbo_a, op_a.layout_type)
            for kk in range(cfg.tile_k // k):
                bv = smem[wgmma_reads(desc_add(db, maps.desc_b_offset(kk)), op_b.major,
                                      cfg.tile_n, k, eb)]
                for j in range(maps.slabs):
                    av = smem[wgmma_reads(desc_add(da, maps.desc_a_offset(j, kk)), op_a.major,
                                          64, k, eb)]
                    acc[idx % parts, w, j] += av @ bv.T
    if parts == 2:
        # warpgroup 1's registers through the exchange buffer into warpgroup 0's
        xch = np.full(cfg.exchange_bytes // 4, np.nan)
        lay = exchange_layout(cfg)
        for r in range(128):
            for j in range(maps.slabs):
                for v in range(nv):
                    x = lay(r, j, v)
                    assert np.isnan(xch[x]), "the exchange layout is not injective"
                    xch[x] = acc[1, 0, j][_reg_index(cfg, r, v)]
        for r in range(128):
            for j in range(maps.slabs):
                for v in range(nv):
                    acc[0, 0, j][_reg_index(cfg, r, v)] += xch[lay(r, j, v)]
    acc = acc[0]
    # registers: value v of thread r of slab j holds the slab's element CLayout_64xN(r, v)
    cl = cute.CLayout_64xN(cfg.tile_n)
    fr = maps.frag
    D = np.full((cfg.tile_m, cfg.tile_n), np.nan)
    written = np.zeros(D.shape, int)
    for t in range(128 * wgs):
        w, r = divmod(t, 128)
        for j in range(maps.slabs):
            for v in range(nv):
                idx = cl(r, v)
                value = acc[w, j, idx % 64, idx // 64]
                fv = j * nv + v
                m, n = fr.m_thr[t] + fr.m_val[fv], fr.n_thr[t] + fr.n_val[fv]
                D[m, n] = value
                written[m, n] += 1
    assert (written == 1).all(), "the fragment does not cover the tile once"
    return D


def _reg_index(cfg, r, v):
    """The (row, column) of a 64-row slab that value ``v`` of thread ``r`` holds."""
    idx = cute.CLayout_64xN(cfg.tile_n)(r, v)
    return idx % 64, idx // 64
