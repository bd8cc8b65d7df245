"""The "ksplit" schedule (two consumer warpgroups sharing each tile's k-blocks): its
configuration rule and refusals, the exchange buffer's layout law, the FP8 choice rule, the
generated source's protocol, and compilation for sm_90a with zero spills.  The pipeline
protocol is modelled in ``tests/test_pipeline_model.py`` (``KSplitModel``); the CTA model
(``sm90_cta_model``) computes the shipped ksplit configuration's product through the
exchange."""

import dataclasses

import pytest

import cute_py as cute
from cute_py.errors import LaunchError
from backends.cuda.kernels.gemm_sm90 import Sm90GemmConfig, generate_source
from backends.cuda.kernels.gemm_sm90_body import exchange_layout
from backends.cuda import scaled_mm_api as S


def _fp8(**kw):
    base = dict(tile_m=64, tile_n=32, consumer_wgs=2, tile_k=128, dtype="e4m3",
                out_dtype="bf16", scaling="tensor", promote=True, schedule="ksplit")
    base.update(kw)
    return Sm90GemmConfig(**base)


@pytest.mark.parametrize("kw, arg", [
    (dict(consumer_wgs=1), "consumer_wgs"),
    (dict(stages=5), "stages"),
    (dict(stages=2), "stages"),
    (dict(split_k="fixup"), "schedule"),
    (dict(cluster_m=2), "schedule"),
])
def test_refusals_name_the_argument(kw, arg):
    with pytest.raises(LaunchError) as e:
        _fp8(**{"stages": 8, **kw}).check()
    assert e.value.arg == arg


def test_refuses_the_fused_epilogue():
    from backends.cuda.kernels.gemm_sm90 import make_epilogue_config
    epi = make_epilogue_config(None, tile_m=64, tile_n=64, consumer_wgs=1)
    with pytest.raises(LaunchError) as e:
        Sm90GemmConfig(64, 64, 64, 8, 2, "f16", schedule="ksplit", epi=epi).check()
    assert e.value.arg == "epi"


def test_fit_stages_keeps_an_even_count_of_at_least_four():
    c = _fp8(tile_n=192, stages=2).fit_stages()         # 5 stages would fit: 4
    assert c.stages % 2 == 0 and c.stages >= 4 and c.smem_bytes() <= 227 * 1024
    c.check()
    for s in (4, 6, 8):
        _fp8(stages=s).check()


@pytest.mark.parametrize("tile_m, tile_n", [(64, 16), (64, 32), (64, 64), (64, 256),
                                            (128, 32), (128, 64)])
def test_exchange_layout_is_a_bijection(tile_m, tile_n):
    """Law: ``exchange_layout`` maps (thread, slab, value) one-to-one onto the buffer's
    ``exchange_bytes / 4`` elements, the 128 threads of a register consecutive."""
    c = Sm90GemmConfig(tile_m, tile_n, 64, 8, 2, "f16", schedule="ksplit")
    lay = exchange_layout(c)
    image = sorted(lay(i) for i in range(cute.size(lay)))
    assert image == list(range(c.exchange_bytes // 4))
    assert c.exchange_bytes == tile_m * tile_n * 4
    assert [lay(t, 0, 1) for t in range(4)] == [128, 129, 130, 131]


def test_smem_counts_the_exchange():
    c = _fp8(stages=8)
    plain = dataclasses.replace(c, schedule="cooperative", consumer_wgs=1)
    assert c.smem_bytes() - plain.smem_bytes() == 64 * 32 * 4
    assert "_ks" in c.name and "_ks" not in plain.name


def test_source_protocol():
    """Each warpgroup waits only on its own stages, counts its k-blocks, and warpgroup 0 adds
    warpgroup 1's sums between the two named barriers before the epilogue."""
    src = generate_source(_fp8(stages=8, a_rows=16))
    body = src[src.index("consumer warpgroups"):]
    assert "if ((idx & 1) == cw)" in body
    assert body.index("named_barrier_arrive(1u, 256u)") < body.index("named_barrier_sync(1u")
    assert "tot_[j_2][i_2] += xch_[" in body
    assert body.index("named_barrier_sync(1u") < body.index("if (cw == 0)")
    assert "const int tid = threadIdx.x - 128 * wg;" in body


_RULE = [
    # (M, N, K, mode, fast, tree) -> ksplit?
    ((16, 4096, 4096, "tensor", False, False), True),
    ((64, 4096, 4096, "row", False, False), True),
    ((1, 2048, 2048, "row", False, False), True),
    ((16, 6144, 4096, "tensor", False, False), True),
    ((16, 4096, 4096, "tensor", True, False), False),        # one accumulator: no wait
    ((16, 4096, 14336, "tensor", False, False), False),      # the weight streams from DRAM
    ((40, 4096, 1024, "tensor", False, False), False),       # 8 k-blocks
    ((100, 4096, 4096, "tensor", False, False), False),      # 128-row tiles
    ((16, 4096, 4096, "tensor", False, True), False),        # amax: the TMA-store epilogue
    ((16, 4096, 4096, "block", False, False), False),
]


@pytest.mark.parametrize("case, want", _RULE)
def test_fp8_choice_rule(case, want):
    M, N, K, mode, fast, tree = case
    c = S.choose_fp8_config(M, N, K, "e4m3", "e4m3", "bf16", mode, fast_accum=fast,
                            tma_store=True, amax=tree)
    assert (c.schedule == "ksplit") == want, c.name
    assert (c.schedule == "ksplit") == (not fast and mode != "block" and M <= S.SMALL_M
                                        and not tree and not c.splits
                                        and S.ksplit_pays(N, K))
    c.check()
    if want:
        assert c.epi is None and c.consumer_wgs == 2 and c.tile_m == 64


@pytest.mark.parametrize("cfg", [
    _fp8(stages=8, a_rows=16),
    _fp8(stages=8, scaling="row", tile_n=64, out_dtype="f32"),
    _fp8(stages=8, promote=False, tile_n=128, out_dtype="f16"),
    Sm90GemmConfig(64, 64, 64, 8, 2, "f16", schedule="ksplit"),
    Sm90GemmConfig(64, 96, 64, 8, 2, "bf16", schedule="ksplit", b_major="MN",
                   smem_swizzle=(3, 2)),
    Sm90GemmConfig(128, 64, 64, 6, 2, "f16", schedule="ksplit"),
    Sm90GemmConfig(64, 16, 64, 8, 2, "f16", schedule="ksplit", transpose_d=True, vec2=False),
], ids=lambda c: c.name)
def test_compiles_sm90a_zero_spills(cfg):
    from backends.cuda.compiler import compile_module, has_compiler
    if not has_compiler():
        pytest.skip("no CUDA compiler")
    cfg.check()
    m = compile_module(generate_source(cfg), arch="sm_90a")
    (r,) = m.resources.values()
    assert r.spill_stores == 0 and r.spill_loads == 0, r
