"""The tile scheduler component: its emitted IR, evaluated with NumPy, visits every tile once
in the order the plain-Python model states, for many (num_m, num_n, L, group, cluster, split)
cases; and it renders the expected C."""

import itertools

import numpy as np
import pytest

from backends.cuda import ir
from backends.cuda.arch.common.scheduler import TileScheduler, model, run
from backends.cuda.builder import KernelBuilder

I32 = (1 << 31) - 1


def _vars():
    M, N, L = ir.var("M", 1, I32), ir.var("N", 1, I32), ir.var("L", 1, 65535)
    num_m = ir.var("num_m", 1, (I32 + 127) // 128)
    num_n = ir.var("num_n", 1, (I32 + 127) // 128)
    return M, N, L, num_m, num_n


def _check(sched, nm, nn, L, S=1, KB=0):
    _, _, Lv, num_m, num_n = _vars()
    unit = ir.var("tile", 0, I32)
    cm, cn, c = sched.cluster_m, sched.cluster_n, sched.cluster_size
    kw = {}
    if sched.splits:
        kw = dict(splits_k=ir.var("splits_k", 1, 4096), k_blocks=ir.var("k_blocks", 0, I32 // 64))
    steps = sched.program(unit, num_m, num_n, rank=ir.var("rank", 0, c - 1) if c > 1 else 0,
                          **kw)
    total = ir.evaluate(sched.num_units(num_m, num_n, Lv, kw.get("splits_k")),
                        {"num_m": nm, "num_n": nn, "L": L, "splits_k": S})
    want = model(sched, nm, nn, L, S, KB)
    assert total == len(want)
    u = np.arange(total, dtype=np.int64)
    seen = []
    for rank in range(c):
        env = run(steps, {"tile": u, "num_m": nm, "num_n": nn, "rank": rank, "splits_k": S,
                          "k_blocks": KB})
        m, n, l_ = (np.broadcast_to(env[k], u.shape) for k in ("m_blk", "n_blk", "l_"))
        w = np.array(want, dtype=np.int64).reshape(-1, 6)
        assert np.array_equal(m, w[:, 0] * cm + rank % cm)
        assert np.array_equal(n, w[:, 1] * cn + rank // cm) and np.array_equal(l_, w[:, 2])
        if sched.splits:
            for k, col in (("split_", 3), ("kb_lo_", 4), ("kb_hi_", 5)):
                assert np.array_equal(np.broadcast_to(env[k], u.shape), w[:, col]), k
            seen += list(zip(m.tolist(), n.tolist(), l_.tolist(), env["split_"].tolist()))
        else:
            seen += list(zip(m.tolist(), n.tolist(), l_.tolist()))
    # every tile (of the cluster-rounded grid) exactly once
    mc, nc = -(-nm // cm) * cm, -(-nn // cn) * cn
    expect = {(a, b, l) for a in range(mc) for b in range(nc) for l in range(L)}
    if sched.splits:
        expect = {t + (s,) for t in expect for s in range(S)}
    assert len(seen) == len(set(seen)) == len(expect) and set(seen) == expect


CASES = [(nm, nn, L, g, c, r) for nm, nn, L in ((1, 1, 1), (7, 5, 2), (16, 3, 1), (13, 17, 3),
                                                 (2, 40, 1))
         for g, c, r in itertools.product((1, 3, 8), ((1, 1), (2, 1), (1, 2), (2, 2)),
                                          ("m", "n"))]


@pytest.mark.parametrize("nm,nn,L,g,c,r", CASES)
def test_every_tile_once_in_model_order(nm, nn, L, g, c, r):
    _check(TileScheduler(group=g, raster=r, cluster_m=c[0], cluster_n=c[1]), nm, nn, L)


@pytest.mark.parametrize("cm,cn", [(2, 1), (1, 2), (2, 2)])
def test_cluster_rank_is_cute_cluster_layout(cm, cn):
    """The CTA of rank r takes the tile at CuTe's ``(cluster_m, cluster_n) : (1, cluster_m)``
    coordinate of r inside its unit."""
    import cute_py as cute
    lay = cute.make_layout((cm, cn), (1, cm))
    _, _, _, num_m, num_n = _vars()
    steps = TileScheduler(group=1, cluster_m=cm, cluster_n=cn).program(
        ir.var("tile", 0, I32), num_m, num_n, rank=ir.var("rank", 0, cm * cn - 1))
    for r in range(cm * cn):
        env = run(steps, {"tile": 0, "num_m": 4, "num_n": 4, "rank": r})
        assert lay(env["m_blk"], env["n_blk"]) == r


@pytest.mark.parametrize("S,KB", [(1, 5), (3, 7), (4, 2), (5, 0), (2, 64)])
def test_split_k_units_partition_the_k_blocks(S, KB):
    sched = TileScheduler(group=8, splits=True)
    _check(sched, 9, 4, 2, S, KB)
    for s in range(S):        # ranges of one tile: contiguous, covering [0, KB)
        assert KB * s // S <= KB * (s + 1) // S


def test_persistent_loop_bounds():
    s = TileScheduler(cluster_m=2)
    blk, grid = ir.var("bid", 0, 1023), ir.var("grid", 1, 1024)
    assert ir.evaluate(s.first_unit(blk), {"bid": 7}) == 3
    assert ir.evaluate(s.unit_step(grid), {"grid": 132}) == 66
    assert ir.evaluate(TileScheduler().grid_unit(blk), {"bid": 5}) == 5
    s22 = TileScheduler(cluster_m=2, cluster_n=2)
    assert ir.evaluate(s22.first_unit(blk), {"bid": 7}) == 1
    assert ir.evaluate(s22.unit_step(grid), {"grid": 132}) == 33


def test_emits_readable_c():
    kb = KernelBuilder("k", threads=128, origin="test")
    _, _, _, num_m, num_n = _vars()
    TileScheduler(group=8).emit(kb, ir.var("tile", 0, I32), num_m, num_n)
    text = kb.text()
    assert "const int per_l_ = (long long)num_m * num_n;" in text   # narrowed: < 2**31 units
    assert "const int r_ = tile - (long long)l_ * per_l_;" in text
    assert "l_ = tile / per_l_;" in text
    assert "n_blk = rr_ / gs_;" in text
    assert "(long long)" not in text.split("gw_ =")[1].split("rr_ =")[0]


def test_bad_raster():
    with pytest.raises(ValueError):
        TileScheduler(raster="k")
    with pytest.raises(ValueError):
        TileScheduler(cluster_n=0)
