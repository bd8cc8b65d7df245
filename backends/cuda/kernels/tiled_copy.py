"""Copies driven by a :class:`cute_py.atom.TiledCopy`: the algebra's partitions lowered into CUDA.

``copy(src, dst, tiled_copy)`` with a TiledCopy copies ``dst(c) = src(c)`` over the copy domain
``(M, N, B...)`` (the top-level modes of both layouts; sizes must agree mode by mode).  The
first ``rank(tiler_mn)`` modes are tiled by the TiledCopy's tile, the others are batched; each
CTA takes one tile (CuTe's ``local_tile``) and each thread copies the values the TiledCopy
gives it:

* **offsets** come from ``tiled_copy.tidfrg_S(src_layout)`` / ``tidfrg_D(dst_layout)`` — CuTe's
  ``thr_copy.partition_S(local_tile(src))`` for every thread and tile at once, a layout
  ``(Thr, (FrgV, FrgX), (RestM, RestN, B...)) -> offset`` — lowered through :mod:`..lower` at
  ``(threadIdx.x, value, blockIdx.x)``.  A tiled mode whose extent is not a multiple of the tile
  is padded to one (the offsets of in-range coordinates do not change);
* **predicates** come from an identity tensor partitioned the same way: for a padded mode ``k``
  the layout ``tidfrg_S(make_layout(padded_shape, e_k))`` gives each value's coordinate ``k``, and
  an access happens iff the coordinate is ``elem_less`` than the shape;
* every atom call becomes **one vector access** of the atom's width (``UniversalCopy(128)`` on
  ``float16``: 8 values, one ``ld.global.v4``), unrolled over ``FrgX``.

Law (checked in NumPy by :func:`simulate` and against ``ThrCopy.partition_S/D`` in the tests):
for every thread ``t``, value ``v`` and tile ``r``, the kernel reads ``src_layout(c)`` and writes
``dst_layout(c)`` for the coordinate ``c`` the identity tensor's partition names, iff ``c`` is in
the domain; every coordinate of the domain is copied.

Two kinds:

* ``"register"``: one TiledCopy (a ``UniversalCopy`` atom): global -> registers -> global;
* ``"smem"``: a pair ``(load, store)`` of TiledCopies with one tiler and a shared-memory layout
  of the tile (a ``Layout`` or a swizzled ``ComposedLayout``): the load copy (``UniversalCopy``
  or ``cp.async``) partitions ``src`` and the smem tile, a barrier, the store copy
  (``UniversalCopy``) partitions the smem tile and ``dst``.  A transpose vectorises both sides
  this way.  Shared-memory accesses are vectors where the smem layout keeps the atom's values
  contiguous and aligned, element gathers/scatters otherwise.

Validation raises before anything is generated: the atom must fit the element type, the thread
count must fit a CTA, the tile rank must not exceed the domain's, every TiledCopy must cover its
tile, and each global vector must be contiguous and aligned in its layout for every thread and
tile and never straddle a residue edge (``AtomError`` naming ``tiled_copy`` and the side);
base-pointer misalignment is a ``LaunchError`` naming ``src``/``dst``.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from cute_py import int_tuple as it
from cute_py.atom.tiled_copy import TiledCopy
from cute_py.composed import ComposedLayout
from cute_py.errors import AtomError, LaunchError, LayoutError
from cute_py.layout import Layout
from cute_py.swizzle import Swizzle

from .. import ir, lower
from ..builder import KernelBuilder
from .vector_access import ETYPE, VTYPE, guarded, load, pack, store, unpack

__all__ = ["TiledCopyPlan", "plan_tiled_copy", "tiled_copy_source", "TiledCopyKernel",
           "build_tiled_copy", "copy_tiled", "simulate", "shipped_tiled_copies",
           "shipped_tiled_plans"]

_OP = "copy"


# ---------------------------------------------------------------------------------------------
# the plan


@dataclass(frozen=True)
class TiledCopyPlan:
    """A fully decided TiledCopy kernel (hashable: the kernel cache key).

    ``src_tv``/``dst_tv`` (and ``smem_w``/``smem_r`` for the smem stage) are the partitioned
    layouts ``(Thr, Val, Rest) -> offset``; ``crd_*`` are ``((mode, extent, layout), ...)`` for the
    padded modes, ``layout: (Thr, Val, Rest) -> coordinate``.
    """

    kind: str                 # "register" | "smem"
    elem_bytes: int
    shape: tuple              # the copy domain (M, N, B...)
    tile: tuple               # tile extents of the first len(tile) modes
    threads: int
    grid: int
    vec_s: int                # values per global read (the load atom's values per call)
    vec_d: int                # values per global write
    src_tv: Layout
    dst_tv: Layout
    crd_s: tuple              # predicates of the load side
    crd_d: tuple              # predicates of the store side (== crd_s for "register")
    smem_w: Layout | None = None   # smem offsets written by the load copy (before the swizzle)
    smem_r: Layout | None = None   # smem offsets read by the store copy (before the swizzle)
    swizzle: tuple | None = None   # (B, M, S) applied to smem offset + smem_offset
    smem_offset: int = 0
    smem_elems: int = 0
    smem_vec_w: bool = False  # smem writes are vectors (else element scatters)
    smem_vec_r: bool = False  # smem reads are vectors (else element gathers)
    cp_async: bool = False    # the load copy is cp.async (global -> smem directly)
    what: str = ""            # the TiledCopies, for the header comment

    @property
    def name(self) -> str:
        h = hashlib.sha256(repr(self).encode()).hexdigest()[:8]
        tag = f"reg_v{self.vec_s}" if self.kind == "register" else \
            f"smem_v{self.vec_s}x{self.vec_d}"
        return f"cute_tcopy_{tag}_e{self.elem_bytes}_{h}"

    @property
    def src_align(self) -> int:
        """Bytes the source base pointer must be aligned to."""
        return self.vec_s * self.elem_bytes

    @property
    def dst_align(self) -> int:
        return self.vec_d * self.elem_bytes


def _np_apply(shape, stride, c):
    """A (sub)layout at integer coordinates ``c`` (NumPy arrays; colexicographic split, last mode
    unbounded): ``crd2idx`` vectorised."""
    if isinstance(shape, tuple):
        out = 0
        for i, (s, d) in enumerate(zip(shape, stride)):
            if i == len(shape) - 1:
                out = out + _np_apply(s, d, c)
            else:
                n = it.product(s)
                out = out + _np_apply(s, d, c % n)
                c = c // n
        return out
    return c * stride


def _tv_table(L: Layout, T: int, NV: int, rest=0) -> np.ndarray:
    """``L(t, v, rest)`` for all threads and values: a ``(T, NV)`` int64 array."""
    t = np.arange(T, dtype=np.int64)[:, None]
    v = np.arange(NV, dtype=np.int64)[None, :]
    r = np.int64(rest)
    return (_np_apply(L.shape[0], L.stride[0], t) + _np_apply(L.shape[1], L.stride[1], v)
            + _np_apply(L.shape[2], L.stride[2], r) + np.zeros((T, NV), np.int64))


def _leaves(t):
    return list(it.flatten(t)) if isinstance(t, tuple) else [t]


def _zeros_like(shape):
    return tuple(_zeros_like(s) for s in shape) if isinstance(shape, tuple) else 0


def _as_domain_layout(layout, arg) -> Layout:
    shape, stride = lower.shape_stride(layout)
    if not isinstance(shape, tuple):
        shape, stride = (shape,), (stride,)
    for s, d in zip(_leaves(shape), _leaves(stride)):
        if not isinstance(s, int) or not isinstance(d, int):
            raise LayoutError(_OP, arg, "must be static (int shapes and strides) for a TiledCopy "
                              "kernel", actual=str(layout))
        if s < 1:
            raise LayoutError(_OP, arg, "has an empty mode", actual=shape)
    return Layout(shape, stride)


def _check_atom(tc, which, elem_bytes, kinds):
    if not isinstance(tc, TiledCopy):
        raise AtomError(_OP, "tiled_copy", "must be a TiledCopy (make_tiled_copy(...)), a "
                        "(load, store) pair of them, or a CopyConfig", actual=repr(tc))
    op = tc.atom.op
    if op.kind not in kinds:
        raise AtomError(_OP, "tiled_copy", f"{which}: the {op.name} atom cannot run here",
                        expected=" or ".join(kinds), actual=op.kind)
    if op.src_bits_per_thread != op.dst_bits_per_thread:
        raise AtomError(_OP, "tiled_copy", f"{which}: the atom converts widths",
                        expected="equal source and destination bits",
                        actual=(op.src_bits_per_thread, op.dst_bits_per_thread))
    if tc.atom.value_bits != 8 * elem_bytes:
        raise AtomError(_OP, "tiled_copy", f"{which}: the atom's value type does not match the "
                        "arrays' element size", expected=f"{8 * elem_bytes}-bit values",
                        actual=f"{tc.atom.value_type} ({tc.atom.value_bits} bits)")
    vbytes = op.src_bits_per_thread // 8
    if vbytes not in VTYPE or op.src_bits_per_thread % 8:
        raise AtomError(_OP, "tiled_copy", f"{which}: vector width not supported",
                        expected="8, 16, 32, 64 or 128 bits", actual=op.src_bits_per_thread)
    if not 1 <= tc.size() <= 1024:
        raise AtomError(_OP, "tiled_copy", f"{which}: thread count does not fit a CTA",
                        expected="1..1024 threads", actual=tc.size())
    for t in tc.tiler_mn:
        if not isinstance(t, int):
            raise AtomError(_OP, "tiled_copy", f"{which}: only integer tilers are lowered "
                            "(a Layout tiler needs the tile's image, not yet supported)",
                            actual=repr(tc.tiler_mn))
    if tc.atom.val_layout_src != tc.atom.val_layout_dst:
        raise AtomError(_OP, "tiled_copy", f"{which}: the atom permutes values between source "
                        "and destination", actual=tc.atom.op.name)
    return vbytes // elem_bytes


def _coverage(tc, crds, tile, which):
    """Every tile coordinate is named by some (thread, value)."""
    T, NV = tc.size(), tc.num_values
    idx = np.zeros((T, NV), np.int64)
    mult = 1
    for k, ext in enumerate(tile):
        idx += crds[k] * mult
        mult *= ext
    seen = np.zeros(mult, bool)
    seen[idx.ravel()] = True
    if not seen.all():
        raise AtomError(_OP, "tiled_copy", f"{which}: does not cover its tile (its TV layout "
                        "names only part of it)", expected=f"all {mult} elements of tile {tile}",
                        actual=f"{int(seen.sum())} covered")


def _check_vectors(table, V, rest_strides, which, side, layout):
    """Vectors of V values: contiguous (offset + v) and V-aligned for every thread and tile."""
    if V == 1:
        return
    T, NV = table.shape
    t = table.reshape(T, NV // V, V)
    ok = np.all(t == t[:, :, :1] + np.arange(V)) and np.all(t[:, :, 0] % V == 0)
    ok = ok and all(d % V == 0 for d in rest_strides)
    if not ok:
        raise AtomError(_OP, "tiled_copy", f"{which}: the atom's {V}-value vectors are not "
                        f"contiguous and {V}-aligned in {side} (layout {layout}) for every thread "
                        "and tile; use a narrower atom or a val_layout along the stride-1 mode",
                        actual=f"{V} values per call")


def _partition(tc, which, L):
    try:
        return tc.tidfrg_S(L) if which == "S" else tc.tidfrg_D(L)
    except LayoutError as e:
        raise LayoutError(_OP, "tiled_copy", f"cannot partition the layout {L}: {e}") from None


def _pad(L: Layout, tile, arg):
    """Each tiled mode padded to a multiple of the tile (flat modes only)."""
    shape = list(L.shape)
    for k, t in enumerate(tile):
        ext = it.product(shape[k])
        if ext % t:
            if isinstance(shape[k], tuple):
                raise LayoutError(_OP, arg, f"mode {k} is hierarchical and its size is not a "
                                  f"multiple of the tile", expected=f"a multiple of {t}",
                                  actual=f"{ext} ({L})")
            shape[k] = -(-ext // t) * t
    return Layout(tuple(shape), L.stride)


def _side(tc, which, L_pad, padded_modes, shape, tile, T, NV):
    """(offsets layout, ((mode, extent, coord layout), ...), tile coordinates table per mode)."""
    tv = _partition(tc, which, L_pad)
    crds, tables = [], []
    for k in range(len(tile)):
        stride = tuple(1 if i == k else _zeros_like(s) for i, s in enumerate(L_pad.shape))
        if isinstance(L_pad.shape[k], tuple):  # hierarchical, no residue: compact mode stride
            stride = tuple(_compact(s) if i == k else _zeros_like(s)
                           for i, s in enumerate(L_pad.shape))
        C = _partition(tc, which, Layout(L_pad.shape, stride))
        tables.append(_tv_table(C, T, NV))
        if k in padded_modes:
            crds.append((k, shape[k], C))
    return tv, tuple(crds), tables


def _compact(shape):
    """Column-major strides of a (nested) shape."""
    out, acc = [], 1

    def go(s):
        nonlocal acc
        if isinstance(s, tuple):
            return tuple(go(x) for x in s)
        d = acc
        acc *= s
        return d
    return go(shape)


def _rest_strides(L):
    return [d for s, d in zip(_leaves(L.shape[2]), _leaves(L.stride[2])) if s != 1]


def _straddle(tables, V, shape, tile, which):
    """No vector may be partly inside the domain (in the last tile of a padded mode)."""
    if V == 1:
        return
    for k, t in enumerate(tile):
        if shape[k] % t == 0:
            continue
        last = (shape[k] // t) * t
        inside = (tables[k] + last) < shape[k]
        T, NV = inside.shape
        g = inside.reshape(T, NV // V, V)
        if not np.all(g.all(-1) | ~g.any(-1)):  # each vector all inside or all outside
            raise AtomError(_OP, "tiled_copy", f"{which}: a {V}-value vector straddles the "
                            f"residue edge of mode {k} (extent {shape[k]}, tile {t}); use a "
                            "narrower atom", actual=f"extent {shape[k]}")


def _smem_parts(smem_layout, tile):
    if isinstance(smem_layout, ComposedLayout):
        A, off, B = smem_layout.layout_a, smem_layout.offset, smem_layout.layout_b
        if not isinstance(A, Swizzle) or not isinstance(off, int):
            raise LayoutError(_OP, "smem_layout", "must be a Layout or Swizzle o offset o Layout",
                              actual=str(smem_layout))
        swz = (A.B, A.M, A.S)
    elif isinstance(smem_layout, Layout):
        B, off, swz = smem_layout, 0, None
    else:
        raise LayoutError(_OP, "smem_layout", "must be a Layout or a swizzled ComposedLayout",
                          actual=repr(smem_layout))
    shp = B.shape if isinstance(B.shape, tuple) else (B.shape,)
    if tuple(it.product(s) for s in shp) != tuple(tile):
        raise LayoutError(_OP, "smem_layout", "must have the tile's shape",
                          expected=tuple(tile), actual=str(B))
    if not isinstance(B.shape, tuple):
        B = Layout((B.shape,), (B.stride,))
    for d in _leaves(B.stride):
        if d < 0:
            raise LayoutError(_OP, "smem_layout", "has a negative stride", actual=str(B))
    return B, off, swz


def _swz_np(x, swz):
    if swz is None:
        return x
    b, m, s = swz
    yyy = ((1 << b) - 1) << (m + max(0, s))
    return x ^ (((x & yyy) >> s) if s >= 0 else ((x & yyy) << -s))


def _smem_vec_ok(table, V):
    T, NV = table.shape
    t = table.reshape(T, NV // V, V)
    return bool(np.all(t == t[:, :, :1] + np.arange(V)) and np.all(t[:, :, 0] % V == 0))


def plan_tiled_copy(tiled_copy, src_layout, dst_layout, elem_bytes: int, *,
                    smem_layout=None) -> TiledCopyPlan:
    """Decide (and validate) the kernel for ``dst_layout(c) <- src_layout(c)`` driven by
    ``tiled_copy`` (a TiledCopy, or a ``(load, store)`` pair for the shared-memory stage).

    ``src_layout``/``dst_layout``: ``cute_py.Layout`` or ``(shape, stride)`` in elements, of one
    shape mode by mode (top level).  Raises ``AtomError``/``LayoutError`` naming the argument."""
    if elem_bytes not in ETYPE:
        raise LayoutError(_OP, "elem_bytes", "must be 1, 2, 4 or 8", actual=elem_bytes)
    Ls = _as_domain_layout(src_layout, "src")
    Ld = _as_domain_layout(dst_layout, "dst")
    shape = tuple(it.product(s) for s in Ls.shape)
    if tuple(it.product(s) for s in Ld.shape) != shape:
        raise LayoutError(_OP, "dst", "has a different shape than src (mode by mode)",
                          expected=shape, actual=tuple(it.product(s) for s in Ld.shape))
    for s, d in zip(_leaves(Ld.shape), _leaves(Ld.stride)):
        if d == 0 and s > 1:
            raise LayoutError(_OP, "dst", "has a stride-0 mode (several coordinates would "
                              "write one element)", actual=str(Ld))
    stage = isinstance(tiled_copy, (tuple, list))
    if stage:
        if len(tiled_copy) != 2:
            raise AtomError(_OP, "tiled_copy", "a shared-memory stage takes a (load, store) "
                            "pair of TiledCopies", actual=len(tiled_copy))
        tc1, tc2 = tiled_copy
        V1 = _check_atom(tc1, "load copy", elem_bytes, ("universal", "cp.async"))
        V2 = _check_atom(tc2, "store copy", elem_bytes, ("universal",))
        if isinstance(tc2, TiledCopy) and tc1.tile_shape != tc2.tile_shape:
            raise AtomError(_OP, "tiled_copy", "load and store copies must have one tile",
                            expected=tc1.tile_shape, actual=tc2.tile_shape)
        if tc1.size() != tc2.size():
            raise AtomError(_OP, "tiled_copy", "load and store copies must use the same threads",
                            expected=tc1.size(), actual=tc2.size())
    else:
        if smem_layout is not None:
            raise AtomError(_OP, "tiled_copy", "smem_layout needs a (load, store) pair of "
                            "TiledCopies", actual=repr(tiled_copy))
        tc1 = tc2 = tiled_copy
        V1 = V2 = _check_atom(tiled_copy, "tiled_copy", elem_bytes, ("universal",))
    tile = tuple(tc1.tile_shape)
    if len(tile) > len(shape):
        raise AtomError(_OP, "tiled_copy", "tile has a higher rank than the copy domain",
                        expected=f"rank <= {len(shape)} (src shape {shape})",
                        actual=f"tile {tile}")
    Ls_p, Ld_p = _pad(Ls, tile, "src"), _pad(Ld, tile, "dst")
    padded = {k for k, t in enumerate(tile) if shape[k] % t}
    T = tc1.size()
    NV1, NV2 = tc1.num_values, tc2.num_values
    src_tv, crd_s, tab_s = _side(tc1, "S", Ls_p, padded, shape, tile, T, NV1)
    dst_tv, crd_d, tab_d = _side(tc2, "D", Ld_p, padded, shape, tile, T, NV2)
    grid = it.product(src_tv.shape[2])
    if grid != it.product(dst_tv.shape[2]) or grid < 1 or grid > 2**31 - 1:
        raise LayoutError(_OP, "dst", "tiles differently from src", actual=(src_tv, dst_tv))
    which1 = "load copy" if stage else "the copy"
    which2 = "store copy" if stage else "the copy"
    _coverage(tc1, tab_s, tile, which1)
    _check_vectors(_tv_table(src_tv, T, NV1), V1, _rest_strides(src_tv), which1, "src", Ls)
    _straddle(tab_s, V1, shape, tile, which1)
    if stage:
        _coverage(tc2, tab_d, tile, which2)
    _check_vectors(_tv_table(dst_tv, T, NV2), V2, _rest_strides(dst_tv), which2, "dst", Ld)
    _straddle(tab_d, V2, shape, tile, which2)
    what = f"TiledCopy {tc1!r}" if not stage else f"load {tc1!r}, store {tc2!r}"
    if not stage:
        return TiledCopyPlan("register", elem_bytes, shape, tile, T, grid, V1, V1, src_tv,
                             dst_tv, crd_s, crd_s, what=what)
    # the shared-memory stage
    if smem_layout is None:
        smem_layout = Layout(tile)
    B, off, swz = _smem_parts(smem_layout, tile)
    Bp = Layout(B.shape + tuple(1 for _ in shape[len(tile):]),
                B.stride + tuple(0 for _ in shape[len(tile):]))
    smem_w = _partition(tc1, "D", Bp)
    smem_r = _partition(tc2, "S", Bp)
    tw = _swz_np(_tv_table(smem_w, T, NV1) + off, swz)
    tr = _swz_np(_tv_table(smem_r, T, NV2) + off, swz)
    full = _swz_np(_np_apply(B.shape, B.stride, np.arange(B.size(), dtype=np.int64)) + off, swz)
    if len(np.unique(full)) != full.size or full.min() < 0:
        raise LayoutError(_OP, "smem_layout", "must be injective on the tile (one smem element "
                          "per coordinate)", actual=str(smem_layout))
    nelem = int(full.max()) + 1
    nelem = -(-nelem // (16 // elem_bytes)) * (16 // elem_bytes)
    if nelem * elem_bytes > 48 * 1024:
        raise LayoutError(_OP, "smem_layout", "needs more than 48 KB of shared memory",
                          expected="<= 49152 bytes", actual=nelem * elem_bytes)
    vw, vr = _smem_vec_ok(tw, V1), _smem_vec_ok(tr, V2)
    cp_async = tc1.atom.op.kind == "cp.async"
    if cp_async and not vw:
        raise AtomError(_OP, "tiled_copy", "load copy: cp.async needs its vectors contiguous "
                        "and aligned in smem_layout", actual=str(smem_layout))
    if cp_async and V1 * elem_bytes not in (4, 8, 16):
        raise AtomError(_OP, "tiled_copy", "load copy: cp.async copies 4, 8 or 16 bytes",
                        actual=V1 * elem_bytes)
    return TiledCopyPlan("smem", elem_bytes, shape, tile, T, grid, V1, V2, src_tv, dst_tv,
                         crd_s, crd_d, smem_w=smem_w, smem_r=smem_r, swizzle=swz,
                         smem_offset=off, smem_elems=nelem, smem_vec_w=vw, smem_vec_r=vr,
                         cp_async=cp_async, what=what)


# ---------------------------------------------------------------------------------------------
# IR and code generation


def _at(L: Layout, tid, j, bid):
    return lower.crd2idx((tid, j, bid), L.shape, L.stride)


def _pred(crds, tid, j, bid):
    return ir.land(*[ir.lt(_at(C, tid, j, bid), ext) for _k, ext, C in crds])


def _smem_at(plan, L, tid, j, bid):
    x = _at(L, tid, j, bid) + plan.smem_offset
    return lower.swizzle_apply(x, plan.swizzle) if plan.swizzle else x


def _ir(plan: TiledCopyPlan):
    """``(loads, stores)``: per vector ``(global offset, smem offset or None, predicate)``."""
    tid, bid = ir.thread_idx(plan.threads), ir.block_idx(plan.grid)
    nv1 = it.product(plan.src_tv.shape[1]) // plan.vec_s
    nv2 = it.product(plan.dst_tv.shape[1]) // plan.vec_d
    loads, stores = [], []
    for x in range(nv1):
        j = x * plan.vec_s
        sm = None
        if plan.kind == "smem":
            sm = [_smem_at(plan, plan.smem_w, tid, j + v, bid) for v in range(plan.vec_s)]
        loads.append((_at(plan.src_tv, tid, j, bid), sm, _pred(plan.crd_s, tid, j, bid)))
    for x in range(nv2):
        j = x * plan.vec_d
        sm = None
        if plan.kind == "smem":
            sm = [_smem_at(plan, plan.smem_r, tid, j + v, bid) for v in range(plan.vec_d)]
        stores.append((_at(plan.dst_tv, tid, j, bid), sm, _pred(plan.crd_d, tid, j, bid)))
    return loads, stores


def _builder(plan: TiledCopyPlan, what: str) -> KernelBuilder:
    """The kernel's builder: ``(src, dst)`` parameters, the plan as a comment."""
    et = ETYPE[plan.elem_bytes]
    kb = KernelBuilder(plan.name, threads=plan.threads,
                       origin="cute_py.backends.cuda.kernels.tiled_copy", description=what)
    kb.param(f"const {et}* __restrict__", "src")
    kb.param(f"{et}* __restrict__", "dst")
    notes = [plan.what,
             f"domain {plan.shape}, tile {plan.tile}, {plan.threads} threads, grid {plan.grid}",
             f"  src (Thr,Val,Rest) -> offset: {plan.src_tv}",
             f"  dst (Thr,Val,Rest) -> offset: {plan.dst_tv}"]
    notes += [f"  load predicate: coord {k} < {ext}, coord = {C}" for k, ext, C in plan.crd_s]
    if plan.kind == "smem":
        notes += [f"  store predicate: coord {k} < {ext}, coord = {C}"
                  for k, ext, C in plan.crd_d]
        notes.append(f"  smem written at {plan.smem_w}, read at {plan.smem_r}, swizzle "
                     f"{plan.swizzle}, offset {plan.smem_offset}")
    kb.comment("\n".join(notes))
    return kb


