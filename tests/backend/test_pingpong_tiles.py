"""The ping-pong tiles for operand rows on 128 bytes and the wave model that picks them (CPU)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cute_py.backends.cuda.kernels import gemm_sm90 as G


@settings(max_examples=400, deadline=None)
@given(M=st.integers(1, 40000), N=st.integers(8, 40000), L=st.integers(1, 16),
       sms=st.sampled_from([132, 114, 78]))
def test_pingpong_tile_law(M, N, L, sms):
    """64x256 unless another tile's time is at most (1 - margin) of its; never a candidate
    with a lower time than the pick."""
    pick = G.pingpong_tile(M, N, L, sms)
    times = {(tm, tn): G.pingpong_time(tm, tn, r, M, N, L, sms) for tm, tn, r in G.PINGPONG_TILES}
    base = times[(64, 256)]
    assert pick in times
    if pick != (64, 256):
        assert times[pick] <= base * (1 - G.PINGPONG_MARGIN)
        assert all(times[pick] <= t for t in times.values())
    else:
        assert all(t > base * (1 - G.PINGPONG_MARGIN) for k, t in times.items() if k != pick)


def test_pingpong_time_counts_tiles_per_sm():
    # 2752 tiles of 64x256 at 4096x11008: 21 per SM (20.85), not 2 * ceil(2752 / 264) = 22
    assert G.pingpong_time(64, 256, 1.0, 4096, 11008) == 21 * 64 * 256
    assert G.pingpong_time(128, 192, 2.0, 4096, 4096) == 6 * 128 * 192 / 2.0


@pytest.mark.parametrize("M,N,L,want", [
    (8192, 8192, 1, (128, 192)),      # 21 tiles per SM against 32 of 64x256: -7% predicted
    (6144, 6144, 1, (128, 192)),
    (8192, 6144, 1, (128, 192)),
    (8192, 14336, 1, (128, 192)),
    (4096, 4096, 1, (64, 256)),       # 5.33 tiles of 128x192 per SM take 6 turns
    (16384, 4096, 1, (64, 256)),      # 192 wastes 3% of N = 4096
    (4096, 11008, 1, (64, 256)),
    (2048, 2048, 1, (64, 256)),
])
def test_pingpong_tile_at_measured_shapes(M, N, L, want):
    # the tiles measured fastest in bursts (docs/performance.md, "Hopper GEMM", v19)
    assert G.pingpong_tile(M, N, L) == want


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("a_major,b_major", [("K", "K"), ("K", "MN"), ("MN", "K"), ("MN", "MN")])
@pytest.mark.parametrize("batched", [False, True])
def test_pingpong_evt_config_128x192(dt, a_major, b_major, batched):
    cfg = G.pingpong_evt_config(None, dt, 128, 192, a_major, b_major, batched)
    assert (cfg.tile_m, cfg.tile_n, cfg.schedule, cfg.group_m) == (128, 192, "pingpong", 8)
    assert cfg.stages == 4 and cfg.smem_bytes() <= 227 * 1024
    assert (cfg.producer_regs, cfg.consumer_regs) == (40, 232)
    assert cfg.epi.batched == batched


def test_pingpong_evt_config_64x256_is_the_default():
    assert G.pingpong_evt_config(None, "f16") == G.evt_config(None, "f16", 256, "K", "K", True)
    assert G.evt_config(None, "f16", 256).tile_m == 64


def test_pingpong_64x256_raster_follows_b_major():
    # an N-contiguous B rasters 8 tile-rows (16 fell into a slow state at N = 11008)
    assert G.pingpong_evt_config(None, "f16", b_major="K").group_m == 16
    assert G.pingpong_evt_config(None, "f16", b_major="MN").group_m == 8
    assert G.pingpong_evt_config(None, "bf16", 128, 192, b_major="K").group_m == 8


@pytest.mark.parametrize("b_major", ["K", "MN"])
@pytest.mark.parametrize("tile_n", [32, 64, 96, 128, 160, 192, 256])
def test_b_swizzle_law(b_major, tile_n):
    """An N-contiguous B's smem atoms tile its width with the widest swizzle that does (SW128,
    else SW64); a K-major B and A always take SW128."""
    from cute_py.backends.cuda.kernels.gemm_sm90_maps import swizzle_width
    a_sw, b_sw = G.b_swizzle(b_major, tile_n)
    assert a_sw == 3
    if b_major == "K":
        assert b_sw == 3
    else:
        assert b_sw in (2, 3) and tile_n % swizzle_width(b_sw, 2) == 0
        assert b_sw == 3 or tile_n % swizzle_width(3, 2)
