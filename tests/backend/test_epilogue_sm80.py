"""The SM80 epilogue (cp.async loads, 16-byte vector stores): subtiling of an mma.sync
accumulator, swizzles by the bank model, deterministic source, CPU compile tests for sm_80 and
sm_90a (zero spills) and GPU tests against ``evt.evaluate_all`` (float64 reference): every
ready-made tree and a custom tree, odd M, StagesC in {1, 2}, poisoned D, guard bands."""


import numpy as np
import pytest

from cute_py.epilogue import evt
from cute_py.epilogue.evt import (AccFetch, AuxLoad, AuxStore, ColBroadcast, ScalarReduction)
from cute_py.errors import LaunchError, LayoutError

pytest.importorskip("cute_py.backends.cuda.epilogue.sm80")
from cute_py.backends.cuda.epilogue.fragment import (mma_sm80_fragment,  # noqa: E402
                                                      wgmma_fragment)
from cute_py.backends.cuda.epilogue.sm80 import (  # noqa: E402
    Sm80Epilogue, Sm80EpilogueConfig, SmemSwizzle, build_sm80_test_kernel_source,
    fragment_period, gemm_sm80_acc)
from cute_py.backends.cuda.epilogue.sm90 import EpilogueConfig  # noqa: E402
from cute_py.backends.cuda.compiler import has_compiler  # noqa: E402


needs_compiler = pytest.mark.skipif(not has_compiler(), reason="no NVRTC or nvcc")

FR22 = mma_sm80_fragment(2, 2, 64, 64)      # 128x128 tile, 4 warps
FR24 = mma_sm80_fragment(2, 4, 64, 64)      # 128x256 tile, 8 warps
CUSTOM = ScalarReduction(                   # docs/epilogue.md: per-row scale + residual
    AuxStore(AccFetch() * ColBroadcast("scale", "float32"), "scaled", "float16")
    + AuxLoad("residual", "float16"), "amax", "absmax")
TREES = {
    "lincomb": evt.linear_combination(),
    "bias_relu": evt.lin_comb_bias_elt_act("relu"),
    "bias_gelu": evt.lin_comb_bias_elt_act("gelu", bias="row"),
    "custom": CUSTOM,
}
# (fragment, tile_m, tile_n, acc_dims of gemm_sm80's acc[MI][NI][4])
SHAPES = {"2x2": (FR22, 128, 128, (4, 8)), "2x4": (FR24, 128, 256, (4, 8))}


def _epi(tree, shape="2x2", **kw):
    fr, tm, tn, _ = SHAPES[shape]
    return Sm80Epilogue(Sm80EpilogueConfig(tree, fr, tm, tn, **kw))


# -- CPU: subtiling, swizzles, bank conflicts ----------------------------------------------------