def _source(plan: TiledCopyPlan) -> str:
    E = plan.elem_bytes
    et = ETYPE[E]
    loads, stores = _ir(plan)
    vs, vd = plan.vec_s, plan.vec_d
    if plan.kind == "register":
        what = (f"TiledCopy through registers, {len(loads)} x {vs * E}-byte vectors per thread")
    else:
        what = (f"TiledCopy through a shared-memory tile ({'cp.async' if plan.cp_async else 'registers'}"
                f" -> smem, {vs * E}-byte loads, {vd * E}-byte stores)")
    kb = _builder(plan, what)
    if plan.kind == "smem":
        kb.stmt(f"__shared__ __align__(16) {et} tile[{plan.smem_elems}]")
    kb.reserve("tile")
    kb.decl("const int", "tid", "threadIdx.x", hint=False)
    kb.decl("const int", "bid", "blockIdx.x", hint=False)
    roots = []
    for g, sm, p in loads + stores:
        roots += [g, p] + (sm or [])
    kb.cse(roots, hint="t")
    vts, vtd = VTYPE[vs * E], VTYPE[vd * E]
    if plan.kind == "register":
        for x in range(len(loads)):
            kb.decl(vts, f"v{x}", hint=False)
        for x, (g, _sm, p) in enumerate(loads):
            with guarded(kb, p):
                kb.assign(f"v{x}", load(kb, vs * E, "src", g))
        for x, (g, _sm, p) in enumerate(stores):
            with guarded(kb, p):
                store(kb, vd * E, "dst", g, f"v{x}")
        return kb.source()
    # shared-memory stage
    kb.comment("global -> shared (the load copy's partitions of src and of the smem tile)")
    if plan.cp_async:
        nb = vs * E
        for g, sm, p in loads:
            with guarded(kb, p):
                kb.call("sm80::cp_async_zfill",
                        kb.call_expr("cvta_to_shared_u32", f"&tile[{kb.expr(sm[0])}]"),
                        f"src + {kb.expr(g)}", nb, template=str(nb))
        kb.call("sm80::cp_async_commit")
        kb.call("sm80::cp_async_wait_all")
    else:
        for x in range(len(loads)):
            kb.decl(vts, f"a{x}", hint=False)
        for x, (g, _sm, p) in enumerate(loads):
            with guarded(kb, p):
                kb.assign(f"a{x}", load(kb, vs * E, "src", g))
        for x, (g, sm, p) in enumerate(loads):
            with guarded(kb, p):
                if plan.smem_vec_w:
                    kb.assign(f"*reinterpret_cast<{vts}*>(&tile[{kb.expr(sm[0])}])", f"a{x}")
                else:
                    for v, s_ in enumerate(sm):
                        kb.assign(f"tile[{kb.expr(s_)}]", unpack(E, vs, f"a{x}", v))
    kb.sync_threads()
    kb.comment("shared -> global (the store copy's partitions of the smem tile and of dst)")
    for x, (g, sm, p) in enumerate(stores):
        if plan.smem_vec_r:
            val = f"*reinterpret_cast<const {vtd}*>(&tile[{kb.expr(sm[0])}])"
        else:
            val = pack(E, vd, [f"tile[{kb.expr(s_)}]" for s_ in sm])
        with guarded(kb, p):
            store(kb, vd * E, "dst", g, val)
    return kb.source()


