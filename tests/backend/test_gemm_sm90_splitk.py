"""Split-K, transposed-D and narrow-tile Hopper GEMM: CPU-side tests (configuration rules,
byte-identical sources of the existing configurations, compile for sm_90a with zero spills,
a NumPy model of the split-K store + reduce through the accumulator fragment, the reduce
kernel's law, the heuristic).  GPU tests are in ``test_gemm_sm90_splitk_gpu.py``."""

import dataclasses

import numpy as np
import pytest

from cute_py.errors import LaunchError
from cute_py.backends.cuda.kernels import gemm_sm90 as G
from cute_py.backends.cuda.kernels import gemm_sm90_splitk as SK
from cute_py.backends.cuda.kernels import splitk_reduce as R
from cute_py.backends.cuda.kernels.gemm_sm90_maps import derive_maps, fragment_from_clayout

#: the new configurations: every one compiles for sm_90a with zero spills
NEW_CONFIGS = (
    G.Sm90GemmConfig(128, 16, 64, 8, 2, "f16", split_k="workspace", transpose_d=True),
    G.Sm90GemmConfig(128, 32, 64, 8, 2, "bf16", split_k="workspace", transpose_d=True,
                     a_major="MN"),
    G.Sm90GemmConfig(128, 64, 64, 8, 2, "f16", split_k="workspace", transpose_d=True),
    G.Sm90GemmConfig(128, 128, 64, 6, 2, "f16", split_k="workspace"),
    G.Sm90GemmConfig(128, 128, 64, 6, 2, "bf16", split_k="workspace", a_major="MN",
                     b_major="MN"),
    G.Sm90GemmConfig(128, 16, 64, 8, 2, "f16", split_k="atomic", transpose_d=True),
    G.Sm90GemmConfig(128, 256, 64, 4, 2, "f16", split_k="atomic", cluster_m=2),
    G.Sm90GemmConfig(128, 16, 64, 8, 2, "f16", transpose_d=True, has_c=True),
    G.Sm90GemmConfig(128, 32, 64, 8, 2, "bf16", vec2=False),
    G.Sm90GemmConfig(128, 128, 64, 6, 2, "f16", transpose_d=True, has_c=True, b_major="MN"),
    G.Sm90GemmConfig(128, 16, 64, 8, 2, "f16", split_k="fixup", transpose_d=True, has_c=True),
    G.Sm90GemmConfig(128, 32, 64, 8, 2, "bf16", split_k="fixup", transpose_d=True),
    G.Sm90GemmConfig(128, 64, 64, 8, 2, "f16", split_k="fixup", transpose_d=True, a_major="MN"),
    G.Sm90GemmConfig(128, 128, 64, 6, 2, "f16", split_k="fixup", has_c=True),
    G.Sm90GemmConfig(128, 128, 64, 6, 2, "bf16", split_k="fixup", vec2=False, b_major="MN"),
)


def test_existing_configs_keep_repr_name_and_source():
    """Fields added for split-K / swap are left out of repr at their defaults: the existing
    configurations' names and sources do not mention them (their text is the same as before
    the fields existed; checked once by hashing every shipped source before and after)."""
    for cfg in G.SHIPPED_CONFIGS:
        r = repr(cfg)
        assert "split_k" not in r and "transpose_d" not in r
        assert r.endswith(f"schedule={cfg.schedule!r})" if cfg.smem_swizzle == (3, 3) else
                          f"smem_swizzle={cfg.smem_swizzle!r})")
        src = G.generate_source(cfg)
        assert "splits_k" not in src and "kb_lo_" not in src and "cute_sm90_wgmma" not in src
        assert "for (int kb = 0; kb < k_blocks; ++kb)" in src
    c = dataclasses.replace(G.SHIPPED_CONFIGS[0], split_k="workspace")
    assert "split_k='workspace'" in repr(c) and c != G.SHIPPED_CONFIGS[0]
    assert c.name != G.SHIPPED_CONFIGS[0].name and "_skw" in c.name
    assert "_dt" in dataclasses.replace(G.SHIPPED_CONFIGS[0], transpose_d=True).name
    assert hash(c) != hash(G.SHIPPED_CONFIGS[0])


@pytest.mark.parametrize("cfg", NEW_CONFIGS, ids=lambda c: c.name)
def test_new_configs_compile_sm90a_zero_spills(cfg):
    from cute_py.backends.cuda.compiler import compile_module
    src = G.generate_source(cfg)
    assert src == G.generate_source(cfg)
    mod = compile_module(src, arch="sm_90a")
    res = mod.resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert "C7508" not in mod.log
    assert compile_module(src, arch="sm_80").resources_for(cfg.name).spills == 0


def test_split_k_source_structure():
    cfg = NEW_CONFIGS[0]
    src = G.generate_source(cfg)
    # the appended parameters, in the documented order, at the end of the list
    sig = src.split(f"{cfg.name}(")[1].split(")\n{")[0]
    assert " ".join(sig.split()).endswith("float alpha, float beta, float* __restrict__ ws, "
                                          "int splits_k, long long ldw, long long ws_l, "
                                          "long long ws_split")
    assert [n for n, _ in SK.splitk_extra_args(cfg, _FakeWs(1 << 20), 2, 64, 16)] == \
        list(SK.EXTRA_PARAMS)
    assert "num_n * L * splits_k;" in src
    assert "for (int kb = kb_lo_; kb < kb_hi_; ++kb)" in src
    assert "const int scale_d = kb > kb_lo_ ? 1 : 0;" in src
    assert "kb_lo_ = (long long)k_blocks * split_ / splits_k;" in src
    assert "wgmma_m64n16k16_f32_f16_ss<0, 0>(acc[0]" in src
    assert "float* wp = Wl_ + r + c * ldw;" in src
    ws = G.generate_source(NEW_CONFIGS[3])
    assert "*reinterpret_cast<float2*>(wp) = make_float2(" in ws
    at = G.generate_source(NEW_CONFIGS[5])
    assert "atomicAdd(wp, acc[0][0]);" in at
    tr = G.generate_source(NEW_CONFIGS[7])
    assert "u16* dp = Dl_ + r + c * ldd;" in tr and "dp[ldd] = " in tr
    assert "cp[ldc]" in tr


