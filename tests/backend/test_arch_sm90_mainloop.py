"""The Hopper mainloop k-block (arch/sm90/mainloop.py): the bytes the producer expects per stage
are the bytes its TMA boxes write, and the k-block's statements come in pipeline order."""

import math

import pytest

from backends.cuda.builder import KernelBuilder
from backends.cuda.kernels import gemm_sm90 as G
from backends.cuda.kernels.gemm_sm90_body import Sm90Body
from backends.cuda.kernels.gemm_sm90_maps import derive_maps
from backends.cuda.tma import TMA_DTYPES

CONFIGS = G.SHIPPED_CONFIGS + G.shipped_fp8_configs() + (
    G.Sm90GemmConfig(128, 128, 64, 6, 2, "f16", a_major="MN", b_major="MN"),
    G.Sm90GemmConfig(128, 256, 64, 4, 2, "f16", cluster_m=2, b_major="MN"),
    G.Sm90GemmConfig(128, 32, 64, 8, 2, "bf16", smem_swizzle=(2, 1)))


def _mainloop(cfg):
    return Sm90Body(cfg, derive_maps(cfg)).mainloop


def _box_bytes(load, tile_k):
    _, eb = TMA_DTYPES[load.atom.dtype]
    return len(load.boxes(tile_k)) * math.prod(load.atom.box) * eb


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
def test_expected_bytes_are_the_boxes_bytes(cfg):
    """The full barrier expects exactly the bytes the stage's boxes write: B's whole tile and
    A's first ``load_rows_a`` rows (all of them unless ``a_rows`` loads part of A's tile);
    the stages themselves hold whole tiles."""
    ml = _mainloop(cfg)
    a = _box_bytes(ml.load_a, cfg.tile_k) * cfg.cluster_n     # every CTA's slice lands here
    b = _box_bytes(ml.load_b, cfg.tile_k) * cfg.cluster_m
    assert a == cfg.load_rows_a * cfg.tile_k * cfg.elem_bytes and b == ml.b_bytes
    assert a == ml.a_bytes or (cfg.a_rows and a < ml.a_bytes)
    assert ml.pipeline.desc.transaction_bytes == a + b == cfg.tx_bytes
    # the stages of each operand: (stages):(stage bytes), back to back from sA / sB
    for which, nbytes in (("A", ml.a_bytes), ("B", b)):
        L = ml.stage_layout(which)
        assert [L(i) for i in range(cfg.stages)] == [i * nbytes for i in range(cfg.stages)]


def _calls(kb):
    return [ln.strip().split("(")[0].split("<")[0] for ln in kb.lines if "(" in ln]


@pytest.mark.parametrize("cfg", CONFIGS[:1] + CONFIGS[-3:-2] + CONFIGS[7:8],
                         ids=lambda c: c.name)
def test_k_block_statement_order(cfg):
    from backends.cuda import ir
    ml = _mainloop(cfg)
    kb = KernelBuilder("k", threads=384)
    k = ir.var("kb", 0, 1000)
    ml.emit_producer_k_block(kb, "idx", "phase", k * cfg.tile_k, 0, 0, 0,
                             b_mask="0x3" if cfg.cluster_m > 1 else None)
    calls = _calls(kb)
    n_loads = len(ml.load_a.boxes(cfg.tile_k)) + len(ml.load_b.boxes(cfg.tile_k))
    assert calls[:2] == ["mbarrier_wait_parity", "mbarrier_arrive_expect_tx"]
    assert all(c.startswith("tma_load_") for c in calls[2:2 + n_loads])
    assert "const u32 fb_ = bar_full + idx * 8;" in kb.text()
    assert kb.lines[-4].strip().startswith("if (++idx == ")        # state ++ last
    kb = KernelBuilder("k", threads=384)
    ml.emit_consumer_k_block(kb, "idx", "phase", lambda k: k.call("wgmma_wait_group",
                                                                   template="1"),
                             accumulate="kb > 0")
    calls = _calls(kb)
    steps = cfg.tile_k // ml.atom.k * ml.slabs
    assert calls[0] == "mbarrier_wait_parity"
    i = calls.index("wgmma_fence")
    assert calls[i + 1:i + 1 + steps] == [ml.atom.name] * steps
    assert calls[i + 1 + steps:i + 3 + steps] == ["wgmma_commit_group", "wgmma_wait_group"]
    assert "const int scale_d = kb > 0 ? 1 : 0;" in kb.text()
