"""The SM90 TMA warp-specialized epilogue: lowering, fragment analysis, bank conflicts, CPU
compile tests for sm_90a (every valid StagesC/StagesD/ReuseSmemC/DelayTmaStore combination,
every EVT node), and GPU tests against the NumPy float64 reference of ``evt.evaluate``."""


import numpy as np
import pytest

from cute_py.epilogue import evt
from cute_py.epilogue.evt import (AccFetch, AuxLoad, AuxStore, ColBroadcast, ColReduction,
                                  RowBroadcast, RowReduction, ScalarBroadcast,
                                  ScalarReduction, SrcFetch)
from cute_py.errors import LaunchError, LayoutError

epi_mod = pytest.importorskip("cute_py.backends.cuda.epilogue.sm90")
from cute_py.backends.cuda.epilogue.fragment import (bank_wavefronts, mma_sm80_fragment,  # noqa
                                                      wgmma_fragment)
from cute_py.backends.cuda.epilogue.lower import lower_tree  # noqa: E402
from cute_py.backends.cuda.epilogue.sm90 import (EpilogueConfig, Sm90Epilogue,  # noqa: E402
                                                 build_test_kernel_source, swizzle_offset,
                                                 valid_option_combinations)
from cute_py.backends.cuda.compiler import has_compiler  # noqa: E402

try:
    from cute_py.backends.cuda.device import has_gpu
    HAS_GPU = has_gpu()
except Exception:  # pragma: no cover
    HAS_GPU = False


needs_compiler = pytest.mark.skipif(not has_compiler(), reason="no NVRTC or nvcc")

FR = wgmma_fragment(2, 128)

# one tree per node kind (and the ready-made trees)
NODE_TREES = {
    "acc": AccFetch(),
    "lincomb": evt.linear_combination(),
    "scalar_ptr": AccFetch() * ScalarBroadcast("s", ptr=True),
    "row_bias_relu": evt.lin_comb_bias_elt_act("relu", bias="col"),
    "col_bias_gelu": evt.lin_comb_bias_elt_act("gelu", bias="row"),
    "gelu_erf": evt.gelu_erf(AccFetch() + RowBroadcast("b", "float32")),
    "silu_sigmoid": evt.silu(AccFetch()) + evt.sigmoid(SrcFetch("float16")),
    "clamp_convert": evt.clamp(evt.convert(AccFetch() * 3.0, "bfloat16"), -1.0, 2.0),
    "aux_load": AccFetch() - AuxLoad("z", "bfloat16"),
    "aux_store": evt.lin_comb_bias_elt_act_aux("silu"),
    "reductions": ScalarReduction(RowReduction(ColReduction(
        evt.relu(AccFetch() + SrcFetch("float16")), "cs", "sum"), "rm", "max"), "amax", "absmax"),
    "custom_scale_residual": ScalarReduction(       # the docs/epilogue.md example
        AuxStore(AccFetch() * ColBroadcast("scale", "float32"), "scaled", "float16")
        + AuxLoad("residual", "float16"), "amax", "absmax"),
    "min_max": evt.maximum(evt.minimum(AccFetch(), 0.5), ColBroadcast("c", "float32")),
}


# -- CPU: lowering and analysis ------------------------------------------------------------------

def test_lowering_is_deterministic_and_shares_subtrees():
    x = AccFetch() * ScalarBroadcast("s")
    t = x * evt.sigmoid(x)
    a, b = lower_tree(t), lower_tree(AccFetch() * ScalarBroadcast("s") * evt.sigmoid(x))
    assert a.source == b.source
    assert a.source.count("(v0 * v1)") == 1            # x computed once
    assert a.source.count("cute_epi_sigmoid(") == 1
    assert a.scalars == ("s",)


def test_lowered_roles():
    lt = lower_tree(NODE_TREES["reductions"])
    assert lt.loads == (("C", "float16"),)
    assert {r[0]: r[1:] for r in lt.reductions} == {"cs": ("col", "sum"), "rm": ("row", "max"),
                                                     "amax": ("scalar", "absmax")}
    lt = lower_tree(NODE_TREES["aux_store"])
    assert lt.stores == (("aux", "float16"),) and lt.rows == (("bias", "float16"),)


