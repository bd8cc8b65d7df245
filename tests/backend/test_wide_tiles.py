"""The 256-row cooperative tiles and the wave model that picks them (CPU)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cute_py.backends.cuda.kernels import gemm_sm90 as G
from cute_py.errors import LaunchError

DEFAULTS = [("pingpong", 64, 256), ("cooperative", 128, 256), ("cooperative", 128, 192)]


@settings(max_examples=300, deadline=None)
@given(M=st.integers(1, 20000), N=st.integers(8, 30000), K=st.integers(16, 20000),
       b_major=st.sampled_from(["K", "MN"]), default=st.sampled_from(DEFAULTS),
       sms=st.sampled_from([132, 114, 78]))
def test_wide_tile_n_law(M, N, K, b_major, default, sms):
    """The pick's wave time is below the default's and no candidate's is lower; 160 only for
    a K-major B; 0 keeps the default, which then no candidate beats."""
    pick = G.wide_tile_n(M, N, K, b_major, default, sms)
    rate, k0 = G.DEFAULT_TILE_RATES[default]
    slots = sms * (2 if default[0] == "pingpong" else 1)
    base = G.wave_time(default[1], default[2], M, N, K, rate, k0, slots)
    cands = {tn: G.wave_time(256, tn, M, N, K, r, G.WIDE_K0, sms)
             for tn, r in G.WIDE_TILES if b_major == "K" or tn % 64 == 0}
    if pick == 0:
        assert all(t >= base * (1 - 1e-9) for t in cands.values())
    else:
        assert pick in cands and cands[pick] < base
        assert all(cands[pick] <= t for t in cands.values())
    assert not (pick == 160 and b_major != "K")


@pytest.mark.parametrize("M,N,K,default,want", [
    (8192, 8192, 8192, ("pingpong", 64, 256), 192),
    (8192, 4096, 14336, ("pingpong", 64, 256), 128),
    (8192, 14336, 4096, ("pingpong", 64, 256), 160),
    (3000, 5000, 2000, ("cooperative", 128, 192), 160),
    (4096, 4096, 4096, ("pingpong", 64, 256), 0),        # 3.9 waves of ping-pong tiles
    (2048, 2048, 2048, ("pingpong", 64, 256), 0),
    (4096, 4096, 2000, ("cooperative", 128, 256), 0),
])
def test_wide_tile_n_at_measured_shapes(M, N, K, default, want):
    # the fastest measured tile at these shapes (docs/performance.md, "Hopper GEMM", v18)
    assert G.wide_tile_n(M, N, K, "K", default) == want


@pytest.mark.parametrize("width,b_major", [(128, "K"), (160, "K"), (192, "K"), (128, "MN"),
                                           (160, "MN"), (192, "MN")])
def test_wide_evt_config_fits(width, b_major):
    cfg = G.wide_evt_config("f16", width, "K", b_major)
    assert (cfg.tile_m, cfg.tile_n, cfg.consumer_wgs) == (256, width, 2)
    assert cfg.epi.store_warp and cfg.stages >= 3 and cfg.smem_bytes() <= 227 * 1024


def test_accumulator_limit_names_the_tile():
    G.Sm90GemmConfig(256, 192, 64, 3, 2, "f16").check()                 # 192 accumulators
    with pytest.raises(LaunchError, match="accumulators"):
        G.Sm90GemmConfig(256, 200, 64, 3, 2, "f16").check()             # 200
