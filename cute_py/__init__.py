"""cute_py — CuTe's layout algebra in pure Python.

``import cute_py as cute`` gives CuTe's names: ``cute.Layout``, ``cute.make_layout``,
``cute.composition``, ``cute.logical_divide``, ... The CUDA backend lives in
``cute_py.backends`` and is never imported by the algebra.
"""

from __future__ import annotations

import os as _os

# Installed, the backend is the subpackage cute_py/backends. In a source checkout it is the
# top-level folder backends/; let `import cute_py.backends` find it there too (nothing is
# imported here — the algebra never loads the backend).
_src_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if (not _os.path.isdir(_os.path.join(__path__[0], "backends"))
        and _os.path.isfile(_os.path.join(_src_root, "backends", "__init__.py"))
        and _os.path.isfile(_os.path.join(_src_root, "pyproject.toml"))):
    __path__.append(_os.path.join(_src_root, "backends", ".."))
del _src_root

from . import errors
from .errors import *  # noqa: F401,F403
from .int_tuple import (
    IntTuple, Underscore, _, is_int, is_tuple, is_static, is_underscore, has_underscore,
    product, product_each, product_like, inner_product, shape_div, ceil_div, round_up,
    prefix_product, suffix_product, congruent, weakly_congruent, compatible, weakly_compatible,
    evenly_divides, idx2crd, crd2crd, slice_, dice, elem_less, elem_leq, repeat_like, wrap,
    unwrap, elem_scale, signum, increment,
)
from .int_tuple import flatten as _flatten_t, unflatten as _unflatten_t, filter_zeros as _fz_t
from .layout import (
    Layout, LayoutLeft, LayoutRight, is_layout, make_layout, make_shape, make_stride,
    make_coord, make_tile, make_step, make_ordered_layout, make_layout_like,
    compact_col_major, compact_row_major, compact_major, compact_order, size, cosize, coshape,
    rank, depth, shape, stride, get, layout, crd2idx, slice_and_offset, select, take, group,
    append, prepend, replace, remove, zip, zip2_by, tile_unzip, get_hier_coord,
    get_flat_coord, get_1d_coord, transform_layout, fmt_int_tuple,
)
from .algebra import (
    coalesce, coalesce_shape, filter_zeros as _fz_l, filter as _filter_l, composition,
    complement, right_inverse, left_inverse, logical_divide, zipped_divide, tiled_divide,
    flat_divide, logical_product, zipped_product, tiled_product, flat_product, blocked_product,
    raked_product, tile_to_shape, upcast, downcast, recast_layout, max_common_layout,
    max_common_vector, nullspace, max_alignment, domain_distribute, with_shape, flatten_layout,
    unflatten_layout,
)
from .printing import print_layout, parse_layout, format_layout
from . import int_tuple as _it
import builtins as _builtins


def _check_tiler(x, op, arg):
    if isinstance(x, tuple):
        for a in x:
            _check_tiler(a, op, arg)
    elif not (isinstance(x, Layout) or is_underscore(x) or is_int(x)):
        raise IntTupleError(op, arg, "must be a Layout, an int, _ or a tuple of those",
                            actual=repr(x))


def _guard(fn, kinds):
    """The public form of an IntTuple helper: validate the arguments first, so that a bad leaf
    (bool, float, str, a Layout, a zero extent) raises IntTupleError naming the argument instead
    of a raw Python error. The core calls the unguarded helpers directly (no overhead)."""
    import functools
    import inspect
    params = inspect.signature(fn).parameters
    names = list(params)
    optional = {n for n, p in params.items() if p.default is None}

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        for i, (name, kind) in enumerate(_builtins.zip(names, kinds)):
            if i >= len(args) and name not in kwargs:
                continue  # left out: its default applies (or Python's TypeError names it)
            x = args[i] if i < len(args) else kwargs[name]
            if x is None and name in optional:
                continue  # optional argument left out
            if kind == "tiler":
                _check_tiler(x, fn.__name__, name)
                continue
            if kind in ("count", "scalar") and (isinstance(x, tuple) or not is_int(x)):
                raise IntTupleError(fn.__name__, name, "must be an int", actual=repr(x))
            if kind == "shape_or_layout":
                if isinstance(x, Layout):
                    continue
                kind = "shape"
            _it._check(x, fn.__name__, name, allow_underscore=kind == "coord")
            if kind in ("shape", "divisor", "count"):
                for leaf in _it.flatten(_it.wrap(x)):
                    if isinstance(leaf, int) and (leaf == 0 if kind == "divisor" else leaf < 1):
                        raise IntTupleError(fn.__name__, name, f"has the extent {leaf}",
                                            expected="non-zero values" if kind == "divisor"
                                            else "positive extents", actual=x)
        return fn(*args, **kwargs)
    guarded = errors.public(fn.__name__, IntTupleError)(guarded)  # the net behind the checks
    guarded.__wrapped__ = fn
    return guarded


