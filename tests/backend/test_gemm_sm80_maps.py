"""CPU checks of the SM80 GEMM's index maps (no GPU, no compiler).

A numpy shadow of the warp-level data flow: fill shared memory through the copy map and the
swizzled layout, emulate ``ldmatrix`` (and the scalar tf32 loads) at the strength-reduced
addresses the generator emits, and check every fragment register holds the element the PTX
fragment tables say it must.  Also: layouts are bijections, copy maps cover each tile once,
ldmatrix rows of one 8x8 matrix fall in distinct bank groups (conflict-free), and the C lane
expressions equal their Python twins.
"""

import itertools

import pytest

from cute_py.backends.cuda.kernels.gemm_sm80 import (GemmSm80Config, _fragment_plan,
                                                     _lane_coord_c, generate_source,
                                                     _copy_affine)
from cute_py.backends.cuda.kernels.gemm_sm80_maps import (SmemLayout, CopyMap, ldmatrix_coord,
                                                          fragment_coord, log2i)
from cute_py.backends.cuda.kernels.gemm_sm80_configs import shipped_configs, default_config
from cute_py.errors import AtomError


def _configs():
    seen, out = set(), []
    for c in shipped_configs():
        key = (c.dtype, c.a_major, c.b_major, c.tile, c.warps)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


CONFIGS = _configs()


@pytest.mark.parametrize("R,BK,major,eb", [(128, 32, "K", 2), (64, 64, "K", 2), (128, 32, "MN", 2),
                                           (256, 32, "MN", 2), (128, 32, "K", 4),
                                           (128, 64, "K", 4), (64, 32, "MN", 4), (32, 16, "K", 2)])
def test_smem_layout_is_bijection(R, BK, major, eb):
    lay = SmemLayout(R, BK, major, eb)
    offs = {lay(r, k) for r in range(R) for k in range(BK)}
    assert offs == set(range(R * BK))


def _c_body_eval(src, r, k):
    """Evaluate the C function's body in Python (its operators mean the same on ints >= 0)."""
    body = src.split("{")[1].split("}")[0]
    env = {"r": r, "k": k}
    for stmt in body.strip().split(";"):
        stmt = stmt.strip()
        if stmt.startswith("const int o = "):
            env["o"] = eval(stmt[len("const int o = "):], dict(env))
        elif stmt.startswith("return "):
            return eval(stmt[len("return "):], dict(env))
    raise AssertionError("no return")


@pytest.mark.parametrize("lowered", [True, False])
@pytest.mark.parametrize("R,BK,major,eb", [(128, 32, "K", 2), (128, 64, "K", 2), (128, 32, "MN", 2),
                                           (128, 32, "K", 4), (64, 32, "MN", 4)])
def test_smem_layout_matches_c_function(R, BK, major, eb, lowered, monkeypatch):
    lay = SmemLayout(R, BK, major, eb)
    if not lowered:  # the hand-written fallback used when the algebra is unavailable
        monkeypatch.setattr(SmemLayout, "lowered", lambda self: None)
    src = lay.c_function("f")
    assert ("lowered from cute_py.algebra" in src) == lowered
    for r, k in itertools.product(range(0, R, 3), range(BK)):
        assert _c_body_eval(src, r, k) == lay(r, k)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.dtype}-{c.a_major}{c.b_major}-"
                         f"{c.tile[0]}x{c.tile[1]}x{c.tile[2]}-w{c.warps[0]}x{c.warps[1]}")
def test_copy_map_covers_tile_once(cfg):
    for op in "AB":
        cm, lay = cfg.copy_map(op), cfg.smem_layout(op)
        seen = []
        for t in range(cm.threads):
            for i in range(cm.iterations):
                r, k = cm.coord(t, i)
                for v in range(cm.vec):
                    seen.append((r, k + v) if cm.major == "K" else (r + v, k))
        assert sorted(seen) == sorted(itertools.product(range(lay.R), range(lay.BK)))
        assert _copy_affine(cm, lay) is not None
        # each 16-byte chunk lands contiguous and aligned in smem (one vector store)
        for t in range(0, cm.threads, 7):
            r, k = cm.coord(t, 0)
            o = lay(r, k)
            assert (o * lay.elem_bytes) % (cm.vec * lay.elem_bytes) == 0
            for v in range(cm.vec):
                rv, kv = (r, k + v) if cm.major == "K" else (r + v, k)
                assert lay(rv, kv) == o + v


def _ldmatrix(smem_vals, addrs, eb, trans):
    """Emulate ldmatrix .x4 on a flat element array: addrs[lane] = element offset of row."""
    per_row = 16 // eb
    out = {}
    for lane in range(32):
        regs = []
        for j in range(4):
            rows = [addrs[8 * j + i] for i in range(8)]
            g, t = lane // 4, lane % 4
            if eb == 2:
                if not trans:
                    regs.append((smem_vals[rows[g] + 2 * t], smem_vals[rows[g] + 2 * t + 1]))
                else:
                    regs.append((smem_vals[rows[2 * t] + g], smem_vals[rows[2 * t + 1] + g]))
            else:
                assert not trans
                regs.append((smem_vals[rows[g] + t],))
        out[lane] = regs
    assert per_row in (4, 8)
    return out


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.dtype}-{c.a_major}{c.b_major}-"
                         f"{c.tile[0]}x{c.tile[1]}x{c.tile[2]}-w{c.warps[0]}x{c.warps[1]}")
