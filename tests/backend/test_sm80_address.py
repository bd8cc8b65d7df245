"""Law of ``arch/sm80/address.py``: every lowered address map evaluates to its layout."""

import numpy as np
import pytest

import cute_py as cute
from cute_py.backends.cuda import ir
from cute_py.backends.cuda.arch.sm80 import address as A


@pytest.mark.parametrize("op", ["A", "B"])
@pytest.mark.parametrize("major", ["K", "MN"])
def test_gmem_offset_is_the_layout(op, major):
    ld = 1000
    R, K = 96, 80
    lay = cute.make_layout((R, K), (ld, 1) if major == "K" else (1, ld))
    r, k = ir.var("r", 0, R - 1), ir.var("k", 0, K - 1)
    node = A.gmem_offset(op, major, r, k)
    rr, kk = np.meshgrid(np.arange(R), np.arange(K), indexing="ij")
    got = ir.evaluate(node, {"r": rr, "k": kk, "lda": ld, "ldb": ld})
    want = np.array([[lay((a, b)) for b in range(K)] for a in range(R)])
    assert np.array_equal(got, want)
    assert str(A.gmem_layout(op, major)).startswith("(M,K)" if op == "A" else "(N,K)")


def test_stage_iteration_and_output_offsets():
    s = ir.var("s", 0, 3)
    node = A.stage_address("sA", 4, 4096, s)
    for v in range(4):
        assert ir.evaluate(node, {"sA": 1 << 20, "s": v}) == (1 << 20) + \
            cute.make_layout(4, 4096)(v)
    for i in range(4):
        assert ir.evaluate(A.iteration_offset("B", 4, i), {"bc_step": 77}) == 77 * i
    m, n = ir.var("m", 0, 99), ir.var("n", 0, 99)
    lay = cute.make_layout((100, 100), (123, 1))
    for mv, nv in ((0, 0), (5, 7), (99, 98)):
        assert ir.evaluate(A.output_offset("D", m, n), {"m": mv, "n": nv, "ldd": 123}) == \
            lay((mv, nv))


def test_batch_offset_and_stage_end():
    l = ir.var("l", 0, 7)
    for v in range(8):
        assert ir.evaluate(A.batch_offset("C", l), {"l": v, "batch_c": 999}) == \
            cute.make_layout(8, 999)(v)
    # one past the last stage: where the next buffer starts
    assert ir.evaluate(A.stage_address("sA", 3, 4096, 3), {"sA": 0}) == 3 * 4096


def test_accumulator_tile_terms_sum_to_the_layout():
    lay = A.accumulator_tile_layout(2, 4, 64, 16)
    w, i = ir.var("w", 0, 1), ir.var("i", 0, 3)
    terms = A.layout_terms(lay, (w, i))
    for wv in range(2):
        for iv in range(4):
            assert sum(ir.evaluate(t, {"w": wv, "i": iv}) for t in terms) == lay((wv, iv))
