"""Hopper (SM90) atoms: ``wgmma`` MMA atoms (every N of ``SM90_64xNx16_*``), TMA and
``stmatrix`` copies, the GMMA shared-memory layout atoms. CuTe's C++ names; the same objects as
``cute_py.<name>``."""

from __future__ import annotations

from ..atom import mma_traits_sm90 as _gmma
from ..atom.copy_traits import (
    SM90_U32x1_STSM_N, SM90_U32x2_STSM_N, SM90_U32x4_STSM_N, SM90_U16x2_STSM_T,
    SM90_U16x4_STSM_T, SM90_U16x8_STSM_T, SM90_TMA_LOAD, SM90_TMA_LOAD_MULTICAST, SM90_TMA_STORE,
)
from ..smem_atoms import GMMA, ss_smem_selector

# the wgmma atoms: one constructor per N (SM90_64x8x16_... to SM90_64x256x16_...), listed in
# mma_traits_sm90.__all__
globals().update({n: getattr(_gmma, n) for n in _gmma.__all__})

__all__ = list(_gmma.__all__) + [
    "SM90_U32x1_STSM_N", "SM90_U32x2_STSM_N", "SM90_U32x4_STSM_N", "SM90_U16x2_STSM_T",
    "SM90_U16x4_STSM_T", "SM90_U16x8_STSM_T", "SM90_TMA_LOAD", "SM90_TMA_LOAD_MULTICAST",
    "SM90_TMA_STORE", "GMMA", "ss_smem_selector",
]
