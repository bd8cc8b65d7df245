"""CPU checks of the high-level ``cute_py.gemm`` entry (no GPU needed)."""

import subprocess
import sys

import numpy as np
import pytest

from cute_py.errors import LaunchError


def test_gemm_module_imports_no_backend_or_cupy():
    code = ("import sys, cute_py.gemm; "
            "assert 'cupy' not in sys.modules, 'cupy imported'; "
            "assert 'cute_py.backends.cuda.kernels.gemm_sm80' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_gemm_rejects_host_arrays_and_bad_backend():
    from cute_py.gemm import gemm
    a = np.ones((4, 4), np.float16)
    with pytest.raises(LaunchError, match="A"):
        gemm(a, a)
    with pytest.raises(LaunchError, match="backend"):
        gemm(a, a, backend="sm70")
