"""CPU checks of the SM80 GEMM's index maps: lowered IR vs the algebra objects (no GPU).

Every map the kernel uses is lowered from an algebra object (``arch/sm80``); here the lowered
IR is evaluated with NumPy over all threads / values and compared with the object's own
evaluation, and a NumPy model of one CTA (``sm80_cta_model``) -- copy into smem, ``ldmatrix``
back at the generator's strength-reduced addresses, multiply per the MMA atom -- computes
``A @ B.T`` exactly.  Also: ldmatrix rows of one 8x8 matrix fall in distinct bank groups,
copy stores are conflict-free, config errors name the field.
"""

import itertools
import os
import sys

import numpy as np
import pytest

from cute_py.backends.cuda import ir
from cute_py.backends.cuda.arch.sm80 import copy as sm80_copy
from cute_py.backends.cuda.arch.sm80 import ldmatrix as sm80_ld
from cute_py.backends.cuda.arch.sm80 import smem as sm80_smem
from cute_py.backends.cuda.kernels.gemm_sm80 import (GemmSm80Config, _fragment_plan,
                                                     generate_source, _copy_affine, _CopyPlan)
from cute_py.backends.cuda.kernels.gemm_sm80_maps import log2i, smem_layout
from cute_py.backends.cuda.kernels.gemm_sm80_configs import shipped_configs, default_config
from cute_py.errors import AtomError

sys.path.insert(0, os.path.dirname(__file__))
from sm80_cta_model import simulate_cta  # noqa: E402


def _configs():
    seen, out = set(), []
    for c in shipped_configs():
        key = (c.dtype, c.a_major, c.b_major, c.tile, c.warps)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


CONFIGS = _configs()
_ID = (lambda c: f"{c.dtype}-{c.a_major}{c.b_major}-{c.tile[0]}x{c.tile[1]}x{c.tile[2]}-"
       f"w{c.warps[0]}x{c.warps[1]}")


def _lowered_offsets(L, R, BK):
    r = np.arange(R).reshape(R, 1)
    k = np.arange(BK).reshape(1, BK)
    node = sm80_smem.offset(L, ir.var("r", 0, R - 1), ir.var("k", 0, BK - 1))
    return np.broadcast_to(ir.evaluate(node, {"r": r, "k": k}), (R, BK))


@pytest.mark.parametrize("R,BK,major,eb", [(128, 32, "K", 2), (64, 64, "K", 2), (128, 32, "MN", 2),
                                           (256, 32, "MN", 2), (128, 32, "K", 4),
                                           (128, 64, "K", 4), (64, 32, "MN", 4), (32, 16, "K", 2)])
def test_smem_layout_lowered_equals_object_and_is_bijection(R, BK, major, eb):
    L = smem_layout(R, BK, major, eb)
    got = _lowered_offsets(L, R, BK)
    want = np.array([[L((r, k)) for k in range(BK)] for r in range(R)])
    assert np.array_equal(got, want)
    assert sorted(got.reshape(-1).tolist()) == list(range(R * BK))


def _c_body_eval(src, r, k):
    body = src.split("{")[1].split("}")[0]
    stmt = body.strip().rstrip(";")
    assert stmt.startswith("return ")
    return eval(stmt[len("return "):], {"r": r, "k": k})


@pytest.mark.parametrize("R,BK,major,eb", [(128, 32, "K", 2), (128, 64, "K", 2), (128, 32, "MN", 2),
                                           (128, 32, "K", 4), (64, 32, "MN", 4)])
def test_smem_offset_function_renders_the_layout(R, BK, major, eb):
    L = smem_layout(R, BK, major, eb)
    src = sm80_smem.offset_function(L, "f")
    assert "lowered from cute_py.algebra" in src
    for r, k in itertools.product(range(0, R, 3), range(BK)):
        assert _c_body_eval(src, r, k) == L((r, k))


