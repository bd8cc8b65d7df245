"""Architecture atoms by GPU generation, as the CuTe DSL groups them (``cute.nvgpu``).

``cute_py.nvgpu.sm80`` holds the Ampere atoms (``mma.sync``, ``cp.async``, ``ldmatrix``, the
SM80 shared-memory layout atoms), ``cute_py.nvgpu.sm90`` the Hopper ones (``wgmma``, TMA,
``stmatrix``, the GMMA layout atoms). The objects are the same as the flat C++ names at the top
level: ``cute_py.nvgpu.sm80.SM80_16x8x16_F32F16F16F32_TN is cute_py.SM80_16x8x16_F32F16F16F32_TN``.
"""

from __future__ import annotations

from . import sm80, sm90

__all__ = ["sm80", "sm90"]
