"""Tensors: an iterator (engine + offset) composed with a layout — CuTe's ``Tensor<Engine, Layout>``
(``include/cute/tensor_impl.hpp``).

``t(c) == engine[offset + layout(c)]``. Engines:

- a NumPy array (or a CuPy array, detected by duck typing) viewed as flat element memory — real
  data, so every partitioning can be checked element by element against ``np.arange``;
- a typed placeholder pointer, ``make_gmem_ptr(dtype)``, ``make_smem_ptr(dtype)``,
  ``make_rmem_ptr(dtype)``, for tensors the backend lowers into CUDA (``t(c)`` gives an
  :class:`ElementRef` holding the element index, possibly a sympy expression);
- a counting iterator of coordinates (``make_identity_tensor``): strides are basis elements
  ``E(i)`` (CuTe's ``ScaledBasis``), so tiling/partitioning an identity tensor is exact and its
  elements are the original coordinates even outside the shape (predication).

Slicing with ``_`` keeps modes and moves the offset (``slice_and_offset``); composition and the
divides act on the layout; ``local_tile``/``local_partition`` follow CuTe exactly.
"""

from __future__ import annotations

from . import int_tuple as it
from .algebra import (
    coalesce, composition, filter as filt, filter_zeros, flat_divide, flatten_layout,
    logical_divide, make_fragment_like as mfl_layout, recast_layout, tiled_divide, zipped_divide,
)
from .composed import (
    as_position_independent_swizzle_layout, ComposedLayout, _off, smem_ptr_flag_bits,
)
from .errors import CuteError, LayoutError, TensorError
from .int_tuple import _, has_underscore, is_underscore
from .layout import (
    fmt_int_tuple, get, Layout, make_layout, make_layout_like, size, slice_and_offset, _to_tuple,
)
from .numeric import sizeof_bits

__all__ = [
    "Tensor", "make_tensor", "is_tensor", "make_gmem_ptr", "make_smem_ptr", "make_rmem_ptr",
    "Pointer", "ElementRef", "ScaledBasis", "E", "ArithmeticTuple", "make_basis_like",
    "make_identity_layout", "make_identity_tensor", "make_coord_tensor", "local_tile",
    "local_partition", "inner_partition", "outer_partition", "make_fragment_like",
    "make_tensor_like", "recast", "domain_offset", "print_tensor", "basis_value", "basis_get",
]


# ---------------------------------------------------------------------------------------------
# ArithmeticTuple and ScaledBasis (coordinate strides)


class ArithmeticTuple(tuple):
    """A tuple that adds elementwise (shorter operands are padded with 0), CuTe's
    ``ArithmeticTuple``: the value of an identity tensor. Compares equal to a plain tuple."""

    def __new__(cls, values=()):
        if not isinstance(values, (tuple, list)) and not hasattr(values, "__next__"):
            raise TensorError("ArithmeticTuple", "values", "must be a tuple of coordinates",
                              actual=repr(values))
        return super().__new__(cls, values)

    def __add__(self, other):
        if isinstance(other, ScaledBasis):
            return self + other.as_arithmetic_tuple()
        if isinstance(other, tuple):
            n = max(len(self), len(other))
            a = tuple(self) + (0,) * (n - len(self))
            b = tuple(other) + (0,) * (n - len(other))
            return ArithmeticTuple(_add(x, y) for x, y in zip(a, b))
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        """Elementwise difference (CuTe's ``operator-``), shorter operands padded with 0:
        ``ArithmeticTuple((3, 5)) - (1, 2) == (2, 3)``; law ``(a - b) + b == a``."""
        if isinstance(other, ScaledBasis):
            other = other.as_arithmetic_tuple()
        if isinstance(other, tuple):
            return self + (-ArithmeticTuple(other))
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def __rsub__(self, other):
        if isinstance(other, ScaledBasis):
            other = other.as_arithmetic_tuple()
        if isinstance(other, tuple):
            return ArithmeticTuple(other) + (-self)
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return -self
        return NotImplemented

    def __neg__(self):
        return ArithmeticTuple(-x if not isinstance(x, tuple) else -ArithmeticTuple(x) for x in self)

    def __repr__(self):
        return "ArithmeticTuple(" + tuple.__repr__(tuple(self)) + ")"

    def __str__(self):
        return fmt_int_tuple(tuple(self))


def _add(x, y):
    if isinstance(x, tuple) or isinstance(y, tuple):
        return ArithmeticTuple(x if isinstance(x, tuple) else ()) + (y if isinstance(y, tuple) else ()) \
            if not (isinstance(x, int) and x != 0 or isinstance(y, int) and y != 0) else _bad_add(x, y)
    return x + y


def _bad_add(x, y):
    raise TensorError("ArithmeticTuple", "value", "adds a number to a nested coordinate",
                      actual=(x, y))