def test_fixup_source_structure():
    """"fixup": partials stored in the unit's fragment-ordered slot, fence, barrier 1 over the
    consumer threads, one counter per tile (reset by the last unit), bar.red.or broadcast, the
    tile's slots summed in split order, built-in epilogue."""
    cfg = NEW_CONFIGS[10]
    src = G.generate_source(cfg)
    sig = src.split(f"{cfg.name}(")[1].split(")\n{")[0]
    assert " ".join(sig.split()).endswith("long long ws_split, int* __restrict__ tile_count")
    assert "float* wp_ = ws + (long long)tile * 2048 + tid;" in src      # 8 values x 256
    i_store = src.index("wp_[256] = acc[0][1];")
    i_fence = src.index("__threadfence();", i_store)
    i_bar = src.index("named_barrier_sync(1u, 256u);", i_fence)
    i_cnt = src.index("atomicAdd(tile_count + tix_, 1) == splits_k - 1;", i_bar)
    i_red = src.index("last_ = named_barrier_red_or(1u, 256u, last_);", i_cnt)
    i_sum = src.index("for (int s = 0; s < splits_k; ++s)", i_red)
    i_d = src.index("dp[0] = f32_to_f16_bits(x);", i_sum)
    assert i_store < i_fence < i_bar < i_cnt < i_red < i_sum < i_d
    assert "if (last_) {\n            tile_count[tix_] = 0;" in src
    assert "if (!last_) {\n          continue;" in src
    assert "fx_[7] += __ldcg(q_ + 1792);" in src and "if (splits_k > 1) {" in src
    assert "const float* b_ = ws + (long long)(tile - split_) * 2048 + tid;" in src
    # the separate-reduce modes have neither the counter nor the epilogue
    ws = G.generate_source(NEW_CONFIGS[0])
    assert "tile_count" not in ws and "f32_to_f16_bits" not in ws.split("-- epilogue --")[1]
    lay = SK.splitk_layout(cfg, 4096, 16, 1, 4)
    assert lay.elements == 32 * 4 * 8 * 256                  # a slot per unit
    assert lay.counters == 32 and SK.splitk_layout(NEW_CONFIGS[0], 4096, 16, 1, 4).counters == 0
    with pytest.raises(LaunchError, match="tile_count"):
        SK.splitk_extra_args(cfg, _FakeWs(lay.elements), 4, 4096, 16)

    class _Cnt:
        def __init__(self, n):
            self.data = type("P", (), {"ptr": 4096})()
            self.nbytes, self.dtype = 4 * n, np.dtype(np.int32)
    args = SK.splitk_extra_args(cfg, _FakeWs(lay.elements), 4, 4096, 16, tile_count=_Cnt(32))
    assert [n for n, _ in args] == list(SK.EXTRA_PARAMS + SK.FIXUP_PARAMS)
    with pytest.raises(LaunchError, match="tile_count"):
        SK.splitk_extra_args(cfg, _FakeWs(lay.elements), 4, 4096, 16, tile_count=_Cnt(31))


def test_config_rules():
    with pytest.raises(LaunchError, match="split_k"):
        G.Sm90GemmConfig(split_k="tree").check()
    G.Sm90GemmConfig(128, 8).check()        # the built-in epilogue takes any wgmma N: n8
    G.Sm90GemmConfig(128, 48).check()       # (an 8-row B tile: the descriptor's SBO is unused)
    with pytest.raises(LaunchError, match="tile_n"):
        G.Sm90GemmConfig(128, 20).check()
    with pytest.raises(LaunchError, match="tile_n"):
        G.Sm90GemmConfig(128, 264, consumer_wgs=1).check()
    with pytest.raises(LaunchError, match="b_major"):
        G.Sm90GemmConfig(128, 16, b_major="MN").check()
    with pytest.raises(LaunchError, match="cluster_m"):          # 12-row B slices
        G.Sm90GemmConfig(128, 24, cluster_m=2).check()
    with pytest.raises(LaunchError, match="split_k"):
        G.Sm90GemmConfig(64, 256, stages=4, schedule="pingpong", split_k="workspace").check()
    with pytest.raises(LaunchError, match="has_c"):
        G.Sm90GemmConfig(split_k="workspace", has_c=True).check()
    with pytest.raises(LaunchError, match="split_k"):          # 128 accumulators + sums spill
        G.Sm90GemmConfig(split_k="fixup").check()
    G.Sm90GemmConfig(128, 128, 64, 6, split_k="fixup", has_c=True).check()
    with pytest.raises(LaunchError, match="transpose_d"):
        G.Sm90GemmConfig(transpose_d=True, epi=G.make_epilogue_config()).check()
    with pytest.raises(LaunchError, match="tile_n"):                 # EVT path: 64..256 only
        G.make_epilogue_config(None, 128, 16)
    with pytest.raises(LaunchError, match="tile_n"):
        G.Sm90GemmConfig(128, 16, epi=G.make_epilogue_config()).check()
    assert G.Sm90GemmConfig(128, 16, stages=8).smem_bytes() < 227 * 1024


@pytest.mark.parametrize("tile_n", [16, 32])
def test_narrow_fragment_and_maps_from_algebra(tile_n):
    cfg = G.Sm90GemmConfig(128, tile_n, 64, 8, 2, "f16")
    maps = derive_maps(cfg)
    table = fragment_from_clayout(tile_n, 2, 64)
    fr = maps.frag
    assert fr.num_values == tile_n // 2
    for t in range(fr.num_threads):
        for v in range(fr.num_values):
            assert fr.coord(t, v) == table[t][v]
    assert maps.atom_b.box == (64, tile_n, 1)             # one (K 64, N tile_n) box per stage
    assert (maps.sbo_b, maps.lbo_b) == (1024, 16)
    assert [maps.desc_b_offset(kk) for kk in range(4)] == [0, 32, 64, 96]


@pytest.mark.parametrize("kb,splits", [(1, 1), (64, 4), (31, 4), (5, 7), (32, 3), (1000, 13)])
def test_split_ranges_law(kb, splits):
    """Contiguous, disjoint, covering [0, kb), sizes differing by at most one."""
    rs = SK.split_ranges(kb, splits)
    assert rs[0][0] == 0 and rs[-1][1] == kb
    assert all(a[1] == b[0] for a, b in zip(rs, rs[1:]))
    sizes = [hi - lo for lo, hi in rs]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 0


class _FakeWs:
    """A float32 device-array stand-in (pointer, size)."""

    def __init__(self, n, ptr=1 << 20):
        self.data = type("P", (), {"ptr": ptr})()
        self.nbytes, self.dtype = 4 * n, np.dtype(np.float32)


def test_splitk_extra_args_and_layout():
    cfg = NEW_CONFIGS[0]                                   # transposed, workspace
    lay = SK.splitk_layout(cfg, 4096, 7, 1, 4)
    assert (lay.P, lay.Q, lay.ldw) == (7, 4096, 4096)
    assert lay.elements == 4 * 7 * 4096 and lay.ws_split == 7 * 4096
    assert lay.units == 32 * 1 * 4
    args = dict(SK.splitk_extra_args(cfg, _FakeWs(lay.elements), 4, 4096, 7))
    assert args["splits_k"].value == 4 and args["ldw"].value == 4096
    assert args["ws_split"].value == lay.ws_split and args["ws"].value == 1 << 20
    with pytest.raises(LaunchError, match="ws"):
        SK.splitk_extra_args(cfg, _FakeWs(lay.elements - 1), 4, 4096, 7)
    with pytest.raises(LaunchError, match="ws"):
        SK.splitk_extra_args(cfg, _FakeWs(lay.elements, ptr=8), 4, 4096, 7)
    with pytest.raises(LaunchError, match="splits"):
        SK.splitk_layout(cfg, 64, 64, 1, 0)
    assert SK.splitk_extra_args(G.SHIPPED_CONFIGS[0], None, 4, 64, 64) == []
    at = SK.splitk_layout(NEW_CONFIGS[5], 100, 9, 2, 5)
    assert at.ws_split == 0 and at.elements == 2 * 9 * 100     # one slice in atomic mode
    plain = SK.splitk_layout(NEW_CONFIGS[3], 33, 391, 1, 3)
    assert (plain.P, plain.Q, plain.ldw) == (33, 391, 392)


