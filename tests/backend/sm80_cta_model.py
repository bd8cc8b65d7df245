"""A NumPy model of one SM80 GEMM CTA, driven only by the lowered index maps.

``simulate_cta(cfg, A, B)`` places the A ``(BM, BK)`` and B ``(BN, BK)`` tiles into a flat smem
array through the gmem->smem copy (each thread's coordinates from the TiledCopy partition
lowered to IR, evaluated with NumPy; destination = the smem layout's lowered offset), reads the
fragments back through the generator's strength-reduced ``ldmatrix`` / ``lds32`` plan (the
base address lowered from ``make_tiled_copy_A/B`` of the TiledMMA, then ``(base ^ x) + a``),
emulating ``ldmatrix[.trans]``, and multiplies per the MMA atom's TV layouts (the accumulator
coordinates lowered from ``layout_C``).  The result equals ``A @ B.T`` exactly when every map
agrees with the algebra.
"""

import numpy as np

from cute_py.backends.cuda import ir
from cute_py.backends.cuda.arch.sm80 import copy as sm80_copy
from cute_py.backends.cuda.arch.sm80 import ldmatrix as sm80_ld
from cute_py.backends.cuda.arch.sm80 import mma as sm80_mma
from cute_py.backends.cuda.arch.sm80 import smem as sm80_smem
from cute_py.backends.cuda.kernels.gemm_sm80 import _fragment_plan


def fill_smem(cfg, op, tile):
    """smem array of one stage of operand ``op`` holding ``tile`` (R, BK), written through the
    tiled copy's lowered coordinates and the lowered smem layout; every slot written once."""
    R, BK = cfg.rows(op), cfg.tile[2]
    L, tc = cfg.smem_layout(op), cfg.gmem_copy(op)
    r, k = sm80_copy.coords(tc, R, BK)
    off = ir.evaluate(sm80_smem.offset(L, ir.var("r", 0, R - 1), ir.var("k", 0, BK - 1)),
                      {"r": r, "k": k})
    off = np.broadcast_to(off, r.shape)
    size = int(off.max()) + 1
    smem = np.full(size, np.nan)
    written = np.zeros(size, dtype=int)
    np.add.at(written, off.reshape(-1), 1)
    assert written.max() == 1, "two copies write one smem element"
    smem[off.reshape(-1)] = tile[r.reshape(-1), k.reshape(-1)]
    return smem


def _ldmatrix(smem, addrs, eb, trans, nmat):
    """Registers of each lane after ``ldmatrix.x{nmat}``: list over lanes of [regs][halves]."""
    out = []
    for lane in range(32):
        g, t = lane // 4, lane % 4
        regs = []
        for j in range(nmat):
            rows = [addrs[8 * j + i] for i in range(8)]
            if eb == 4:
                regs.append((smem[rows[g] + t],))
            elif not trans:
                regs.append((smem[rows[g] + 2 * t], smem[rows[g] + 2 * t + 1]))
            else:
                regs.append((smem[rows[2 * t] + g], smem[rows[2 * t + 1] + g]))
        out.append(regs)
    return out


def read_fragments(cfg, op, smem):
    """frag[t][kb][load] -> list of per-value elements, in the atom's value order for
    ``op``'s TV layout (per MMA atom: A 4 regs, B 2 regs)."""
    eb = cfg.elem_bytes
    R, BK = cfg.rows(op), cfg.tile[2]
    tc = cfg.smem_read_copy(op)
    scalar = sm80_ld.is_scalar(cfg.major(op), eb)
    plan = _fragment_plan(cfg, op, scalar)
    assert plan is not None
    T = cfg.threads
    tid = ir.var("tid", 0, T - 1)
    r0, k0 = sm80_ld.row_coord(tc, R, BK, tid, 0, 0)
    rr, kk = ir.var("r", 0, R - 1), ir.var("k", 0, BK - 1)
    env = {"tid": np.arange(T)}
    base = ir.evaluate(sm80_smem.offset(cfg.smem_layout(op), rr, kk),
                       {"r": ir.evaluate(r0, env), "k": ir.evaluate(k0, env)})
    base = np.broadcast_to(base, (T,))
    out = {}
    for item, (x, a) in plan.items():
        addr = (base ^ x) + a
        if scalar:
            kb, i, j = item
            for t in range(T):
                out.setdefault((t, kb, i), {})[j] = [smem[addr[t]]]
            continue
        kb, i = item
        for w in range(T // 32):
            regs = _ldmatrix(smem, addr[32 * w:32 * w + 32], eb, cfg.major(op) != "K", 4)
            for lane in range(32):
                for j in range(4):
                    if op == "A":
                        out.setdefault((32 * w + lane, kb, i), {})[j] = list(regs[lane][j])
                    else:  # registers (b0, b1) of n-tile 2i, then of n-tile 2i + 1
                        out.setdefault((32 * w + lane, kb, 2 * i + j // 2), {})[j % 2] = \
                            list(regs[lane][j])
    return out


def simulate_cta(cfg, A, B):
    """``A (BM, BK) @ B (BN, BK).T`` computed through the kernel's index maps (see module)."""
    BM, BN, BK = cfg.tile
    MI, NI, KB = cfg.mma_iters
    WM, WN = cfg.warp_tile
    sA, sB = fill_smem(cfg, "A", A), fill_smem(cfg, "B", B)
    fa, fb = read_fragments(cfg, "A", sA), read_fragments(cfg, "B", sB)
    atom = sm80_mma.mma_atom(cfg.dtype)
    per = 2 if cfg.elem_bytes == 2 else 1
    mk = cfg.mma_k
    LA = [[atom.layout_A((tt, v)) for v in range(4 * per)] for tt in range(32)]
    LB = [[atom.layout_B((tt, v)) for v in range(2 * per)] for tt in range(32)]
    LC = [[tuple(int(ir.evaluate(x, {})) for x in sm80_mma.accumulator_coord(cfg.dtype, tt, v))
           for v in range(4)] for tt in range(32)]
    D = np.zeros((BM, BN))
    for w in range(cfg.threads // 32):
        wm, wn = w % cfg.warps[0], w // cfg.warps[0]
        for kb in range(KB):
            am, bm = [], []
            for mi in range(MI):  # the atom's dense A (16 x mk) from the lanes' fragments
                a = np.full((16, mk), np.nan)
                for tt in range(32):
                    for v, idx in enumerate(LA[tt]):
                        a[idx % 16, idx // 16] = fa[(32 * w + tt, kb, mi)][v // per][v % per]
                am.append(a)
            for ni in range(NI):
                b = np.full((8, mk), np.nan)
                for tt in range(32):
                    for v, idx in enumerate(LB[tt]):
                        b[idx % 8, idx // 8] = fb[(32 * w + tt, kb, ni)][v // per][v % per]
                bm.append(b)
            for mi in range(MI):
                for ni in range(NI):
                    c = am[mi] @ bm[ni].T
                    for tt in range(32):
                        for v in range(4):
                            m, n = LC[tt][v]
                            D[wm * WM + 16 * mi + m, wn * WN + 8 * ni + n] += c[m, n]
    return D