@pytest.mark.parametrize("cfg", CONFIGS, ids=_ID)
def test_copy_lowered_equals_tiled_copy_partition(cfg):
    """Lowered (r, k) of every (thread, copy, value) == the TiledCopy's ThrCopy partition of the
    tile; the copy covers the tile once; vectors are contiguous and aligned in smem."""
    from cute_py.layout import make_layout
    for op in "AB":
        R, BK = cfg.rows(op), cfg.tile[2]
        tc, L = cfg.gmem_copy(op), cfg.smem_layout(op)
        r, k = sm80_copy.coords(tc, R, BK)
        n, V = r.shape[1], r.shape[2]
        for t in range(0, tc.num_threads, 5):
            P, off = tc.get_slice(t).partition_layout(make_layout((R, BK)), "S")
            for i in range(n):
                for v in range(V):
                    idx = off + P(v + V * i)  # (CPY, CPY_M, CPY_K), colexicographic
                    assert (r[t, i, v], k[t, i, v]) == (idx % R, idx // R), (op, t, i, v)
        sm80_copy.check_copy(tc, L, R, BK, cfg.major(op), cfg.elem_bytes,
                             asynchronous=cfg.mainloop == "multistage")
        assert _copy_affine(_CopyPlan.of(cfg, op)) is not None


@pytest.mark.parametrize("cfg", CONFIGS, ids=_ID)
def test_ldmatrix_rows_equal_mma_partition(cfg):
    """Lowered row coordinates of make_tiled_copy_A/B == the copy's own evaluation; each row is
    16 contiguous, aligned bytes of the smem layout."""
    for op in "AB":
        R, BK = cfg.rows(op), cfg.tile[2]
        tc, L = cfg.smem_read_copy(op), cfg.smem_layout(op)
        F = sm80_ld.partition(tc, R, BK)
        offs = sm80_ld.row_offsets(tc, L, R, BK)
        T, n, KB = offs.shape
        for t in range(0, T, 3):
            for i in range(n):
                for kb in range(KB):
                    idx = F((t, i * tc.atom_num_val, kb))
                    assert offs[t, i, kb] == L((idx % R, idx // R))
        sm80_ld.check_rows(tc, L, R, BK, cfg.elem_bytes)


@pytest.mark.parametrize("cfg", CONFIGS, ids=_ID)
def test_one_cta_computes_the_product(cfg):
    """The NumPy CTA model over the lowered maps computes A @ B.T exactly."""
    rng = np.random.default_rng(1)
    BM, BN, BK = cfg.tile
    A = rng.integers(-4, 5, (BM, BK)).astype(float)
    B = rng.integers(-4, 5, (BN, BK)).astype(float)
    assert np.array_equal(simulate_cta(cfg, A, B), A @ B.T)


@pytest.mark.parametrize("cfg", [c for c in CONFIGS if c.dtype != "tf32"][:6], ids=_ID)
def test_ldmatrix_is_bank_conflict_free(cfg):
    """The 8 row addresses of every 8x8 matrix hit 8 distinct 16-byte bank groups."""
    eb = cfg.elem_bytes
    for op in "AB":
        L = cfg.smem_layout(op)
        offs = sm80_ld.row_offsets(cfg.smem_read_copy(op), L, cfg.rows(op), cfg.tile[2])
        plan = _fragment_plan(cfg, op, False)
        base = offs[:32, 0, 0]
        for (kb, i), (x, a) in plan.items():
            for j in range(4):
                groups = {(((int(base[8 * j + r]) ^ x) + a) * eb // 16) % 8 for r in range(8)}
                assert len(groups) == 8


def test_generate_source_is_deterministic_and_names_kernel():
    c = default_config(4096, 4096, 4096)
    assert generate_source(c) == generate_source(c)
    assert "mma.sync" not in generate_source(c)  # PTX lives in the header
    assert "mma_m16n8k16_f16f32" in generate_source(c)


def test_config_errors_name_the_field():
    with pytest.raises(AtomError, match="mainloop"):
        GemmSm80Config(mainloop="bogus").check()
    with pytest.raises(AtomError, match="stages"):
        GemmSm80Config(mainloop="pipelined", stages=3).check()
    with pytest.raises(AtomError, match="warps"):
        GemmSm80Config(warps=(3, 2)).check()
    with pytest.raises(AtomError, match="out_dtype"):
        GemmSm80Config(dtype="tf32", out_dtype="f16", vec_a=4, vec_b=4).check()
    with pytest.raises(AtomError, match="dtype"):
        GemmSm80Config(dtype="f64").check()


def test_default_config_picks_by_size():
    assert default_config(64, 64, 64).tile == (64, 64, 32)
    big = default_config(8192, 8192, 8192)
    assert big.mainloop == "multistage" and big.tile[0] * big.tile[1] >= 128 * 128
    assert default_config(4096, 4096, 4096, mainloop="pipelined").stages == 2
    assert default_config(4096, 4096, 4096, mainloop="singlestage").stages == 1
    with pytest.raises(AtomError):
        default_config(1, 1, 1, mainloop="nope")
    assert log2i(64) == 6


def _wavefronts(byte_addrs, access_bytes):
    """Shared-memory wavefronts of one warp access (phases of 128 bytes of requests; distinct
    words in one bank serialise)."""
    per = max(1, 128 // access_bytes)
    total = 0
    for p in range(0, len(byte_addrs), per):
        banks = {}
        for a in byte_addrs[p:p + per]:
            for w in range(0, access_bytes, 4):
                banks.setdefault(((a + w) // 4) % 32, set()).add((a + w) // 4)
        total += max(len(s) for s in banks.values())
    return total


@pytest.mark.parametrize("cfg", [c for c in CONFIGS if c.vec_a * c.elem_bytes == 16], ids=_ID)
def test_copy_stores_are_bank_conflict_free(cfg):
    """Every warp's 16-byte smem writes (cp.async / st.shared.v4) need the minimum 4 wavefronts."""
    eb = cfg.elem_bytes
    for op in "AB":
        R, BK = cfg.rows(op), cfg.tile[2]
        r, k = sm80_copy.coords(cfg.gmem_copy(op), R, BK)
        L = cfg.smem_layout(op)
        off = _lowered_offsets(L, R, BK)[r[:, :, 0], k[:, :, 0]]
        for warp in range(cfg.threads // 32):
            for i in range(off.shape[1]):
                addrs = [int(off[warp * 32 + l, i]) * eb for l in range(32)]
                assert _wavefronts(addrs, 16) == 4, (op, warp, i)


@pytest.mark.parametrize("cfg", [c for c in CONFIGS if c.dtype == "tf32" and c.a_major == "M"][:2],
                         ids=_ID)
def test_tf32_mn_major_scalar_loads_conflicts_are_bounded(cfg):
    """The tf32 MN-major fragment path (32-bit ld.shared) costs at most 2 wavefronts per load."""
    L = cfg.smem_layout("A")
    offs = sm80_ld.row_offsets(cfg.smem_read_copy("A"), L, cfg.rows("A"), cfg.tile[2])
    plan = _fragment_plan(cfg, "A", True)
    base = offs[:32, 0, 0]
    for (kb, i, j), (x, a) in plan.items():
        addrs = [((int(base[l]) ^ x) + a) * 4 for l in range(32)]
        assert _wavefronts(addrs, 4) <= 2


@pytest.mark.parametrize("raster", [1, 3, 8])
def test_raster_program_maps_blocks_onto_tiles_once(raster):
    """Evaluate the emitted scheduler program (NumPy): bid -> (tile_m, tile_n) is a
    bijection onto the tiles, for tile counts the group does and does not divide."""
    import numpy as np
    from cute_py.backends.cuda import ir
    from cute_py.backends.cuda.arch.common.scheduler import run
    from cute_py.backends.cuda.arch.sm80 import raster as sm80_raster
    M, N = ir.var("M", 1, (1 << 31) - 1), ir.var("N", 1, (1 << 31) - 1)
    tiles_m, tiles_n, steps = sm80_raster.program(M, N, 128, 64, raster)
    for Mv, Nv in ((128, 64), (1000, 700), (4096, 64), (130, 9000)):
        tm = ir.evaluate(tiles_m, {"M": Mv})
        tn = ir.evaluate(tiles_n, {"N": Nv})
        assert (tm, tn) == (-(-Mv // 128), -(-Nv // 64))
        bid = np.arange(tm * tn, dtype=np.int64)
        env = run(steps, {"bid": bid, "tiles_m": tm, "tiles_n": tn})
        seen = set(zip(env["tile_m"].tolist(), env["tile_n"].tolist()))
        assert seen == {(i, j) for i in range(tm) for j in range(tn)} and len(bid) == len(seen)