def test_fragments_hold_the_right_elements(cfg):
    """Shadow of load_frag: each register element equals fragment_coord's (mn, k)."""
    eb, mk = cfg.elem_bytes, cfg.mma_k
    MI, NI, KB = cfg.mma_iters
    WM, WN = cfg.warp_tile
    for op in "AB":
        lay = cfg.smem_layout(op)
        smem = [None] * lay.size
        for r in range(lay.R):
            for k in range(lay.BK):
                smem[lay(r, k)] = (r, k)
        major = "K" if lay.major == "K" else "MN"
        scalar = cfg.dtype == "tf32" and major == "MN"
        plan = _fragment_plan(cfg, op, scalar)
        assert plan is not None
        nw = cfg.warps[0] if op == "A" else cfg.warps[1]
        wext = WM if op == "A" else WN
        for w in range(nw):
            if scalar:
                base = {l: lay(w * wext + l // 4, l % 4) for l in range(32)}
            else:
                rl, kl = _lane_coord_c(op, major, eb)
                base = {}
                for l in range(32):
                    r, k = eval(rl, {"lane": l}), eval(kl, {"lane": l})
                    assert (r, k) == ldmatrix_coord(op, major, eb, l)
                    base[l] = lay(w * wext + r, k)
            for kb in range(KB):
                if scalar:
                    for i in range(MI if op == "A" else NI):
                        for j in range(4 if op == "A" else 2):
                            x, a = plan[(kb, i, j)]
                            for l in range(32):
                                got = smem[(base[l] ^ x) + a]
                                mn, k = fragment_coord(op, mk, l, j, 0)
                                step = 16 if op == "A" else 8
                                assert got == (w * wext + i * step + mn, kb * mk + k)
                    continue
                count = MI if op == "A" else (NI + 1) // 2
                for i in range(count):
                    x, a = plan[(kb, i)]
                    addrs = [(base[l] ^ x) + a for l in range(32)]
                    regs = _ldmatrix(smem, addrs, eb, trans=(major == "MN"))
                    for l in range(32):
                        for j in range(4):
                            if op == "A":
                                tile, reg = i, j
                                mn_off = 16 * i
                            else:
                                tile, reg = 2 * i + j // 2, j % 2
                                if tile >= NI:
                                    continue
                                mn_off = 8 * tile
                            for h, got in enumerate(regs[l][j]):
                                mn, k = fragment_coord(op, mk, l, reg, h)
                                assert got == (w * wext + mn_off + mn, kb * mk + k), \
                                    (op, w, kb, i, l, j, h)


@pytest.mark.parametrize("cfg", [c for c in CONFIGS if c.dtype != "tf32"][:6],
                         ids=lambda c: f"{c.dtype}-{c.a_major}{c.b_major}-{c.tile}")
def test_ldmatrix_is_bank_conflict_free(cfg):
    """The 8 row addresses of every 8x8 matrix hit 8 distinct 16-byte bank groups."""
    eb = cfg.elem_bytes
    for op in "AB":
        lay = cfg.smem_layout(op)
        major = "K" if lay.major == "K" else "MN"
        plan = _fragment_plan(cfg, op, False)
        base = [lay(ldmatrix_coord(op, major, eb, l)[0], ldmatrix_coord(op, major, eb, l)[1])
                for l in range(32)]
        for (kb, i), (x, a) in plan.items():
            for j in range(4):
                groups = {(((base[8 * j + r] ^ x) + a) * eb // 16) % 8 for r in range(8)}
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
    words in one bank serialise) -- the same rule as the epilogue's bank_wavefronts."""
    per = max(1, 128 // access_bytes)
    total = 0
    for p in range(0, len(byte_addrs), per):
        banks = {}
        for a in byte_addrs[p:p + per]:
            for w in range(0, access_bytes, 4):
                banks.setdefault(((a + w) // 4) % 32, set()).add((a + w) // 4)
        total += max(len(s) for s in banks.values())
    return total


@pytest.mark.parametrize("cfg", [c for c in CONFIGS if c.vec_a * c.elem_bytes == 16],
                         ids=lambda c: f"{c.dtype}-{c.a_major}{c.b_major}-{c.tile}")
def test_copy_stores_are_bank_conflict_free(cfg):
    """Every warp's 16-byte smem writes (cp.async / st.shared.v4) need the minimum 4 wavefronts."""
    eb = cfg.elem_bytes
    for op in "AB":
        cm, lay = cfg.copy_map(op), cfg.smem_layout(op)
        for warp in range(cfg.threads // 32):
            for i in range(cm.iterations):
                addrs = [lay(*cm.coord(warp * 32 + l, i)) * eb for l in range(32)]
                assert _wavefronts(addrs, 16) == 4, (op, warp, i)


@pytest.mark.parametrize("cfg", [c for c in CONFIGS if c.dtype == "tf32" and c.a_major == "M"][:2],
                         ids=lambda c: f"{c.a_major}{c.b_major}-{c.tile}")
def test_tf32_mn_major_scalar_loads_conflicts_are_bounded(cfg):
    """The tf32 MN-major fragment path (32-bit ld.shared, no ldmatrix for 32-bit transposes)
    costs at most 2 wavefronts per load (documented 2-way conflict)."""
    lay = cfg.smem_layout("A")
    plan = _fragment_plan(cfg, "A", True)
    base = [lay(l // 4, l % 4) for l in range(32)]
    for (kb, i, j), (x, a) in plan.items():
        addrs = [((base[l] ^ x) + a) * 4 for l in range(32)]
        assert _wavefronts(addrs, 4) <= 2