@lru_cache(maxsize=256)
def tiled_copy_source(plan: TiledCopyPlan) -> str:
    """The CUDA source of ``plan``'s kernel (deterministic)."""
    return _source(plan)


def simulate(plan: TiledCopyPlan, src: np.ndarray, dst: np.ndarray) -> None:
    """NumPy shadow of the generated kernel: the same IR index maps and predicates for every
    block and thread, on flat element buffers ``src``/``dst`` (``dst`` modified in place;
    offsets are relative to index 0 of each buffer)."""
    loads, stores = _ir(plan)
    T = plan.threads
    tid = np.arange(T, dtype=np.int64)[:, None]
    vs, vd = plan.vec_s, plan.vec_d

    def ev(n, env, shape):
        return np.broadcast_to(ir.evaluate(n, env), shape)

    if plan.kind == "register":
        bid = np.arange(plan.grid, dtype=np.int64)[None, :]
        env, shp = {"tid": tid, "bid": bid}, (T, plan.grid)
        vals = []
        for g, _sm, p in loads:
            g, p = ev(g, env, shp), ev(p, env, shp) != 0
            vals.append((p, np.stack([src[g[p] + v] for v in range(vs)], -1)))
        for (g, _sm, p), (pl, val) in zip(stores, vals):
            g, p = ev(g, env, shp), ev(p, env, shp) != 0
            assert np.array_equal(p, pl)
            for v in range(vd):
                dst[g[p] + v] = val[:, v]
        return
    for b in range(plan.grid):
        env, shp = {"tid": tid[:, 0], "bid": np.int64(b)}, (T,)
        tile = np.zeros(plan.smem_elems, dtype=src.dtype)
        for g, sm, p in loads:
            g, p = ev(g, env, shp), ev(p, env, shp) != 0
            for v in range(vs):
                tile[ev(sm[v], env, shp)[p]] = src[g[p] + v]
        for g, sm, p in stores:
            g, p = ev(g, env, shp), ev(p, env, shp) != 0
            for v in range(vd):
                dst[g[p] + v] = tile[ev(sm[v], env, shp)[p]]


