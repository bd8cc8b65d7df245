"""Hopper GEMM compositions computed through the CTA model (``sm90_cta_model``): the TMA boxes,
descriptors, k-step offsets and accumulator fragment each configuration is generated from give
``A @ B.T`` exactly (small integers, so float64 is exact), and the model catches a wrong map."""

import dataclasses
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

from sm90_cta_model import simulate_cta  # noqa: E402
from test_gemm_sm90_compose import COMPOSITIONS, _compose  # noqa: E402
from test_gemm_sm90_tile_k import COMBOS  # noqa: E402
from test_gemm_sm90_tile_k import _compose as _compose_tile_k  # noqa: E402

from backends.cuda.kernels import gemm_sm90 as G  # noqa: E402
from backends.cuda.kernels import gemm_sm90_maps  # noqa: E402


def _configs():
    out = {f"compose:{n}": (lambda n=n: _compose(**COMPOSITIONS[n])) for n in COMPOSITIONS}
    out.update({f"tile_k:{n}": (lambda n=n: _compose_tile_k(n)) for n in COMBOS})
    for i, cfg in enumerate(G.SHIPPED_CONFIGS):
        out[f"shipped:{i}:{cfg.name}"] = lambda cfg=cfg: cfg
    for cfg in G.shipped_fp8_configs():
        out[f"fp8:{cfg.name}"] = lambda cfg=cfg: cfg
    return out


CONFIGS = _configs()


def _product(cfg, seed=0, kblocks=3):
    rng = np.random.default_rng(seed)
    A = rng.integers(-3, 4, (cfg.tile_m, kblocks * cfg.tile_k)).astype(float)
    B = rng.integers(-3, 4, (cfg.tile_n, kblocks * cfg.tile_k)).astype(float)
    return simulate_cta(cfg, A, B), A @ B.T


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_configuration_computes_the_product_through_its_maps(name):
    cfg = CONFIGS[name]()
    D, want = _product(cfg, kblocks=cfg.stages + 1)       # k-blocks wrap around the stages
    assert np.array_equal(D, want), name


def test_the_model_catches_a_wrong_map(monkeypatch):
    """Mutating one map (B's descriptor k-step offset by 16 bytes; the fragment columns of
    two values exchanged) makes the product wrong."""
    cfg = _compose(**COMPOSITIONS["sw64_k"])
    maps = gemm_sm90_maps.derive_maps(cfg)
    bad_b = dataclasses.replace(maps)
    object.__setattr__(bad_b, "desc_b_offset", lambda kk: maps.desc_b_offset(kk) + 16)
    monkeypatch.setattr("sm90_cta_model.derive_maps", lambda c: bad_b)
    D, want = _product(cfg)
    assert not np.array_equal(D, want)
    frag = maps.frag
    n_val = list(frag.n_val)
    n_val[0], n_val[1] = n_val[1], n_val[0]
    bad_f = dataclasses.replace(maps, frag=dataclasses.replace(frag, n_val=tuple(n_val)))
    monkeypatch.setattr("sm90_cta_model.derive_maps", lambda c: bad_f)
    D, want = _product(cfg)
    assert not np.array_equal(D, want)


@pytest.mark.parametrize("which", ["A", "B"])
def test_the_model_catches_a_wrong_cluster_slice(monkeypatch, which):
    """In a 2x2 cluster each CTA writes one slice of A's and of B's tile: placing the second
    slice of either at the first slice's offset makes the product wrong."""
    cfg = _compose(**COMPOSITIONS["coop_cluster_2x2_mn"])
    maps = gemm_sm90_maps.derive_maps(cfg)
    D, want = _product(cfg)
    assert np.array_equal(D, want)
    bad = dataclasses.replace(maps)
    name = "a_slice_offset" if which == "A" else "b_slice_offset"
    object.__setattr__(bad, name, lambda rank: 0)
    monkeypatch.setattr("sm90_cta_model.derive_maps", lambda c: bad)
    D, want = _product(cfg)
    assert not np.array_equal(D, want)