def test_fragment_period_law():
    for fr, tm, tn in ((FR22, 128, 128), (FR24, 128, 256), (wgmma_fragment(2, 128), 128, 128)):
        for axis, ext, thr, val in (("m", tm, fr.m_thr, fr.m_val), ("n", tn, fr.n_thr,
                                                                      fr.n_val)):
            p = fragment_period(fr, axis, ext)
            assert ext % p == 0
            assert all((t + v) // p == t // p for t in thr for v in val)
    assert (fragment_period(FR22, "m", 128), fragment_period(FR22, "n", 128)) == (64, 64)
    assert fragment_period(wgmma_fragment(2, 128), "n", 128) == 128


@pytest.mark.parametrize("sw", [SmemSwizzle(3, 4, 3), SmemSwizzle(2, 5, 2), SmemSwizzle(1, 4, 4),
                                SmemSwizzle(0, 4, 3)])
def test_swizzle_is_a_vector_preserving_bijection(sw):
    size = 1 << 12
    offs = [sw(o) for o in range(0, size, 16)]
    assert sorted(offs) == list(range(0, size, 16))
    assert all(sw(o + k) == sw(o) + k for o in range(0, size, 16) for k in range(16))
    assert all(sw(sw(o)) == o for o in range(size))


@pytest.mark.parametrize("shape", ["2x2", "2x4"])
@pytest.mark.parametrize("element_d", ["float16", "bfloat16", "float32"])
def test_buffers_cover_the_tile_once(shape, element_d):
    """Every (thread, value) lands in exactly one (subtile, buffer cell), and the chunk map of
    that buffer sends the cell back to the same tile coordinate."""
    epi = _epi(evt.linear_combination(), shape, element_d=element_d)
    fr = epi.cfg.fragment
    seen = set()
    for s, (i, j) in enumerate(epi.subtiles):
        for v in epi.values[(i, j)]:
            for t in range(fr.num_threads):
                r, c = epi._brow(t, v, i), epi._bcol(t, v, j)
                assert 0 <= r < epi.rows_b and 0 <= c < epi.cols_b
                # the chunk map's inverse: buffer (r, c) -> tile (m, n)
                m = (r // epi.epi_m) * epi.pm + i * epi.epi_m + r % epi.epi_m
                n = (c // epi.epi_n) * epi.pn + j * epi.epi_n + c % epi.epi_n
                assert (m, n) == fr.coord(t, v)
                seen.add((s, r, c))
    assert len(seen) == epi.cfg.tile_m * epi.cfg.tile_n


@pytest.mark.parametrize("name", sorted(TREES))
@pytest.mark.parametrize("shape", ["2x2", "2x4"])
@pytest.mark.parametrize("element_d", ["float16", "bfloat16", "float32"])
def test_smem_accesses_are_conflict_free(name, shape, element_d):
    epi = _epi(TREES[name], shape, element_d=element_d)
    rep = epi.bank_report()
    assert set(rep) >= {"D"}
    for buf, r in rep.items():
        assert r["fragment"] == r["fragment_ideal"] and r["chunks"] == r["chunks_ideal"], \
            (buf, r)
    w = epi.r2s_wavefronts()
    assert w["wavefronts"] == w["ideal"]


def test_gemm_sm80_acc_matches_the_gemm_accumulator():
    """gemm_sm80's acc[mi][ni][k] holds row warp_m*WM + mi*16 + lane/4 + 8*(k/2), column
    warp_n*WN + ni*8 + 2*(lane%4) + k%2 (the m16n8 C layout)."""
    WM, WN = 64, 64
    f = gemm_sm80_acc("acc", WM)
    for t in range(FR24.num_threads):
        w, lane = divmod(t, 32)
        wm, wn = w % 2, w // 2
        for v in range(FR24.num_values):
            mi, ni, k = (int(x) for x in f(v)[4:-1].split("]["))
            assert FR24.coord(t, v) == (wm * WM + mi * 16 + lane // 4 + 8 * (k // 2),
                                        wn * WN + ni * 8 + 2 * (lane % 4) + k % 2)


def test_defaults_and_sm90_config():
    e = _epi(evt.linear_combination())
    assert (e.pm, e.pn, e.epi_m, e.epi_n) == (64, 64, 64, 32)
    assert (e.rows_b, e.cols_b) == (128, 64) and len(e.subtiles) == 2
    assert e.cols_b * 2 == 128              # 128-byte rows of D
    e2 = Sm80Epilogue(EpilogueConfig(evt.linear_combination(), FR22, 128, 128))
    assert e2.cfg.stages_c == 2 and e2.smem_bytes > 0
    for hook in ("params", "prelude", "init_code", "consumer_code", "consumer_tail_code"):
        assert callable(getattr(e2, hook))


@pytest.mark.parametrize("kw, arg, err", [
    (dict(epi_n=24), "epilogue_tile", LaunchError),
    (dict(epi_n=4), "epi_n", LaunchError),
    (dict(stages_c=0), "stages", LaunchError),
    (dict(element_d="int8"), "element_d", LaunchError),
    (dict(tile_n=256), "fragment", LaunchError),
    (dict(epi_m=4), "epilogue_tile", LayoutError),
])
def test_invalid_configurations(kw, arg, err):
    base = dict(tree=evt.linear_combination(), fragment=FR22, tile_m=128, tile_n=128)
    base.update(kw)
    with pytest.raises(err) as e:
        Sm80Epilogue(Sm80EpilogueConfig(**base))
    assert e.value.arg == arg


@pytest.mark.parametrize("kw", [dict(reuse_smem_c=True), dict(delay_tma_store=True)])
def test_tma_only_options_rejected(kw):
    with pytest.raises(LaunchError) as e:
        Sm80Epilogue(EpilogueConfig(evt.linear_combination(), FR22, 128, 128, **kw))
    assert e.value.arg in kw


def test_source_is_deterministic_and_keyed():
    for tree in TREES.values():
        a = build_sm80_test_kernel_source(_epi(tree), (4, 8))
        b = build_sm80_test_kernel_source(_epi(tree), (4, 8))
        assert a == b
    k = {_epi(CUSTOM, stages_c=s, vectorized=v).key() for s in (1, 2) for v in (True, False)}
    assert len(k) == 4
    src = _epi(CUSTOM).consumer_code("acc")
    assert "cute_py::sm80::cp_async_pred_zfill<16>" in src and "cute_py::st_global_128" in src
    assert "cute_epi_ld_chunk_scalar" in _epi(CUSTOM, vectorized=False).consumer_code("acc")


# -- CPU: compile for sm_80 and sm_90a ----------------------------------------------------------

def _compile(epi, arch, acc_dims=(4, 8)):
    from cute_py.backends.cuda.compiler import compile_module
    src, name = build_sm80_test_kernel_source(epi, acc_dims)
    r = compile_module(src, arch=arch).resources_for(name)
    assert r.spills == 0 and r.stack_frame == 0, r
    return r


COMPILE_CASES = [  # (tree, shape, element_d, stages_c, vectorized): each tree, both shapes,
    ("lincomb", "2x2", "float16", 2, True),          # all D types, both StagesC, both paths
    ("lincomb", "2x4", "float32", 1, False),
    ("bias_relu", "2x2", "bfloat16", 1, True),
    ("bias_relu", "2x4", "float16", 2, True),
    ("bias_gelu", "2x2", "float32", 2, True),
    ("bias_gelu", "2x4", "bfloat16", 2, False),
    ("custom", "2x2", "float32", 2, True),
    ("custom", "2x4", "float16", 1, False),
]


@needs_compiler
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", COMPILE_CASES, ids=lambda c: "-".join(map(str, c)))
def test_compile_zero_spills(case, arch):
    name, shape, dt, sc, vec = case
    _compile(_epi(TREES[name], shape, element_d=dt, stages_c=sc, vectorized=vec), arch)


# -- GPU: numbers against the float64 reference -------------------------------------------------

def _bf16_bits(x):
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint16)


def _host_array(shape, dtype, rng):
    x = rng.standard_normal(shape)
    if dtype == "bfloat16":
        return _bf16_bits(x)
    return x.astype(np.float16 if dtype == "float16" else np.float32)


def _as_float(a, dtype):
    a = np.asarray(a)
    if dtype == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


_NP = {"float16": np.float16, "bfloat16": np.uint16, "float32": np.float32}


def _poisoned(cp, M, N, dtype, guard):
    """An M x N view into a poisoned (M + 2g) x ld buffer (g guard rows / columns each
    side; ld keeps a 16-byte row pitch and base alignment); returns (view, buffer, g)."""
    g = 8 if guard else 0
    ld = -(-(N + 2 * g) // 8) * 8
    big = cp.full((M + 2 * g, ld), 0xFFFF if dtype == "bfloat16" else np.nan, _NP[dtype])
    return big[g:g + M, g:g + N], big, g


def run_case(tree, M, N, *, shape="2x2", element_d="float16", seed=0, guard=True, **kw):
    import cupy as cp
    from cute_py.backends.cuda.epilogue.sm80 import Sm80EpilogueTestKernel
    fr, tm, tn, acc_dims = SHAPES[shape]
    rng = np.random.default_rng(seed)
    k = Sm80EpilogueTestKernel(Sm80EpilogueConfig(tree, fr, tm, tn, element_d=element_d, **kw),
                               acc_dims=acc_dims)
    acc = (rng.standard_normal((M, N)) * 2).astype(np.float32)
    host, dev, bigs = {}, {}, []
    for name, (role, dt) in tree.signature.items():
        base = role.split(":")[0]
        if base in ("src", "aux_load"):
            host[name] = _host_array((M, N), dt, rng)
        elif base == "row":
            host[name] = _host_array((N,), dt, rng)
        elif base == "col":
            host[name] = _host_array((M,), dt, rng)
        elif base == "scalar":
            host[name] = float(rng.uniform(0.5, 1.5))
        elif base == "scalar_ptr":
            host[name] = _host_array((1,), dt, rng)
        elif base == "aux_store":
            dev[name], big, g = _poisoned(cp, M, N, dt, guard)
            bigs.append((name, big, g, dt))
        else:
            dev[name] = cp.full({"row_reduce": N, "col_reduce": M, "scalar_reduce": 1}[base],
                                np.nan, np.float32)
    for name, v in host.items():
        dev[name] = v if isinstance(v, float) else cp.asarray(v)
    D, bigD, g = _poisoned(cp, M, N, element_d, guard)
    bigs.append(("D", bigD, g, element_d))
    k(cp.asarray(acc), D, **dev)
    cp.cuda.runtime.deviceSynchronize()
    ref = evt.evaluate_all(tree, acc.astype(np.float64), **host)
    errs = {}
    for name, big, g, dt in bigs:
        whole = _as_float(big.get(), dt)
        got = whole[g:g + M, g:g + N]
        assert np.isfinite(got).all(), f"{name} has unwritten (poisoned) elements"
        band = np.ones(whole.shape, bool)
        band[g:g + M, g:g + N] = False
        assert not np.isfinite(whole[band]).any(), f"{name}: write outside the matrix"
        want = evt.round_to(ref[name], dt)
        errs[name] = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    for name, (role, dt) in evt.outputs(tree).items():
        if name in errs:
            continue
        got = _as_float(dev[name].get(), dt)
        assert np.isfinite(got).all(), f"{name} has unwritten elements"
        errs[name] = np.linalg.norm(got - ref[name]) / max(np.linalg.norm(ref[name]), 1e-30)
    return errs, k.last_vectorized


TOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-3}

# (tree, shape, element_d, stages_c, M, N, vectorized path expected)
GPU_CASES = [
    ("lincomb", "2x2", "float16", 1, 300, 264, True),
    ("lincomb", "2x4", "float32", 2, 257, 392, True),
    ("bias_relu", "2x2", "bfloat16", 2, 129, 136, True),
    ("bias_relu", "2x4", "float16", 1, 1000, 1000, True),
    ("bias_gelu", "2x2", "float32", 1, 77, 520, True),
    ("bias_gelu", "2x4", "float16", 2, 301, 264, True),
    ("custom", "2x2", "float16", 2, 300, 264, True),
    ("custom", "2x4", "float32", 1, 131, 200, True),
    ("custom", "2x2", "float16", 1, 203, 261, False),      # N * 2 % 16 != 0: element path
    ("bias_relu", "2x2", "bfloat16", 2, 1, 9, False),
]


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: "-".join(map(str, c)))
def test_gpu_against_reference(case):
    name, shape, dt, sc, M, N, vec = case
    errs, ran_vec = run_case(TREES[name], M, N, shape=shape, element_d=dt, stages_c=sc,
                             seed=M + N)
    assert ran_vec == vec
    tol = TOL[dt]
    assert all(e < tol for e in errs.values()), errs
