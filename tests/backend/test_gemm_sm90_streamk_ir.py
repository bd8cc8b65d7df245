"""The stream-K schedule and piece -> (tile, k-block range) map are IR: evaluated with NumPy
(``ir.evaluate``) for every CTA of many (tiles, KB, grid, sk_tiles) cases, they give the pieces
of the host model ``streamk_pieces`` (the oracle) and the head CTAs of ``cta_of``; and they
render through the KernelBuilder."""

import itertools

import numpy as np
import pytest

from backends.cuda import ir
from backends.cuda.builder import KernelBuilder
from backends.cuda.kernels import gemm_sm90 as G
from backends.cuda.kernels import gemm_sm90_streamk as STK

I32 = (1 << 31) - 1
CFG = G.Sm90GemmConfig(128, 128, 64, 6, 2, "f16", stream_k=True)


def _vars():
    return dict(K=ir.var("K", 1, I32 - 63), num_m=ir.var("num_m", 1, I32 // 128 + 1),
                num_n=ir.var("num_n", 1, I32 // 128 + 1), L=ir.var("L", 1, I32),
                sk_tiles=ir.var("sk_tiles", 0, I32), bid=ir.var("bid", 0, I32 - 1),
                grid=ir.var("grid", 1, I32))


def _evaluate(tiles, kb, grid, sk):
    """``(layout, {cta: [(tile, kb_lo, kb_hi), ...]}, {cta: [(c0, c1) per tail]})`` from the
    IR, all CTAs at once (NumPy arrays over the CTA index and the piece counter)."""
    lay = STK.streamk_layout(CFG, tiles * 128, 128, kb * 64, 1, grid, sk)
    v = _vars()
    steps, sv = STK.schedule_program(64, **v)
    bid = np.arange(grid, dtype=np.int64)
    env = STK.run(steps, {"K": kb * 64, "num_m": tiles, "num_n": 1, "L": 1,
                          "sk_tiles": lay.sk_tiles, "bid": bid, "grid": grid})
    num = np.broadcast_to(env["num_tiles"], bid.shape)
    width = int(num.max()) if grid else 0
    tile = ir.var("tile", 0, I32)
    is_dp, dp, sk_steps = STK.piece_program(sv, tile)
    b2, t2 = np.meshgrid(bid, np.arange(max(width, 1), dtype=np.int64), indexing="ij")
    env2 = {k: (np.broadcast_to(x, bid.shape)[:, None] if isinstance(x, np.ndarray) else x)
            for k, x in env.items()}
    env2.update(bid=b2, tile=t2)
    cond = np.broadcast_to(ir.evaluate(is_dp, env2), t2.shape)
    got_dp = STK.run(dp, env2)
    got_sk = STK.run(sk_steps, env2)
    out = {}
    for name in ("ktile_", "kb_lo_", "kb_hi_"):
        out[name] = np.where(cond, np.broadcast_to(got_dp[name], t2.shape),
                             np.broadcast_to(got_sk[name], t2.shape))
    pieces = {c: [(int(out["ktile_"][c, i]), int(out["kb_lo_"][c, i]), int(out["kb_hi_"][c, i]))
                  for i in range(int(num[c]))] for c in range(grid)}
    # the head CTAs of each tail piece, through the same IR the epilogue declares
    t0 = ir.var("t0_", 0, I32 * 64)
    div = ir.var("sk_div_", 1, I32)
    c_of = STK.cta_of_node(sv, t0, div)
    heads = {}
    for c, ps in pieces.items():
        for t, lo, hi in ps:
            if lo > 0 and hi == kb:
                e = {k: (int(np.broadcast_to(x, bid.shape)[c]) if isinstance(x, np.ndarray)
                         else x) for k, x in env.items()}
                e["t0_"] = (t - lay.dp_tiles) * kb
                e["sk_div_"] = max(e["sk_base_"], 1)
                c0 = ir.evaluate(c_of, e)
                e["t0_"] += lo - 1
                heads[(c, t)] = (c0, ir.evaluate(c_of, e))
    return lay, pieces, heads


CASES = [
    # (tiles, KB, grid, sk_tiles)
    (512, 64, 132, None), (512, 64, 132, 512), (30, 64, 132, None), (7, 3, 16, None),
    (300, 5, 132, None), (133, 64, 132, None), (1, 64, 132, 1), (264, 10, 132, 132),
    (264, 10, 132, 0),          # no stream-K tiles: every CTA data-parallel only
    (264, 10, 132, 264),        # all tiles stream-K
    (3, 2, 16, 3),              # total iterations (6) < grid: some CTAs idle, base = 0
    (5, 1, 4, None),            # KB = 1: every piece a whole tile
    (1, 1, 1, 1), (17, 7, 1, None), (40, 13, 8, 24),
] + [(t, k, g, None) for t, k, g in itertools.product((1, 9, 64), (1, 4, 11), (2, 5, 33))]


@pytest.mark.parametrize("tiles,kb,grid,sk", CASES)
def test_ir_pieces_are_the_model(tiles, kb, grid, sk):
    lay, pieces, heads = _evaluate(tiles, kb, grid, sk)
    for c in range(grid):
        assert pieces[c] == STK.streamk_pieces(lay, c), c
    for (c, t), (c0, c1) in heads.items():
        t0 = (t - lay.dp_tiles) * kb
        lo = next(p[1] for p in pieces[c] if p[0] == t)
        assert (c0, c1) == (STK.cta_of(lay, t0), STK.cta_of(lay, t0 + lo - 1))
        # the heads really are held by c0 .. c1 (the pieces of t ending before lo)
        held = sorted(cc for cc in range(grid) for p in pieces[cc] if p[0] == t and p[2] <= lo)
        assert held == list(range(c0, c1 + 1))


def test_emitters_render_through_the_builder():
    kb = KernelBuilder("k", threads=384, origin="t")
    v = _vars()
    sv = STK.emit_schedule(kb, CFG, **v)
    with kb.for_("tile", 0, sv.num_tiles) as tile:
        STK.emit_coords(kb, sv, tile)
        with kb.if_(ir.lt(0, ir.var("kb_lo_", 0, I32))):
            STK.emit_tail_ctas(kb, sv, ir.var("ktile_", 0, I32), ir.var("kb_lo_", 1, I32))
    text = kb.text()
    assert "const long long sk_base_ = sk_total_ / grid;" in text
    assert "const int sk_rem_ = sk_total_ - sk_base_ * grid;" in text   # no second division
    assert "for (int tile = 0; tile < num_tiles; ++tile)" in text
    assert "ktile_ = bid + (long long)tile * grid;" in text
    assert "const long long sk_div_ = (0 < sk_base_ ? sk_base_ : 1);" in text
    # the text wrappers are the emitters rendered on the kernel's names
    assert STK.schedule_code(128, 128, 64).startswith("const int sk_bid_ = (int)blockIdx.x;")
    assert "const int n_dp_ = (sk_bid_ < dp_tiles_ ?" in STK.schedule_code(128, 128, 64)
    assert "if (tile < n_dp_) {" in STK.coord_code()
    assert "cute_sk_cta_of" not in G.generate_source(CFG)     # no C helper: the map is IR


@pytest.mark.parametrize("cfg", [CFG, G.Sm90GemmConfig(128, 64, 64, 8, 2, "f16", stream_k=True),
                                 G.Sm90GemmConfig(128, 32, 64, 8, 2, "f16", stream_k=True)])
def test_workspace_addresses_are_the_workspace_layout(cfg):
    """The kernel's workspace offsets (thread base in CTA c's slot + the value's offset) are
    ``workspace_layout`` lowered: evaluated for every (thread, value, cta) they are the layout's
    values, one slot of V*T floats per CTA, value v of all threads contiguous; its cosize is the
    host's ``ws_elements``."""
    import cute_py as cute
    grid = 5
    W = STK.workspace_layout(cfg, grid)
    T, V = cute.size(W, 0), cute.size(W, 1)
    t = np.arange(T, dtype=np.int64)
    for c in range(grid):
        base = ir.evaluate(STK.workspace_offset(cfg, ir.var("tid", 0, T - 1), 0, ir.var("c", 0, I32)),
                           {"tid": t, "c": c, "sk_grid_": grid})
        for v in range(V):
            got = base + ir.evaluate(STK.workspace_offset(cfg, 0, v, 0), {"sk_grid_": grid})
            assert np.array_equal(got, [W((int(i), v, c)) for i in t])
            assert np.array_equal(got, c * V * T + v * T + t)
    lay = STK.streamk_layout(cfg, 4096, 4096, 4096, 1, grid)
    assert lay.ws_elements == cute.cosize(W) == grid * V * T