# ---------------------------------------------------------------------------------------------
# kernels and the entry point


class TiledCopyKernel:
    """A planned TiledCopy kernel: ``source``, ``compile(arch)``, ``launch_pointers``."""

    def __init__(self, plan: TiledCopyPlan):
        self.plan = plan
        self.name = plan.name
        self.source = tiled_copy_source(plan)
        self._funcs: dict = {}

    def compile(self, arch: str | None = None):
        from ..compiler import compile_module
        return compile_module(self.source, arch=arch)

    @property
    def spec(self):
        """The kernel as a frozen :class:`~cute_py.backends.cuda.kernel.KernelSpec`."""
        from ..kernel import KernelSpec, Param
        return KernelSpec(self.source, self.name, (Param("src", "ptr"), Param("dst", "ptr")),
                          (self.plan.threads, 1, 1), arch=None)

    def function(self):
        """The compiled kernel (for the current device's architecture; compiled on first use)."""
        f = self._funcs.get(0)
        if f is None:
            from ..compiler import build_kernel
            f = self._funcs[0] = build_kernel(self.spec)
        return f

    def launch_pointers(self, src_ptr: int, dst_ptr: int, stream=None):
        from ..launch import launch
        for arg, ptr, a in (("src", src_ptr, self.plan.src_align),
                            ("dst", dst_ptr, self.plan.dst_align)):
            if ptr % a:
                raise LaunchError(_OP, arg, f"base pointer is misaligned for tiled_copy's "
                                  f"{8 * a}-bit vectors", expected=f"{a}-byte aligned",
                                  actual=hex(ptr))
        launch(self.function(), self.plan.grid, self.plan.threads,
               (np.uint64(src_ptr), np.uint64(dst_ptr)), stream=stream)


