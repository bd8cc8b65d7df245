"""CPU-only: every shipped SM80 GEMM configuration compiles for sm_80 and sm_90a, zero spills.

Uses the library's compiler (NVRTC from the pip package, CuPy's NVRTC or nvcc); no GPU needed.
The kernel names, register counts and spill bytes come from ptxas' verbose report.
"""

import pytest

from cute_py.backends.cuda.kernels.gemm_sm80 import precompile, kernel_name
from cute_py.backends.cuda.kernels.gemm_sm80_configs import shipped_configs, default_config


def _have_compiler():
    try:
        from cute_py.backends.cuda.compiler import _which_compiler
        _which_compiler()
        return True
    except Exception:
        return False


pytestmark = pytest.mark.skipif(not _have_compiler(), reason="no CUDA compiler")


def _all_configs():
    cfgs = list(shipped_configs())
    # what the heuristic returns for big and small problems is shipped too
    for dt, od in (("f16", "f16"), ("tf32", "f32")):
        for ml in ("multistage", "pipelined", "singlestage", None):
            for size in ((64, 64, 64), (8192, 8192, 8192)):
                cfgs.append(default_config(*size, dtype=dt, out_dtype=od, mainloop=ml))
    return sorted(set(cfgs), key=kernel_name)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_every_shipped_config_compiles_without_spills(arch):
    res = precompile(_all_configs(), arch=arch, processes=2)
    assert len(res) == len(_all_configs())
    spilled = [(name, regs, spills) for name, regs, spills in res if spills]
    assert not spilled, spilled
    assert all(0 < regs <= 255 for _, regs, _ in res)