def _simulate_splitk(cfg, A, B, splits, L=1):
    """NumPy model of the kernel: every (tile, split) unit's accumulators (float32, the unit's
    k-block range) stored through the accumulator fragment by the epilogue's index formula
    into a workspace poisoned with NaN; returns (ws, layout, writes per element)."""
    _, M, K = A.shape
    N = B.shape[1]
    lay = SK.splitk_layout(cfg, M, N, L, splits)
    ws = np.full(lay.elements + 8, np.nan, np.float32)
    hits = np.zeros(lay.elements + 8, np.int32)
    fr = derive_maps(cfg).frag
    kbs = -(-K // 64)
    m_thr, n_thr = np.array(fr.m_thr), np.array(fr.n_thr)
    for l in range(L):
        for mb in range(-(-M // cfg.tile_m)):
            for nb in range(-(-N // cfg.tile_n)):
                for s, (lo, hi) in enumerate(SK.split_ranges(kbs, splits)):
                    a = A[l, :, 64 * lo:64 * hi].astype(np.float32)
                    b = B[l, :, 64 * lo:64 * hi].astype(np.float32)
                    for v in range(0, fr.num_values, 2):
                        r = mb * cfg.tile_m + m_thr + fr.m_val[v]
                        c = nb * cfg.tile_n + n_thr + fr.n_val[v]
                        for dc in (0, 1):
                            cc = c + dc
                            ok = (r < M) & (cc < N)
                            if dc == 0 and not cfg.transpose_d and cfg.split_k == "workspace":
                                # paired store: column c + 1 lands in the row's padding
                                assert np.all(cc[ok] + 1 < lay.ldw)
                            rr, cc = r[ok], cc[ok]
                            val = np.einsum("ik,ik->i", a[rr], b[cc]).astype(np.float32)
                            base = s * lay.ws_split + l * lay.ws_l
                            idx = base + (cc * lay.ldw + rr if cfg.transpose_d
                                          else rr * lay.ldw + cc)
                            if cfg.split_k == "atomic":
                                ws[idx] = np.where(hits[idx] == 0, 0, ws[idx]) + val
                            else:
                                ws[idx] = val
                            np.add.at(hits, idx, 1)
    return ws, lay, hits


@pytest.mark.parametrize("cfg_i,M,N,K,splits", [
    (0, 391, 7, 200, 3),      # swapped decode: kernel M = user N
    (0, 130, 16, 72, 2),
    (2, 200, 33, 130, 5),     # more splits than some tiles have k-blocks? (3 k-blocks, 5 splits)
    (3, 150, 131, 200, 4),    # plain (not transposed) workspace
    (5, 140, 9, 300, 3),      # atomic
])
def test_splitk_model_matches_reference(cfg_i, M, N, K, splits):
    """Through the fragment map and the documented layout, every workspace element (p < P,
    q < Q) of every split is written exactly once (atomic: once per split into one slice), and
    the reduce model gives alpha * A @ B^T + beta * C (transposed when swapped)."""
    cfg = NEW_CONFIGS[cfg_i]
    rng = np.random.default_rng(7)
    A = rng.standard_normal((1, M, K)).astype(np.float16)
    B = rng.standard_normal((1, N, K)).astype(np.float16)
    ws, lay, hits = _simulate_splitk(cfg, A, B, splits)
    P, Q = lay.P, lay.Q
    nsl = 1 if lay.ws_split == 0 else splits
    for s in range(nsl):
        blk = hits[s * lay.ws_split:s * lay.ws_split + P * lay.ldw].reshape(P, lay.ldw)
        assert np.all(blk[:, :Q] == (splits if nsl == 1 else 1))
        assert np.all(blk[:, Q:] == 0)
    C = rng.standard_normal((P, Q)).astype(np.float16)
    got = R.reference_reduce(ws, lay, alpha=1.5, C=C, beta=-0.5)[0]
    ref = A[0].astype(np.float64) @ B[0].astype(np.float64).T
    if cfg.transpose_d:
        ref = ref.T
    ref = 1.5 * ref - 0.5 * C.astype(np.float64)
    assert np.allclose(got, ref, rtol=1e-4, atol=1e-3 * np.sqrt(K))


def test_reduce_source_and_order():
    src = R.generate_reduce_source(R.SplitKReduceConfig("bf16", True, True, True))
    assert "for (int k = 1; k < splits; ++k)" in src           # the fixed order
    assert "make_float4(0.f, 0.f, 0.f, 0.f)" in src             # rezero
    assert "f32_to_bf16_bits" in src and "*reinterpret_cast<uint2*>(dp) = v;" in src
    plain = R.generate_reduce_source(R.SplitKReduceConfig("f16", False, False, False))
    assert "uint2" not in plain and "beta" in plain and "cp[" not in plain
    # the model sums in split order: (w0 + w1) + w2 differs from w0 + (w1 + w2) here
    lay = SK.SplitKLayout(1, 1, 1, 3, 4, 4, 4, 12, 3)
    ws = np.array([1e8, 0, 0, 0, -1e8, 0, 0, 0, 1.0, 0, 0, 0], np.float32)
    assert R.reference_reduce(ws, lay)[0, 0, 0] == np.float32(1.0)


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("has_c,vec,rezero", [(False, True, False), (True, False, True)])
def test_reduce_kernel_compiles_zero_spills(dt, has_c, vec, rezero):
    from cute_py.backends.cuda.compiler import compile_module
    cfg = R.SplitKReduceConfig(dt, has_c, vec, rezero)
    src = R.generate_reduce_source(cfg)
    for arch in ("sm_90a", "sm_80"):
        res = compile_module(src, arch=arch).resources_for(cfg.name)
        assert res.spills == 0 and res.stack_frame == 0, res


def test_every_wgmma_n_has_a_header_wrapper():
    """The PTX library wraps wgmma for every N of 16-bit inputs (multiples of 8 up to 256):
    narrow tiles call the header, no wrapper is generated with the kernel."""
    from cute_py.backends.cuda import ptx
    from cute_py.backends.cuda.kernels.gemm_sm90_ptxgen import WGMMA_N
    assert WGMMA_N == tuple(range(8, 257, 8))
    for n in WGMMA_N:
        for ab in ("f16", "bf16"):
            for kind in ("ss", "rs"):
                assert ptx.FUNCTIONS[f"wgmma_m64n{n}k16_f32_{ab}_{kind}"] == "ptx_sm90.cuh"
    src = G.generate_source(NEW_CONFIGS[0])
    assert "asm" not in src and "wgmma_m64n16k16_f32_f16_ss<0, 0>(acc[0]" in src


# --------------------------------------------------------------------------- heuristic

from cute_py.backends.cuda.kernels import gemm_sm90_heuristic as H  # noqa: E402
from cute_py.backends.cuda.kernels.gemm_sm90_heuristic import choose_sm90  # noqa: E402


@pytest.mark.parametrize("M,N,K,swap,tile_n,splits", [
    (1, 4096, 4096, False, 32, 1),       # swapped 64x16 tiles would split: one wave of 64x32
    (16, 4096, 4096, False, 32, 1),
    (32, 4096, 4096, False, 32, 1),
    (16, 4096, 14336, True, 16, 2),      # B of 112 MiB (DRAM-bound): swapped, split x2
    (16, 1024, 8192, True, 16, 8),       # one-wave tiles narrower than 32: swapped split
    (8, 2048, 2048, True, 16, 4),
    (33, 4096, 4096, False, 32, 1),      # above SWAP_MAX_M: 128 64x32 tiles, one wave
    (64, 4096, 4096, False, 32, 1),
    (64, 11008, 4096, False, 88, 1),     # 126 64x88 tiles
    (64, 2048, 4096, False, 64, 4),      # one-wave tiles narrower than 32: the rule's split
    (128, 4096, 4096, False, 64, 1),     # 128 64x64 tiles fill the SMs: no split
    (16, 28672, 4096, True, 16, 1),
    (1, 4096, 72, True, 16, 1),          # 2 k-blocks: nothing to split
    (1024, 1024, 1024, False, 128, 1),   # 128 ping-pong 64x128 tiles
    (64, 64, 4096, False, 64, 8),        # one 64x64 tile, 64 k-blocks: split x8
])
def test_choose_sm90_table(M, N, K, swap, tile_n, splits):
    c = choose_sm90(M, N, K)
    assert (c.swap, c.cfg.tile_n, c.splits) == (swap, tile_n, splits)
    assert c.units == c.tiles * c.splits and (splits == 1 or c.units <= 132)
    assert c.cfg.schedule == ("pingpong" if (M, N, K) == (1024, 1024, 1024) else "cooperative")
    assert c.cfg.transpose_d == swap and c.cfg.splits == (splits > 1)
    assert c.cfg.split_k in ("none", H.DEFAULT_SPLIT_MODE)
    assert str(c).startswith(f"sm90 {c.cfg.schedule}") and "--" in str(c)
    assert c == choose_sm90(M, N, K)                                  # pure, hashable
    assert hash(c) == hash(choose_sm90(M, N, K))
    if splits > 1:
        assert c.workspace_elements(M, N) > 0


def test_fill_beats_split_law():
    """A problem rule 1 would swap runs unswapped one-wave tiles exactly when the swapped
    tiles would split K, those tiles fit (K-major A, width in [FILL_MIN_TN, 256]) and B has
    at most FILL_OVER_SPLIT_MAX_B_BYTES; the unswapped tiles load only A's M rows."""
    for M in (1, 3, 8, 16, 24, 32):
        for N, K in ((4096, 4096), (2048, 2048), (4096, 14336), (1024, 8192), (8192, 2048)):
            for am, bm in (("K", "K"), ("K", "MN"), ("MN", "K")):
                c = choose_sm90(M, N, K, a_major=am, b_major=bm)
                sw = choose_sm90(M, N, K, a_major=am, b_major=bm, allow_split=False)
                fill = H.fill_tile_n(N, bm)
                want = (choose_sm90(M, N, K, a_major=am, b_major=bm, allow_split=True).swap
                        is False)
                split_if_swapped = H._split_count(
                    -(-N // sw.cfg.tile_m) * -(-M // sw.cfg.tile_n), -(-K // 64), 132) > 1
                assert want == (split_if_swapped and am == "K" and
                                H.FILL_MIN_TN <= fill <= 256 and
                                N * K * 2 <= H.FILL_OVER_SPLIT_MAX_B_BYTES), (M, N, K, am, bm)
                if not c.swap:
                    assert c.cfg.a_rows == -(-M // 8) * 8 and c.splits == 1
                    assert "not swapped" in c.reason


def test_fill_tiles_load_only_the_rows_of_a():
    """The one-wave tiles of 33 <= M < 64 rows load M rounded up to 8 rows of a K-major A
    (none of an MN-major one: its smem atoms span 64 rows)."""
    for M in (33, 40, 48, 56, 57, 63, 64):
        c = choose_sm90(M, 4096, 4096)
        assert c.cfg.a_rows == (-(-M // 8) * 8 if M <= 56 else 0), M
        assert choose_sm90(M, 4096, 4096, a_major="MN").cfg.a_rows == 0
        c.cfg.check()


def test_choose_sm90_swapped_64_row_tiles():
    """Swapped problems take 64-row tiles (one consumer warpgroup) when those fit one wave,
    else 128-row tiles; an M-contiguous A (64-wide swapped tiles) keeps 128 rows."""
    for (M, N, K), (tm, splits) in {(16, 6144, 4096): (64, 1), (8, 4096, 14336): (64, 2),
                                    (32, 8448, 4096): (64, 1), (32, 8512, 4096): (128, 1),
                                    (16, 11008, 4096): (128, 1), (1, 28672, 8192): (128, 1)
                                    }.items():
        c = choose_sm90(M, N, K)
        assert c.swap and (c.cfg.tile_m, c.cfg.consumer_wgs, c.splits) == \
            (tm, tm // 64, splits), (M, N, K, str(c))
        assert c.tiles == -(-N // tm) and (tm == 128 or c.tiles <= 132)
    c = choose_sm90(16, 6144, 4096, a_major="MN")
    assert (c.cfg.tile_m, c.cfg.tile_n) == (128, 64)
    assert choose_sm90(16, 6144, 4096, num_sms=64).cfg.tile_m == 128    # 96 > 64 SMs


def test_fill_tile_n_law():
    """The one-wave width: its tiles fit the SMs, the next narrower step does not; an
    N-contiguous B takes 32-multiples (SW64 atoms) and the config check accepts them."""
    for N in (1000, 4096, 6144, 11008, 14336, 28672, 33000):
        for bm, step in (("K", 8), ("MN", 32)):
            tn = H.fill_tile_n(N, bm)
            assert tn % step == 0 and -(-N // tn) <= 132
            assert tn == step or -(-N // (tn - step)) > 132
    c = choose_sm90(64, 11008, 4096, b_major="MN")
    assert (c.cfg.tile_n, c.cfg.smem_swizzle, c.tiles) == (96, (3, 2), 115)
    c = choose_sm90(48, 28672, 8192, a_major="MN")
    assert (c.cfg.tile_m, c.cfg.tile_n, c.cfg.consumer_wgs, c.tiles) == (64, 224, 1, 128)
    assert choose_sm90(128, 11008, 4096).default_path              # M = 128: the rule
    assert choose_sm90(64, 11008, 4096, L=2).cfg.tile_n == 64       # batched: the rule
    with pytest.raises(LaunchError, match="b_major"):
        G.Sm90GemmConfig(64, 96, 64, 4, 1, b_major="MN").check()           # SW128: 64-wide rows
    for kw, arg in ((dict(N=0), "N"), (dict(b_major="N"), "b_major"),
                    (dict(num_sms=0), "num_sms")):
        with pytest.raises(LaunchError) as e:
            H.fill_tile_n(**{"N": 4096, "b_major": "K", **kw})
        assert e.value.arg == arg


def test_choose_sm90_rules():
    big = choose_sm90(4096, 4096, 4096)
    assert big.default_path and big.cfg is None and "default" in str(big)
    assert choose_sm90(16, 4096, 14336, deterministic=False).cfg.split_k == "atomic"
    fx = choose_sm90(16, 4096, 14336, split_mode="fixup")
    assert fx.cfg.split_k == "fixup" and "last unit" in fx.reason
    with pytest.raises(LaunchError, match="split_mode"):
        choose_sm90(16, 4096, 14336, split_mode="atomic")
    sk = choose_sm90(4096, 4096, 4096, stream_k=True)
    assert sk.cfg.stream_k and sk.tiles == 1024 and "stream-K" in str(sk)
    assert not choose_sm90(16, 4096, 4096, stream_k=True).cfg.stream_k     # decode: swap
    # M-contiguous A as the kernel's B: no 16-wide tile
    c = choose_sm90(16, 4096, 4096, a_major="MN")
    assert c.cfg.tile_n == 64 and c.cfg.b_major == "MN" and "M-contiguous" in c.reason
    # the kernel's A is the user's B: its major travels with it
    assert choose_sm90(16, 4096, 14336, b_major="MN").cfg.a_major == "MN"
    assert not choose_sm90(16, 4096, 4096, allow_swap=False).swap
    assert choose_sm90(16, 4096, 4096, allow_split=False).splits == 1
    assert choose_sm90(64, 64, 4096).swap is False                     # N < 2M: no swap
    assert choose_sm90(16, 4096, 14336, num_sms=32).splits == 1        # the tiles fill 32 SMs
    with pytest.raises(LaunchError, match="M"):
        choose_sm90(0, 4, 4)
    with pytest.raises(LaunchError, match="dtype"):
        choose_sm90(4, 4, 4, dtype="f32")
    with pytest.raises(LaunchError, match="b_major"):
        choose_sm90(4, 4, 4, b_major="N")


# --------------------------------------------------------------------------- stream-K

from cute_py.backends.cuda.kernels import gemm_sm90_streamk as STK  # noqa: E402

STREAMK_CONFIGS = (
    G.Sm90GemmConfig(128, 128, 64, 6, 2, "f16", stream_k=True),
    G.Sm90GemmConfig(128, 128, 64, 6, 2, "bf16", stream_k=True, has_c=True, vec2=False,
                     a_major="MN", b_major="MN"),
    G.Sm90GemmConfig(128, 64, 64, 8, 2, "f16", stream_k=True, transpose_d=True),
    G.Sm90GemmConfig(128, 32, 64, 8, 2, "f16", stream_k=True, transpose_d=True, has_c=True),
)


@pytest.mark.parametrize("cfg", STREAMK_CONFIGS, ids=lambda c: c.name)
def test_streamk_configs_compile_sm90a_zero_spills(cfg):
    from cute_py.backends.cuda.compiler import compile_module
    src = G.generate_source(cfg)
    mod = compile_module(src, arch="sm_90a")
    res = mod.resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert "C7508" not in mod.log
    assert compile_module(src, arch="sm_80").resources_for(cfg.name).spills == 0


def test_streamk_128_accumulators_compile_without_spills():
    # the tail adds the heads' partials into its own accumulators (no second array of sums):
    # 128x256 stream-K tiles fit the consumer's registers
    from cute_py.backends.cuda.compiler import compile_module
    cfg = G.Sm90GemmConfig(stream_k=True)
    cfg.check()
    src = G.generate_source(cfg)
    assert "sk_sum_" not in src
    res = compile_module(src, arch="sm_90a").resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res


def test_streamk_rules_and_source():
    with pytest.raises(LaunchError, match="stream_k"):
        G.Sm90GemmConfig(128, 128, stages=6, stream_k=True, split_k="workspace").check()
    with pytest.raises(LaunchError, match="stream_k"):
        G.Sm90GemmConfig(128, 128, stages=6, stream_k=True, cluster_m=2).check()
    cfg = STREAMK_CONFIGS[0]
    assert "_stk" in cfg.name and "stream_k=True" in repr(cfg)
    src = G.generate_source(cfg)
    sig = src.split(f"{cfg.name}(")[1].split(")\n{")[0]
    assert " ".join(sig.split()).endswith("float* __restrict__ ws, int* __restrict__ sk_flags, "
                                 "int sk_tiles")
    assert "const int first_tile = 0;" in src and "const int tile_step = 1;" in src
    assert "const int s_ = (long long)sk_last_ - (tile - n_dp_);" in src   # last tile first
    assert "cute_sk_cta_of" not in src                  # the CTA-of map is lowered IR
    i_head = src.index("if (kb_hi_ < k_blocks) {")
    i_rel = src.index("st_release_gpu_b32(sk_flags + blockIdx.x, 1);", i_head)
    i_tail = src.index("if (kb_lo_ > 0) {", i_rel)
    i_acq = src.index("while (ld_acquire_gpu_b32(sk_flags + c) == 0) { }", i_tail)
    i_store = src.index("pack_f16x2", i_acq)
    assert i_head < i_rel < i_tail < i_acq < i_store


def _streamk_composed():
    """Stream-K with the TMA-store EVT epilogue (store warp; with C, the epilogue's load
    producer) and with FP8 (promoted per-tensor / row-wise, block scaling, fast accumulation;
    the EVT or the built-in epilogue)."""
    from cute_py.backends.cuda import scaled_mm_api as S
    evt = [dataclasses.replace(G.default_evt_config(dt, 256, c, rows_128=False), stream_k=True)
           for dt, c in (("f16", False), ("bf16", True))]
    fp8 = [S.choose_fp8_config(4096, 4096, 4096, "e4m3", "e4m3", out, mode, True, 132, fast,
                               tma, stream_k=True)
           for mode, fast, out, tma in (("tensor", False, "bf16", True),
                                        ("row", False, "f32", False),
                                        ("block", False, "bf16", True),
                                        ("tensor", True, "f16", False))]
    return evt + fp8


def test_streamk_composes_with_the_evt_epilogue_and_fp8():
    """Stream-K runs under any epilogue: heads leave their partial (``tot_`` in promoting FP8
    kernels) before the tile's epilogue, and the loops that only serve finished tiles (the
    store warp, the epilogue's load producer) skip the heads, so they meet the consumers on
    the same tiles.  Each configuration compiles for sm_90a without spills.  Still refused:
    ping-pong and clusters (``test_streamk_rules_and_source``)."""
    from cute_py.backends.cuda.compiler import compile_module, has_compiler
    cfgs = _streamk_composed()
    assert any(c.store_warp_id() for c in cfgs) and any(c.epi is None for c in cfgs)
    for cfg in cfgs:
        cfg.check()
        assert cfg.stream_k and cfg.cluster_m == 1, cfg.name
        src = G.generate_source(cfg)
        acc = "tot_" if cfg.fp8 and (cfg.scaling == "block" or cfg.promote) else "acc"
        i_head = src.index("// stream-K head piece")
        assert f"wp_[0] = {acc}[0][0];" in src[i_head:i_head + 400], cfg.name
        i_tail = src.index("// stream-K tail piece", i_head)
        assert f"{acc}[0][0] += __ldcg(pp_ + 0);" in src[i_tail:], cfg.name
        # the consumers' tile loop is the last one: every loop before it (producer, store
        # warp, epilogue producer) that serves only finished tiles skips the heads
        loops = src.split("for (int tile = first_tile; tile < num_tiles; tile += tile_step)")
        serving = (cfg.store_warp_id() is not None) + (cfg.epi is not None and
                                                       cfg.epilogue().has_producer)
        skips = sum("if (kb_hi_ < k_blocks) {\n" in lp.split("for (int kb")[0]
                    for lp in loops[1:-1])
        assert len(loops) == 3 + serving and skips == serving, cfg.name
        if has_compiler():
            res = compile_module(src, arch="sm_90a").resources_for(cfg.name)
            assert res.spills == 0 and res.stack_frame == 0, (cfg.name, res)


@pytest.mark.parametrize("tiles,kb,grid,sk", [
    (512, 64, 132, None), (512, 64, 132, 512), (30, 64, 132, None), (7, 3, 16, None),
    (300, 5, 132, None), (133, 64, 132, None), (1, 64, 132, 1), (264, 10, 132, 132)])
def test_streamk_schedule_law(tiles, kb, grid, sk):
    """Every (tile, k-block) is computed exactly once; each stream-K tile has exactly one piece
    that reaches its last k-block (the tail, which stores D) and its other pieces are heads held
    by the CTAs cta_of(first) .. cta_of(kb_lo - 1), all lower than the tail's CTA, each of them
    that CTA's first stream-K piece (computed before anything it waits for): no wait chains."""
    cfg = STREAMK_CONFIGS[0]
    lay = STK.streamk_layout(cfg, tiles * 128, 128, kb * 64, 1, grid, sk)
    assert lay.dp_tiles % grid == 0 and lay.dp_tiles + lay.sk_tiles == tiles
    seen = np.zeros((tiles, kb), np.int32)
    pieces_of = {}
    first_sk = {}
    for c in range(grid):
        ps = STK.streamk_pieces(lay, c)
        n_dp = len(range(c, lay.dp_tiles, grid))
        assert n_dp == lay.dp_tiles // grid                     # balanced data-parallel part
        for i, (t, lo, hi) in enumerate(ps):
            assert 0 <= lo < hi <= kb
            seen[t, lo:hi] += 1
            pieces_of.setdefault(t, []).append((lo, hi, c))
            if i == n_dp:
                first_sk[c] = (t, lo, hi)
            if hi < kb:                                          # a head: the CTA's first SK piece
                assert i == n_dp
    assert np.all(seen == 1)
    for t, ps in pieces_of.items():
        tails = [p for p in ps if p[1] == kb]
        assert len(tails) == 1
        lo, _, c = tails[0]
        if lo > 0:
            t0 = (t - lay.dp_tiles) * kb
            c0, c1 = STK.cta_of(lay, t0), STK.cta_of(lay, t0 + lo - 1)
            heads = sorted((p for p in ps if p[1] < kb), key=lambda p: p[0])
            assert [h[2] for h in heads] == list(range(c0, c1 + 1))
            assert c1 < c and heads[-1][1] == lo and heads[0][0] == 0


def test_streamk_model_matches_reference():
    """NumPy model: pieces' partials (float32), heads summed in k order then the tail's own,
    equal the float64 product; the same order twice is bit-identical."""
    cfg = STREAMK_CONFIGS[0]
    rng = np.random.default_rng(1)
    tiles, kb, grid = 11, 7, 4
    A = rng.standard_normal((tiles, kb * 64)).astype(np.float16).astype(np.float32)
    B = rng.standard_normal((kb * 64,)).astype(np.float16).astype(np.float32)
    lay = STK.streamk_layout(cfg, tiles * 128, 128, kb * 64, 1, grid)

    def run():
        slots, out = {}, {}
        for c in range(grid):
            for t, lo, hi in STK.streamk_pieces(lay, c):
                part = np.float32(A[t, 64 * lo:64 * hi] @ B[64 * lo:64 * hi])
                if hi < kb:
                    slots[c] = part
                    continue
                if lo > 0:
                    t0 = (t - lay.dp_tiles) * kb
                    cs = range(STK.cta_of(lay, t0), STK.cta_of(lay, t0 + lo - 1) + 1)
                    s = None
                    for cc in cs:
                        s = slots[cc] if s is None else np.float32(s + slots[cc])
                    part = np.float32(s + part)
                out[t] = part
        return np.array([out[t] for t in range(tiles)])
    got = run()
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert np.allclose(got, ref, rtol=1e-4, atol=1e-2)
    assert np.array_equal(got, run())


def test_streamk_layout_and_args():
    cfg = STREAMK_CONFIGS[0]
    lay = STK.streamk_layout(cfg, 4096, 4096, 4096, 1, 132)   # 1024 tiles: 7 waves
    assert lay.tiles == 1024 and lay.sk_tiles == 1024 - 6 * 132 and lay.dp_tiles == 792
    assert lay.ws_elements == 132 * 64 * 256 and lay.flags == 132
    with pytest.raises(LaunchError, match="sk_tiles"):
        STK.streamk_layout(cfg, 4096, 4096, 4096, 1, 132, sk_tiles=1000)
    with pytest.raises(LaunchError, match="cfg"):
        STK.streamk_layout(G.SHIPPED_CONFIGS[3], 64, 64, 64, 1, 132)

    class _I32:
        def __init__(self, n):
            self.data = type("P", (), {"ptr": 4096})()
            self.nbytes, self.dtype = 4 * n, np.dtype(np.int32)
    args = STK.streamk_extra_args(cfg, lay, _FakeWs(lay.ws_elements), _I32(132))
    assert [n for n, _ in args] == list(STK.STREAMK_PARAMS) and args[2][1].value == lay.sk_tiles
    with pytest.raises(LaunchError, match="sk_flags"):
        STK.streamk_extra_args(cfg, lay, _FakeWs(lay.ws_elements), _I32(131))


# --------------------------------------------------------------------------- the generated
# scheduler text, run as host C++: the pieces / units it computes are the Python models'


def _lines_in(part: str, src: str) -> bool:
    """The lines of ``part`` occur consecutively in ``src`` (indentation aside)."""
    strip = lambda t: "\n".join(ln.strip() for ln in t.split("\n") if ln.strip())  # noqa: E731
    return strip(part) in strip(src)


def _run_host_cpp(body: str) -> str:
    import shutil
    import subprocess
    import tempfile
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    src = ("#include <cstdio>\n#include <algorithm>\nusing std::min; using std::max;\n"
           "struct Dim3_ { unsigned x; };\nint main() {\n" + body + "\n  return 0;\n}\n")
    with tempfile.TemporaryDirectory() as d:
        import os
        cpp, exe = os.path.join(d, "s.cpp"), os.path.join(d, "s")
        with open(cpp, "w") as f:
            f.write(src)
        subprocess.run(["g++", "-std=c++17", "-O1", "-w", cpp, "-o", exe], check=True)
        return subprocess.run([exe], check=True, capture_output=True, text=True).stdout


def _loop_cpp(cfg, M, N, K, L, grid, sched, extra_decl):
    return f"""  const int M = {M}, N = {N}, K = {K}, L = {L};
  {extra_decl}
  for (unsigned b_ = 0; b_ < {grid}u; ++b_) {{
    const Dim3_ blockIdx{{b_}}, gridDim{{{grid}u}};
    const int num_m = (M + {cfg.tile_m - 1}) / {cfg.tile_m};
    const int num_n = (N + {cfg.tile_n - 1}) / {cfg.tile_n};
    {sched}
    const int k_blocks = (K + 63) / 64;
    for (int tile = first_tile; tile < num_tiles; tile += tile_step) {{
      int m_blk, n_blk, l_; int kb_lo_, kb_hi_, split_, ktile_ = -1;
      {{ {G._tile_coord_code(cfg)}
      }}
      printf("%u %d %d %d %d %d %d %d\\n", b_, tile, ktile_, kb_lo_, kb_hi_, split_, m_blk,
             n_blk);
    }}
  }}"""


@pytest.mark.parametrize("tiles_mn,K,grid,sk", [((8, 8), 1000, 132, None),
                                                ((32, 32), 4096, 132, None),
                                                ((16, 24), 520, 132, 252), ((3, 5), 200, 16, 15)])
def test_streamk_generated_scheduler_matches_model(tiles_mn, K, grid, sk):
    cfg = STREAMK_CONFIGS[0]
    M, N = tiles_mn[0] * 128 - 5, tiles_mn[1] * 128 - 3
    lay = STK.streamk_layout(cfg, M, N, K, 1, grid, sk)
    sched = STK.schedule_code(cfg.tile_m, cfg.tile_n, cfg.tile_k)
    src = G.generate_source(cfg)
    assert _lines_in(sched, src) and _lines_in(G._tile_coord_code(cfg), src)
    out = _run_host_cpp(_loop_cpp(cfg, M, N, K, 1, grid, sched,
                                  f"const int sk_tiles = {lay.sk_tiles};"))
    got = {}
    cover = set()
    for line in out.split("\n"):
        if line:
            b, _, t, lo, hi, _, m, n = map(int, line.split())
            got.setdefault(b, []).append((t, lo, hi))
            cover.add((t, m, n))
    for b in range(grid):
        assert got.get(b, []) == STK.streamk_pieces(lay, b)
    # the raster maps the tiles one-to-one onto (m_blk, n_blk)
    mn = {(m, n) for _, m, n in cover}
    assert len(mn) == lay.tiles == len({t for t, _, _ in cover})
    assert mn == {(m, n) for m in range(tiles_mn[0]) for n in range(tiles_mn[1])}


@pytest.mark.parametrize("M,N,K,splits,grid", [(4096, 16, 4096, 4, 132), (391, 7, 2000, 5, 132),
                                               (1000, 300, 130, 3, 16)])
def test_splitk_generated_units_match_model(M, N, K, splits, grid):
    cfg = NEW_CONFIGS[0] if N <= 16 else NEW_CONFIGS[3]
    src = G.generate_source(cfg)
    sched = G._sched_code(cfg)      # the tile scheduler's unit count and persistent loop
    assert "num_n * L * splits_k;" in sched and _lines_in(sched, src)
    out = _run_host_cpp(_loop_cpp(cfg, M, N, K, 1, grid, sched,
                                  f"const int splits_k = {splits};"))
    kb = -(-K // 64)
    seen = {}
    for line in out.split("\n"):
        if line:
            b, u, _, lo, hi, s, m, n = map(int, line.split())
            assert u % grid == b and s == u % splits
            assert (lo, hi) == SK.split_ranges(kb, splits)[s]
            seen.setdefault((m, n), []).append(s)
    lay = SK.splitk_layout(cfg, M, N, 1, splits)
    assert sum(len(v) for v in seen.values()) == lay.units
    assert all(sorted(v) == list(range(splits)) for v in seen.values())
    assert len(seen) == -(-M // cfg.tile_m) * -(-N // cfg.tile_n)


_HOST_PRELUDE = r"""
#include <cstdio>
#include <cstring>
#include <vector>
typedef unsigned short u16; typedef unsigned u32;
struct float4 { float x, y, z, w; };
struct uint2 { u32 x, y; };
struct Dim3_ { unsigned x; };
static float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static u16 f32_to_f16_bits(float f) { _Float16 h = (_Float16)f; u16 r; memcpy(&r, &h, 2); return r; }
static float f16_bits_to_f32(u16 b) { _Float16 h; memcpy(&h, &b, 2); return (float)h; }
static u16 f32_to_bf16_bits(float f) {   // round to nearest even (finite inputs)
  u32 u; memcpy(&u, &f, 4); u += 0x7fffu + ((u >> 16) & 1u); return (u16)(u >> 16); }
static float bf16_bits_to_f32(u16 b) { u32 u = (u32)b << 16; float f; memcpy(&f, &u, 4); return f; }
"""


@pytest.mark.parametrize("dt,has_c,vec,rezero", [("f16", False, True, False),
                                                  ("bf16", True, False, True),
                                                  ("f16", True, True, False)])
@pytest.mark.parametrize("P,Q,L,S", [(7, 391, 1, 5), (33, 16, 2, 3), (1, 4096, 1, 4)])
def test_reduce_kernel_body_as_host_cpp(dt, has_c, vec, rezero, P, Q, L, S):
    """The generated reduce kernel's body, run for every (block, thread) as host C++ (16-bit
    conversions by the compiler's round-to-nearest-even), equals the NumPy model rounded to
    16 bits, writes only D's elements (a poisoned padding column stays), and re-zeroes."""
    import os
    import shutil
    import subprocess
    import tempfile
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    cfg = R.SplitKReduceConfig(dt, has_c, vec, rezero)
    src = R.generate_reduce_source(cfg)
    params = src.split(f"{cfg.name}(")[1].split(")\n{")[0]
    body = src.split(")\n{", 1)[1].rsplit("}", 1)[0]
    lay = SK.SplitKLayout(P, Q, L, S, -(-Q // 4) * 4, P * (-(-Q // 4) * 4),
                          L * P * (-(-Q // 4) * 4), L * P * (-(-Q // 4) * 4) * S, 0)
    rng = np.random.default_rng(P + Q)
    ws = rng.standard_normal(lay.elements).astype(np.float32)
    pitch = Q + 4                                    # D rows padded, one poisoned column
    Cm = rng.standard_normal((L, P, Q)).astype(np.float16 if dt == "f16" else np.float32)
    Cbits = Cm.view(np.uint16) if dt == "f16" else \
        (Cm.view(np.uint32) >> 16).astype(np.uint16)
    Cf = Cbits.view(np.float16).astype(np.float32) if dt == "f16" else \
        (Cbits.astype(np.uint32) << 16).view(np.float32)
    grid = min(-(-(L * P * -(-Q // 4)) // 256), 8192)
    main = f"""
static void kernel_(Dim3_ blockIdx, Dim3_ threadIdx, Dim3_ gridDim, {params}) {{
{body}
}}
int main(int argc, char** argv) {{
  std::vector<float> ws({lay.elements});
  std::vector<u16> C({L * P * Q}), D({L * P * pitch}, 0xffffu);
  FILE* f = fopen(argv[1], "rb");
  fread(ws.data(), 4, ws.size(), f); fread(C.data(), 2, C.size(), f); fclose(f);
  for (unsigned b = 0; b < {grid}u; ++b)
    for (unsigned t = 0; t < 256u; ++t)
      kernel_(Dim3_{{b}}, Dim3_{{t}}, Dim3_{{{grid}u}}, ws.data(), D.data(), C.data(), {P}, {Q},
              {L}, {S}, {lay.ldw}LL, {lay.ws_l}LL, {lay.ws_split}LL, {P * pitch}LL, {pitch}LL,
              1LL, {P * Q}LL, {Q}LL, 1LL, 1.5f, -0.25f);
  f = fopen(argv[2], "wb");
  fwrite(D.data(), 2, D.size(), f); fwrite(ws.data(), 4, ws.size(), f); fclose(f);
  return 0;
}}
"""
    with tempfile.TemporaryDirectory() as d:
        cpp, exe = os.path.join(d, "r.cpp"), os.path.join(d, "r")
        fin, fout = os.path.join(d, "in.bin"), os.path.join(d, "out.bin")
        with open(cpp, "w") as fh:
            fh.write(_HOST_PRELUDE + main)
        subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-ffp-contract=off", cpp, "-o", exe],
                       check=True)
        with open(fin, "wb") as fh:
            fh.write(ws.tobytes() + Cbits.tobytes())
        subprocess.run([exe, fin, fout], check=True)
        raw = open(fout, "rb").read()
    D = np.frombuffer(raw[:2 * L * P * pitch], np.uint16).reshape(L, P, pitch)
    ws_after = np.frombuffer(raw[2 * L * P * pitch:], np.float32)
    assert np.all(D[:, :, Q:] == 0xFFFF)                         # padding untouched
    ref = R.reference_reduce(ws, lay, alpha=1.5, C=Cf if has_c else None, beta=-0.25)
    if dt == "f16":
        want = ref.astype(np.float16).view(np.uint16)
    else:
        u = ref.view(np.uint32)
        want = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    assert np.array_equal(D[:, :, :Q], want)
    if rezero:
        sl = ws_after[:L * lay.ws_l].reshape(L, P, lay.ldw)
        assert np.all(sl == 0)
        assert np.array_equal(ws_after[L * lay.ws_l:], ws[L * lay.ws_l:])


@pytest.mark.parametrize("i,mma", [(0, "HGMMA.64x16x16.F32"), (10, "HGMMA.64x16x16.F32"),
                                   (1, "HGMMA.64x32x16.F32")])
def test_sass_narrow_hgmma_no_local_memory(i, mma):
    """The narrow wgmma reaches SASS as HGMMA.64x16 / 64x32, the fix-up's barrier-reduction as
    BAR.RED, and no local memory is used."""
    import os
    import shutil
    import subprocess
    import tempfile
    exe = shutil.which("cuobjdump")
    if exe is None or shutil.which("nvdisasm") is None:
        pytest.skip("cuobjdump/nvdisasm not installed")
    from cute_py.backends.cuda.compiler import compile_module
    cfg = NEW_CONFIGS[i]
    mod = compile_module(G.generate_source(cfg), arch="sm_90a")
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.cubin")
        open(p, "wb").write(mod.cubin)
        sass = subprocess.run([exe, "-sass", p], capture_output=True, text=True).stdout
    assert mma in sass and "UTMALDG" in sass
    assert "LDL" not in sass and "STL" not in sass
    if cfg.split_k == "fixup":
        assert "BAR.RED" in sass and "ATOMG" in sass


# --------------------------------------------------------------------------- a given config

_FORCED = (G.Sm90GemmConfig(128, 128, 64, 6, 2, "f16", split_k="fixup"),
           G.Sm90GemmConfig(128, 64, 64, 8, 2, "f16", split_k="atomic", vec2=False),
           G.Sm90GemmConfig(128, 128, 64, 6, 2, "f16", stream_k=True),
           G.Sm90GemmConfig(128, 16, 64, 8, 2, "bf16", transpose_d=True, vec2=False,
                            split_k="fixup"),
           G.Sm90GemmConfig(128, 32, 64, 8, 2, "f16", transpose_d=True, vec2=False))


@pytest.mark.parametrize("cfg", _FORCED, ids=lambda c: c.name)
@pytest.mark.parametrize("mnk", [(1, 1, 1), (9, 520, 2000), (200, 136, 64), (4096, 4096, 4096),
                                 (17, 33, 65)])
def test_forced_choice_law(cfg, mnk):
    """``forced_choice``: swapped exactly for ``transpose_d``; ``1 <= splits <= k-blocks``, 1
    unless the configuration splits (at least 2 where K has two k-blocks); units = tiles x
    splits; the configuration is the one given."""
    from cute_py.backends.cuda.kernels.gemm_sm90_heuristic import forced_choice
    M, N, K = mnk
    ch = forced_choice(cfg, M, N, K)
    kb = -(-K // cfg.tile_k)
    assert ch.cfg is cfg and ch.swap == cfg.transpose_d
    assert 1 <= ch.splits <= kb
    assert ch.splits == 1 or cfg.splits
    if cfg.splits and kb >= 2:
        assert ch.splits >= 2
    km, kn = (N, M) if ch.swap else (M, N)
    assert ch.tiles == -(-km // cfg.tile_m) * -(-kn // cfg.tile_n)
    assert ch.units == ch.tiles * ch.splits
    with pytest.raises(LaunchError, match="K"):
        forced_choice(cfg, M, N, 0)


def test_prepare_refuses_configs_that_need_a_workspace_or_a_swap():
    """``Sm90Gemm.prepare`` (one plan, no workspace) refuses split-K / stream-K / transposed-D
    configurations, pointing to ``cute_py.gemm(..., config=cfg)``; nothing is launched."""
    for cfg in _FORCED:
        g = G.Sm90Gemm(cfg)
        with pytest.raises(LaunchError, match=r"cute_py.gemm\(A, B, config=cfg\)") as e:
            g.prepare(None, None)
        assert e.value.arg == "cfg"


def test_config_tree_must_compute_the_call():
    """``gemm(..., config=cfg)`` with an EVT configuration: its tree reads C exactly when the
    call has one, has the alpha / beta scalars the call sets, and takes no other tensor."""
    from cute_py.backends.cuda.gemm_api import _check_config_tree
    from cute_py.epilogue import evt
    acc = evt.AccFetch()
    lin = evt.linear_combination(element_c="float16")
    _check_config_tree(acc, False, 1.0, 0.0)
    _check_config_tree(lin, True, 2.0, 0.5)
    for tree, use_c, a, b, arg in ((acc, True, 1.0, 1.0, "C"), (lin, False, 1.0, 0.0, "C"),
                                   (acc, False, 2.0, 0.0, "alpha"),
                                   (evt.add(acc, evt.SrcFetch("float16")), True, 1.0,
                                    0.5, "beta"),
                                   (evt.add(acc, evt.RowBroadcast("bias", "float16")), False,
                                    1.0, 0.0, "config")):
        with pytest.raises(LaunchError) as e:
            _check_config_tree(tree, use_c, a, b)
        assert e.value.op == "gemm" and e.value.arg == arg, str(e.value)
