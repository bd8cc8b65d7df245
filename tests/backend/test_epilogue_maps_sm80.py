"""The SM80 epilogue's index maps (backends/cuda/arch/sm80/epilogue_maps.py), lowered to IR and
evaluated with ``ir.evaluate`` on NumPy arrays, against the algebra objects' own values:

- every staging buffer's ComposedLayout (Swizzle o Layout) at every (row, col) of the buffer;
- the thread's buffer row / column (fragment thread layouts, ``tile_to_buffer``) plus each
  value's offset: inside the buffer, equal to the bank model's coordinates, and one value per
  buffer element over all threads of a subtile;
- the chunk walk (``chunk_coord`` and ``buffer_to_tile``): every 16-byte chunk once, at the
  global coordinates of its buffer row / column;
- the generated consumer code has no C swizzle helper and reaches every address through IR."""

import numpy as np
import pytest

from cute_py.epilogue import evt

pytest.importorskip("cute_py.backends.cuda.epilogue.sm80")
from cute_py.backends.cuda import ir, lower  # noqa: E402
from cute_py.backends.cuda.arch.sm80.epilogue_maps import (  # noqa: E402
    buffer_to_tile, chunk_coord, composed_apply, staging_layout, tile_to_buffer)
from cute_py.backends.cuda.arch.sm90.epilogue_maps import thread_offsets  # noqa: E402
from cute_py.backends.cuda.epilogue.fragment import mma_sm80_fragment  # noqa: E402
from cute_py.backends.cuda.epilogue.sm80 import (  # noqa: E402
    Sm80Epilogue, Sm80EpilogueConfig, SmemSwizzle, _BYTES)

CUSTOM = evt.ScalarReduction(      # tests/backend/test_epilogue_sm80.py's custom tree
    evt.AuxStore(evt.AccFetch() * evt.ColBroadcast("scale", "float32"), "scaled", "float16")
    + evt.AuxLoad("residual", "float16"), "amax", "absmax")

CASES = [  # (tree, warps, warp tile, tile, kw)
    (evt.lin_comb_bias_elt_act("gelu", bias="row"), (2, 4), (64, 64), (128, 256), {}),
    (evt.linear_combination(), (2, 2), (64, 64), (128, 128), {"element_d": "float32"}),
    (CUSTOM, (2, 2), (64, 64), (128, 128), {}),
    (CUSTOM, (2, 2), (32, 32), (64, 64), {"epi_m": 16, "epi_n": 16}),
    (evt.linear_combination(), (2, 2), (32, 32), (64, 64), {"element_d": "bfloat16"}),
]


def _epis():
    for tree, (wm, wn), (tm_w, tn_w), (tm, tn), kw in CASES:
        fr = mma_sm80_fragment(wm, wn, tm_w, tn_w)
        yield Sm80Epilogue(Sm80EpilogueConfig(tree, fr, tm, tn, **kw))


@pytest.mark.parametrize("sw", [SmemSwizzle(3, 4, 3), SmemSwizzle(2, 5, 2),
                                SmemSwizzle(1, 4, 4), SmemSwizzle(0, 4, 3)])
@pytest.mark.parametrize("rows,cols,eb", [(64, 64, 2), (128, 32, 4), (32, 16, 2)])
def test_staging_layout_lowered_equals_composed_layout(sw, rows, cols, eb):
    L = staging_layout(rows, cols, eb, sw.bits, sw.base, sw.shift)
    r = np.arange(rows).reshape(rows, 1)
    c = np.arange(cols).reshape(1, cols)
    node = composed_apply(L, (ir.var("r", 0, rows - 1), ir.var("c", 0, cols - 1)))
    got = np.broadcast_to(ir.evaluate(node, {"r": r, "c": c}), (rows, cols))
    want = np.array([[L((i, j)) for j in range(cols)] for i in range(rows)])
    assert np.array_equal(got, want)
    # the algebra's swizzle of the row-major byte offset (the candidate's bank model too)
    assert np.array_equal(want, np.vectorize(lambda o: sw(int(o)))(r * cols * eb + c * eb))