product = _guard(product, ("int",))
product_each = _guard(product_each, ("int",))
product_like = _guard(product_like, ("int", "int"))
inner_product = _guard(inner_product, ("int", "int"))
shape_div = _guard(shape_div, ("int", "divisor"))
ceil_div = _guard(ceil_div, ("int", "divisor"))
round_up = _guard(round_up, ("int", "divisor"))
prefix_product = _guard(prefix_product, ("int", "int"))
suffix_product = _guard(suffix_product, ("int", "int"))
congruent = _guard(congruent, ("coord", "coord"))
weakly_congruent = _guard(weakly_congruent, ("coord", "coord"))
compatible = _guard(compatible, ("shape", "shape"))
weakly_compatible = _guard(weakly_compatible, ("shape", "shape"))
idx2crd = _guard(idx2crd, ("int", "shape", "int"))
crd2crd = _guard(crd2crd, ("coord", "shape", "shape"))
slice_ = _guard(slice_, ("coord", "coord"))
dice = _guard(dice, ("coord", "coord"))
elem_less = _guard(elem_less, ("int", "int"))
elem_leq = _guard(elem_leq, ("int", "int"))
elem_scale = _guard(elem_scale, ("int", "int"))
evenly_divides = _guard(evenly_divides, ("shape", "tiler"))
signum = _guard(signum, ("int",))
increment = _guard(increment, ("coord", "shape"))
compact_col_major = _guard(compact_col_major, ("shape", "scalar"))
compact_row_major = _guard(compact_row_major, ("shape", "scalar"))
domain_distribute = _guard(domain_distribute, ("shape_or_layout", "count"))

__version__ = "0.1.0"


def flatten(x):
    """``flatten`` of an IntTuple (a flat tuple of leaves) or of a layout (flat shape and stride)."""
    if isinstance(x, Layout):
        return flatten_layout(x)
    f = getattr(x, "_cute_flatten", None)
    if f is not None:
        return f()
    return _flatten_t(x)


def unflatten(x, profile):
    """Inverse of :func:`flatten` for IntTuples and layouts."""
    if isinstance(x, Layout):
        return unflatten_layout(x, profile)
    return _unflatten_t(x, profile)


def filter_zeros(x, profile=None):
    """Layouts: set stride-0 modes' extents to 1. IntTuples: ``filter_zeros(a, b)`` replaces the
    elements of ``b`` paired with 0 in ``a`` by 1."""
    if isinstance(x, (int, tuple)) and not isinstance(x, bool):
        return _fz_t(x, profile)
    return _fz_l(x, profile)


def filter(x, profile=None):  # noqa: A001 - CuTe's name; kept out of __all__
    """CuTe's ``filter``: remove stride-0 and size-1 modes, then coalesce."""
    return _filter_l(x, profile)


# Swizzles, composed layouts and shared-memory layout atoms
from .swizzle import Swizzle, make_swizzle, is_swizzle  # noqa: E402
from .composed import (  # noqa: E402
    ComposedLayout, make_composed_layout, is_composed_layout, smem_ptr_flag_bits, smem_ptr_flag,
    get_swizzle_portion, get_nonswizzle_portion, as_position_independent_swizzle_layout,
)
from .smem_atoms import GMMA, sizeof_bits, ss_smem_selector, make_sm80_smem_layout_atom  # noqa: E402

