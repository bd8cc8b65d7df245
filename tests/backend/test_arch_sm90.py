"""SM90 components: descriptor fields and offsets read off the GMMA smem layouts, TMA boxes
tiling a stage, pipeline statements carrying the description's counts."""

import numpy as np
import pytest

import cute_py as cute
from cute_py.pipeline import OrderedSequenceBarrier, PipelineTmaAsync
from cute_py.smem_atoms import GMMA

from backends.cuda import ir
from backends.cuda.arch.sm90.pipeline import OrderedEmitter, PipelineEmitter, smem_address
from backends.cuda.arch.sm90.tma import TmaLoad
from backends.cuda.arch.sm90.wgmma import GmmaOperand, WgmmaAtom
from backends.cuda.builder import KernelBuilder
from backends.cuda.kernels import gemm_sm90 as G
from backends.cuda.kernels.gemm_sm90_maps import derive_maps

ATOMS = {("K", 3): GMMA.Layout_K_SW128_Atom, ("K", 2): GMMA.Layout_K_SW64_Atom,
         ("K", 1): GMMA.Layout_K_SW32_Atom, ("K", 0): GMMA.Layout_K_INTER_Atom,
         ("MN", 3): GMMA.Layout_MN_SW128_Atom, ("MN", 2): GMMA.Layout_MN_SW64_Atom,
         ("MN", 1): GMMA.Layout_MN_SW32_Atom, ("MN", 0): GMMA.Layout_MN_INTER_Atom}


def _operand(major, B, rows=128, k=64):
    atom = ATOMS[(major, B)]("f16")
    lay = cute.tile_to_shape(atom, (rows, k), (1, 0)) \
        if major == "MN" else cute.tile_to_shape(atom, (rows, k))
    return GmmaOperand(lay, major, 2)