def test_every_buffer_of_every_epilogue_lowered_equals_its_layout():
    for e in _epis():
        for key, (_, _, _, dt, sw) in e.buf.items():
            if key[0] not in ("load", "store"):
                continue
            L = e.staging(key)
            rows, cols = e.rows_b, e.cols_b
            r, c = np.arange(rows).reshape(rows, 1), np.arange(cols).reshape(1, cols)
            node = composed_apply(L, (ir.var("r", 0, rows - 1), ir.var("c", 0, cols - 1)))
            got = np.broadcast_to(ir.evaluate(node, {"r": r, "c": c}), (rows, cols))
            want = np.array([[L((i, j)) for j in range(cols)] for i in range(rows)])
            assert np.array_equal(got, want), (key, str(sw))
            # a bijection onto the buffer's bytes at element granularity
            assert sorted(want.reshape(-1).tolist()) == list(
                range(0, rows * cols * _BYTES[dt], _BYTES[dt]))


def test_fragment_addresses_match_bank_model_and_cover_the_buffer():
    for e in _epis():
        fr, nc = e.cfg.fragment, e.nc
        t = np.arange(nc)
        tid = ir.var("tid", 0, nc - 1)
        mt, nt = thread_offsets(fr, tid)
        bm = lower.layout_apply(tile_to_buffer(e.pm, e.epi_m, e.bm), mt)
        bn = lower.layout_apply(tile_to_buffer(e.pn, e.epi_n, e.bn), nt)
        for s, (i, j) in enumerate(e.subtiles):
            seen = set()
            for v in e.values[(i, j)]:
                row = ir.add(bm, fr.m_val[v] - i * e.epi_m)
                col = ir.add(bn, fr.n_val[v] - j * e.epi_n)
                rr = np.broadcast_to(ir.evaluate(row, {"tid": t}), (nc,))
                cc = np.broadcast_to(ir.evaluate(col, {"tid": t}), (nc,))
                assert rr.tolist() == [e._brow(x, v, i) for x in range(nc)]
                assert cc.tolist() == [e._bcol(x, v, j) for x in range(nc)]
                assert rr.min() >= 0 and rr.max() < e.rows_b
                assert cc.min() >= 0 and cc.max() < e.cols_b
                seen.update(zip(rr.tolist(), cc.tolist()))
            assert len(seen) == e.rows_b * e.cols_b


def test_chunk_walk_covers_each_chunk_at_its_global_coordinates():
    for e in _epis():
        for key, (_, _, _, dt, _) in e.buf.items():
            if key[0] not in ("load", "store"):
                continue
            rb, cpr, cps, total, iters = e._chunk_geometry(dt)
            vec = 16 // _BYTES[dt]
            cnode = ir.var("c", 0, total - 1)
            br, cc = chunk_coord(cnode, cpr, e.rows_b)
            c = np.arange(total)
            brv, ccv = (np.broadcast_to(ir.evaluate(x, {"c": c}), (total,)) for x in (br, cc))
            assert sorted(zip(brv.tolist(), ccv.tolist())) == [
                (a, b) for a in range(e.rows_b) for b in range(cpr)]
            gm = lower.layout_apply(buffer_to_tile(e.epi_m, e.pm, e.bm), br)
            gn = lower.layout_apply(buffer_to_tile(e.epi_n, e.pn, e.bn, vec), cc)
            gmv, gnv = (np.broadcast_to(ir.evaluate(x, {"c": c}), (total,)) for x in (gm, gn))
            # buffer row a is tile row (a // epi_m) * pm + a % epi_m of the subtile's slice
            assert gmv.tolist() == [(a // e.epi_m) * e.pm + a % e.epi_m for a in brv.tolist()]
            assert gnv.tolist() == [(b // cps) * e.pn + (b % cps) * vec for b in ccv.tolist()]


def test_consumer_code_has_no_c_swizzle_helper():
    for e in _epis():
        src = e.prelude() + e.consumer_code("acc")
        assert "cute_epi_swz80" not in src and "asm" not in src