# MMA / copy atoms, TiledMMA, TiledCopy; architecture atoms also as cute_py.nvgpu.sm80 / .sm90
from . import atom  # noqa: E402
from .atom import *  # noqa: E402,F401,F403
from . import nvgpu  # noqa: E402
from . import fp8  # noqa: E402,F401  (FP8 numbers and scaled-GEMM references)
from .executor import execute_tiled_mma, execute_tiled_copy, execute_mma_atom  # noqa: E402
from .bank_conflicts import copy_bank_conflicts, vector_width  # noqa: E402
from .svg import (layout_svg, tv_layout_svg, tiled_mma_svg, tiled_copy_svg,  # noqa: E402
                  format_tv_layout, print_tv_layout, write_svg)

# Tensors
from .tensor import (  # noqa: E402
    Tensor, make_tensor, is_tensor, make_gmem_ptr, make_smem_ptr, make_rmem_ptr, Pointer,
    ElementRef, ScaledBasis, E, ArithmeticTuple, make_basis_like, make_identity_layout,
    make_identity_tensor, make_coord_tensor, local_tile, local_partition, inner_partition,
    outer_partition, make_fragment_like, make_tensor_like, recast, domain_offset, print_tensor,
    basis_value, basis_get,
)

# Symbolic sizes; sympy is imported only when used
from .symbolic import symbols, is_symbolic, free_symbols, subs, simplify, require_static  # noqa: E402

# The high-level GEMM; the backend and CuPy load only when it is called
from .gemm import gemm  # noqa: E402
from .scaled_mm import scaled_mm  # noqa: E402

# CuTe-format printing of any value, LaTeX pictures, dice/slice of layouts, coordinate helpers.
# `print` and `slice` are CuTe's names (cute.print(x), cute.slice(c, L)) but stay out of
# __all__ so that `from cute_py import *` never replaces Python's builtins.
from .printing import format_cute, print  # noqa: E402,A004
from .latex import print_latex, format_latex, print_latex_tv, format_latex_tv  # noqa: E402
from .layout import dice, slice, coprofile, transform_leaf  # noqa: E402,A004

