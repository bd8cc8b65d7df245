"""Golden CUDA sources of every shipped GEMM and epilogue configuration.

Every change of emitted code shows up as a diff of ``tests/backend/golden/gemm/*.cu``;
regenerate with ``CUTE_PY_UPDATE_GOLDEN=1 python -m pytest tests/backend/test_golden_gemm.py``
and review the diff.  The sources are generated on the CPU (no compiler needed).
"""

import hashlib
import os
from pathlib import Path

import pytest

from cute_py.backends.cuda.epilogue.sm90 import Sm90Epilogue, build_test_kernel_source
from cute_py.backends.cuda.kernels import gemm_sm80 as S80
from cute_py.backends.cuda.kernels import gemm_sm90 as G
from cute_py.backends.cuda.kernels.gemm_sm80_configs import default_config, shipped_configs
from cute_py.epilogue import evt

GOLDEN = Path(__file__).parent / "golden" / "gemm"


def _short(name: str, src: str) -> str:
    """A file name: the kernel's name, or its hash when the name is very long."""
    return name if len(name) <= 100 else f"{name[:80]}_{hashlib.sha1(name.encode()).hexdigest()[:10]}"


def _cases():
    out = {}
    for cfg in G.SHIPPED_CONFIGS:
        out[f"sm90_{cfg.name}"] = lambda c=cfg: G.generate_source(c)
    for i, cfg in enumerate(G.shipped_epilogue_configs()):
        out[f"sm90_epi{i:02d}_{cfg.name}"] = lambda c=cfg: G.generate_source(c)
        if cfg.epi is not None and not cfg.epi.batched:     # batched: GEMM only
            out[f"sm90_epitest{i:02d}"] = lambda c=cfg: build_test_kernel_source(
                Sm90Epilogue(c.epi))[0]
    for cfg in G.shipped_fp8_configs():
        out[f"sm90_fp8_{cfg.name}"] = lambda c=cfg: G.generate_source(c)
    for cfg in shipped_configs():
        out[f"sm80_{S80.kernel_name(cfg)}"] = lambda c=cfg: S80.generate_source(c)
    trees = {"relu": evt.lin_comb_bias_elt_act("relu"),
             "gelu": evt.lin_comb_bias_elt_act("gelu", alpha=1.0, beta=0.0)}
    big, small = default_config(8192, 8192, 8192), default_config(64, 64, 64)
    for label, cfg in (("relu", S80.with_epilogue(big, trees["relu"])),
                       ("gelu", S80.with_epilogue(big, trees["gelu"])),
                       ("relu_elementwise", S80.with_epilogue(small, trees["relu"],
                                                              vectorized=False))):
        out[f"sm80_fused_{label}"] = lambda c=cfg: S80.generate_source(c)
    return {_short(k, ""): v for k, v in out.items()}


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_gemm_source(name):
    src = CASES[name]()
    path = GOLDEN / f"{name}.cu"
    if os.environ.get("CUTE_PY_UPDATE_GOLDEN") == "1":
        path.write_text(src)
    assert path.exists(), f"no golden copy of {name}; run with CUTE_PY_UPDATE_GOLDEN=1"
    assert path.read_text() == src, f"{name}: generated source differs from its golden copy"


def test_no_stale_golden_files():
    names = {f"{n}.cu" for n in CASES}
    stale = sorted(p.name for p in GOLDEN.glob("*.cu") if p.name not in names)
    assert not stale, f"golden copies of configurations no longer shipped: {stale[:5]}"
