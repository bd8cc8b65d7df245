"""MMA and copy atoms, TiledMMA and TiledCopy (CuTe's ``include/cute/atom``)."""

from __future__ import annotations

from .mma_atom import MMA_Atom, UniversalFMA, canonical_type, sizeof_bits, make_mma_atom
from .mma_traits_sm80 import *  # noqa: F401,F403
from .mma_traits_sm80 import __all__ as _sm80_all
from .mma_traits_sm90 import *  # noqa: F401,F403
from .mma_traits_sm90 import __all__ as _sm90_all
from .copy_traits import *  # noqa: F401,F403
from .copy_traits import __all__ as _ct_all
from .copy_atom import Copy_Atom, make_copy_atom
from .tiled_copy import (
    TiledCopy, ThrCopy, make_tiled_copy, make_tiled_copy_impl, make_layout_tv, make_tiled_copy_A,
    make_tiled_copy_B, make_tiled_copy_C, make_tiled_copy_C_atom, make_tiled_copy_S,
    make_tiled_copy_D, make_cotiled_copy, check_tiled_copy,
)
from .tiled_mma import (
    TiledMMA, ThrMMA, make_tiled_mma, partition_shape_A, partition_shape_B, partition_shape_C,
    tile_size, tile_shape, thr_size, check_tiled_mma, CoverageReport,
)

# sizeof_bits: cute_py.numeric.sizeof_bits (one definition), also cute_py.atom.sizeof_bits
__all__ = (["MMA_Atom", "UniversalFMA", "canonical_type", "make_mma_atom",
            "Copy_Atom", "make_copy_atom", "TiledMMA", "ThrMMA", "make_tiled_mma",
            "partition_shape_A", "partition_shape_B", "partition_shape_C", "tile_size",
            "tile_shape", "thr_size", "check_tiled_mma", "CoverageReport",
            "TiledCopy", "ThrCopy", "make_tiled_copy", "make_tiled_copy_impl", "make_layout_tv",
            "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C",
            "make_tiled_copy_C_atom", "make_tiled_copy_S", "make_tiled_copy_D",
            "make_cotiled_copy", "check_tiled_copy"]
           + list(_sm80_all) + list(_sm90_all) + list(_ct_all))
