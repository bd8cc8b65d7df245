"""The PTX library (backends/cuda/include/cute_py/*.cuh, read by backends/cuda/ptx.py).

Laws:

(a) every PTX instruction (as ``ptx.instructions`` defines one: mnemonic, special register,
    vector-operand form; glue not counted) is wrapped by exactly one wrapper of the headers,
    except the duplicates of :data:`KNOWN_DUPLICATES`, a table that may only shrink;
(b) no generated source of the shipped configurations holds inline asm outside the headers: the
    golden sources (``tests/backend/golden/**``) and the copy kernels' shipped plans, except the
    files of :data:`KNOWN_ASM_GOLDENS` (the epilogues' ``cute_epi_*`` prelude of
    backends/cuda/epilogue/ptx.py), a table that may only shrink;
(c) every name a generator calls resolves to a wrapper (``KernelBuilder.call`` checks it through
    ``ptx.require``), namespace-qualified names included.
"""

import re
from pathlib import Path

import pytest

from backends.cuda import ptx
from backends.cuda.builder import KernelBuilder

GOLDEN = Path(__file__).parent / "golden"

#: instruction -> the wrappers allowed to share it today (the mbarrier spin loop repeats the
#: one-try wait). May only shrink.
KNOWN_DUPLICATES = {
    "mbarrier.try_wait.parity.shared::cta.b64": {"mbarrier_try_wait_parity",
                                                 "mbarrier_wait_parity"},
}

#: golden sources (relative to tests/backend/golden) that still hold inline asm. May only shrink
#: (none left: every generated kernel calls the PTX library).
KNOWN_ASM_GOLDENS: set = set()

_ASM_TEXT = re.compile(r"\basm\s*(?:volatile\s*|__volatile__\s*)?\(")


# ---------------------------------------------------------------------------------------------
# (a) one wrapper per instruction


def _duplicates():
    return {k: set(v) for k, v in ptx.instructions().items() if len(v) > 1}


def test_every_instruction_is_wrapped_once():
    new = {k: sorted(v - KNOWN_DUPLICATES.get(k, set())) for k, v in _duplicates().items()}
    new = {k: v for k, v in new.items() if v}
    assert not new, ("instructions wrapped more than once (call the existing wrapper instead): "
                     + "; ".join(f"{k}: {sorted(_duplicates()[k])}" for k in new))


def test_known_duplicates_only_shrink():
    """An entry no longer duplicated must leave the table (so it cannot come back)."""
    dup = _duplicates()
    stale = {k: sorted(v - dup.get(k, set())) for k, v in KNOWN_DUPLICATES.items()}
    stale = {k: v for k, v in stale.items() if v}
    assert not stale, f"remove from KNOWN_DUPLICATES (no longer duplicated): {stale}"


def test_every_wrapper_with_asm_wraps_an_instruction():
    """(An empty ``asm volatile("" : "+f"(r))`` is a compiler fence, not an instruction.)"""
    wrapped = {n for v in ptx.instructions().values() for n in v}
    for name, (_hdr, body) in ptx.wrappers().items():
        if any(a.strip() for a in ptx.asm_blocks(body)):
            assert name in wrapped, name


def test_no_asm_outside_wrappers():
    """Inline asm sits inside a wrapper's body, never in a macro or between functions."""
    for h in ptx._headers():
        text = h.read_text()
        inside = sum(len(ptx.asm_blocks(b)) for _n, b in ptx._bodies(text))
        assert inside == len(ptx.asm_blocks(text)), h.name


# ---------------------------------------------------------------------------------------------
# the rule: what one instruction is


