"""Laws of the block scales carried by the Hopper pipeline (``arch/sm90/block_scales.py``):
slots disjoint inside the carve-out; the producer lanes write every scale of the tile once;
a consumer thread reads the scales of its own accumulator rows and column chunks, as the wgmma
C layout places them (a NumPy model of the whole path, edges zero-filled)."""

import re

import numpy as np
import pytest

import cute_py as cute
from backends.cuda import ir
from backends.cuda.arch.sm90.block_scales import BLOCK, LANES, BlockScaleStages
from backends.cuda.arch.sm90.wgmma import accumulator_origin
from backends.cuda.kernels import gemm_sm90 as G
from backends.cuda.kernels import gemm_sm90_fp8 as F
from backends.cuda.kernels.gemm_sm90_maps import derive_maps
from backends.cuda.lower import crd2idx

TILES = [(128, 128), (128, 192), (128, 160), (128, 64), (64, 256), (256, 128), (128, 96)]


def _ev(node, env):
    return np.broadcast_to(np.asarray(ir.evaluate(node, env)), np.shape(env["lane_"]))


@pytest.mark.parametrize("tm, tn", TILES)
def test_slots_are_disjoint_inside_the_carve_out(tm, tn):
    bs = BlockScaleStages(5, tm, tn)
    offs = [ir.evaluate(bs.address(s, w, i), {"sS": 0}) for s in range(bs.stages)
            for w, n in (("A", tm), ("B", bs.b_entries)) for i in range(n)]
    assert len(set(offs)) == len(offs) and all(o % 4 == 0 and 0 <= o < bs.bytes for o in offs)
    assert bs.slot_bytes % 16 == 0 and bs.chunk == np.gcd(tn, BLOCK)
    # each chunk of columns lies in one 128-column block, wherever the tile starts
    for n_blk in range(7):
        for j in range(bs.b_entries):
            c0 = n_blk * tn + j * bs.chunk
            assert c0 // BLOCK == (c0 + bs.chunk - 1) // BLOCK


@pytest.mark.parametrize("tm, tn", TILES)
def test_producer_lanes_write_every_scale_once(tm, tn):
    bs = BlockScaleStages(3, tm, tn)
    lanes = np.arange(LANES)
    env = {"lane_": lanes, "sS": 0, "m_blk": 2, "n_blk": 3}
    seen = {}
    for which, dst, coord in bs.producer_copies(1):
        d, c = _ev(dst, env), _ev(coord, env)
        for lane in lanes:
            if which == "B" and lane >= bs.b_entries:
                continue
            assert int(d[lane]) not in seen
            seen[int(d[lane])] = (which, int(c[lane]))
    a = sorted(c for w, c in seen.values() if w == "A")
    assert a == list(range(2 * tm, 3 * tm))
    b = sorted(c for w, c in seen.values() if w == "B")
    assert b == [3 * tn + j * bs.chunk for j in range(bs.b_entries)]


@pytest.mark.parametrize("tm, tn, wgs", [(128, 128, 2), (128, 192, 2), (128, 160, 2),
                                         (64, 128, 1), (128, 64, 2)])