class ScaledBasis:
    """CuTe's ``ScaledBasis<T, Ns...>``: the value ``value`` in (nested) mode ``modes`` of an
    otherwise-zero coordinate. ``E(1) == (0, 1)``; ``E(1, 0) == (0, (1,))``. Printed
    ``1@1`` / ``1@0@1`` as CuTe prints it (innermost mode first). Used as layout strides."""

    __slots__ = ("value", "modes")
    _cute_scaled_basis = True

    def __init__(self, value, modes):
        if isinstance(modes, int) and not isinstance(modes, bool):
            modes = (modes,)
        if not isinstance(modes, (tuple, list)) or not all(
                isinstance(m, int) and not isinstance(m, bool) and 0 <= m < 1 << 16 for m in modes):
            raise TensorError("ScaledBasis", "modes", "must be a tuple of non-negative mode "
                              "indices", actual=repr(modes))
        if not (it.is_int(value) or isinstance(value, (tuple, ScaledBasis))):
            raise TensorError("ScaledBasis", "value", "must be an int, a symbol or a coordinate",
                              actual=repr(value))
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "modes", tuple(modes))

    def __setattr__(self, name, value):
        raise AttributeError("ScaledBasis is immutable")

    def as_arithmetic_tuple(self):
        v = self.value
        for m in reversed(self.modes):
            v = ArithmeticTuple((0,) * m + (v,))
        return v

    def _scale(self, k):
        return ScaledBasis(self.value * k, self.modes)

    def __mul__(self, k):
        if isinstance(k, (ScaledBasis, tuple)):
            return NotImplemented
        return self._scale(k)

    def __rmul__(self, k):
        if isinstance(k, (ScaledBasis, tuple)):
            return NotImplemented
        return ScaledBasis(k * self.value, self.modes)

    def __neg__(self):
        return ScaledBasis(-self.value, self.modes)

    def __abs__(self):
        return ScaledBasis(abs(self.value), self.modes)

    def __floordiv__(self, k):
        return ScaledBasis(it._floordiv(self.value, k), self.modes)

    def __add__(self, other):
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        if isinstance(other, ScaledBasis):
            if other.modes == self.modes:
                return ScaledBasis(self.value + other.value, self.modes)
            return self.as_arithmetic_tuple() + other.as_arithmetic_tuple()
        if isinstance(other, tuple):
            return ArithmeticTuple(other) + self.as_arithmetic_tuple()
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, tuple):
            other = -ArithmeticTuple(other)
            return self + other
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __eq__(self, other):
        if isinstance(other, ScaledBasis):
            return self.modes == other.modes and bool(self.value == other.value)
        return False

    def __hash__(self):
        return hash(("ScaledBasis", self.value, self.modes))

    def __reduce__(self):
        return (ScaledBasis, (self.value, self.modes))

    def __str__(self):
        return str(self.value).replace(" ", "") + "".join(f"@{m}" for m in reversed(self.modes))

    def __repr__(self):
        return f"ScaledBasis({self.value!r}, {self.modes!r})"


def E(*modes) -> ScaledBasis:
    """CuTe's ``E<Ns...>``: ``ScaledBasis(1, Ns)``. ``E(0)`` is ``(1, 0, ...)``; ``E(1, 0)`` is
    ``(0, (1, ...), ...)``."""
    return ScaledBasis(1, modes)


def basis_value(x):
    return x.value if isinstance(x, ScaledBasis) else x


def basis_get(b, t):
    """Select ``t``'s (nested) mode named by the basis ``b`` (CuTe's ``basis_get``)."""
    if not isinstance(b, ScaledBasis):
        return t
    for m in b.modes:
        t = t[m]
    return t


def make_basis_like(shape, _prefix=()):
    """Basis elements congruent to ``shape``: ``make_basis_like((2,(3,4))) == (E(0), (E(1,0), E(1,1)))``."""
    if not _prefix:
        it._check(shape, "make_basis_like", "shape")
    if isinstance(shape, tuple):
        return tuple(make_basis_like(s, _prefix + (i,)) for i, s in enumerate(shape))
    return ScaledBasis(1, _prefix)


def make_identity_layout(shape) -> Layout:
    """``make_layout(shape, make_basis_like(shape))``: maps a coordinate to itself.
    ``str(make_identity_layout((4, 8))) == "(4,8):(1@0,1@1)"``."""
    shape = _to_tuple(shape)
    return Layout(shape, make_basis_like(shape))


def _zero_like(shape):
    if isinstance(shape, tuple):
        return ArithmeticTuple(_zero_like(s) for s in shape)
    return 0


# ---------------------------------------------------------------------------------------------
# Iterators (engine + offset)