@lru_cache(maxsize=256)
def build_tiled_copy(plan: TiledCopyPlan) -> TiledCopyKernel:
    """The (cached) kernel for a plan."""
    return TiledCopyKernel(plan)


@lru_cache(maxsize=512)
def _kernel_for(tiled_copy, sl, dl, elem_bytes, smem_layout):
    return build_tiled_copy(plan_tiled_copy(tiled_copy, sl, dl, elem_bytes,
                                            smem_layout=smem_layout))


def copy_tiled(sv, dv, tiled_copy, sl, dl, *, smem_layout=None, stream=None):
    """Launch the TiledCopy kernel on checked array views ``sv``/``dv`` with layouts ``sl``/``dl``
    (``(shape, stride)`` pairs or Layouts); called by :func:`..copy.copy`."""
    if isinstance(tiled_copy, list):
        tiled_copy = tuple(tiled_copy)
    key = lambda L: lower.shape_stride(L) if not isinstance(L, Layout) else (L.shape, L.stride)
    k = _kernel_for(tiled_copy, key(sl), key(dl), sv.dtype.itemsize, smem_layout)
    for arg, v, a in (("src", sv, k.plan.src_align), ("dst", dv, k.plan.dst_align)):
        if v.ptr % a:
            raise LaunchError(_OP, arg, f"base pointer is misaligned for tiled_copy's "
                              f"{8 * a}-bit vectors", expected=f"{a}-byte aligned",
                              actual=hex(v.ptr))
    k.launch_pointers(sv.ptr, dv.ptr, stream=stream)
    return k


