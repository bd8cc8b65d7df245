"""``make_tiled_mma`` / ``TiledMMA`` / ``ThrMMA`` (CuTe ``include/cute/atom/mma_atom.hpp:205-705``).

A TiledMMA repeats an :class:`~cute_py.atom.mma_atom.MMA_Atom` over a layout of atoms
(``atom_layout_mnk``) and reorders the M/N/K modes with by-mode tilers (``permutation_mnk``,
CuTe's "permutations"). Every function below is CuTe's recipe, step for step:

* ``thr_layout_vmnk = tiled_product(atom.thr_id, atom_layout_mnk)``  ``(ThrV,ThrM,ThrN,ThrK) -> thr_idx``
* ``thrfrg_C(L)``: ``logical_divide`` by the permutations, ``zipped_divide`` by the atom's (M,N),
  compose the atom's ``layout_C``, ``zipped_divide`` by the thread tiling:
  ``(M,N,...) -> ((ThrV,(ThrM,ThrN)),(FrgV,(RestM,RestN,...)))``; ``thrfrg_A``/``thrfrg_B`` alike.
* ``get_layoutC_TV()``: ``(thr_idx, val) -> m + tile_M*n`` (A: ``m + tile_M*k``, B: ``n + tile_N*k``).
* ``get_slice(thr_idx)`` -> :class:`ThrMMA` with ``partition_A/B/C``.

Laws (tested): ``get_layoutC_TV`` is a bijection onto ``[0, tile_M*tile_N)``; every ``(m,k)`` of
the A tile is covered by ``size / (ThrN)`` ... exactly ``thr_layout_vmnk``'s N-extent times per
atom value (see :func:`check_tiled_mma`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import int_tuple as it
from ..algebra import (
    complement, composition, logical_divide, make_fragment_like as mfl_layout, right_inverse,
    tiled_product, zipped_divide,
)
from ..errors import AtomError, check_fields, check_index, CuteError
from ..int_tuple import _, is_underscore
from ..layout import fmt_int_tuple, Layout, layout_table, make_layout, slice_and_offset
from ..numeric import NUMPY_HOLDER
from ..svg import tiled_mma_svg
from ..tensor import _ArrayIter, make_fragment_like as mfl, make_rmem_ptr, Tensor
from .mma_atom import make_mma_atom, MMA_Atom

__all__ = [
    "TiledMMA", "ThrMMA", "make_tiled_mma", "partition_shape_A", "partition_shape_B",
    "partition_shape_C", "tile_size", "tile_shape", "thr_size", "check_tiled_mma",
    "CoverageReport",
]


def _fmt_perm(p):
    if is_underscore(p):
        return "_"
    if isinstance(p, tuple):
        return "(" + ",".join(_fmt_perm(x) for x in p) + ")"
    return str(p)


def _tiler_size(p):
    if isinstance(p, Layout):
        return p.size()
    if isinstance(p, tuple):
        return it.product(tuple(_tiler_size(x) for x in p))
    return p


def _normalize_atom_layout(atom_layout):
    if atom_layout is None:
        atom_layout = (1, 1, 1)
    if isinstance(atom_layout, (tuple, list, int)) and not isinstance(atom_layout, bool):
        atom_layout = make_layout(tuple(atom_layout) if isinstance(atom_layout, list) else atom_layout)
    if not isinstance(atom_layout, Layout):
        raise AtomError("make_tiled_mma", "atom_layout", "must be a Layout or a shape",
                        actual=repr(atom_layout))
    R = it.rank(atom_layout.shape)
    if R > 3:
        raise AtomError("make_tiled_mma", "atom_layout", "must have rank <= 3 (M, N, K)",
                        actual=str(atom_layout))
    if R == 1 and not isinstance(atom_layout.shape, tuple):
        modes = [atom_layout]
    else:
        modes = [Layout(s, d) for s, d in zip(atom_layout.shape, atom_layout.stride)]
    modes += [Layout(1, 0)] * (3 - len(modes))
    return Layout(tuple(m.shape for m in modes), tuple(m.stride for m in modes))


def _normalize_perm(permutations):
    if permutations is None:
        return (_, _, _)
    if isinstance(permutations, list):
        permutations = tuple(permutations)
    if not isinstance(permutations, tuple):
        raise AtomError("make_tiled_mma", "permutations", "must be a tuple of up to 3 tilers "
                        "(int, Layout, tuple or _)", actual=repr(permutations))
    if len(permutations) > 3:
        raise AtomError("make_tiled_mma", "permutations", "has more than 3 modes",
                        actual=_fmt_perm(permutations))
    for p in permutations:
        ok = (is_underscore(p) or p is None or isinstance(p, Layout) or
              (isinstance(p, int) and not isinstance(p, bool) and p > 0) or isinstance(p, tuple))
        if not ok:
            raise AtomError("make_tiled_mma", "permutations", "entries must be _, a positive "
                            "int, a Layout or a tuple of those", actual=repr(p))
    perm = tuple(_ if p is None else p for p in permutations)
    return perm + (_,) * (3 - len(perm))


@dataclass(frozen=True)
class TiledMMA:
    """CuTe's ``TiledMMA<Atom, AtomLayoutMNK, PermutationMNK>`` as a frozen, hashable value.

    Build it with :func:`make_tiled_mma`. ``thr_layout_vmnk`` maps ``(ThrV,ThrM,ThrN,ThrK)`` to
    the thread index; ``size()`` is the number of threads; ``tile_shape`` = ``(tile_M, tile_N,
    tile_K)``.
    """

    atom: MMA_Atom
    atom_layout_mnk: Layout
    permutation_mnk: tuple

    def __post_init__(self):
        check_fields(self, AtomError, {"atom": MMA_Atom, "atom_layout_mnk": Layout,
                                       "permutation_mnk": tuple})
        # the direct constructor gets make_tiled_mma's normal form (rank-3 layout, 3 tilers)
        object.__setattr__(self, "atom_layout_mnk", _normalize_atom_layout(self.atom_layout_mnk))
        object.__setattr__(self, "permutation_mnk", _normalize_perm(self.permutation_mnk))

    # construction -------------------------------------------------------------------------------
    @property
    def thr_layout_vmnk(self) -> Layout:
        return _vmnk(self.atom.thr_id, self.atom_layout_mnk)

    def get_thr_layout_vmnk(self) -> Layout:
        return self.thr_layout_vmnk

    def size(self, *modes) -> int:
        """Number of threads (``size(thr_layout_vmnk)``); ``size(i)`` the extent of mode ``i``."""
        L = self.thr_layout_vmnk
        if not modes:
            return L.size()
        return it.product(L.shape[check_index("TiledMMA.size", "mode", modes[0], 4, AtomError)])

    def get_permutation_mnk(self, i: int):
        """``permutation_mnk<I>()``: the tiler of mode ``i``; ``_`` means ``atom_mnk[i] * ThrMNK[i]``."""
        if i not in (0, 1, 2):
            raise AtomError("TiledMMA.permutation_mnk", "i", "must be 0, 1 or 2", actual=i)
        p = self.permutation_mnk[i]
        if is_underscore(p):
            return self.atom.shape_mnk[i] * it.product(self.thr_layout_vmnk.shape[i + 1])
        return p

    def tile_size_mnk(self, i: int) -> int:
        """``tile_size_mnk<I>() = size(permutation_mnk<I>())``."""
        return _tiler_size(self.get_permutation_mnk(i))

    @property
    def tile_shape(self) -> tuple:
        """``(tile_M, tile_N, tile_K)``: the M x N x K block one call of the TiledMMA covers."""
        return (self.tile_size_mnk(0), self.tile_size_mnk(1), self.tile_size_mnk(2))

    # thread-fragment views ---------------------------------------------------------------------
    def _thrfrg(self, L, which: str):
        i0, i1 = {"A": (0, 2), "B": (1, 2), "C": (0, 1)}[which]
        t0, t1 = {"A": (1, 3), "B": (2, 3), "C": (1, 2)}[which]
        atom_tv = {"A": self.atom.layout_A, "B": self.atom.layout_B, "C": self.atom.layout_C}[which]
        R = it.rank(getattr(L, "shape", ()))
        if not isinstance(getattr(L, "shape", None), tuple) or R < 2:
            raise AtomError(f"TiledMMA.thrfrg_{which}", "layout", "must have rank >= 2",
                            actual=str(L))
        shp = self.atom.shape_mnk
        vmnk = self.thr_layout_vmnk
        t = logical_divide(L, (self.get_permutation_mnk(i0), self.get_permutation_mnk(i1)))
        a = zipped_divide(t, (make_layout(shp[i0]), make_layout(shp[i1])))
        tv = composition(a, (atom_tv, _))
        thr_tile = (_, (make_layout(it.product(vmnk.shape[t0])), make_layout(it.product(vmnk.shape[t1]))))
        return zipped_divide(tv, thr_tile)

    def thrfrg_C(self, L):
        """``(M,N,...) -> ((ThrV,(ThrM,ThrN)),(FrgV,(RestM,RestN,...)))`` (CuTe's recipe)."""
        return self._thrfrg(L, "C")

    def thrfrg_A(self, L):
        """``(M,K,...) -> ((ThrV,(ThrM,ThrK)),(FrgV,(RestM,RestK,...)))``."""
        return self._thrfrg(L, "A")

    def thrfrg_B(self, L):
        """``(N,K,...) -> ((ThrV,(ThrN,ThrK)),(FrgV,(RestN,RestK,...)))``."""
        return self._thrfrg(L, "B")

    def _thridx_2_thrid(self):
        vmnk = self.thr_layout_vmnk
        return composition(Layout((vmnk.size(), 1), (1, 0)),
                           right_inverse(make_layout(vmnk, complement(vmnk))))

    def get_layoutC_TV(self) -> Layout:
        """``(thr_idx, val) -> m + tile_M*n``: which element of the C tile each thread holds.
        Law: a bijection from ``[0,size()) x [0,V)`` onto ``[0, tile_M*tile_N)``."""
        tM, tN, _k = self.tile_shape
        ref = make_layout((tM, tN))
        return composition(self.thrfrg_C(ref), (self._thridx_2_thrid(), _))

    def get_layoutA_TV(self) -> Layout:
        """``(thr_idx, val) -> m + tile_M*k``; threads differing only in ThrN get the same A."""
        tM, _n, tK = self.tile_shape
        vmnk = self.thr_layout_vmnk
        ref = make_layout((tM, tK))
        s1, s2 = it.product(vmnk.shape[1]), it.product(vmnk.shape[2])
        atile = (_, (Layout((s1, s2), (1, 0)), _))
        return composition(composition(self.thrfrg_A(ref), (atile, _)), (self._thridx_2_thrid(), _))

    def get_layoutB_TV(self) -> Layout:
        """``(thr_idx, val) -> n + tile_N*k``; threads differing only in ThrM get the same B."""
        _m, tN, tK = self.tile_shape
        vmnk = self.thr_layout_vmnk
        ref = make_layout((tN, tK))
        s1, s2 = it.product(vmnk.shape[1]), it.product(vmnk.shape[2])
        btile = (_, (Layout((s1, s2), (0, 1)), _))
        return composition(composition(self.thrfrg_B(ref), (btile, _)), (self._thridx_2_thrid(), _))

    # slices ------------------------------------------------------------------------------------
    def get_slice(self, thr_idx: int) -> "ThrMMA":
        """The view of thread ``thr_idx``: ``ThrMMA(self, thr_layout_vmnk.get_flat_coord(thr_idx))``."""
        if not isinstance(thr_idx, int) or isinstance(thr_idx, bool) or not 0 <= thr_idx < self.size():
            raise AtomError("TiledMMA.get_slice", "thr_idx", "is out of range",
                            expected=f"0 <= thr_idx < {self.size()}", actual=thr_idx)
        return ThrMMA(self, thr_idx, self.thr_layout_vmnk.get_flat_coord(thr_idx))

    def get_thread_slice(self, thr_idx: int) -> "ThrMMA":
        return self.get_slice(thr_idx)

    # static helpers ----------------------------------------------------------------------------
    def partition_shape_C(self, shape_mn):
        return partition_shape_C(self, shape_mn)

    def partition_shape_A(self, shape_mk):
        return partition_shape_A(self, shape_mk)

    def partition_shape_B(self, shape_nk):
        return partition_shape_B(self, shape_nk)

    def check(self):
        """:func:`check_tiled_mma` of this TiledMMA."""
        return check_tiled_mma(self)

    # printing ----------------------------------------------------------------------------------
    def __str__(self):
        return "\n".join([
            f"TiledMMA of {self.atom.name}: {self.size()} threads, tile (M,N,K) = "
            f"{fmt_int_tuple(self.tile_shape)}",
            f"  ThrLayoutVMNK:  {self.thr_layout_vmnk}",
            f"  PermutationMNK: {_fmt_perm(self.permutation_mnk)}",
            "\n".join("  " + ln for ln in str(self.atom).splitlines())])

    def cpp_str(self) -> str:
        """The text C++'s ``print(TiledMMA)`` writes (ints without the ``_`` prefix)."""
        return "\n".join(["TiledMMA",
                          f"  ThrLayoutVMNK:  {self.thr_layout_vmnk}",
                          f"  PermutationMNK: {_fmt_perm(self.permutation_mnk)}",
                          self.atom.cpp_str()])

    def __repr__(self):
        return (f"make_tiled_mma({self.atom!r}, {self.atom_layout_mnk!r}, "
                f"{_fmt_perm(self.permutation_mnk)})")

    def _repr_svg_(self):
        return tiled_mma_svg(self)


_VMNK_CACHE: dict = {}


def _vmnk(thr_id, atom_layout):
    key = (thr_id, atom_layout)
    r = _VMNK_CACHE.get(key)
    if r is None:
        r = tiled_product(thr_id, atom_layout)
        _VMNK_CACHE[key] = r
    return r


def make_tiled_mma(atom, atom_layout=(1, 1, 1), permutations=None) -> TiledMMA:
    """CuTe's ``make_tiled_mma(atom, thr_layout = Layout<(1,1,1)>, permutations = Tile<_,_,_>)``.

    ``atom_layout`` (a Layout or a shape; rank <= 3, padded with ``1:0``) lays atoms out over
    (M, N, K); ``permutations`` (up to 3 tilers, padded with ``_``) reorders the M/N/K modes
    before the atoms tile them; an int ``P`` sets the tile to ``P`` (larger: more values per
    thread; smaller than atom x atom_layout: padded as in C++, the TV layouts then reach past the
    tile). Law: ``tile_size_mnk(i) == size(permutation i)`` or ``atom_mnk[i] * atom_layout[i]`` for ``_``.
    """
    try:
        atom = make_mma_atom(atom)
    except CuteError:
        raise AtomError("make_tiled_mma", "atom", "must be an MMA_Atom", actual=repr(atom)) from None
    al = _normalize_atom_layout(atom_layout)
    perm = _normalize_perm(permutations)
    # Like C++, any permutation tile is accepted: one smaller than (or not a multiple of) atom x
    # atom_layout is padded by the divides (the atoms' TV layouts reach past the tile, e.g. an
    # SM90 64x64x16 atom, 2x2 warpgroups, Tile<32,32,16>); check_tiled_mma reports such tiles.
    return TiledMMA(atom, al, perm)


# ---------------------------------------------------------------------------------------------
# ThrMMA


def _rest_coord(L):
    """``make_coord(_, repeat<rank<1,1>(thr)>(_))`` for the value mode of a thrfrg layout."""
    rest = L.shape[1][1]
    r = it.rank(rest) if isinstance(rest, tuple) else 1
    return (_, tuple(_ for _i in range(r)) if isinstance(rest, tuple) else _)


def apply_partition(t, fn, op):
    """Apply a ``layout -> (layout, offset)`` partition to a :class:`~cute_py.tensor.Tensor`
    (same data, iterator moved by the offset: CuTe's ``make_tensor(t.data(), ...)(coord)``) or
    to a layout (returns the partitioned layout; ``partition_layout`` also gives the offset)."""
    if isinstance(t, Tensor):
        Lp, off = fn(t.layout)
        return Tensor(t.data + off, Lp)
    if isinstance(t, Layout) or hasattr(t, "layout_b"):
        return fn(t)[0]
    raise AtomError(op, "tensor", "must be a Tensor or a Layout", actual=repr(t))


_NP_DTYPE = NUMPY_HOLDER


def make_fragment(part, frg_type, view=False, like=True):
    """CuTe's ``make_fragment_A/B/C``: a new register tensor of ``frg_type`` shaped like the
    partition ``part`` (``like``: ``make_fragment_like``'s stride order; else compact
    column-major as ``make_tensor<FrgTypeC>(shape)``); ``view`` returns ``part`` itself (wgmma
    descriptors are built from the shared-memory partition). A layout gives a layout."""
    if view:
        return part
    if not isinstance(part, Tensor):
        lay = part.layout_b if hasattr(part, "layout_b") else part
        return mfl_layout(lay) if like else make_layout(lay.shape)
    if like:
        if isinstance(part.data, _ArrayIter):
            return mfl(part, dtype=_NP_DTYPE.get(frg_type, "float32"))
        return mfl(part, dtype=frg_type)
    lay = make_layout(part.layout.shape)
    if isinstance(part.data, _ArrayIter):
        import numpy as np
        arr = np.zeros(lay.cosize(), dtype=_NP_DTYPE.get(frg_type, "float32"))
        return Tensor(_ArrayIter(arr, 0, "rmem"), lay)
    return Tensor(make_rmem_ptr(frg_type), lay)


def _slice_with_offset(L, coord):
    return slice_and_offset(coord, L)


@dataclass(frozen=True)
class ThrMMA:
    """CuTe's ``ThrMMA``: one thread's view of a :class:`TiledMMA`.

    ``thr_vmnk`` is the thread's ``(v, m, n, k)`` coordinate in ``thr_layout_vmnk``.
    ``partition_C(t)`` is ``thrfrg_C(t)`` sliced at ``((v,(m,n)), (_, (_, ...)))``:
    ``(MMA, MMA_M, MMA_N, ...)``.
    """

    tiled_mma: TiledMMA
    thr_idx: int
    thr_vmnk: tuple

    def _coord(self, which):
        v, m, n, k = self.thr_vmnk
        return {"A": (v, (m, k)), "B": (v, (n, k)), "C": (v, (m, n))}[which]

    def partition_layout(self, L, which: str):
        """``(layout, offset)``: the thread's partition of a layout for operand ``which``.
        Element ``c`` of the partition is at ``offset + layout(c)`` of ``L``'s codomain."""
        if which not in ("A", "B", "C"):
            raise AtomError("ThrMMA.partition_layout", "which", "must be 'A', 'B' or 'C'",
                            actual=repr(which))
        if not (isinstance(L, Layout) or hasattr(L, "layout_b")):
            raise AtomError("ThrMMA.partition_layout", "L", "must be a Layout or a composed "
                            "layout", actual=repr(L))
        thr = self.tiled_mma._thrfrg(L, which)
        return _slice_with_offset(thr, (self._coord(which), _rest_coord(thr)))

    def _partition(self, t, which):
        return apply_partition(t, lambda L: self.partition_layout(L, which),
                               f"ThrMMA.partition_{which}")

    def partition_C(self, t):
        """``(MMA, MMA_M, MMA_N, ...)``: this thread's accumulators of ``t`` (an (M,N,...) tensor)."""
        return self._partition(t, "C")

    def partition_A(self, t):
        """``(MMA, MMA_M, MMA_K, ...)``: this thread's A values of ``t`` (an (M,K,...) tensor)."""
        return self._partition(t, "A")

    def partition_B(self, t):
        """``(MMA, MMA_N, MMA_K, ...)``: this thread's B values of ``t`` (an (N,K,...) tensor)."""
        return self._partition(t, "B")

    def _fragment(self, t, which):
        part = self._partition(t, which)
        atom = self.tiled_mma.atom
        tv = {"A": atom.layout_A, "B": atom.layout_B, "C": atom.layout_C}[which]
        shp = part.shape
        if it.rank(shp) < 3 or it.product(shp[0]) != it.product(tv.shape[1]):
            raise AtomError(f"ThrMMA.partition_fragment_{which}", "tensor",
                            "is not an MMA partition (rank >= 3 and size<0> == atom values)",
                            actual=fmt_int_tuple(shp))
        frg = {"A": atom.frg_type_A, "B": atom.frg_type_B, "C": atom.frg_type_C}[which]
        return make_fragment(part, frg, view=(frg == "smem_desc"), like=(which != "C"))

    def partition_fragment_C(self, t):
        """A new register tensor of ``partition_C(t)``'s shape (compact column-major) with the
        atom's C type: CuTe's ``make_tensor<FrgTypeC>(shape(partition_C(t)))``."""
        return self._fragment(t, "C")

    def partition_fragment_A(self, t):
        """``make_fragment_like`` of ``partition_A(t)`` (registers of the A type); for wgmma
        ``_SS`` atoms (``FrgTypeA = smem_desc``) the partition itself (descriptors are built from it)."""
        return self._fragment(t, "A")

    def partition_fragment_B(self, t):
        return self._fragment(t, "B")

    def __str__(self):
        return f"ThrMMA thread {self.thr_idx}  Thr VMNK: {fmt_int_tuple(self.thr_vmnk)}\n" + \
            str(self.tiled_mma)


# ---------------------------------------------------------------------------------------------
# Static helpers


def _pshape(mma, shape, which, op):
    if not isinstance(mma, TiledMMA):
        raise AtomError(op, "mma", "must be a TiledMMA", actual=repr(mma))
    if isinstance(shape, Layout):
        shape = shape.shape
    if not isinstance(shape, tuple) or len(shape) < 2:
        raise AtomError(op, "shape", "must have rank >= 2", actual=repr(shape))
    thr = mma._thrfrg(make_layout(shape), which)
    sl = thr(0, (_, tuple(_ for _i in range(len(shape)))))
    return sl.shape


def partition_shape_C(mma, shape_mn):
    """Shape of ``partition_C`` of an ``(M,N,...)`` tensor: ``(MMA, MMA_M, MMA_N, ...)``."""
    return _pshape(mma, shape_mn, "C", "partition_shape_C")


def partition_shape_A(mma, shape_mk):
    """Shape of ``partition_A`` of an ``(M,K,...)`` tensor: ``(MMA, MMA_M, MMA_K, ...)``."""
    return _pshape(mma, shape_mk, "A", "partition_shape_A")


def partition_shape_B(mma, shape_nk):
    """Shape of ``partition_B`` of an ``(N,K,...)`` tensor: ``(MMA, MMA_N, MMA_K, ...)``."""
    return _pshape(mma, shape_nk, "B", "partition_shape_B")


def tile_size(x, i: int) -> int:
    """``tile_size<I>(mma)`` (or of a TiledCopy: ``size<I>(Tiler_MN)``)."""
    if isinstance(x, TiledMMA):
        return x.tile_size_mnk(i)
    f = getattr(x, "tile_size", None)
    if f is None:
        raise AtomError("tile_size", "x", "must be a TiledMMA or a TiledCopy", actual=repr(x))
    return f(i)


def tile_shape(x) -> tuple:
    """``tile_shape(mma) = (tile_size<0>, tile_size<1>, tile_size<2>)``."""
    if isinstance(x, TiledMMA):
        return x.tile_shape
    raise AtomError("tile_shape", "mma", "must be a TiledMMA", actual=repr(x))


def thr_size(x) -> int:
    """Number of threads of a TiledMMA / TiledCopy."""
    return x.size()


# ---------------------------------------------------------------------------------------------
# Coverage


@dataclass(frozen=True)
class CoverageReport:
    """Result of a coverage check: ``ok``, per-operand expected multiplicity, the elements seen a
    wrong number of times (at most a few, with the threads that hold them) and a readable text."""

    ok: bool
    what: str
    details: tuple

    def __post_init__(self):
        check_fields(self, AtomError, {"ok": bool, "what": str, "details": tuple})
        for d in self.details:
            if not isinstance(d, str):
                raise AtomError("CoverageReport", "details", "must be a tuple of str", actual=d)

    def __bool__(self):
        return self.ok

    def __str__(self):
        head = f"{self.what}: {'OK' if self.ok else 'FAILED'}"
        return "\n".join([head] + ["  " + d for d in self.details])


def _tv_table(L):
    """``[L(i) for i in range(size(L))]`` as a NumPy int64 array (colexicographic order)."""
    import numpy as np
    shp, std = it.flatten(it.wrap(L.shape)), it.flatten(it.wrap(L.stride))
    idx = np.zeros(1, dtype=np.int64)
    for s, d in zip(shp, std):
        idx = (idx[None, :] + np.arange(s, dtype=np.int64)[:, None] * d).reshape(-1)
    return idx


def _count_tv(L, extent, shape2):
    """Multiplicity of every index in [0, extent) under a (thr, val) layout, the (thr, val)
    that map outside the tile, and ``holders(i)``: the (thr, val) holding index ``i``."""
    import numpy as np
    T = it.product(L.shape[0])
    tab = _tv_table(L)
    inside = (tab >= 0) & (tab < extent)
    counts = np.bincount(tab[inside], minlength=extent)
    out_of_range = [(int(k % T), int(k // T), int(tab[k])) for k in np.flatnonzero(~inside)[:3]]
    n_oor = int((~inside).sum())

    def holders(i):
        ks = np.flatnonzero(tab == i)
        return [(int(k % T), int(k // T)) for k in ks]
    return counts, holders, out_of_range, n_oor


def _check_tv(name, L, shape2, expected):
    import numpy as np
    extent = shape2[0] * shape2[1]
    counts, holders, oor, n_oor = _count_tv(L, extent, shape2)
    bad_idx = np.flatnonzero(counts != expected)
    lines = [f"{name}: {L}  over {shape2[0]}x{shape2[1]}, each element expected {expected}x"]
    if n_oor:
        lines.append(f"  {n_oor} (thr,val) map outside the tile, e.g. {oor}")
    if len(bad_idx):
        hist = {}
        for c in counts[bad_idx].tolist():
            hist[c] = hist.get(c, 0) + 1
        lines.append(f"  {len(bad_idx)} elements covered a wrong number of times ("
                     + ", ".join(f"{n} covered {c}x" + (" (missing)" if c == 0 else "")
                                 for c, n in sorted(hist.items())) + "):")
        for i in bad_idx[:5].tolist():
            crd = it.idx2crd(i, shape2)
            lines.append(f"    {crd} covered {int(counts[i])}x by (thr,val) {holders(i)[:4]}")
    else:
        lines.append("  every element covered exactly as expected")
    return (not len(bad_idx) and not n_oor), lines


def check_tiled_mma(mma: TiledMMA) -> CoverageReport:
    """Check that ``get_layoutC_TV`` is a bijection onto the ``tile_M x tile_N`` tile (each
    element held ``ThrK`` times when atoms are tiled along K: partial sums) and that
    every element of the A (B) tile is held by exactly ``ThrN`` (``ThrM``) threads times the
    atom's own A (B) replication. Returns a :class:`CoverageReport` (truthy when OK)."""
    if not isinstance(mma, TiledMMA):
        raise AtomError("check_tiled_mma", "mma", "must be a TiledMMA", actual=repr(mma))
    tM, tN, tK = mma.tile_shape
    atom = mma.atom
    M, N, K = atom.shape_mnk
    vm = mma.thr_layout_vmnk
    ThrM, ThrN, ThrK = (it.product(vm.shape[i]) for i in (1, 2, 3))
    # the atom's own replication of A and B (wgmma SS: every thread sees every element)
    repA = (atom.layout_A.size()) // (M * K)
    repB = (atom.layout_B.size()) // (N * K)
    ok = True
    lines = [f"TiledMMA {atom.name}, {mma.size()} threads, tile {fmt_int_tuple(mma.tile_shape)}"]
    if ThrK > 1:
        # CuTe's get_layoutC_TV folds ThrK into the thread mode and leaves the tile; the real
        # ownership is each thread's partition_C (threads differing in ThrK share elements)
        ref = make_layout((tM, tN))
        thr = mma._thrfrg(ref, "C")  # the same for every thread; each slices its own part
        rest = _rest_coord(thr)
        idx = []
        for t in range(mma.size()):
            lay, off = _slice_with_offset(thr, (mma.get_slice(t)._coord("C"), rest))
            idx.append((off + _tv_table(lay)).tolist())
        good, ls = _check_index_lists("C (from partition_C, ThrK > 1)", idx, (tM, tN), ThrK)
        ok = ok and good
        lines += ls
        items = (("A", mma.get_layoutA_TV(), (tM, tK), repA * ThrN),
                 ("B", mma.get_layoutB_TV(), (tN, tK), repB * ThrM))
    else:
        items = (("C", mma.get_layoutC_TV(), (tM, tN), 1),
                 ("A", mma.get_layoutA_TV(), (tM, tK), repA * ThrN),
                 ("B", mma.get_layoutB_TV(), (tN, tK), repB * ThrM))
    for name, L, shp, exp in items:
        good, ls = _check_tv(name, L, shp, exp)
        ok = ok and good
        lines += ls
    return CoverageReport(ok, "check_tiled_mma", tuple(lines))


def _check_index_lists(name, idx, shape2, expected):
    extent = shape2[0] * shape2[1]
    counts = [0] * extent
    oor = []
    for t, lst in enumerate(idx):
        for v, i in enumerate(lst):
            if 0 <= i < extent:
                counts[i] += 1
            else:
                oor.append((t, v, i))
    bad = [(i, c) for i, c in enumerate(counts) if c != expected]
    lines = [f"{name}: over {shape2[0]}x{shape2[1]}, each element expected {expected}x"]
    if oor:
        lines.append(f"  {len(oor)} (thr,val) map outside the tile, e.g. {oor[:3]}")
    for i, c in bad[:5]:
        lines.append(f"    {it.idx2crd(i, shape2)} covered {c}x")
    if not bad and not oor:
        lines.append("  every element covered exactly as expected")
    return (not bad and not oor), lines

