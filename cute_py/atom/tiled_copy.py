"""``TiledCopy`` / ``ThrCopy`` and their builders (CuTe ``include/cute/atom/copy_atom.hpp:180-640``).

A TiledCopy is a :class:`~cute_py.atom.copy_atom.Copy_Atom`, a TV layout
``layout_tv: (thr_idx, val_idx) -> coord`` in a ``tiler_mn`` tile (CuTe's ``TiledLayout_TV``
and ``Tiler_MN``), and CuTe's recipes:

* ``tidfrg_S(L) = tile2thrfrg(zipped_divide(L, tiler_mn), right_inverse(AtomLayoutRef) o AtomLayoutSrc)``
  ``(M,N,...) -> (Thr,(FrgV,FrgX),(RestM,RestN,...))`` (``tidfrg_D`` with Dst);
* ``get_layoutS_TV()`` / ``get_layoutD_TV()``: ``(thr_idx, val_idx) -> m + tile_M*n`` as the
  source / destination instruction sees it;
* ``get_slice(thr_idx)`` -> :class:`ThrCopy` with ``partition_S/D`` and ``retile_S/D``.

Builders: ``make_tiled_copy(atom, thr_layout, val_layout)`` (C++'s meaning: ``(m,n) -> thr_idx``
and ``(m,n) -> val_idx`` layouts; the DSL calls this ``make_tiled_copy_tv``), the TV form
``TiledCopy(atom, layout_tv, tiler_mn)`` (C++ ``make_tiled_copy_impl``), ``make_layout_tv``,
``make_tiled_copy_A/B/C``, ``make_tiled_copy_C_atom``, ``make_tiled_copy_S/D``,
``make_cotiled_copy``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import int_tuple as it
from ..algebra import (
    coalesce, composition, filter as filter_layout, left_inverse, logical_product,
    raked_product, right_inverse, upcast, zipped_divide,
)
from ..errors import AtomError, check_index
from ..int_tuple import _, is_underscore
from ..layout import fmt_int_tuple, Layout, make_layout, slice_and_offset, zip as zip_layout
from ..svg import tiled_copy_svg
from .copy_atom import Copy_Atom
from .tiled_mma import apply_partition, _check_tv, CoverageReport, TiledMMA

__all__ = [
    "TiledCopy", "ThrCopy", "make_tiled_copy", "make_tiled_copy_impl", "make_layout_tv",
    "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "make_tiled_copy_C_atom",
    "make_tiled_copy_S", "make_tiled_copy_D", "make_cotiled_copy", "check_tiled_copy",
]


def _tiler_shape(tiler):
    """``shape(Tiler_MN)``: ints stay, layouts give their shapes."""
    if isinstance(tiler, Layout):
        return tiler.shape
    if isinstance(tiler, tuple):
        return tuple(_tiler_shape(t) for t in tiler)
    return tiler


def _fmt_tiler(t):
    if isinstance(t, tuple):
        return "(" + ",".join(_fmt_tiler(x) for x in t) + ")"
    if is_underscore(t):
        return "_"
    return str(t)


@dataclass(frozen=True)
class TiledCopy:
    """CuTe's ``TiledCopy<Copy_Atom, LayoutCopy_TV, ShapeTiler_MN>``; frozen and hashable.

    ``TiledCopy(atom, layout_tv, tiler_mn)`` is the TV form (C++ ``make_tiled_copy_impl``):
    ``layout_tv: (thr_idx, val_idx) -> coord`` in the ``tiler_mn`` tile, in the order of the
    atom's RefLayout. Requires ``size<0>(layout_tv) % AtomNumThr == 0`` and
    ``size<1>(layout_tv) % AtomNumVal == 0``.
    """

    atom: Copy_Atom
    layout_tv: Layout
    tiler_mn: tuple

    def __post_init__(self):
        if not isinstance(self.atom, Copy_Atom):
            raise AtomError("TiledCopy", "atom", "must be a Copy_Atom (Copy_Atom(op, value_type))",
                            actual=repr(self.atom))
        if isinstance(self.layout_tv, (tuple, int)):
            object.__setattr__(self, "layout_tv", make_layout(self.layout_tv))
        if not isinstance(self.layout_tv, Layout) or it.rank(self.layout_tv.shape) != 2 \
                or not isinstance(self.layout_tv.shape, tuple):
            raise AtomError("TiledCopy", "layout_tv", "must be a rank-2 (thr, val) Layout",
                            actual=repr(self.layout_tv))
        tiler = self.tiler_mn
        if isinstance(tiler, list):
            tiler = tuple(tiler)
        if isinstance(tiler, (int, Layout)):
            tiler = (tiler,)
        if not isinstance(tiler, tuple) or not tiler or not all(
                isinstance(t, Layout) or (it.is_static(t) and it.product(t) > 0) for t in tiler):
            raise AtomError("TiledCopy", "tiler_mn", "must be static positive extents or layouts",
                            actual=repr(self.tiler_mn))
        object.__setattr__(self, "tiler_mn", tiler)
        nthr, nval = self.num_threads, self.num_values
        athr, aval = self.atom_num_thr, self.atom_num_val
        if nthr % athr != 0:
            raise AtomError("TiledCopy", "layout_tv", "uses too few threads for the copy atom",
                            expected=f"a multiple of {athr} threads", actual=nthr)
        if nval % aval != 0:
            raise AtomError("TiledCopy", "layout_tv", "uses too few values for the copy atom",
                            expected=f"a multiple of {aval} values per thread", actual=nval)
        tile_elems = it.product(_tiler_shape(tiler))
        if self.layout_tv.cosize() > tile_elems:
            raise AtomError("TiledCopy", "layout_tv", "maps outside the tile",
                            expected=f"cosize <= {tile_elems} (tiler {_fmt_tiler(tiler)})",
                            actual=str(self.layout_tv))

    # sizes --------------------------------------------------------------------------------------
    @property
    def atom_num_thr(self) -> int:
        """``AtomNumThr = size<0>(AtomLayoutRef)``."""
        return it.product(self.atom.val_layout_ref.shape[0])

    @property
    def atom_num_val(self) -> int:
        """``AtomNumVal = size<1>(AtomLayoutRef)``."""
        return it.product(self.atom.val_layout_ref.shape[1])

    @property
    def num_threads(self) -> int:
        """``TiledNumThr = size<0>(TiledLayout_TV)``."""
        return it.product(self.layout_tv.shape[0])

    @property
    def num_values(self) -> int:
        """``TiledNumVal = size<1>(TiledLayout_TV)``."""
        return it.product(self.layout_tv.shape[1])

    def size(self) -> int:
        """Number of threads (CuTe's ``size(tiled_copy)``)."""
        return self.num_threads

    def tile_size(self, i: int) -> int:
        """``tile_size<I>(copy) = size<I>(Tiler_MN)``."""
        shp = _tiler_shape(self.tiler_mn)
        return it.product(shp[check_index("TiledCopy.tile_size", "i", i, len(shp), AtomError)])

    @property
    def tile_shape(self) -> tuple:
        return tuple(it.product(s) for s in _tiler_shape(self.tiler_mn))

    # CuTe names
    @property
    def TiledLayout_TV(self):
        return self.layout_tv

    @property
    def Tiler_MN(self):
        return self.tiler_mn

    # recipes ------------------------------------------------------------------------------------
    def _ref2(self, which):
        trg = self.atom.val_layout_src if which == "S" else self.atom.val_layout_dst
        return composition(right_inverse(self.atom.val_layout_ref), trg)

    def tile2thrfrg(self, L, ref2trg):
        """``((TileM,TileN,...),(RestM,RestN,...)) -> (Thr,(FrgV,FrgX),(RestM,RestN,...))``."""
        atom_tv = zipped_divide(self.layout_tv, (self.atom_num_thr, self.atom_num_val))
        trg_tv = composition(atom_tv, (ref2trg, _))
        thrval2mn = coalesce(zip_layout(trg_tv), (1, (1, 1)))
        tv = composition(L, (thrval2mn, _))
        return tv((_, _), _)

    def _tidfrg(self, L, which):
        shp = getattr(L, "shape", None)
        R = it.rank(shp) if isinstance(shp, tuple) else 1
        if R < len(self.tiler_mn):
            raise AtomError(f"TiledCopy.tidfrg_{which}", "layout", "has a smaller rank than "
                            "the tiler", expected=f"rank >= {len(self.tiler_mn)}", actual=str(L))
        return self.tile2thrfrg(zipped_divide(L, self.tiler_mn), self._ref2(which))

    def tidfrg_S(self, L):
        """``(M,N,...) -> (Thr,(FrgV,FrgX),(RestM,RestN,...))`` in the source's value order."""
        return self._tidfrg(L, "S")

    def tidfrg_D(self, L):
        """``(M,N,...) -> (Thr,(FrgV,FrgX),(RestM,RestN,...))`` in the destination's value order."""
        return self._tidfrg(L, "D")

    def _layout_TV(self, which):
        ref = make_layout((_tiler_shape(self.tiler_mn), 1))
        return self.tile2thrfrg(ref, self._ref2(which))(_, _, 0)

    def get_layoutS_TV(self) -> Layout:
        """``(thr_idx, val_idx) -> m + tile_M*n`` as the source side of the atom sees it."""
        return self._layout_TV("S")

    def get_layoutD_TV(self) -> Layout:
        """``(thr_idx, val_idx) -> m + tile_M*n`` as the destination side sees it."""
        return self._layout_TV("D")

    def retile(self, L):
        """CuTe's ``retile``: re-index an already thread-partitioned tensor (e.g. an MMA
        fragment ``(V, M, N, ...)``) into this copy's ``(CPY, CPY_M, CPY_N, ...)`` value order."""
        if not (isinstance(L, Layout) or hasattr(L, "layout_b")):
            raise AtomError("TiledCopy.retile", "L", "must be a (tensor's) layout", actual=repr(L))
        shp = L.shape
        if shp == ():
            raise AtomError("TiledCopy.retile", "L", "has rank 0 (no value mode)", actual=str(L))
        R = it.rank(shp) if isinstance(shp, tuple) else 1
        V = it.product(shp[0] if isinstance(shp, tuple) else shp)
        tshape = _tiler_shape(self.tiler_mn)
        frg_layout_mn = upcast(right_inverse(self.layout_tv).with_shape(tshape), self.num_threads * V)
        frg_layout_v = zipped_divide(logical_product(make_layout(V), right_inverse(frg_layout_mn)),
                                     make_layout(self.atom_num_val))
        fshape = frg_layout_mn.shape
        fshape = tuple(it.product(s) for s in fshape) if isinstance(fshape, tuple) else (fshape,)
        t = zipped_divide(L, (V,) + fshape)
        v = composition(t, (frg_layout_v, _))
        rest = (0,) + tuple(_ for _i in range(R - 1)) if R > 1 else 0
        return v(_, rest)

    # slices --------------------------------------------------------------------------------------
    def get_slice(self, thr_idx: int) -> "ThrCopy":
        """Thread ``thr_idx``'s view (a linear index; no ``get_flat_coord`` unlike TiledMMA)."""
        if not isinstance(thr_idx, int) or isinstance(thr_idx, bool) or not 0 <= thr_idx < self.size():
            raise AtomError("TiledCopy.get_slice", "thr_idx", "is out of range",
                            expected=f"0 <= thr_idx < {self.size()}", actual=thr_idx)
        return ThrCopy(self, thr_idx)

    def get_thread_slice(self, thr_idx: int) -> "ThrCopy":
        return self.get_slice(thr_idx)

    def check(self, expected=None):
        return check_tiled_copy(self, expected)

    # printing -----------------------------------------------------------------------------------
    def __str__(self):
        return "\n".join([f"TiledCopy of {self.atom.op.name} ({self.atom.value_type}): "
                          f"{self.size()} threads, tile {fmt_int_tuple(self.tile_shape)}",
                          f"  Tiler_MN:       {_fmt_tiler(self.tiler_mn)}",
                          f"  TiledLayout_TV: {self.layout_tv}",
                          "\n".join("  " + ln for ln in str(self.atom).splitlines())])

    def cpp_str(self) -> str:
        """The text C++'s ``print(TiledCopy)`` writes (ints without the ``_`` prefix)."""
        return "\n".join(["TiledCopy",
                          f"  Tiler_MN:       {_fmt_tiler(self.tiler_mn)}",
                          f"  TiledLayout_TV: {self.layout_tv}",
                          self.atom.cpp_str()])

    def __repr__(self):
        return f"TiledCopy({self.atom!r}, {self.layout_tv!r}, {_fmt_tiler(self.tiler_mn)})"

    def _repr_svg_(self):
        return tiled_copy_svg(self)


@dataclass(frozen=True)
class ThrCopy:
    """CuTe's ``ThrCopy``: thread ``thr_idx`` of a :class:`TiledCopy`."""

    tiled_copy: TiledCopy
    thr_idx: int

    def partition_layout(self, L, which: str):
        """``(layout, offset)`` of this thread's ``(CPY, CPY_M, CPY_N, ...)`` partition of ``L``
        (``which`` = ``"S"`` or ``"D"``)."""
        if which not in ("S", "D"):
            raise AtomError("ThrCopy.partition_layout", "which", "must be 'S' or 'D'",
                            actual=repr(which))
        if not (isinstance(L, Layout) or hasattr(L, "layout_b")):
            raise AtomError("ThrCopy.partition_layout", "L", "must be a Layout or a composed "
                            "layout", actual=repr(L))
        thr = self.tiled_copy._tidfrg(L, which)
        r = it.rank(L.shape) if isinstance(L.shape, tuple) else 1
        rest = tuple(_ for _i in range(r)) if r > 1 else _
        return slice_and_offset((self.thr_idx, _, rest), thr)

    def partition_S(self, t):
        """``(CPY, CPY_M, CPY_N, ...)``: this thread's source values of ``t``."""
        return apply_partition(t, lambda L: self.partition_layout(L, "S"), "ThrCopy.partition_S")

    def partition_D(self, t):
        """``(CPY, CPY_M, CPY_N, ...)``: this thread's destination values of ``t``."""
        return apply_partition(t, lambda L: self.partition_layout(L, "D"), "ThrCopy.partition_D")

    def retile_S(self, t):
        """Re-view a partitioned register tensor in this copy's source value order."""
        return apply_partition(t, lambda L: (self.tiled_copy.retile(L), 0), "ThrCopy.retile_S")

    def retile_D(self, t):
        """Re-view a partitioned register tensor in this copy's destination value order."""
        return apply_partition(t, lambda L: (self.tiled_copy.retile(L), 0), "ThrCopy.retile_D")


# ---------------------------------------------------------------------------------------------
# Builders


def _atom_arg(atom, op):
    if not isinstance(atom, Copy_Atom):
        raise AtomError(op, "copy_atom", "must be a Copy_Atom (Copy_Atom(op, value_type))",
                        actual=repr(atom))
    return atom


def make_tiled_copy_impl(atom, layout_tv, tiler) -> TiledCopy:
    """C++'s ``make_tiled_copy_impl``: ``TiledCopy(atom, layout_tv, tiler)``."""
    return TiledCopy(_atom_arg(atom, "make_tiled_copy_impl"), layout_tv, tiler)


def _as_layout_arg(x, op, arg):
    if isinstance(x, Layout):
        return x
    if isinstance(x, (int, tuple, list)) and not isinstance(x, bool):
        return make_layout(tuple(x) if isinstance(x, list) else x)
    raise AtomError(op, arg, "must be a Layout or a shape", actual=repr(x))


def make_layout_tv(thr_layout, val_layout=None):
    """``(tiler_mn, layout_tv)`` from ``(m,n) -> thr_idx`` and ``(m,n) -> val_idx`` layouts:
    ``layout_mn = raked_product(thr, val)``; ``layout_tv = right_inverse(layout_mn).with_shape(
    (size(thr), size(val)))``; ``tiler = product_each(shape(layout_mn))``.
    ``make_layout_tv((2,3):(3,1), (2,2):(2,1)) == ((4,6), ((3,2),(2,2)):((8,2),(4,1)))``.
    """
    thr = _as_layout_arg(thr_layout, "make_layout_tv", "thr_layout")
    val = _as_layout_arg(val_layout if val_layout is not None else 1, "make_layout_tv", "val_layout")
    if not _is_bijective(thr):
        raise AtomError("make_layout_tv", "thr_layout", "must be compact (a bijection onto "
                        "[0, size)) so threads can be inverted", actual=str(thr))
    if not _is_bijective(val):
        raise AtomError("make_layout_tv", "val_layout", "must be compact (a bijection onto "
                        "[0, size))", actual=str(val))
    layout_mn = raked_product(thr, val)
    layout_tv = right_inverse(layout_mn).with_shape((thr.size(), val.size()))
    tiler = it.product_each(layout_mn.shape)
    if not isinstance(tiler, tuple):
        tiler = (tiler,)
    return tiler, layout_tv


def _is_bijective(L: Layout) -> bool:
    """Whether ``L`` maps ``[0, size)`` onto ``[0, size)``: its non-trivial modes, sorted by
    stride, are compact (each stride the product of the extents before it). Algebraic, so a
    2**70-element layout is answered at once."""
    modes = []
    for s, d in zip(it.flatten(it.wrap(L.shape)), it.flatten(it.wrap(L.stride))):
        if not (it.is_static(s) and it.is_static(d)):
            return False
        if s != 1:
            modes.append((d, s))
    cur = 1
    for d, s in sorted(modes):
        if d != cur:
            return False
        cur *= s
    return True


def make_tiled_copy(copy_atom, thr_layout, val_layout=None) -> TiledCopy:
    """C++'s ``make_tiled_copy(atom, thr_layout, val_layout)``: ``thr_layout`` maps ``(m,n)`` to
    the thread index, ``val_layout`` maps ``(m,n)`` to the value index within a thread; the TV
    layout and tiler come from :func:`make_layout_tv`. E.g. 128 threads ``(16,8):(8,1)``
    (row-major) with ``(1,8)`` values of fp16 and a 128-bit ``cp.async`` copy a 16x64 tile.
    """
    atom = _atom_arg(copy_atom, "make_tiled_copy")
    tiler, layout_tv = make_layout_tv(thr_layout, val_layout)
    return TiledCopy(atom, layout_tv, tiler)


def _mma_arg(mma, op):
    if not isinstance(mma, TiledMMA):
        raise AtomError(op, "mma", "must be a TiledMMA", actual=repr(mma))
    return mma


def make_tiled_copy_A(copy_atom, mma) -> TiledCopy:
    """``TiledCopy(atom, mma.get_layoutA_TV(), (tile_M, tile_K))``: copy A exactly as the MMA
    partitions it (e.g. ``ldmatrix`` into mma.sync registers)."""
    mma = _mma_arg(mma, "make_tiled_copy_A")
    return TiledCopy(_atom_arg(copy_atom, "make_tiled_copy_A"), mma.get_layoutA_TV(),
                     (mma.tile_size_mnk(0), mma.tile_size_mnk(2)))


def make_tiled_copy_B(copy_atom, mma) -> TiledCopy:
    """``TiledCopy(atom, mma.get_layoutB_TV(), (tile_N, tile_K))``."""
    mma = _mma_arg(mma, "make_tiled_copy_B")
    return TiledCopy(_atom_arg(copy_atom, "make_tiled_copy_B"), mma.get_layoutB_TV(),
                     (mma.tile_size_mnk(1), mma.tile_size_mnk(2)))


def make_tiled_copy_C(copy_atom, mma) -> TiledCopy:
    """``TiledCopy(atom, mma.get_layoutC_TV(), (tile_M, tile_N))``."""
    mma = _mma_arg(mma, "make_tiled_copy_C")
    return TiledCopy(_atom_arg(copy_atom, "make_tiled_copy_C"), mma.get_layoutC_TV(),
                     (mma.tile_size_mnk(0), mma.tile_size_mnk(1)))


def make_tiled_copy_C_atom(copy_atom, mma) -> TiledCopy:
    """The smallest TiledCopy that retiles ``mma``'s C layout with ``copy_atom`` (for subtiled
    epilogues): truncate ``layoutC_TV`` to ``NumValSrc`` values and rebuild a by-mode tiler."""
    atom = _atom_arg(copy_atom, "make_tiled_copy_C_atom")
    mma = _mma_arg(mma, "make_tiled_copy_C_atom")
    layoutC_TV = mma.get_layoutC_TV()
    copy_V = atom.num_val_src
    if copy_V > it.product(layoutC_TV.shape[1]):
        raise AtomError("make_tiled_copy_C_atom", "copy_atom", "copies more values per thread "
                        "than the MMA's C fragment holds", expected=f"<= {it.product(layoutC_TV.shape[1])}",
                        actual=copy_V)
    layout_TV = composition(layoutC_TV, make_layout((it.product(layoutC_TV.shape[0]), copy_V)))
    mma_tiler = (mma.tile_size_mnk(0), mma.tile_size_mnk(1))
    tiler = []
    for i in range(2):
        d = tuple(1 if j == i else 0 for j in range(2))
        tiler.append(filter_layout(composition(make_layout(mma_tiler, d), layout_TV)))
    tiler = tuple(tiler)
    tile2mma = composition(make_layout(mma_tiler), tiler)
    layout_tv = composition(left_inverse(tile2mma), layout_TV)
    return TiledCopy(atom, layout_tv, tiler)


def make_tiled_copy_S(copy_atom, tiled_copy) -> TiledCopy:
    """A TiledCopy of ``copy_atom`` with ``tiled_copy``'s source TV layout and tiler."""
    atom = _atom_arg(copy_atom, "make_tiled_copy_S")
    if not isinstance(tiled_copy, TiledCopy):
        raise AtomError("make_tiled_copy_S", "tiled_copy", "must be a TiledCopy", actual=repr(tiled_copy))
    return TiledCopy(atom, tiled_copy.get_layoutS_TV(), tiled_copy.tiler_mn)


def make_tiled_copy_D(copy_atom, tiled_copy) -> TiledCopy:
    """A TiledCopy of ``copy_atom`` with ``tiled_copy``'s destination TV layout and tiler."""
    atom = _atom_arg(copy_atom, "make_tiled_copy_D")
    if not isinstance(tiled_copy, TiledCopy):
        raise AtomError("make_tiled_copy_D", "tiled_copy", "must be a TiledCopy", actual=repr(tiled_copy))
    return TiledCopy(atom, tiled_copy.get_layoutD_TV(), tiled_copy.tiler_mn)


def make_cotiled_copy(copy_atom, atom_tv_layout, data_layout) -> TiledCopy:
    """C++'s ``make_cotiled_copy``: a TiledCopy from ``(thr,val) -> data address`` and the data
    layout ``coord -> address`` (checked: every address the TV layout names exists in the data)."""
    atom = _atom_arg(copy_atom, "make_cotiled_copy")
    tv = _as_layout_arg(atom_tv_layout, "make_cotiled_copy", "atom_tv_layout")
    data = _as_layout_arg(data_layout, "make_cotiled_copy", "data_layout")
    inv_data = make_layout(left_inverse(data), Layout(1, 0))
    layout_tv_data = composition(inv_data, tv)
    lhs = coalesce(composition(make_layout(data, Layout(1, 0)), layout_tv_data[1]))
    if lhs != coalesce(tv[1]):
        raise AtomError("make_cotiled_copy", "atom_tv_layout", "names memory that does not "
                        "exist in data_layout", actual=str(tv))
    flat_shape = it.product_each(data.shape)
    flat_shape = flat_shape if isinstance(flat_shape, tuple) else (flat_shape,)
    tiler = []
    for i in range(len(flat_shape)):
        d = tuple(1 if j == i else 0 for j in range(len(flat_shape)))
        tiler.append(filter_layout(composition(make_layout(flat_shape, d), layout_tv_data)))
    tiler = tuple(tiler)
    tile2data = composition(make_layout(flat_shape), tiler)
    layout_tv = composition(left_inverse(tile2data), layout_tv_data)
    return TiledCopy(atom, layout_tv, tiler)


# ---------------------------------------------------------------------------------------------
# Coverage


def check_tiled_copy(tc: TiledCopy, expected=None) -> CoverageReport:
    """Check that the TiledCopy's TV layout covers every element of the tile ``expected`` times
    (default ``size(layout_tv) / tile``: 1 for an ordinary copy, more when threads replicate, as
    a copy built from an MMA's A layout does), and that its source and destination TV layouts
    cover every element uniformly. Returns a :class:`CoverageReport` (truthy when OK)."""
    if not isinstance(tc, TiledCopy):
        raise AtomError("check_tiled_copy", "tiled_copy", "must be a TiledCopy", actual=repr(tc))
    if expected is not None and (isinstance(expected, bool) or not isinstance(expected, int)
                                 or expected < 1):
        raise AtomError("check_tiled_copy", "expected", "must be None or a positive int (how "
                        "many times each tile element is held)", actual=repr(expected)[:80])
    shp = tc.tile_shape
    shp2 = (shp[0], it.product(shp[1:])) if len(shp) > 1 else (shp[0], 1)
    ok = True
    lines = [f"TiledCopy {tc.atom.op.name} ({tc.atom.value_type}), {tc.size()} threads, "
             f"tile {fmt_int_tuple(tc.tile_shape)}"]
    for name, L in (("TV", tc.layout_tv), ("S", tc.get_layoutS_TV()), ("D", tc.get_layoutD_TV())):
        exp = expected
        if exp is None or name != "TV":
            # S/D sides may repeat addresses (ldmatrix .x1/.x2: threads past 8x give copies)
            T, V = it.product(L.shape[0]), it.product(L.shape[1])
            exp = max(1, (T * V) // (shp2[0] * shp2[1]))
        good, ls = _check_tv(name, L, shp2, exp)
        ok = ok and good
        lines += ls
    return CoverageReport(ok, "check_tiled_copy", tuple(lines))