class Pointer:
    """A typed placeholder pointer into ``space`` (``"gmem"``, ``"smem"``, ``"rmem"``): what a
    kernel's tensors point to before there is memory. ``p + k`` moves it; frozen and hashable.
    ``swizzle`` (a :class:`~cute_py.swizzle.Swizzle` on byte addresses) is kept for smem tensors
    built from GMMA atoms."""

    __slots__ = ("space", "dtype", "name", "offset", "bits")

    def __init__(self, space: str, dtype, name=None, offset=0):
        if space not in ("gmem", "smem", "rmem"):
            raise TensorError("Pointer", "space", "must be 'gmem', 'smem' or 'rmem'", actual=space)
        try:
            bits = sizeof_bits(dtype)
        except CuteError as e:
            raise TensorError("Pointer", "dtype", str(e), actual=repr(dtype)) from None
        object.__setattr__(self, "space", space)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "bits", bits)

    def __setattr__(self, name, value):
        raise AttributeError("Pointer is immutable")

    def __add__(self, k):
        return Pointer(self.space, self.dtype, self.name, self.offset + k)

    def deref(self, idx):
        return ElementRef(self, self.offset + idx)

    def __eq__(self, other):
        return isinstance(other, Pointer) and (self.space, self.dtype, self.name) == \
            (other.space, other.dtype, other.name) and bool(self.offset == other.offset)

    def __hash__(self):
        return hash(("Pointer", self.space, str(self.dtype), self.name, self.offset))

    def __str__(self):
        nm = self.name if self.name is not None else "?"
        return f"{self.space}_ptr[{self.bits}b]({nm}+{str(self.offset).replace(' ', '')})"

    def __repr__(self):
        return f"Pointer({self.space!r}, {self.dtype!r}, {self.name!r}, {self.offset!r})"


class ElementRef:
    """``t(c)`` of a placeholder tensor: the pointer's memory space, dtype, name and the element
    index ``index`` (an int or a sympy expression)."""

    __slots__ = ("ptr", "index")

    def __init__(self, ptr: Pointer, index):
        if not isinstance(ptr, Pointer):
            raise TensorError("ElementRef", "ptr", "must be a Pointer", actual=repr(ptr))
        object.__setattr__(self, "ptr", ptr)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name, value):
        raise AttributeError("ElementRef is immutable")

    def __eq__(self, other):
        return isinstance(other, ElementRef) and other.ptr.name == self.ptr.name and \
            other.ptr.space == self.ptr.space and bool(other.index == self.index)

    def __hash__(self):
        return hash(("ElementRef", self.ptr.space, self.ptr.name, self.index))

    def __repr__(self):
        return f"{self.ptr.name or self.ptr.space}[{self.index}]"


def make_gmem_ptr(dtype, name=None) -> Pointer:
    """A placeholder global-memory pointer (CuTe's ``make_gmem_ptr<T>``)."""
    return Pointer("gmem", dtype, name)


def make_smem_ptr(dtype, name=None) -> Pointer:
    """A placeholder shared-memory pointer (CuTe's ``make_smem_ptr<T>``)."""
    return Pointer("smem", dtype, name)


def make_rmem_ptr(dtype, name=None) -> Pointer:
    """A placeholder register-memory pointer (CuTe's ``make_rmem_ptr<T>``)."""
    return Pointer("rmem", dtype, name)


def _is_array(x) -> bool:
    return hasattr(x, "dtype") and hasattr(x, "shape") and hasattr(x, "strides") and \
        type(x).__module__.split(".")[0] in ("numpy", "cupy")


def _xp(a):
    mod = type(a).__module__.split(".")[0]
    if mod == "cupy":
        import importlib
        return importlib.import_module("cupy")
    import numpy
    return numpy


class _ArrayIter:
    """A NumPy/CuPy 1-D element view plus an offset: CuTe's ``ViewEngine`` over a pointer."""

    __slots__ = ("flat", "offset", "space")

    def __init__(self, flat, offset=0, space="gmem"):
        object.__setattr__(self, "flat", flat)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "space", space)

    def __setattr__(self, name, value):
        raise AttributeError("iterator is immutable")

    def __add__(self, k):
        return _ArrayIter(self.flat, self.offset + k, self.space)

    def _index(self, idx):
        i = self.offset + idx
        if not isinstance(i, int):
            raise TensorError("Tensor", "coord", "gives a symbolic index into a NumPy/CuPy tensor; "
                              "substitute values first", actual=str(i))
        if not 0 <= i < self.flat.shape[0]:
            raise TensorError("Tensor", "coord", f"maps to element {i}, outside the engine's "
                              f"{self.flat.shape[0]} elements", actual=i)
        return i

    def deref(self, idx):
        return self.flat[self._index(idx)]

    def store(self, idx, value):
        self.flat[self._index(idx)] = value

    def __eq__(self, other):
        return isinstance(other, _ArrayIter) and other.flat is self.flat and other.offset == self.offset

    def __hash__(self):
        return hash((id(self.flat), self.offset))

    def __str__(self):
        kind = type(self.flat).__module__.split(".")[0]
        return f"{kind}_ptr[{self.flat.dtype.itemsize * 8}b](+{self.offset})"


