"""CPU-only: the SM80 multistage mainloop stages synchronous (sub-4-byte) copies through registers.

Law: every synchronous copy of a k-tile loads into its own register array (``gaI`` / ``gbI``)
and is stored from it to the address the unstaged copy wrote; within one ``if (fetch <
k_tiles)`` batch all loads precede all stores; the first batch of a part is loaded before the
k block's ldmatrix and stored after its mma; configurations with only ``cp.async`` copies emit
no staging registers.
"""

import re
from dataclasses import replace

import pytest

from cute_py.backends.cuda.kernels import gemm_sm80 as S
from cute_py.backends.cuda.kernels.gemm_sm80_config import GemmSm80Config
from cute_py.backends.cuda.kernels.gemm_sm80_configs import TILES, _make

_LD = re.compile(r"ld_chunk<\d+>\((g[ab]\d+), (.*)\); \}$")
_ST = re.compile(r"st_chunk<\d+>\((.*), (g[ab]\d+)\);$")


def _loop(src: str) -> list[str]:
    lines = src.splitlines()
    i = next(k for k, l in enumerate(lines) if "for (int kt = 0; kt < k_tiles; ++kt)" in l)
    j = next(k for k, l in enumerate(lines) if "// drain" in l)
    return [l.strip() for l in lines[i:j]]


def _configs():
    ms64 = _make(TILES["multistage_64x64x32"], "f16", "f16", "M", "N")
    return {
        "ms64_MN_v111": replace(ms64, vec_a=1, vec_b=1, vec_c=1),
        "ms64_KK_v112": replace(ms64, a_major="K", b_major="K").with_alignment(1, 1, 2),
        "default_v182": GemmSm80Config().with_alignment(1, 8, 2),       # A sync, B cp.async
        "default_v812": GemmSm80Config().with_alignment(8, 1, 2),       # B sync, A cp.async
        "ms64_bk16_v112": replace(ms64, tile=(64, 64, 16)).with_alignment(1, 1, 2),
        "ms64_bk16_s2_v112": replace(ms64, tile=(64, 64, 16), stages=2).with_alignment(1, 1, 2),
        "ms64_s2_v111": replace(ms64, stages=2, vec_a=1, vec_b=1, vec_c=1),
    }


@pytest.mark.parametrize("key", sorted(_configs()))
def test_sync_copies_are_register_staged(key):
    cfg = _configs()[key]
    body = _loop(S.generate_source(cfg))
    loads = {m.group(1): k for k, l in enumerate(body) if (m := _LD.search(l))}
    stores = {m.group(2): k for k, l in enumerate(body) if (m := _ST.search(l))}
    nsync = sum(S._CopyPlan.of(cfg, op).iterations for op in "AB"
                if S._CopyPlan.of(cfg, op).vec * cfg.elem_bytes < 4)
    assert len(loads) == len(stores) == nsync
    assert set(loads) == set(stores)
    assert all(loads[r] < stores[r] for r in loads)
    # no shared store of the k-tile between two of its loads in the same batch
    mma = [k for k, l in enumerate(body) if l.startswith("mma_m16n8k")]
    ldsm = [k for k, l in enumerate(body) if l.startswith("ldmatrix")]
    first_mma = mma[0]
    spanning = [r for r in loads if loads[r] < first_mma < stores[r]]
    if cfg.tile[2] // cfg.mma_k > 1 or cfg.stages >= 3:
        # the first batch spans k block 0's mma (and its ldmatrix, when there is a next k block)
        assert spanning
        if cfg.tile[2] // cfg.mma_k > 1:
            assert all(loads[r] < ldsm[0] for r in spanning)
    # batches: maximal runs of loads with no shared store between them; every store of a
    # batch's registers follows the batch's last load, and the batches fit the budget
    order = sorted([(k, "ld", r) for r, k in loads.items()] + [(k, "st", r) for r, k in
                                                               stores.items()])
    runs, cur = [], []
    for _, kind, r in order:
        if kind == "ld":
            cur.append(r)
        elif cur:
            runs.append(cur)
            cur = []
    for run in runs:
        last = max(loads[r] for r in run)
        assert all(stores[r] > last for r in run)
    assert len(runs) <= max(1, -(-nsync // S._staging_budget(cfg)))


@pytest.mark.parametrize("key", sorted(_configs()))
def test_staged_addresses_match_the_copy(key):
    """Each staged load reads and each store writes what ``CopyIssue`` gives for that copy
    (the same expressions the unstaged copy used)."""
    cfg = _configs()[key]
    src = S.generate_source(cfg)
    body = "\n".join(_loop(src))
    for op in "AB":
        cm = S._CopyPlan.of(cfg, op)
        if cm.vec * cfg.elem_bytes >= 4:
            assert f"g{op.lower()}0" not in body
            continue
        for i in range(cm.iterations):
            reg = f"g{op.lower()}{i}"
            ld = [l for l in body.splitlines() if f"ld_chunk<{cm.vec}>({reg}," in l]
            st = [l for l in body.splitlines() if l.endswith(f", {reg});")]
            assert len(ld) == 1 and len(st) == 1, reg
            assert "fetch * 32" in ld[0] or "fetch * 16" in ld[0]
            assert "write_stage" in st[0]


def test_async_only_configs_have_no_staging():
    cfg = _make(TILES["multistage_128x256x32"], "f16", "f16", "K", "K")
    src = S.generate_source(cfg)
    assert "ga0" not in src and "gb0" not in src
    assert "st_chunk" not in "\n".join(_loop(src))


def test_staged_batches_respect_the_budget():
    copies = [("A", i) for i in range(5)] + [("B", i) for i in range(3)]
    out = S._staged_batches(copies, {"A": 1, "B": 2}, 4)
    assert [c for bt in out for c in bt] == copies
    assert all(sum({"A": 1, "B": 2}[op] for op, _ in bt) <= 4 for bt in out)
    assert S._staged_batches([], {"A": 1, "B": 1}, 4) == []


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("vec", [1, 8])
def test_one_k_block_tiles_reload_the_buffer_they_multiply(stages, vec):
    """BK = one MMA k: the k-loop multiplies fragment buffer 0 and reloads buffer 0 (after the
    mma and the barrier) with the next k-tile, so every k-tile's fragments are used."""
    ms64 = _make(TILES["multistage_64x64x32"], "f16", "f16", "M", "N")
    cfg = replace(ms64, tile=(64, 64, 16), stages=stages, vec_a=vec, vec_b=vec, vec_c=2)
    body = _loop(S.generate_source(cfg))
    assert not any("fa[1]" in l or "fb[1]" in l for l in body)
    mma = next(k for k, l in enumerate(body) if l.startswith("mma_m16n8k"))
    bar = next(k for k, l in enumerate(body) if l.startswith("__syncthreads"))
    ldsm = [k for k, l in enumerate(body) if l.startswith("ldmatrix")]
    assert mma < bar < min(ldsm)