@pytest.mark.parametrize("fr", [wgmma_fragment(1, 64), wgmma_fragment(2, 256),
                                wgmma_fragment(1, 128, m_per_wg=128),
                                mma_sm80_fragment(2, 2, 64, 32)])
def test_fragment_thread_expressions_match_tables(fr):
    for tid in range(fr.num_threads):
        env = {"tid": tid}
        assert eval(fr.m_thr_expr.replace("/", "//"), env) == fr.m_thr[tid]
        assert eval(fr.n_thr_expr.replace("/", "//"), env) == fr.n_thr[tid]
    coords = {fr.coord(t, v) for t in range(fr.num_threads) for v in range(fr.num_values)}
    assert len(coords) == fr.num_threads * fr.num_values        # injective: a TV layout
    assert fr.mma_warp_pattern()
    assert fr.shuffle_masks("n") == [4, 8, 16] and fr.shuffle_masks("m") == [1, 2]


def test_fragment_rejects_thread_dependent_subtiles():
    with pytest.raises(LayoutError):
        FR.values_in(0, 64, 0, 32)   # 64-row subtiles split the two warpgroups


@pytest.mark.parametrize("rb", [32, 64, 128])
def test_swizzle_is_a_16B_chunk_permutation(rb):
    rows = 64
    offs = [swizzle_offset(r, c, rb) for r in range(rows) for c in range(0, rb, 16)]
    assert sorted(offs) == list(range(0, rows * rb, 16))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("fr, tn", [(wgmma_fragment(2, 128), 128), (wgmma_fragment(1, 256), 256),
                                    (mma_sm80_fragment(4, 1, 32, 128), 128)])
def test_r2s_is_conflict_free(dtype, fr, tn):
    tm = max(fr.m_thr) + max(fr.m_val) + 1
    epi = Sm90Epilogue(EpilogueConfig(AccFetch(), fr, tm, tn, element_d=dtype))
    a = epi.r2s_wavefronts()
    assert a["instr"] == "stmatrix.x4" and a["wavefronts"] == a["ideal"]


def test_bank_model():
    assert bank_wavefronts([4 * i for i in range(32)], 4) == 1
    assert bank_wavefronts([128 * i for i in range(32)], 4) == 32
    assert bank_wavefronts([16 * i for i in range(32)], 16) == 4


@pytest.mark.parametrize("kw, arg", [
    (dict(reuse_smem_c=True, tree=AccFetch()), "reuse_smem_c"),
    (dict(reuse_smem_c=True, element_d="float32"), "reuse_smem_c"),
    (dict(reuse_smem_c=True, delay_tma_store=True), "delay_tma_store"),
    (dict(epi_n=24), "epilogue_tile"),
    (dict(epi_n=8), "epi_n"),
    (dict(stages_c=0), "stages"),
    (dict(load_path="smem"), "load_path"),
    (dict(load_path="direct", reuse_smem_c=True), "reuse_smem_c"),
    (dict(load_path="direct", prefetch_l2=True), "prefetch_l2"),
    (dict(load_path="direct", direct_ahead=0), "direct_ahead"),
    (dict(store_warp=True, reuse_smem_c=True), "store_warp"),
    (dict(store_warp=True, delay_tma_store=True), "store_warp"),
])
def test_invalid_configurations(kw, arg):
    base = dict(tree=evt.linear_combination(), fragment=FR, tile_m=128, tile_n=128)
    base.update(kw)
    with pytest.raises(LaunchError) as e:
        Sm90Epilogue(EpilogueConfig(**base))
    assert e.value.arg == arg


def test_config_is_hashable_cache_key():
    a = EpilogueConfig(evt.linear_combination(), FR, 128, 128)
    b = EpilogueConfig(evt.linear_combination(), wgmma_fragment(2, 128), 128, 128)
    assert a == b and hash(a) == hash(b)
    assert Sm90Epilogue(a).key() == Sm90Epilogue(b).key()


