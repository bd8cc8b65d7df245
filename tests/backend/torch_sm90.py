"""Shared pieces of the torch-based sm_90 GPU tests: the dtype names and the skip."""

import pytest

torch = pytest.importorskip("torch")

DT = {"f16": torch.float16, "bf16": torch.bfloat16}


def skip_without_sm90():
    """Skip the calling test unless an sm_90 GPU is present."""
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")