def test_consumers_read_their_rows_scales(tm, tn, wgs):
    """The model: scale_a (M, KB) and scale_b (NB, KB) with odd strides; the producer's copies
    (lowered source offsets, zero past M / N) fill the slot; every consumer thread's reads
    (``emit_promotion_loads``' addresses) give scale_a[row, kb] * scale_b[col // 128, kb] for
    each of its accumulator values, rows and columns from the wgmma C layout."""
    cfg = G.Sm90GemmConfig(tile_m=tm, tile_n=tn, tile_k=128, consumer_wgs=wgs, dtype="e4m3",
                           out_dtype="bf16", scaling="block", cluster_m=1).fit_stages()
    bs = cfg.block_scales()
    M, N, KB, m_blk, n_blk, kb, idx = 2 * tm - 5, 3 * tn - 7, 4, 1, 2, 3, 1
    NB = -(-N // BLOCK)
    rng = np.random.default_rng(0)
    sa = rng.random((M, KB)) + 1.0
    sb = rng.random((NB, KB)) + 1.0
    SA, SB = F.scale_layouts("block")
    lds = {"ld_sa_m": 7, "ld_sa_k": 7 * M + 3, "ld_sb_n": 5, "ld_sb_k": 5 * NB + 1}
    flat_a = np.zeros(7 * M + 3 * KB + 7 * M * KB + 10)
    flat_b = np.zeros(5 * NB + (5 * NB + 1) * KB + 10)
    for m in range(M):
        for k in range(KB):
            flat_a[m * lds["ld_sa_m"] + k * lds["ld_sa_k"]] = sa[m, k]
    for n in range(NB):
        for k in range(KB):
            flat_b[n * lds["ld_sb_n"] + k * lds["ld_sb_k"]] = sb[n, k]
    # the producer: each lane's copies, zero past M / N
    smem = {}
    lanes = np.arange(LANES)
    env = {"lane_": lanes, "sS": 0, "m_blk": m_blk, "n_blk": n_blk, **lds}
    big = 1 << 30
    for which, dst, coord in bs.producer_copies(idx):
        L, flat, ext, nm = (SA, flat_a, M, "r") if which == "A" else (SB, flat_b, N, "n")
        off = crd2idx((ir.var(nm, 0, big), kb * 128), cute.shape(L), cute.stride(L))
        d, c = _ev(dst, env), _ev(coord, env)
        for lane in lanes:
            if which == "B" and lane >= bs.b_entries:
                continue
            v = flat[int(ir.evaluate(off, {**lds, nm: int(c[lane])}))] if c[lane] < ext else 0.0
            smem[int(d[lane])] = v
    # the consumers
    maps = derive_maps(cfg)
    rows, ri = F._rows(maps)
    nbs, ni = F._nblocks(cfg, maps)
    fr = maps.frag
    tid = np.arange(128 * wgs)
    m0, n0 = accumulator_origin(tn, wgs, tm // wgs, ir.var("tid", 0, 128 * wgs - 1))
    m0v = np.broadcast_to(ir.evaluate(m0, {"tid": tid}), tid.shape)
    n0v = np.broadcast_to(ir.evaluate(n0, {"tid": tid}), tid.shape)
    for t in tid:
        got_a = [smem[int(ir.evaluate(bs.address(idx, "A", int(m0v[t]) + m), {"sS": 0}))]
                 for m in rows]
        got_b = [smem[int(ir.evaluate(bs.address(idx, "B", j), {"sS": 0}))] for j in nbs]
        for v in range(fr.num_values):
            r = m_blk * tm + int(m0v[t]) + fr.m_val[v]
            c = n_blk * tn + int(n0v[t]) + fr.n_val[v]
            want = (sa[r, kb] if r < M else 0.0) * (sb[c // BLOCK, kb] if c < N else 0.0)
            got = got_a[ri[v]] * got_b[ni[v]]
            if c < N:       # columns past N: stored nowhere
                assert got == want, (t, v, r, c)


@pytest.mark.parametrize("tm, tn, arg", [(48, 128, "tile_m"), (128, 100, "tile_n"),
                                         (128, 264, "tile_n")])
def test_bad_tiles_name_the_field(tm, tn, arg):
    from cute_py.errors import LaunchError
    with pytest.raises(LaunchError) as e:
        BlockScaleStages(4, tm, tn)
    assert e.value.arg == arg


def test_scale_warps_are_the_free_spare_warps():
    from backends.cuda.arch.sm90.block_scales import scale_warps
    from cute_py.errors import LaunchError
    assert scale_warps() == (1, 2, 3)
    assert scale_warps((1,)) == (2, 3) and scale_warps((1, 2)) == (3,)
    # no more warps than stages (a warp's turns are len(warps) k-blocks apart)
    assert scale_warps((), 2) == (1, 2) and scale_warps((1,), 1) == (2,)
    assert scale_warps((), 3) == (1, 2, 3) == scale_warps((), 6)
    with pytest.raises(LaunchError) as e:
        scale_warps((1, 2, 3))
    assert e.value.arg == "taken"


_OWN = re.compile(r"if \(warp_id\(\) == (\d)(?: \+ (idx % (\d)|own_))?\) \{\n *float sv0_")


def _owners(src, stages, blocks):
    """The scale warp of each k-block ``g`` of a CTA's sequence, by evaluating the emitted
    condition: ``warp_id() == w0 [+ idx % n | + own_]`` with idx = g % stages and own_ the
    generated counter (``++own_ == n`` resets it)."""
    m = _OWN.search(src)
    assert m, "no scale-warp condition"
    w0 = int(m.group(1))
    if m.group(2) is None:
        return [w0] * blocks, 1
    if m.group(2) == "own_":
        n = int(re.search(r"if \(\+\+own_ == (\d)\) \{", src).group(1))
        assert "int own_ = 0;" in src
        return [w0 + g % n for g in range(blocks)], n
    n = int(m.group(3))
    assert stages % n == 0 and "own_" not in src
    return [w0 + (g % stages) % n for g in range(blocks)], n


@pytest.mark.parametrize("stages, tn", [(s, 128) for s in range(2, 7)] +
                         [(s, 192) for s in range(2, 6)])
def test_scale_warps_take_the_ctas_k_blocks_in_turn(stages, tn):
    """The emitted ownership is ``pipeline.scale_owner(g, n, ..., "running")`` over the CTA's
    whole k-block sequence (whatever the tile length), with n <= stages: the condition under
    which :class:`cute_py.pipeline.BlockScaleModel` proves the scale warps' waits exact."""
    from cute_py.pipeline import scale_owner
    cfg = G.Sm90GemmConfig(tile_n=tn, tile_k=128, dtype="e4m3", out_dtype="bf16",
                           scaling="block", stages=stages)
    src = G.generate_source(cfg)
    owners, n = _owners(src, stages, 60)
    assert n == min(3, stages)
    w0 = owners[0]
    assert owners == [w0 + scale_owner(g, n, 7, "running") for g in range(60)]


def test_scale_warps_step_aside_for_the_epilogue_load_producer():
    """A fused epilogue that loads C through TMA takes producer warp 1: the block scales go
    to warps 2 and 3 (in turn); the kernel compiles without spills."""
    from cute_py.epilogue import evt
    from backends.cuda.compiler import compile_module, has_compiler
    tree = evt.add(evt.AccFetch(), evt.SrcFetch("bfloat16"))
    cfg = G.Sm90GemmConfig(tile_n=128, tile_k=128, dtype="e4m3", out_dtype="bf16",
                           scaling="block",
                           epi=G.make_epilogue_config(tree, tile_n=128, element_d="bfloat16")
                           ).fit_stages()
    src = G.generate_source(cfg)
    assert "if (warp_id() == 0 || warp_id() == 2 || warp_id() == 3) {" in src
    assert _owners(src, cfg.stages, 8)[0] == [2, 3] * 4
    assert "if (warp_id() == 1 && (threadIdx.x & 31) == 0) {" in src
    if not has_compiler():
        pytest.skip("no CUDA compiler")
    res = compile_module(src, arch="sm_90a").resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res


_AHEAD = re.compile(r"pf_ = kb \+ (\d) < k_blocks;")


def _prefetch_rule(src):
    """The emitted look-ahead ``pf_ = kb + d < k_blocks`` with the loads of ``pv*`` at
    ``(kb + d)`` and the take-over ``sv = pv`` under ``if (pf_)``: returns d (None when the
    kernel does not prefetch)."""
    m = _AHEAD.search(src)
    if m is None:
        assert "pf_" not in src and "pv0_" not in src
        return None
    d = int(m.group(1))
    assert f"(long long)(kb + {d}) * ld_sa_k" in src and "sv0_ = pv0_;" in src
    assert "bool pf_ = false;" in src and src.count("pf_ = false;") == 2  # decl + per tile
    return d


def _simulate(owners, d, tiles, blocks):
    """Run the emitted rule over a CTA's sequence: on its turn a warp takes ``pv`` if ``pf_``
    (else loads its own k-block) and, when ``kb + d < blocks``, loads ``(tile, kb + d)`` into
    ``pv`` -- the values it stores on each turn, as (tile, kb)."""
    state = {}                                   # warp -> (pf_, pv's k-block)
    stored = []
    g = 0
    for t in range(tiles):
        for w in set(owners):
            state[w] = (False, None)             # pf_ = false at the tile's start
        for kb in range(blocks):
            w = owners[g]
            pf, pv = state.get(w, (False, None))
            stored.append(pv if pf else (t, kb))
            state[w] = (kb + d < blocks, (t, kb + d))
            g += 1
    return stored


@pytest.mark.parametrize("tn, with_c", [(128, False), (192, False), (128, True)])
def test_two_scale_warps_load_one_turn_ahead(tn, with_c):
    """With a store warp (or the epilogue's load producer) two scale warps are left; each
    loads its next turn's scales ahead, k-block ``kb + 2`` of the same tile: the next k-block
    the running rotation gives it.  Simulating the emitted rule over CTAs of any tile length
    and owner sequence, every turn stores its own k-block's scales (never a stale or a
    neighbour's prefetch).  Three scale warps do not prefetch."""
    from cute_py.epilogue import evt
    tree = evt.add(evt.AccFetch(), evt.SrcFetch("bfloat16")) if with_c else None
    epi = G.make_epilogue_config(tree, tile_n=tn, element_d="bfloat16")
    cfg = G.Sm90GemmConfig(tile_n=tn, tile_k=128, dtype="e4m3", out_dtype="bf16",
                           scaling="block", cluster_m=2, epi=epi)
    cfg = cfg.fit_stages() if with_c else G.with_store_warp(cfg.fit_stages())
    src = G.generate_source(cfg)
    d = _prefetch_rule(src)
    assert d == len(cfg.scale_warps()) == 2 and cfg.scale_prefetch()
    assert "setmaxnreg_dec<56>();" in src
    for blocks in (1, 2, 3, 5, 32):
        owners, n = _owners(src, cfg.stages, 7 * blocks)
        assert n == d
        stored = _simulate(owners, d, 7, blocks)
        assert stored == [(t, kb) for t in range(7) for kb in range(blocks)]
    plain = G.make_epilogue_config(None, tile_n=tn, element_d="bfloat16")
    three = G.Sm90GemmConfig(tile_n=tn, tile_k=128, dtype="e4m3", out_dtype="bf16",
                             scaling="block", epi=plain).fit_stages()
    assert len(three.scale_warps()) == 3 and _prefetch_rule(G.generate_source(three)) is None


def test_the_simulation_catches_a_wrong_look_ahead():
    """The check above can fail: a look-ahead other than the warps' count stores other
    k-blocks' scales."""
    owners = [1 + g % 2 for g in range(3 * 8)]
    assert _simulate(owners, 2, 3, 8) == [(t, kb) for t in range(3) for kb in range(8)]
    assert _simulate(owners, 1, 3, 8) != [(t, kb) for t in range(3) for kb in range(8)]
    assert _simulate(owners, 3, 3, 8) != [(t, kb) for t in range(3) for kb in range(8)]