_SAMPLE = r'''
#define CUTE_PY_DEVICE __device__ __forceinline__
CUTE_PY_DEVICE u32 lane() { u32 r; asm volatile("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }
CUTE_PY_DEVICE u32 rank() { u32 r; asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
template <int N> CUTE_PY_DEVICE void wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N)); }
CUTE_PY_DEVICE u32& slot(u32* p) { return *p; }
CUTE_PY_DEVICE void decl_only(int x);
// asm("bar.sync 0;") in a comment is not code
CUTE_PY_DEVICE u32 ld_a(u32 a) { u32 v; asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(a)); return v; }
CUTE_PY_DEVICE u32 ld_b(u32 a) { u32 v; asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(a)); return v; }
CUTE_PY_DEVICE void mma_ss(float (&d)[2], u64 a, int s) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %3, 0;\n"
               " wgmma.x {%0, %1}, %2, p;\n}\n" : "+f"(d[0]), "+f"(d[1]) : "l"(a), "r"(s));
}
CUTE_PY_DEVICE void mma_rs(float (&d)[2], u32 a0, u32 a1, int s) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %4, 0;\n"
               " wgmma.x {%0, %1}, {%2, %3}, p;\n}\n" : "+f"(d[0]), "+f"(d[1]) : "r"(a0), "r"(a1), "r"(s));
}
CUTE_PY_DEVICE void spin(u32 b) {
  asm volatile("{\n .reg .pred P;\nLAB:\n try.wait P, [%0];\n @P bra DONE;\n bra LAB;\nDONE:\n}\n" :: "r"(b));
}
'''


def test_instruction_rule_on_a_sample():
    ins = ptx.instructions(_SAMPLE)
    assert ins["mov.b32 %laneid"] == ["lane"]
    assert ins["mov.b32 %cluster_ctarank"] == ["rank"]
    assert ins["cp.async.wait_group"] == ["wait"]                  # one-line template
    assert ins["ld.shared.b32"] == ["ld_a", "ld_b"]               # .u32 and .b32: one load
    assert ins["wgmma.x {},_,_"] == ["mma_ss"]                    # A from a descriptor
    assert ins["wgmma.x {},{},_"] == ["mma_rs"]                   # A from registers
    assert ins["try.wait"] == ["spin"]
    assert not any(k.startswith(("setp", "bra", "bar.sync")) for k in ins)  # glue, comments


def test_function_names_are_parsed_robustly():
    names = dict(ptx._bodies(_SAMPLE))
    assert {"lane", "rank", "wait", "slot", "ld_a", "mma_rs", "spin"} <= set(names)
    assert "decl_only" not in names                               # a declaration has no body
    assert names["slot"].strip() == "{ return *p; }"              # a function returning u32&


def test_wrapper_alone_equals_wrapper_in_header():
    for name, (_hdr, body) in list(ptx.wrappers().items())[:40]:
        alone = {k for k, v in ptx.instructions(
            "#define CUTE_PY_DEVICE\nCUTE_PY_DEVICE void " + name + "()" + body).items()}
        whole = {k for k, v in ptx.instructions().items() if name in v}
        assert alone == whole, name


# ---------------------------------------------------------------------------------------------
# (b) no inline asm in generated sources


def _goldens():
    return sorted(str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*.cu"))


def test_no_asm_in_golden_sources():
    offenders = {g for g in _goldens() if _ASM_TEXT.search((GOLDEN / g).read_text())}
    assert offenders <= KNOWN_ASM_GOLDENS, sorted(offenders - KNOWN_ASM_GOLDENS)


def test_known_asm_goldens_only_shrink():
    offenders = {g for g in _goldens() if _ASM_TEXT.search((GOLDEN / g).read_text())}
    stale = KNOWN_ASM_GOLDENS - offenders
    assert not stale, f"remove from KNOWN_ASM_GOLDENS (no asm any more, or gone): {sorted(stale)}"


def test_no_asm_in_copy_kernels():
    from backends.cuda.kernels import copy as C
    from backends.cuda.kernels import tiled_copy as TC
    for plan in C.shipped_plans().values():
        assert not _ASM_TEXT.search(C.copy_source(plan)), plan.name
    for plan in TC.shipped_tiled_plans().values():
        assert not _ASM_TEXT.search(TC.tiled_copy_source(plan)), plan.name


# ---------------------------------------------------------------------------------------------
# (c) calls resolve


def test_calls_resolve_or_raise():
    kb = KernelBuilder("k", threads=32, origin="test")
    kb.call("st_global_128", "p", "v")
    kb.call("sm80::cp_async_commit")
    kb.call("cute_py::sm80::cp_async_wait_all")
    for bad in ("no_such_wrapper", "sm90::cp_async_commit", "sm80::st_global_128"):
        with pytest.raises(KeyError):
            kb.call(bad)


def test_every_wrapper_resolves_by_its_qualified_name():
    for name, hdr in ptx.FUNCTIONS.items():
        ns = ptx.namespaces()[hdr]
        assert ptx.require("::".join(ns + (name,))) and ptx.require(name)
