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


def test_padded_operands_keep_their_major():
    """An operand TMA cannot read in place is copied with its pitch padded to 8 elements, in
    its own major when it is contiguous along M / N (else K-major)."""
    from cute_py.backends.cuda.gemm_api import _padded_meta
    from cute_py.backends.cuda.tensors import TensorMeta
    fields = TensorMeta._fields
    base = dict(zip(fields, [None] * len(fields)))

    def meta(shape, strides):
        return TensorMeta(**{**base, "shape": shape, "strides": strides, "ptr": 0,
                             "dtype": "float16"})
    assert _padded_meta(meta((300, 136), (1, 300))).strides == (1, 304)
    assert _padded_meta(meta((300, 333), (333, 1))).strides == (336, 1)
    assert _padded_meta(meta((2, 300, 136), (40800, 1, 300))).strides == (136 * 304, 1, 304)
    assert _padded_meta(meta((4096, 2040), (2040, 1)), 64).strides == (2048, 1)