# The public surface. Written out: `from cute_py import *` gives exactly these names and shadows
# no builtin (CuTe's `filter` and `zip` stay reachable as cute_py.filter / cute_py.zip).
__all__ = [
    # errors
    "CuteError", "IntTupleError", "LayoutError", "ParseError", "SymbolicError", "AtomError",
    "TensorError", "CompileError", "LaunchError",
    # IntTuple
    "IntTuple", "Underscore", "_", "is_int", "is_tuple", "is_static", "is_underscore",
    "has_underscore", "product", "product_each", "product_like", "inner_product", "shape_div",
    "ceil_div", "round_up", "prefix_product", "suffix_product", "congruent", "weakly_congruent",
    "compatible", "weakly_compatible", "evenly_divides", "idx2crd", "crd2crd", "slice_", "dice",
    "elem_less", "elem_leq", "repeat_like", "wrap", "unwrap", "elem_scale", "signum",
    "increment", "flatten", "unflatten", "filter_zeros",
    # Layout
    "Layout", "LayoutLeft", "LayoutRight", "is_layout", "make_layout", "make_shape",
    "make_stride", "make_coord", "make_tile", "make_step", "make_ordered_layout",
    "make_layout_like", "make_fragment_like", "compact_col_major", "compact_row_major",
    "compact_major", "compact_order", "size", "cosize", "coshape", "rank", "depth", "shape",
    "stride", "get", "crd2idx", "slice_and_offset", "select", "take", "group", "append",
    "prepend", "replace", "remove", "zip2_by", "tile_unzip", "with_shape", "get_hier_coord",
    "get_flat_coord", "get_1d_coord", "transform_layout", "fmt_int_tuple", "coprofile",
    "transform_leaf",
    # the algebra
    "coalesce", "coalesce_shape", "composition", "complement", "right_inverse", "left_inverse",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product",
    "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product",
    "tile_to_shape", "upcast", "downcast", "recast_layout", "max_common_layout",
    "max_common_vector", "nullspace", "max_alignment", "domain_distribute",
    # printing and pictures
    "print_layout", "parse_layout", "format_layout", "format_cute", "print_latex",
    "format_latex", "print_latex_tv", "format_latex_tv", "layout_svg", "tv_layout_svg",
    "tiled_mma_svg", "tiled_copy_svg", "format_tv_layout", "print_tv_layout", "write_svg",
    # swizzles, composed layouts, shared-memory atoms
    "Swizzle", "make_swizzle", "is_swizzle", "ComposedLayout", "make_composed_layout",
    "is_composed_layout", "smem_ptr_flag_bits", "smem_ptr_flag", "get_swizzle_portion",
    "get_nonswizzle_portion", "as_position_independent_swizzle_layout", "GMMA", "sizeof_bits",
    "ss_smem_selector", "make_sm80_smem_layout_atom",
    # atoms, TiledMMA, TiledCopy
    "MMA_Atom", "UniversalFMA", "canonical_type", "make_mma_atom", "Copy_Atom", "make_copy_atom",
    "TiledMMA", "ThrMMA", "make_tiled_mma", "partition_shape_A", "partition_shape_B",
    "partition_shape_C", "tile_size", "tile_shape", "thr_size", "check_tiled_mma",
    "CoverageReport", "TiledCopy", "ThrCopy", "make_tiled_copy", "make_tiled_copy_impl",
    "make_layout_tv", "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C",
    "make_tiled_copy_C_atom", "make_tiled_copy_S", "make_tiled_copy_D", "make_cotiled_copy",
    "check_tiled_copy", "execute_tiled_mma", "execute_tiled_copy", "execute_mma_atom",
    "copy_bank_conflicts", "vector_width",
    # architecture atoms (CuTe's C++ names; also in cute_py.nvgpu.sm80 / cute_py.nvgpu.sm90)
    "SM80_16x8x8_F16F16F16F16_TN", "SM80_16x8x16_F16F16F16F16_TN",
    "SM80_16x8x8_F32F16F16F32_TN", "SM80_16x8x16_F32F16F16F32_TN",
    "SM80_16x8x8_F32BF16BF16F32_TN", "SM80_16x8x16_F32BF16BF16F32_TN",
    "SM80_16x8x8_F32TF32TF32F32_TN", "SM80_8x4", "SM80_8x8_Row", "SM80_8x16_Row",
    "SM80_16x8_Row", "CLayout_64xN", "ALayout_64x16", "ABLayout", "SM90_64xNx16_F32F16F16_SS",
    "SM90_64xNx16_F32F16F16_RS", "SM90_64xNx16_F32BF16BF16_SS", "SM90_64xNx16_F32BF16BF16_RS",
    "SM90_N_VALUES", "SM90_64x8x16_F32F16F16_SS", "SM90_64x8x16_F32F16F16_RS",
    "SM90_64x8x16_F32BF16BF16_SS", "SM90_64x8x16_F32BF16BF16_RS", "SM90_64x16x16_F32F16F16_SS",
    "SM90_64x16x16_F32F16F16_RS", "SM90_64x16x16_F32BF16BF16_SS",
    "SM90_64x16x16_F32BF16BF16_RS", "SM90_64x32x16_F32F16F16_SS", "SM90_64x32x16_F32F16F16_RS",
    "SM90_64x32x16_F32BF16BF16_SS", "SM90_64x32x16_F32BF16BF16_RS",
    "SM90_64x64x16_F32F16F16_SS", "SM90_64x64x16_F32F16F16_RS", "SM90_64x64x16_F32BF16BF16_SS",
    "SM90_64x64x16_F32BF16BF16_RS", "SM90_64x96x16_F32F16F16_SS", "SM90_64x96x16_F32F16F16_RS",
    "SM90_64x96x16_F32BF16BF16_SS", "SM90_64x96x16_F32BF16BF16_RS",
    "SM90_64x128x16_F32F16F16_SS", "SM90_64x128x16_F32F16F16_RS",
    "SM90_64x128x16_F32BF16BF16_SS", "SM90_64x128x16_F32BF16BF16_RS",
    "SM90_64x192x16_F32F16F16_SS", "SM90_64x192x16_F32F16F16_RS",
    "SM90_64x192x16_F32BF16BF16_SS", "SM90_64x192x16_F32BF16BF16_RS",
    "SM90_64x256x16_F32F16F16_SS", "SM90_64x256x16_F32F16F16_RS",
    "SM90_64x256x16_F32BF16BF16_SS", "SM90_64x256x16_F32BF16BF16_RS", "CopyOp", "UniversalCopy",
    "SM80_CP_ASYNC_CACHEALWAYS", "SM80_CP_ASYNC_CACHEGLOBAL", "SM80_CP_ASYNC_CACHEALWAYS_ZFILL",
    "SM80_CP_ASYNC_CACHEGLOBAL_ZFILL", "SM75_U32x1_LDSM_N", "SM75_U32x2_LDSM_N",
    "SM75_U32x4_LDSM_N", "SM75_U16x2_LDSM_T", "SM75_U16x4_LDSM_T", "SM75_U16x8_LDSM_T",
    "SM90_U32x1_STSM_N", "SM90_U32x2_STSM_N", "SM90_U32x4_STSM_N", "SM90_U16x2_STSM_T",
    "SM90_U16x4_STSM_T", "SM90_U16x8_STSM_T", "SM90_TMA_LOAD", "SM90_TMA_LOAD_MULTICAST",
    "SM90_TMA_STORE",
    # tensors
    "Tensor", "make_tensor", "is_tensor", "make_gmem_ptr", "make_smem_ptr", "make_rmem_ptr",
    "Pointer", "ElementRef", "ScaledBasis", "E", "ArithmeticTuple", "make_basis_like",
    "make_identity_layout", "make_identity_tensor", "make_coord_tensor", "local_tile",
    "local_partition", "inner_partition", "outer_partition", "make_tensor_like", "recast",
    "domain_offset", "print_tensor", "basis_value", "basis_get",
    # symbolic sizes
    "symbols", "is_symbolic", "free_symbols", "subs", "simplify", "require_static",
    # the GEMM
    "gemm", "scaled_mm",
]