# ---------------------------------------------------------------------------------------------
# shipped configurations (compiled for sm_80 and sm_90a in the CPU tests)


def _shipped():
    from cute_py.atom.copy_atom import Copy_Atom
    from cute_py.atom.copy_traits import SM80_CP_ASYNC_CACHEGLOBAL, UniversalCopy
    from cute_py.atom.tiled_copy import make_tiled_copy
    from cute_py.composed import make_composed_layout
    from cute_py.layout import make_layout

    def tc(bits, T, thr, thr_stride, val, vt):
        v = make_layout(*val) if isinstance(val[0], tuple) else make_layout(val)
        t = make_tiled_copy(Copy_Atom(UniversalCopy(bits), vt), make_layout(thr, thr_stride), v)
        assert t.size() == T
        return t

    rm = lambda m, n: ((m, n), (n, 1))  # row-major (m, n)
    f16_row = tc(128, 128, (16, 8), (8, 1), (1, 8), "float16")        # 16x64 tile
    f16_row4 = tc(128, 256, (32, 8), (8, 1), ((4, 8), (8, 1)), "float16")       # 128x64 tile, 4 vectors
    f32_row = tc(128, 256, (32, 8), (8, 1), (1, 4), "float32")        # 32x32 tile
    f32_scalar = tc(32, 256, (32, 8), (8, 1), (1, 1), "float32")      # odd shapes
    # transpose through a swizzled smem tile: 64x64 fp32, loads along m (column-major src),
    # stores along n (row-major dst)
    ld32 = tc(128, 256, (16, 16), (1, 16), ((4, 4), (1, 4)), "float32")
    st32 = tc(128, 256, (16, 16), (16, 1), ((4, 4), (4, 1)), "float32")
    sw32 = make_composed_layout(Swizzle(3, 2, 6), 0, make_layout((64, 64)))
    cpa = make_tiled_copy(Copy_Atom(SM80_CP_ASYNC_CACHEGLOBAL(128), "float16"),
                          make_layout((8, 16), (1, 8)), make_layout((8, 1)))     # 64x16 tile
    st16 = tc(128, 128, (64, 2), (2, 1), (1, 8), "float16")                       # 64x16 tile
    return {
        "tc_copy_f16_row_8192": (f16_row, rm(8192, 8192), rm(8192, 8192), 2, None),
        "tc_copy_f16_row4_odd": (f16_row4, rm(1001, 136), rm(1001, 136), 2, None),
        "tc_copy_f32_row_batched": (f32_row, ((97, 64, 3), (64, 1, 97 * 64)),
                                    ((97, 64, 3), (64 * 3, 1, 64)), 4, None),
        "tc_copy_f32_scalar_odd": (f32_scalar, rm(77, 45), ((77, 45), (1, 77)), 4, None),
        "tc_transpose_f32_smem_sw": ((ld32, st32), ((8192, 8192), (1, 8192)), rm(8192, 8192), 4,
                                     sw32),
        "tc_cpasync_f16_smem": ((cpa, st16), ((104, 200), (1, 104)), rm(104, 200), 2,
                                make_layout((64, 16))),
    }


def shipped_tiled_plans():
    """``{name: TiledCopyPlan}`` for the shipped TiledCopy configurations."""
    return {k: plan_tiled_copy(tc, s, d, e, smem_layout=sm)
            for k, (tc, s, d, e, sm) in shipped_tiled_copies().items()}


def shipped_tiled_copies():
    """``{name: (tiled_copy, src_layout, dst_layout, elem_bytes, smem_layout)}``."""
    return _shipped()
