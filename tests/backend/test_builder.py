"""The kernel builder: deterministic names, scoped CSE, PTX calls checked against the headers."""

import pytest

from backends.cuda import ir, ptx
from backends.cuda.builder import KernelBuilder


def _kernel():
    kb = KernelBuilder("k", threads=128, arch="sm90a", origin="test")
    n = kb.param("int", "n", 1, 1 << 20)
    kb.param("const u16* __restrict__", "src")
    tid = ir.thread_idx(128)
    kb.stmt("const int tid = threadIdx.x")
    with kb.for_("i", 0, 4, unroll=True) as i:
        kb.let(i * 128 + tid, "e")
        with kb.if_(ir.lt(i * 128 + tid, n)):
            kb.call("fence_proxy_async_shared")
        with kb.else_():
            kb.stmt("continue")
    return kb, n


def test_same_description_same_text():
    assert _kernel()[0].source() == _kernel()[0].source()


def test_parameters_are_bounded_ir_variables():
    kb, n = _kernel()
    assert (n.lo, n.hi) == (1, 1 << 20)
    assert "    int n,\n    const u16* __restrict__ src)" in kb.source()


def test_cse_name_dies_with_its_block():
    kb, _ = _kernel()
    src = kb.source()
    assert "const int e = i * 128 + tid;" in src and "if (e < n) {" in src
    assert kb.names == {}          # the loop's names are gone once the loop closed
    tid = ir.thread_idx(128)
    assert kb.expr(ir.var("i", 0, 3) * 128 + tid) == "i * 128 + tid"


def test_loop_counter_names():
    """A loop counter is made unique unless ``hint=False`` keeps the name (a counter other
    code names, declared once per C scope)."""
    kb = KernelBuilder("k", threads=32, origin="test")
    for _ in range(2):
        with kb.for_("j", 0, 2) as j:
            kb.stmt(f"x[{kb.expr(j)}] = 0")
    for _ in range(2):
        with kb.for_("tile", "first", "n", "step", hint=False) as t:
            assert kb.expr(t) == "tile"
    src = kb.text()
    assert "for (int j = 0; j < 2; ++j)" in src and "for (int j_1 = 0; j_1 < 2; ++j_1)" in src
    assert src.count("for (int tile = first; tile < n; tile += step) {") == 2
    assert kb.fresh("tile") == "tile_1"       # the kept name is reserved


def test_else_follows_if_only():
    kb = KernelBuilder("k", threads=32, origin="test")
    kb.stmt("int x = 0")
    with pytest.raises(ValueError):
        with kb.else_():
            pass


def test_calls_are_checked_against_the_ptx_library():
    kb = KernelBuilder("k", threads=32, origin="test")
    kb.call("wgmma_fence")
    with pytest.raises(KeyError, match="no_such_wrapper"):
        kb.call("no_such_wrapper")


def test_guard_and_cluster_attribute():
    kb = KernelBuilder("k", threads=384, min_blocks=1, cluster=(2,), arch="sm90a", origin="t")
    src = kb.source()
    assert "__cluster_dims__(2, 1, 1)" in src
    assert "CUTE_PY_SM90_CLUSTER_DIMS __launch_bounds__(384, 1) k(" in src
    assert "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)" in src


def test_ptx_library_reads_the_headers():
    assert ptx.FUNCTIONS["mbarrier_init"] == "ptx_sm90.cuh"
    assert "cp.async.commit_group" in ptx.instructions()