# ---------------------------------------------------------------------------------------------
# The boundary. Every public function outside the hot algebra core goes through errors.public:
# its own checks name the argument, and a Python or dependency error that still escapes becomes
# the library error of its layer, naming the operation. The hot core (construction, size,
# composition, divides, products, ...) validates its arguments itself and is not wrapped (no
# per-call overhead); tests/test_fuzz_public.py holds both to "no foreign exception, no hang".
_HOT = frozenset((
    "make_layout", "make_shape", "make_stride", "make_coord", "make_tile", "make_step", "size",
    "cosize", "rank", "depth", "shape", "get", "crd2idx", "coalesce", "composition",
    "complement", "right_inverse", "left_inverse", "logical_divide", "zipped_divide",
    "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product",
    "flat_product", "blocked_product", "raked_product", "upcast", "downcast", "select",
    "is_int", "is_tuple", "is_static", "is_underscore", "has_underscore", "is_layout",
    "is_swizzle", "is_composed_layout", "is_tensor", "is_symbolic", "sizeof_bits",
    "canonical_type", "gemm",   # gemm converts foreign errors itself (one call layer less)
    "scaled_mm",                # as gemm
))


def _wrap_public():
    import types
    layer = {"atom": AtomError, "executor": AtomError, "bank_conflicts": AtomError,
             "tensor": TensorError, "symbolic": SymbolicError, "printing": LayoutError,
             "svg": LayoutError, "gemm": CuteError, "scaled_mm": CuteError}
    g = globals()
    done = {}
    for name in __all__:
        fn = g[name]
        if name in _HOT or not isinstance(fn, types.FunctionType) or \
                getattr(fn, "__wrapped__", None) is not None:
            continue
        mod = fn.__module__.split(".")
        err = layer.get(mod[1] if len(mod) > 1 else "", LayoutError)
        g[name] = done[name] = errors.public(name, err)(fn)
    for ns in (atom, nvgpu.sm80, nvgpu.sm90):  # the same objects under the namespaces
        for name, w in done.items():
            if getattr(ns, name, None) is getattr(w, "__wrapped__", None):
                setattr(ns, name, w)


_wrap_public()
del _wrap_public
