"""docs/compose_gemm.md cannot rot: its ``python`` blocks run in order in one namespace on the
CPU (composing, generating, the bank-conflict report, compiling for sm_80); its ``python gpu``
blocks run after them when a GPU is present."""

import os
import re

import pytest

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                   "compose_gemm.md")


def _blocks(kind):
    text = open(DOC).read()
    return [src for info, src in re.findall(r"```(python[^\n]*)\n(.*?)```", text, flags=re.S)
            if info.strip() == kind]


def _run_cpu_blocks():
    ns: dict = {}
    for src in _blocks("python"):
        exec(compile(src, DOC, "exec"), ns)
    return ns


def test_cpu_blocks_run(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTE_PY_CACHE_DIR", str(tmp_path))
    blocks = _blocks("python")
    assert len(blocks) >= 8
    ns = _run_cpu_blocks()
    assert ns["reads"].conflict_free and not ns["plain"].conflict_free
    assert ns["res"].spill_stores == 0


def test_gpu_blocks_run():
    from cute_py.backends.cuda.device import has_gpu
    if not has_gpu():
        pytest.skip("no GPU")
    ns = _run_cpu_blocks()
    for src in _blocks("python gpu"):
        exec(compile(src, DOC, "exec"), ns)


def test_page_covers_both_families():
    text = open(DOC).read()
    assert "make_gemm_sm80(" in text and "make_gemm(wg_mma" in text
    assert "[generalization]" not in text