@pytest.mark.parametrize("vector", [False, True])
def test_direct_load_path_structure(vector):
    """load_path="direct": no C smem stages, no C barriers, no producer; every C value is
    loaded once (one predicated access per pair, or with ``direct_vector`` one 16-byte access
    per lane and four pairs, transposed inside the quad once, in the subtile that uses them),
    the first ``direct_ahead`` subtiles by ``prefetch_code`` and each later one
    ``direct_ahead`` subtiles before its use."""
    tree = evt.lin_comb_bias_elt_act("relu")
    tma = Sm90Epilogue(EpilogueConfig(tree, FR, 128, 128))
    d = Sm90Epilogue(EpilogueConfig(tree, FR, 128, 128, load_path="direct", direct_ahead=3,
                                    direct_vector=vector))
    assert tma.has_producer and not d.has_producer
    assert d.smem_bytes < tma.smem_bytes and ("load", "C") not in d.buf
    assert "tma_load_2d" not in d.producer_code()
    assert [p.kind for p in d.params()][:2] == ["mat", "ld"]
    pre, body = d.prefetch_code(), d.consumer_code(prefetched=True)
    pairs = sum(len(d._pairs(d.values[s])[0]) for s in d.subtiles)
    load, per = ("ld_global_quad16<", 4) if vector else ("ld_global_pair16<", 1)
    other = "ld_global_pair16<" if vector else "ld_global_quad16<"
    assert pre.count(load) * per == 3 * pairs // len(d.subtiles)
    assert (pre.count(load) + body.count(load)) * per == pairs
    assert other not in pre + body
    assert body.count("quad_transpose_u32(") == (pairs // 4 if vector else 0)
    assert ("cute_dv_C" in pre) == vector
    assert "mbarrier_wait_parity" not in body
    # without a kernel-side prefetch the consumer code issues the first loads itself
    assert d.consumer_code().count(load) * per == pairs
    assert "cq_C" not in tma.prefetch_code() and "ld_global_" not in tma.prefetch_code()
    # the quads: four heads of one fragment row at columns n, n+8, n+16, n+24
    fr = d.cfg.fragment
    for s in d.subtiles:
        quads, rest = d.quads[s]
        assert (rest == []) == vector
        for m, n, run in quads:
            assert [(fr.m_val[v], fr.n_val[v]) for v in run] == [(m, n + 8 * j) for j in range(4)]


@pytest.mark.parametrize("stages_d", [4, 2, 1])
@pytest.mark.parametrize("tree", ["aux_store", "acc", "reductions"])
def test_store_warp_protocol(stages_d, tree):
    """``store_warp``: the consumers never wait for a store and (without broadcast vectors)
    never meet at a named barrier; each handover is a wait on an empty mbarrier, the writes, a
    fence and one arrival per thread on the full mbarrier; the store warp issues every
    subtile's stores (D and each AuxStore) and releases with the description's read lag.
    Counts and lag come from :class:`cute_py.pipeline.StoreStaging`."""
    t = NODE_TREES[tree]
    e = Sm90Epilogue(EpilogueConfig(t, FR, 128, 128, stages_d=stages_d, store_warp=True))
    plain = Sm90Epilogue(EpilogueConfig(t, FR, 128, 128, stages_d=stages_d))
    st, n = e.staging, len(e.subtiles)
    assert (st.buffers, st.writers, st.subtiles) == (stages_d, 256, n) and plain.staging is None
    body = e.consumer_code()
    assert "tma_store" not in body and "bulk_" not in body
    assert ("named_barrier_sync" in body) == bool(e.lt.rows or e.lt.cols)
    units = 1 if st.whole else n
    assert body.count("mbarrier_wait_parity(cute_epi_sempty") == units
    assert body.count("mbarrier_arrive(cute_epi_sfull") == units
    assert body.count("fence_proxy_async_shared()") == units
    from cute_py.backends.cuda.builder import KernelBuilder
    kb = KernelBuilder("k", threads=288)
    e.emit_store_warp(kb)
    sw = "\n".join(kb.lines)
    assert sw.count("tma_store_2d") == n * (1 + len(e.lt.stores))
    assert sw.count("bulk_commit_group()") == units
    assert sw.count(f"bulk_wait_group_read<{st.read_lag}>") == units
    assert e.smem_bytes == plain.smem_bytes + 16 * st.barriers
    kb = KernelBuilder("k", threads=288)
    e.emit_init(kb)
    init = "\n".join(kb.lines)
    assert init.count(f"mbarrier_init(cute_epi_sfull") == st.barriers
    assert f", {st.full_arrive_count});" in init
    assert e.key() != plain.key()


def test_prefetch_code_loads_vectors_and_scalar_pointers_before_the_mainloop():
    """The tile's bias slices and device-pointer scalars are loaded by ``prefetch_code`` (the
    kernel pastes it before the tile's mainloop), so ``consumer_code(prefetched=True)`` starts
    without a global-memory round trip; without a prefetch it issues the same loads itself."""
    tree = (evt.lin_comb_bias_elt_act("relu", bias="col") + ColBroadcast("cb", "float32")
            * ScalarBroadcast("s", ptr=True, dtype="bfloat16"))
    for path in ("tma", "direct"):
        e = Sm90Epilogue(EpilogueConfig(tree, FR, 128, 256, load_path=path))
        pre, body = e.prefetch_code(), e.consumer_code(prefetched=True)
        for name, length in (("bias", e.cfg.tile_n), ("cb", e.cfg.tile_m)):
            regs = -(-length // e.nc)
            assert all(f"const float cb_{name}_{i} = " in pre for i in range(regs))
            assert body.count(f"cb_{name}_") == regs and f"p_{name}" not in body
            if length % e.nc:          # the last register covers part of the slice
                off = f"tid + {(regs - 1) * e.nc}" if regs > 1 else "tid"
                assert f"if ({off} < {length})" in body
        assert "const float s_s = " in pre and "p_s" not in body
        assert pre in e.consumer_code()


# -- CPU: compile for sm_90a -----------------------------------------------------------------------

def _compile(cfg):
    from cute_py.backends.cuda.compiler import compile_module
    epi = Sm90Epilogue(cfg)
    src, name = build_test_kernel_source(epi)
    mod = compile_module(src, arch="sm_90a")
    r = mod.resources_for(name)
    assert r.spills == 0 and r.stack_frame == 0, r
    return mod, name


@needs_compiler
@pytest.mark.parametrize("combo", valid_option_combinations(True, 2, 2, False))
def test_compile_every_option_combination(combo):
    sc, sd, reuse, delay = combo
    _compile(EpilogueConfig(evt.lin_comb_bias_elt_act("relu"), FR, 128, 128, stages_c=sc,
                            stages_d=sd, reuse_smem_c=reuse, delay_tma_store=delay))


@needs_compiler
@pytest.mark.parametrize("name, element_d", [
    (n, ("float16", "bfloat16", "float32")[i % 3]) for i, n in enumerate(sorted(NODE_TREES))])
def test_compile_every_node(name, element_d):
    # each node once, D types rotating (keeps the CPU suite short; the GPU tests run all 3)
    _compile(EpilogueConfig(NODE_TREES[name], FR, 128, 128, element_d=element_d))


@needs_compiler
@pytest.mark.parametrize("name", ["lincomb", "aux_load", "custom_scale_residual", "reductions",
                                  "aux_load_f32", "lincomb_pairs"])
def test_compile_direct_load_path(name):
    """Quad (16-byte) loads by default, pair loads with ``direct_vector=False``; the evict_first
    variants of both."""
    tree = (AccFetch() - AuxLoad("z", "bfloat16") + AuxLoad("w", "float32")
            if name == "aux_load_f32" else NODE_TREES[name.replace("_pairs", "")])
    _compile(EpilogueConfig(tree, FR, 128, 128, load_path="direct", direct_ahead=2,
                            l2_evict_first=name.startswith("aux_load") or "pairs" in name,
                            direct_vector="pairs" not in name))


@needs_compiler
@pytest.mark.parametrize("stages_d, path", [(4, "tma"), (2, "direct"), (1, "tma")])
def test_compile_store_warp(stages_d, path):
    _compile(EpilogueConfig(evt.lin_comb_bias_elt_act_aux("gelu"), FR, 128, 128,
                            stages_d=stages_d, store_warp=True, load_path=path))


@needs_compiler
def test_compile_wide_tile_one_warpgroup():
    _compile(EpilogueConfig(evt.lin_comb_bias_elt_act("gelu"), wgmma_fragment(1, 256), 64, 256,
                            stages_c=3))


# -- GPU: numbers against the float64 reference ------------------------------------------------------

gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")


def _bf16_bits(x):
    f = np.asarray(x, np.float32)
    b = f.view(np.uint32).astype(np.uint64)
    return (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint16)


def _host_array(shape, dtype, rng, scale=1.0):
    x = rng.standard_normal(shape) * scale
    if dtype == "bfloat16":
        return _bf16_bits(x)
    return x.astype(np.float16 if dtype == "float16" else np.float32)


def _as_float(a, dtype):
    a = np.asarray(a)
    if dtype == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def run_case(tree, M, N, *, fragment=FR, tile_m=128, tile_n=128, element_d="float16", seed=0,
             src_offset=None, **cfg_kw):
    """Run the standalone epilogue kernel on fresh random inputs and compare with evaluate_all.
    Returns the max relative error over D and the side outputs.  ``src_offset``: C and the aux
    inputs are column slices ``[:, off:off + N]`` of an ``(M, N + 8)`` buffer (a strided view;
    ``off = 2`` leaves them 4-byte but not 16-byte aligned)."""
    import cupy as cp
    from cute_py.backends.cuda.epilogue.runtime import EpilogueTestKernel
    rng = np.random.default_rng(seed)
    k = EpilogueTestKernel(EpilogueConfig(tree, fragment, tile_m, tile_n, element_d=element_d,
                                          **cfg_kw))
    acc = rng.standard_normal((M, N)).astype(np.float32) * 2
    host, dev = {}, {}
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
            dev[name] = cp.full((M, N), 0xFFFF if dt != "float32" else np.nan,
                                dtype=np.float32 if dt == "float32" else np.uint16)
            if dt == "float16":
                dev[name] = dev[name].view(np.float16)
        else:
            dev[name] = cp.full({"row_reduce": N, "col_reduce": M, "scalar_reduce": 1}[base],
                                np.nan, np.float32)
    for name, v in host.items():
        dev[name] = v if isinstance(v, float) else cp.asarray(v)
        role = tree.signature[name][0].split(":")[0]
        if src_offset is not None and role in ("src", "aux_load"):
            wide = cp.full((M, N + 8), np.nan if v.dtype != np.uint16 else 0xFFFF, v.dtype)
            wide[:, src_offset:src_offset + N] = dev[name]
            dev[name] = wide[:, src_offset:src_offset + N]
    D = cp.full((M, N), np.nan, dtype={"float16": np.float16, "bfloat16": np.uint16,
                                       "float32": np.float32}[element_d])
    if element_d == "bfloat16":
        D.fill(0xFFFF)
    k(cp.asarray(acc), D, **dev)
    cp.cuda.runtime.deviceSynchronize()
    ref = evt.evaluate_all(tree, acc.astype(np.float64), **host)
    errs = {}
    got_d = _as_float(D.get(), element_d)
    assert np.isfinite(got_d).all(), "D has unwritten (poisoned) elements"
    want = evt.round_to(ref["D"], element_d)
    errs["D"] = np.linalg.norm(got_d - want) / max(np.linalg.norm(want), 1e-30)
    for name, (role, dt) in evt.outputs(tree).items():
        got = _as_float(dev[name].get() if dt != "float16" else dev[name].get(), dt)
        assert np.isfinite(got).all(), f"{name} has unwritten elements"
        errs[name] = np.linalg.norm(got - ref[name]) / max(np.linalg.norm(ref[name]), 1e-30)
    return errs


TOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-3}


@gpu
@needs_gpu
@pytest.mark.parametrize("name", sorted(NODE_TREES))
@pytest.mark.parametrize("element_d", ["float16", "bfloat16", "float32"])
def test_gpu_every_node(name, element_d):
    errs = run_case(NODE_TREES[name], 300, 264, element_d=element_d)
    tol = max(TOL[element_d], 1e-2 if name in ("clamp_convert", "aux_load") else 0)
    assert all(e < tol for e in errs.values()), errs


@gpu
@needs_gpu
@pytest.mark.parametrize("combo", valid_option_combinations(True, 2, 2, False))
def test_gpu_every_option_combination(combo):
    sc, sd, reuse, delay = combo
    errs = run_case(evt.lin_comb_bias_elt_act("relu"), 257, 392, stages_c=sc, stages_d=sd,
                    reuse_smem_c=reuse, delay_tma_store=delay, seed=sum(combo))
    assert all(e < 2e-3 for e in errs.values()), errs


@gpu
@needs_gpu
@pytest.mark.parametrize("M, N", [(1, 8), (129, 136), (1000, 1000), (64, 4096)])
def test_gpu_odd_sizes(M, N):
    errs = run_case(evt.lin_comb_bias_elt_act_aux("gelu"), M, N, stages_c=3, delay_tma_store=True)
    assert all(e < 2e-3 for e in errs.values()), errs


@gpu
@needs_gpu
@pytest.mark.parametrize("name", ["lincomb", "silu_sigmoid", "aux_load", "reductions",
                                  "custom_scale_residual"])
@pytest.mark.parametrize("ahead, ef", [(1, False), (3, True), (64, False)])
def test_gpu_direct_load_path(name, ahead, ef):
    """C / aux loaded by the consumer threads (load_path="direct"), residues in M and N."""
    tree = NODE_TREES[name]
    if name == "aux_load":      # a float32 aux tensor too: 8-byte pair loads
        tree = AccFetch() - AuxLoad("z", "bfloat16") + AuxLoad("w", "float32")
    for M, N in ((257, 392), (1, 8), (130, 136)):
        errs = run_case(tree, M, N, load_path="direct", direct_ahead=ahead, l2_evict_first=ef,
                        seed=M + ahead)
        tol = 1e-2 if name == "aux_load" else 2e-3
        assert all(e < tol for e in errs.values()), (M, N, errs)


@gpu
@needs_gpu
@pytest.mark.parametrize("vector", [True, False])
@pytest.mark.parametrize("offset", [8, 2])
def test_gpu_direct_vector_loads(vector, offset):
    """16-byte quad loads + shuffle transpose (``direct_vector``) against the pair loads, on C
    and a bf16 aux input that are strided column slices: 16-byte aligned (``offset`` 8: the
    vector path) and only 4-byte aligned (``offset`` 2: the kernel falls back to pair loads at
    run time); float32 aux stays on 8-byte pair loads."""
    tree = evt.lin_comb_bias_elt_act("relu") + AuxLoad("z", "bfloat16") * AuxLoad("w", "float32")
    for M, N, ahead in ((257, 392, 4), (1, 8, 1), (130, 136, 64)):
        errs = run_case(tree, M, N, load_path="direct", direct_ahead=ahead,
                        direct_vector=vector, src_offset=offset, seed=M + offset)
        assert all(e < 1e-2 for e in errs.values()), (M, N, errs)


@gpu
@needs_gpu
@pytest.mark.parametrize("sd, delay", [(1, False), (1, True), (2, True)])
def test_gpu_direct_load_path_with_store_options(sd, delay):
    errs = run_case(evt.lin_comb_bias_elt_act_aux("gelu"), 300, 264, load_path="direct",
                    direct_ahead=2, stages_d=sd, delay_tma_store=delay, seed=sd)
    assert all(e < 2e-3 for e in errs.values()), errs


@gpu
@needs_gpu
@pytest.mark.parametrize("name", ["aux_store", "reductions", "col_bias_gelu", "acc"])
@pytest.mark.parametrize("stages_d", [4, 2, 1])
def test_gpu_store_warp(name, stages_d):
    """A store warp issuing the stores (whole-tile, two-buffer and one-buffer staging), odd
    sizes, against the float64 reference."""
    for M, N in ((300, 264), (129, 72)):
        errs = run_case(NODE_TREES[name], M, N, stages_d=stages_d, store_warp=True,
                        seed=M + stages_d)
        assert all(e < 2e-3 for e in errs.values()), (M, N, errs)


@gpu
@needs_gpu
def test_gpu_tma_store_refuses_rows_of_partial_chunks():
    """TMA stores write whole 16-byte chunks: a D whose rows end mid-chunk (N = 391 halves in a
    padded buffer) would get its row padding overwritten, so the kernel refuses it."""
    import cupy as cp
    from cute_py.backends.cuda.epilogue.runtime import EpilogueTestKernel
    k = EpilogueTestKernel(EpilogueConfig(AccFetch(), FR, 128, 128))
    acc = cp.zeros((64, 391), cp.float32)
    D = cp.empty((64, 392), cp.float16)[:, :391]
    with pytest.raises(LaunchError) as e:
        k(acc, D)
    assert e.value.arg == "D"


@gpu
@needs_gpu
def test_gpu_one_warpgroup_wide_tile():
    errs = run_case(NODE_TREES["reductions"], 200, 520, fragment=wgmma_fragment(1, 256),
                    tile_m=64, tile_n=256)
    assert all(e < 2e-3 for e in errs.values()), errs


# -- index maps: algebra objects lowered to IR (arch/sm90/epilogue_maps.py) ----------------------

def _old_swizzle_offset(row, col_byte, row_bytes):
    """The hand-written formula the staging layout replaced (reference for the law below)."""
    off = row * row_bytes + col_byte
    return off ^ (((off >> 7) & (row_bytes // 16 - 1)) << 4)


@pytest.mark.parametrize("elem_bytes", [2, 4])
@pytest.mark.parametrize("row_bytes", [32, 64, 128])
def test_staging_layout_lowered_matches_the_tma_swizzle(row_bytes, elem_bytes):
    """The lowered staging layout (IR, evaluated with NumPy over every (row, col) of a subtile)
    equals the ComposedLayout's own evaluation and the TMA swizzle formula it replaced."""
    import numpy as np
    from cute_py.backends.cuda import ir
    from cute_py.backends.cuda.arch.sm90.epilogue_maps import composed_apply, staging_layout
    rows, cols = 128, row_bytes // elem_bytes
    L = staging_layout(rows, cols, elem_bytes)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    node = composed_apply(L, (ir.var("r", 0, rows - 1), ir.var("c", 0, cols - 1)))
    got = ir.evaluate(node, {"r": r.ravel(), "c": c.ravel()})
    old = np.array([_old_swizzle_offset(a, b * elem_bytes, row_bytes)
                    for a, b in zip(r.ravel(), c.ravel())])
    alg = np.array([L((int(a), int(b))) for a, b in zip(r.ravel(), c.ravel())])
    assert (got == old).all() and (alg == old).all()
    assert all(swizzle_offset(a, b, row_bytes) == _old_swizzle_offset(a, b, row_bytes)
               for a in range(16) for b in range(0, row_bytes, 2))


@pytest.mark.parametrize("frag", [FR, wgmma_fragment(1, 64), wgmma_fragment(2, 128, 128)])
def test_thread_layouts_and_subtiles_from_the_algebra(frag):
    """The fragment's thread offsets, lowered from the fitted thread layouts, equal its tables
    on every thread; subtile origins come from flat_divide (n-outer, m-inner)."""
    import numpy as np
    from cute_py.backends.cuda import ir
    from cute_py.backends.cuda.arch.sm90.epilogue_maps import (subtile_origin_ir,
                                                               subtile_origins, thread_offsets)
    t = np.arange(frag.num_threads)
    m, n = thread_offsets(frag, ir.var("tid", 0, frag.num_threads - 1))
    assert (ir.evaluate(m, {"tid": t}) == np.array(frag.m_thr)).all()
    assert (ir.evaluate(n, {"tid": t}) == np.array(frag.n_thr)).all()
    subs = subtile_origins(128, 256, 64, 32)
    assert subs == [((i, j), (64 * i, 32 * j)) for j in range(8) for i in range(2)]
    mo, no = subtile_origin_ir(128, 256, 64, 32, ir.var("s", 0, 15))
    s = np.arange(16)
    assert (ir.evaluate(mo, {"s": s}) == 64 * (s % 2)).all()
    assert (ir.evaluate(no, {"s": s}) == 32 * (s // 2)).all()


def test_collective_protocol_is_native():
    """Sm90Epilogue implements the collective protocol itself (no text adapter), and its text
    methods render the same statements."""
    from cute_py.backends.cuda.arch.common.epilogue import EpilogueCollective
    from cute_py.backends.cuda.builder import KernelBuilder
    e = Sm90Epilogue(EpilogueConfig(NODE_TREES["aux_store"], FR, 128, 256))
    assert isinstance(e, EpilogueCollective)
    kb = KernelBuilder("k", threads=288)
    kb.level = 0
    e.emit_consumer(kb, "acc", 1, False)
    assert "\n".join(kb.lines) == e.consumer_code()
    assert "asm" not in e.consumer_code() + e.prelude() + e.producer_code()


