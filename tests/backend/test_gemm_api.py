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
    assert _padded_meta(meta((7, 1), (1, 10))).strides == (8, 1)          # K = 1: K-major


def test_padded_operands_are_read_in_place():
    """Law: every operand (2-D / 3-D, any strides with a unit or padded mode, 2-, 4- or 8-byte
    elements) is readable by TMA in place once :func:`_padded_meta` copied it."""
    import itertools
    from cute_py.backends.cuda.gemm_api import _padded_meta
    from cute_py.backends.cuda.kernels.gemm_sm90 import tma_major
    from cute_py.backends.cuda.tensors import TensorMeta
    for rows, K, pad, item, L in itertools.product((1, 2, 7, 64, 300), (1, 2, 3, 8, 333),
                                                   (0, 1, 3, 64), (2, 4, 8), (0, 1, 3)):
        for strides in ((K + pad, 1), (1, rows + pad), (K + pad, 3)):
            if L:
                strides = (rows * K * 4 + pad, *strides)
            shape = (L, rows, K) if L else (rows, K)
            m = TensorMeta(8, shape, strides, "float16", item, 0, "torch")
            if tma_major(m) is None:
                assert tma_major(_padded_meta(m)) is not None, (shape, strides, item)