@pytest.mark.parametrize("major,B", sorted(ATOMS))
def test_descriptor_fields_are_the_canonical_strides(major, B):
    """Every element of one wgmma operand (64 rows x 16 k, a k-step) sits where the canonical
    GMMA form with the operand's LBO / SBO puts it (offsets before the swizzle, bytes)."""
    op = _operand(major, B)
    lbo, sbo = op.lbo_sbo()
    assert op.layout_type == {3: 1, 2: 2, 1: 3, 0: 0}[B]
    m, k = np.meshgrid(np.arange(64), np.arange(16), indexing="ij")
    got = np.vectorize(lambda a, b: op.offset(int(a), int(b)))(m, k)
    T = 8                                    # 16 bytes of f16
    if major == "K":
        row = (16 << B) if B else 16         # bytes of one core-matrix row
        want = (m % 8) * row + (m // 8) * sbo + (k % T) * 2 + (k // T) * (
            T * 2 if B else lbo)
    elif B:
        W = (16 << B) // 2                   # swizzle width in elements
        want = (m % W) * 2 + (m // W) * lbo + (k % 8) * (W * 2) + (k // 8) * sbo
    else:
        want = (m % T) * 2 + (m // T) * sbo + (k % 8) * 16 + (k // 8) * lbo
    assert np.array_equal(got, want), (major, B, lbo, sbo)


def test_maps_descriptors_come_from_the_component():
    for cfg in (G.Sm90GemmConfig(), G.Sm90GemmConfig(a_major="MN", b_major="MN")):
        maps = derive_maps(cfg)
        a, b = maps.operand("A"), maps.operand("B")
        assert (maps.lbo, maps.sbo) == a.lbo_sbo() and (maps.lbo_b, maps.sbo_b) == b.lbo_sbo()
        assert maps.desc_a_offset(1, 2) == a.offset(64, 32)


@pytest.mark.parametrize("cfg", [G.Sm90GemmConfig(), G.Sm90GemmConfig(a_major="MN", b_major="MN"),
                                 G.Sm90GemmConfig(cluster_m=2),
                                 G.Sm90GemmConfig(128, 128, 64, 5, 2, "bf16", cluster_m=2,
                                                  b_major="MN"),
                                 G.Sm90GemmConfig(128, 200, 64, 4, 2, smem_swizzle=(2, 1)),
                                 G.Sm90GemmConfig(128, 64, 64, 4, 1, smem_swizzle=(0, 0)),
                                 G.Sm90GemmConfig(128, 128, 64, 4, 2, a_major="MN",
                                                  b_major="MN", smem_swizzle=(1, 2))])
def test_tma_boxes_tile_the_stage_once(cfg):
    maps = derive_maps(cfg)
    for atom, op, rows in ((maps.atom_a, maps.operand("A"), cfg.tile_m),
                           (maps.atom_b, maps.operand("B"), maps.b_slice_rows)):
        ld = TmaLoad(atom, op, rows)
        cover = np.zeros(rows * cfg.tile_k * 2, dtype=int)
        for r0, _, off in ld.boxes(cfg.tile_k):
            cover[off:off + atom.smem_bytes] += 1
        assert (cover == 1).all()
        origins = sorted((r, k) for r, k, _ in ld.boxes(cfg.tile_k))
        assert origins == sorted((r, k) for r in range(0, rows, ld.box_rows)
                                 for k in range(0, cfg.tile_k, ld.box_k))


def test_tma_emits_library_calls_with_ir_coordinates():
    maps = derive_maps(G.Sm90GemmConfig(a_major="MN"))
    kb = KernelBuilder("k", threads=384, origin="t")
    idx, m = ir.var("idx", 0, 3), ir.var("m_blk", 0, 1000)
    TmaLoad(maps.atom_a, maps.operand("A"), 128).emit(
        kb, smem_address("sA") + idx * 16384, "&tmA", "fb_", m * 128, ir.var("kb", 0, 99) * 64,
        ir.var("l_", 0, 9))
    assert kb.text().split("\n")[:2] == [
        "  tma_load_3d(sA + idx * 16384, &tmA, fb_, m_blk * 128, kb * 64, l_);",
        "  tma_load_3d(sA + idx * 16384 + 8192, &tmA, fb_, m_blk * 128 + 64, kb * 64, l_);"]


def test_pipeline_statements_carry_the_description():
    d = PipelineTmaAsync(stages=3, consumer_arrivals=8, transaction_bytes=49152, cluster_size=2)
    pl = PipelineEmitter(d, smem_address("bar_full"), smem_address("bar_empty"))
    kb = KernelBuilder("k", threads=384, origin="t")
    pl.init(kb)
    pl.producer_acquire(kb, "idx", "phase")
    pl.consumer_release(kb, "prev_", "lane")
    OrderedEmitter(OrderedSequenceBarrier(2), base=3).wait(kb, ir.var("cw", 0, 1))
    t = kb.text()
    assert f"mbarrier_init(bar_full + s_ * 8, {d.full_arrive_count}u);" in t
    assert f"mbarrier_init(bar_empty + s_ * 8, {d.empty_arrive_count}u);" in t
    assert "mbarrier_arrive_expect_tx(bar_full + idx * 8, 49152u);" in t
    assert "mbarrier_arrive_cluster(bar_empty + prev_ * 8, c_);" in t
    assert "named_barrier_sync(3u + (u32)((cw + 1) & 1), 256u);" in t


def test_wgmma_atom_k_block():
    maps = derive_maps(G.Sm90GemmConfig())
    kb = KernelBuilder("k", threads=384, origin="t")
    WgmmaAtom(256, "f16").emit_k_block(kb, "acc", "da_", "db_", maps.operand("A"),
                                       maps.operand("B"), 1, 4, "scale_d")
    lines = kb.text().strip().split("\n")
    assert len(lines) == 4
    assert lines[1].strip() == ("wgmma_m64n256k16_f32_f16_ss<0, 0>(acc[0], gmma_desc_add(da_, "
                                "32u), gmma_desc_add(db_, 32u), 1);")


@pytest.mark.parametrize("tile_n,wgs,mpw", [(256, 2, 64), (128, 2, 128), (16, 1, 128),
                                            (64, 1, 64)])
def test_accumulator_origin_lowered_from_the_c_layout(tile_n, wgs, mpw):
    """The IR origin of every thread's first accumulator, evaluated with NumPy, equals the C
    layout's (thread, value 0) and the epilogue fragment's per-thread offsets."""
    from backends.cuda.arch.sm90.wgmma import accumulator_origin
    from backends.cuda.epilogue.fragment import wgmma_fragment
    tid = np.arange(128 * wgs, dtype=np.int64)
    m, n = accumulator_origin(tile_n, wgs, mpw, ir.var("tid", 0, 128 * wgs - 1))
    got_m, got_n = ir.evaluate(m, {"tid": tid}), ir.evaluate(n, {"tid": tid})
    cl = cute.CLayout_64xN(tile_n)
    idx = np.array([cl(int(t) % 128, 0) for t in tid])
    assert np.array_equal(got_m, (tid // 128) * mpw + idx % 64)
    assert np.array_equal(got_n, idx // 64)
    fr = wgmma_fragment(wgs, tile_n, mpw)
    assert np.array_equal(got_m, fr.m_thr) and np.array_equal(got_n, fr.n_thr)


@pytest.mark.parametrize("major,B", sorted(ATOMS))
def test_each_box_is_the_tile_region_it_lands_in(major, B):
    """The smem layout of one TMA box (what make_tma_atom derived the box from), shifted by the
    box's smem offset, equals the stage tile's layout on the box's rows and k's (with the
    swizzle: the box lands where the tile expects each element)."""
    from backends.cuda.kernels.gemm_sm90_maps import _box_tile, smem_tile
    rows = 128
    tile = smem_tile("f16", rows, 64, major, B)
    box = _box_tile("f16", rows, 64, major, B)
    br, bk = cute.size(box, 0), cute.size(box, 1)
    op = GmmaOperand(tile, major, 2)
    for r0 in range(0, rows, br):
        for k0 in range(0, 64, bk):
            off = op.offset(r0, k0) // 2
            for r in range(br):
                for k in range(bk):
                    assert tile((r0 + r, k0 + k)) == off + box((r, k)), (r0, k0, r, k)