class _CoordIter:
    """CuTe's ``ArithmeticTupleIterator``: ``*(it + k) == base + k`` for tuple-valued ``k``."""

    __slots__ = ("base",)

    def __init__(self, base):
        object.__setattr__(self, "base", base)

    def __add__(self, k):
        return _CoordIter(self.base + k)

    def deref(self, idx):
        v = self.base + idx
        return _plain(v)

    def __eq__(self, other):
        return isinstance(other, _CoordIter) and other.base == self.base

    def __hash__(self):
        return hash(("coord", tuple(self.base) if isinstance(self.base, tuple) else self.base))

    def __str__(self):
        return "ArithTuple" + (fmt_int_tuple(tuple(self.base)) if isinstance(self.base, tuple)
                               else str(self.base))

    @property
    def offset(self):
        return self.base


def _plain(v):
    if isinstance(v, ScaledBasis):
        v = v.as_arithmetic_tuple()
    if isinstance(v, tuple):
        return ArithmeticTuple(_plain(x) for x in v)
    return v


def _flat_memory(a):
    """A 1-D view of the memory an array starts at (in elements), covering the array."""
    xp = _xp(a)
    item = a.dtype.itemsize
    if a.ndim == 0:
        return a.reshape(1)
    if any(s < 0 for s in a.strides) or any(s % item for s in a.strides):
        raise TensorError("make_tensor", "engine", "must have non-negative strides that are whole "
                          "elements", actual=a.strides)
    span = 1 + sum((n - 1) * (s // item) for n, s in zip(a.shape, a.strides)) if a.size else 0
    return xp.lib.stride_tricks.as_strided(a, shape=(span,), strides=(item,))


def _array_layout(a) -> Layout:
    item = a.dtype.itemsize
    if a.ndim == 0:
        return Layout(1, 0)
    shape = tuple(int(n) for n in a.shape)
    stride = tuple(int(s // item) for s in a.strides)
    return Layout(shape, stride) if len(shape) > 1 else Layout(shape[0], stride[0])


# ---------------------------------------------------------------------------------------------
# Tensor


class Tensor:
    """CuTe's ``Tensor``: ``t(c) == data[offset + layout(c)]``; ``t(c with _)`` slices.

    ``.data`` (the iterator: engine + offset), ``.layout``, ``.shape``, ``.stride``, ``.offset``,
    ``.engine`` (the NumPy/CuPy array or placeholder pointer), ``.dtype``; ``t[c]`` reads and
    ``t[c] = v`` writes (NumPy/CuPy engines). The layout may be a :class:`ComposedLayout`.
    """

    __slots__ = ("data", "layout")

    def __init__(self, data, layout):
        if not isinstance(layout, (Layout, ComposedLayout)):
            raise TensorError("Tensor", "layout", "must be a Layout or ComposedLayout", actual=repr(layout))
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "layout", layout)

    def __setattr__(self, name, value):
        raise AttributeError("Tensor is immutable (write elements with t[c] = v)")

    # accessors ----------------------------------------------------------------------------
    @property
    def iterator(self):
        return self.data

    @property
    def shape(self):
        return self.layout.shape

    @property
    def stride(self):
        return self.layout.stride

    @property
    def offset(self):
        return self.data.offset

    @property
    def engine(self):
        d = self.data
        if isinstance(d, _ArrayIter):
            return d.flat
        if isinstance(d, Pointer):
            return Pointer(d.space, d.dtype, d.name)
        return d

    @property
    def dtype(self):
        d = self.data
        if isinstance(d, _ArrayIter):
            return d.flat.dtype
        if isinstance(d, Pointer):
            return d.dtype
        return None

    @property
    def memspace(self):
        d = self.data
        return d.space if isinstance(d, (_ArrayIter, Pointer)) else None

    def size(self):
        return self.layout.size()

    def cosize(self):
        return self.layout.cosize()

    def rank(self):
        return self.layout.rank()

    def depth(self):
        return self.layout.depth()

    def get_mode(self, i):
        return Tensor(self.data, get(self.layout, i))

    # evaluation ---------------------------------------------------------------------------
    def __call__(self, *coord):
        if not coord:
            raise TensorError("Tensor.__call__", "coord", "is missing")
        c = coord[0] if len(coord) == 1 else tuple(coord)
        c = _to_tuple(c)
        if has_underscore(c):
            sub, off = slice_and_offset(c, self.layout)
            return Tensor(self.data + off, sub)
        return self.data.deref(self.layout(c))

    def __getitem__(self, coord):
        return self(coord)

    def __iter__(self):
        """The elements in index order, ``self(0) ... self(size - 1)`` (a tensor evaluates past
        its domain like its layout, so iteration must stop at the size)."""
        n = size(self.layout)
        if not isinstance(n, int):
            raise TensorError("Tensor.__iter__", "tensor", "has a symbolic size", actual=n)
        return (self(i) for i in range(n))

    def __setitem__(self, coord, value):
        c = _to_tuple(coord)
        if not isinstance(self.data, _ArrayIter):
            raise TensorError("Tensor.__setitem__", "tensor", "has no memory to write (placeholder "
                              "or coordinate engine)", actual=str(self.data))
        if has_underscore(c):
            sub = self(c)
            for i in range(sub.size()):
                sub[i] = value
            return
        self.data.store(self.layout(c), value)

    def fill(self, value):
        for i in range(self.size()):
            self[i] = value
        return self

    def to_list(self):
        """The elements in colexicographic order of the domain."""
        return [self(i) for i in range(self.size())]

    def to_numpy(self):
        """An ndarray of shape ``product_each(shape)`` holding the elements (a copy)."""
        import numpy as np
        vals = self.to_list()
        shp = it.product_each(self.shape)
        if any(isinstance(v, tuple) for v in vals):
            out = np.empty(len(vals), dtype=object)
            for i, v in enumerate(vals):
                out[i] = v
            return out.reshape(shp, order="F")
        return np.array([np.asarray(v) for v in vals]).reshape(shp, order="F")

    # CuTe member functions ----------------------------------------------------------------
    def compose(self, *others):
        return composition(self, others[0] if len(others) == 1 else tuple(others))

    def tile(self, *tiler):
        return tiled_divide(self, tiler[0] if len(tiler) == 1 else tuple(tiler))

    def get_hier_coord(self, idx):
        return self.layout.get_hier_coord(idx)

    # value semantics ----------------------------------------------------------------------
    def __eq__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return self.data == other.data and self.layout == other.layout

    def __hash__(self):
        return hash(("Tensor", self.data, self.layout))

    def __str__(self):
        return f"{self.data} o {self.layout}"

    __repr__ = __str__

    # algebra hooks ----------------------------------------------------------------------------
    def _with(self, layout):
        return Tensor(self.data, layout)

    def _cute_compose(self, tiler):
        return self._with(composition(self.layout, tiler))

    def _cute_logical_divide(self, tiler):
        return self._with(logical_divide(self.layout, tiler))

    def _cute_zipped_divide(self, tiler):
        return self._with(zipped_divide(self.layout, tiler))

    def _cute_tiled_divide(self, tiler):
        return self._with(tiled_divide(self.layout, tiler))

    def _cute_flat_divide(self, tiler):
        return self._with(flat_divide(self.layout, tiler))

    def _cute_coalesce(self, profile=None):
        return self._with(coalesce(self.layout, profile))

    def _cute_filter(self, profile=None):
        return self._with(filt(self.layout, profile))

    def _cute_filter_zeros(self, profile=None):
        return self._with(filter_zeros(self.layout, profile))

    def _cute_flatten(self):
        if isinstance(self.layout, ComposedLayout):
            return self._with(self.layout._cute_flatten())
        return self._with(flatten_layout(self.layout))

    def _no_product(self, *a):
        raise TensorError("logical_product", "tensor", "is not defined on tensors (CuTe: a product "
                          "may increase the cosize); apply it to tensor.layout")

    _cute_logical_product = _cute_zipped_product = _cute_tiled_product = _no_product
    _cute_flat_product = _cute_blocked_product = _cute_raked_product = _no_product


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def _as_iterator(engine, op="make_tensor"):
    if isinstance(engine, (_ArrayIter, Pointer, _CoordIter)):
        return engine
    if isinstance(engine, Tensor):
        return engine.data
    if _is_array(engine):
        return _ArrayIter(_flat_memory(engine), 0, "gmem")
    raise TensorError(op, "engine", "must be a NumPy/CuPy array, a pointer from make_gmem_ptr/"
                      "make_smem_ptr/make_rmem_ptr, or a tensor's data", actual=type(engine).__name__)


def make_tensor(engine, layout=None, stride=None) -> Tensor:
    """CuTe's ``make_tensor(ptr, layout)`` / ``make_tensor(ptr, shape, stride)``.

    ``engine``: a NumPy or CuPy array (its memory, from its first element, in elements), a
    placeholder pointer (``make_smem_ptr("f16")``) or a tensor's ``.data``. Without a layout a
    NumPy/CuPy array gives its own shape and element strides. A GMMA atom layout
    (``Sw o smem_ptr[b] o L``) is stored in its position-independent form (CuTe's swizzle pointer
    made explicit; exact for a shared-memory base aligned to the swizzle period).
    Law: ``make_tensor(a, L)(c) == flat(a)[L(c)]``.
    """
    it_ = _as_iterator(engine)
    if layout is None:
        if isinstance(it_, _ArrayIter) and _is_array(engine):
            return Tensor(it_, _array_layout(engine))
        raise TensorError("make_tensor", "layout", "is required for a pointer engine")
    if stride is not None or isinstance(layout, (int, tuple, list)):
        layout = make_layout(_to_tuple(layout), _to_tuple(stride) if stride is not None else None)
    if isinstance(layout, ComposedLayout) and isinstance(layout.offset, smem_ptr_flag_bits):
        bits = _engine_bits(it_)
        if bits is not None and bits != layout.offset.bits:
            raise TensorError("make_tensor", "engine", f"has {bits}-bit elements but the layout is "
                              f"flagged for {layout.offset.bits}-bit elements",
                              expected=layout.offset.bits, actual=bits)
        if isinstance(it_, Pointer) and it_.space != "smem":
            raise TensorError("make_tensor", "engine", "must be shared memory for a GMMA atom layout",
                              actual=it_.space)
        layout = as_position_independent_swizzle_layout(layout)
    if not isinstance(layout, (Layout, ComposedLayout)):
        raise TensorError("make_tensor", "layout", "must be a Layout, ComposedLayout or shape",
                          actual=repr(layout))
    return Tensor(it_, layout)


def _engine_bits(i):
    if isinstance(i, _ArrayIter):
        return i.flat.dtype.itemsize * 8
    if isinstance(i, Pointer):
        return i.bits
    return None


def make_coord_tensor(layout) -> Tensor:
    """A tensor of coordinates: ``make_tensor(counting iterator at 0, layout)``."""
    if not isinstance(layout, Layout):
        raise TensorError("make_coord_tensor", "layout", "must be a Layout", actual=repr(layout))
    strides = it.flatten(layout.stride) if isinstance(layout.stride, tuple) else (layout.stride,)
    if any(isinstance(d, ScaledBasis) for d in strides):
        base = _zero_like(tuple(0 for _i in range(1 + max(
            (d.modes[0] for d in strides if isinstance(d, ScaledBasis) and d.modes), default=0))))
    else:
        base = 0
    return Tensor(_CoordIter(base), layout)


def make_identity_tensor(shape) -> Tensor:
    """The tensor whose element at coordinate ``c`` is ``c`` (CuTe's ``make_identity_tensor``),
    printed ``ArithTuple(0,0) o (4,8):(1@0,1@1)``. Partition it like a data tensor to get each
    element's original coordinate (predication: ``elem_less(coord, shape)``)."""
    shape = _to_tuple(shape)
    it._check(shape, "make_identity_tensor", "shape")
    return Tensor(_CoordIter(_zero_like(shape) if isinstance(shape, tuple) else 0),
                  make_identity_layout(shape))


# ---------------------------------------------------------------------------------------------
# Partitioning


def _require_tensor(t, op):
    if not isinstance(t, Tensor):
        raise TensorError(op, "tensor", "must be a Tensor (use make_tensor)", actual=type(t).__name__)


def _repeat_(n):
    return _ if n == 1 else tuple(_ for _i in range(n))


def _append_(coord, n):
    coord = tuple(coord)
    if len(coord) > n:
        raise TensorError("partition", "coord", f"has {len(coord)} modes but the tiled tensor has "
                          f"{n} rest modes", actual=fmt_int_tuple(coord))
    r = coord + (_,) * (n - len(coord))
    return r[0] if n == 1 else r


def inner_partition(t, tiler, coord):
    """Keep the tile, index the rest: ``zd = zipped_divide(t, tiler)``;
    ``zd(repeat<R0>(_), append<R1>(coord, _))`` (an int coord indexes the rest mode 1-D).
    Law: ``inner_partition(t, T, c)(x) == t(tile c's coordinate + x)`` for a by-mode tiler."""
    _require_tensor(t, "inner_partition")
    coord = _to_tuple(coord)
    zd = zipped_divide(t, _to_tiler(tiler))
    R0 = it.rank(zd.shape[0])
    if isinstance(coord, tuple):
        R1 = it.rank(zd.shape[1])
        return zd(_repeat_(R0), _append_(coord, R1))
    return zd(_repeat_(R0), coord)


def outer_partition(t, tiler, coord):
    """Index inside the tile, keep the rest: ``zd(append<R0>(coord, _), repeat<R1>(_))``."""
    _require_tensor(t, "outer_partition")
    coord = _to_tuple(coord)
    zd = zipped_divide(t, _to_tiler(tiler))
    R1 = it.rank(zd.shape[1])
    if isinstance(coord, tuple):
        R0 = it.rank(zd.shape[0])
        return zd(_append_(coord, R0), _repeat_(R1))
    return zd(coord, _repeat_(R1))


def _to_tiler(tiler):
    if isinstance(tiler, list):
        return tuple(tiler)
    return tiler


def _dice(proj, x):
    proj = _to_tuple(proj)
    if isinstance(x, Layout):
        return Layout(it.dice(proj, x.shape), it.dice(proj, x.stride)) if isinstance(proj, tuple) \
            else x
    return it.dice(proj, _to_tuple(x))


def local_tile(t, tiler, coord, proj=None):
    """CTA-level tiling: ``inner_partition(t, tiler, coord)``; with a projection (a step tuple
    such as ``(1, None, 1)`` for ``Step<_1,X,_1>``), ``local_tile(t, dice(proj, tiler),
    dice(proj, coord))``. E.g. ``local_tile(A, (32,64,4), (bx,by,_), (1,None,1))`` -> ``(32,4,k)``.
    """
    _require_tensor(t, "local_tile")
    if proj is not None:
        tiler = _dice(proj, tiler)
        coord = _dice(proj, coord)
    return inner_partition(t, tiler, coord)


def local_partition(t, thr_layout, index, proj=None):
    """Thread-level partition: ``outer_partition(t, product_each(shape(thr)),
    thr.get_flat_coord(index))`` — thread ``index`` gets the elements at its coordinate in the
    thread layout, strided by the thread layout's shape. ``proj`` dices the thread layout first.
    Law: ``local_partition(t, (Tm,Tn):..., i)(a, b) == t(m + a*Tm, n + b*Tn)`` where
    ``(m, n) = thr.get_flat_coord(i)``.
    """
    _require_tensor(t, "local_partition")
    if not isinstance(thr_layout, Layout):
        if isinstance(thr_layout, (int, tuple)):
            thr_layout = make_layout(_to_tuple(thr_layout))
        else:
            raise TensorError("local_partition", "thr_layout", "must be a Layout", actual=repr(thr_layout))
    n = thr_layout.size()
    if proj is not None:
        thr_layout = _dice(proj, thr_layout)
    if isinstance(index, tuple) or is_underscore(index):
        raise TensorError("local_partition", "index", "must be an integer thread index", actual=index)
    if isinstance(index, int) and isinstance(n, int) and not 0 <= index < n:
        raise TensorError("local_partition", "index", f"is out of range for {n} threads",
                          expected=f"0 <= index < {n}", actual=index)
    return outer_partition(t, it.product_each(thr_layout.shape), thr_layout.get_flat_coord(index))


# ---------------------------------------------------------------------------------------------
# Fragments, recast, domain offsets


def make_fragment_like(x, dtype=None):
    """CuTe's ``make_fragment_like``: for a tensor, a new register tensor with the fragment
    layout of ``x.layout`` (mode 0 compact, other modes ordered like ``x``'s strides): a zeroed
    NumPy/CuPy array for array engines, an ``rmem`` placeholder otherwise. For a layout, the
    fragment layout (a composed layout gives that of its inner layout)."""
    if isinstance(x, Tensor):
        lay = x.layout.layout_b if isinstance(x.layout, ComposedLayout) else x.layout
        if not it.is_static(_strides_or_zero(lay)):
            frag = make_layout(lay.shape)
        else:
            frag = mfl_layout(lay)
        if isinstance(x.data, _ArrayIter):
            xp = _xp(x.data.flat)
            arr = xp.zeros(int(frag.cosize()), dtype=dtype or x.data.flat.dtype)
            return Tensor(_ArrayIter(arr, 0, "rmem"), frag)
        if isinstance(x.data, Pointer):
            return Tensor(make_rmem_ptr(dtype or x.data.dtype), frag)
        import numpy as np
        arr = np.zeros(int(frag.cosize()), dtype=dtype or object)
        return Tensor(_ArrayIter(arr, 0, "rmem"), frag)
    if isinstance(x, ComposedLayout):
        return mfl_layout(x.layout_b)
    return mfl_layout(x)


def _strides_or_zero(L):
    return tuple(d if not isinstance(d, ScaledBasis) else None
                 for d in (it.flatten(L.stride) if isinstance(L.stride, tuple) else (L.stride,)))


def make_tensor_like(x, dtype=None):
    """A new register tensor with ``x``'s shape and stride order (``make_layout_like``)."""
    _require_tensor(x, "make_tensor_like")
    lay = x.layout.layout_b if isinstance(x.layout, ComposedLayout) else x.layout
    frag = make_layout_like(lay)
    if isinstance(x.data, _ArrayIter):
        xp = _xp(x.data.flat)
        return Tensor(_ArrayIter(xp.zeros(int(frag.cosize()), dtype=dtype or x.data.flat.dtype), 0,
                                 "rmem"), frag)
    return Tensor(make_rmem_ptr(dtype or getattr(x.data, "dtype", "f32")), frag)


def recast(t, new_dtype):
    """Reinterpret a tensor's elements as ``new_dtype`` (CuTe's ``recast<NewT>``): the layout
    through ``recast_layout(old_bits, new_bits)``, the offset rescaled.
    Law (NumPy): ``recast(t, u)`` reads the same bytes as ``t`` viewed as ``u``."""
    _require_tensor(t, "recast")
    d = t.data
    if isinstance(d, _ArrayIter):
        import numpy as np
        xp = _xp(d.flat)
        nd = xp.dtype(new_dtype) if hasattr(xp, "dtype") else np.dtype(new_dtype)
        old_bits, new_bits = d.flat.dtype.itemsize * 8, nd.itemsize * 8
    elif isinstance(d, Pointer):
        old_bits, new_bits = d.bits, sizeof_bits(new_dtype)
    else:
        raise TensorError("recast", "tensor", "has no element type (coordinate tensor)")
    if old_bits == new_bits:
        if isinstance(d, _ArrayIter):
            return Tensor(_ArrayIter(d.flat.view(nd), d.offset, d.space), t.layout)
        return Tensor(Pointer(d.space, new_dtype, d.name, d.offset), t.layout)
    lay = recast_layout(t.layout, old_bits, new_bits)
    off_bits = d.offset * old_bits
    if isinstance(off_bits, int) and off_bits % new_bits:
        raise TensorError("recast", "tensor", f"offset {d.offset} is not aligned to {new_bits}-bit "
                          "elements", actual=d.offset)
    new_off = off_bits // new_bits if isinstance(off_bits, int) else it._floordiv(off_bits, new_bits)
    if isinstance(d, _ArrayIter):
        flat = d.flat
        nbytes = flat.shape[0] * flat.dtype.itemsize
        if flat.strides[0] != flat.dtype.itemsize:
            raise TensorError("recast", "tensor", "engine memory is not contiguous")
        usable = nbytes - nbytes % nd.itemsize
        base = xp.lib.stride_tricks.as_strided(flat, shape=(usable // flat.dtype.itemsize,),
                                               strides=(flat.dtype.itemsize,))
        return Tensor(_ArrayIter(base.view(nd),
                                 new_off, d.space), lay)
    return Tensor(Pointer(d.space, new_dtype, d.name, new_off), lay)


def domain_offset(coord, x):
    """Shift the domain's origin to ``coord``: a tensor's data moves by ``layout(coord)`` (for a
    composed layout the offset goes into the layout); for a layout returns
    ``(layout, layout(coord))`` as CuTe does. Law: ``domain_offset(c, t)(x) == t(c + x)`` for
    linear layouts."""
    coord = _to_tuple(coord)
    if isinstance(x, Tensor):
        lay = x.layout
        if isinstance(lay, ComposedLayout):
            return Tensor(x.data, ComposedLayout(lay.layout_a, _off(lay.offset) + lay.layout_b(coord),
                                                 lay.layout_b))
        return Tensor(x.data + lay(coord), lay)
    if isinstance(x, ComposedLayout):
        return ComposedLayout(x.layout_a, _off(x.offset) + x.layout_b(coord), x.layout_b), 0
    if isinstance(x, Layout):
        return x, x(coord)
    raise TensorError("domain_offset", "x", "must be a Tensor or a layout", actual=repr(x))


def print_tensor(t, file=None):
    """Print ``t`` (``data o layout:``) and its elements: rank 1 as a column, rank 2 as a table,
    higher ranks as 2-D slices over the trailing modes (CuTe's ``print_tensor``)."""
    import sys
    _require_tensor(t, "print_tensor")
    out = file or sys.stdout
    print(f"{t}:", file=out)

    def fmt(v):
        if isinstance(v, tuple):
            return fmt_int_tuple(tuple(v))
        if isinstance(v, float) or type(v).__name__.startswith("float"):
            return f"{float(v):.2e}"
        return str(v)

    R = t.rank() if isinstance(t.shape, tuple) else 1
    if R == 1:
        for i in range(t.size()):
            print(fmt(t(i)), file=out)
        return
    M, N = it.product(t.shape[0]), it.product(t.shape[1])
    rest = it.product(t.shape[2:]) if R > 2 else 1
    for r in range(rest):
        if R > 2:
            sub = t((_, _) + tuple(it.idx2crd(r, tuple(it.product(s) for s in t.shape[2:]))))
        else:
            sub = t
        for m in range(M):
            print("  ".join(fmt(sub(m, n)).rjust(6) for n in range(N)), file=out)
        if r < rest - 1:
            print("----------", file=out)
