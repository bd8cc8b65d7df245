"""CuTe's layout algebra: coalesce, composition, complement, inverses, divides and products.

Every function follows CuTe C++ (``include/cute/layout.hpp``) with Python ints as static values
and states its law in its docstring; ``tests/test_algebra_laws.py`` checks each law with
hypothesis and ``tests/test_cpp_oracle.py`` checks results against real CuTe C++.

Where C++ returns a layout that violates its own post-condition (NVIDIA/cutlass#3177: a
composition whose stride does not divide a mode it continues past), we raise a
:class:`~cute_py.errors.LayoutError` instead of returning a wrong layout.
"""

from __future__ import annotations

from fractions import Fraction
import math

from . import int_tuple as it
from .errors import LayoutError, SymbolicError
from .int_tuple import _is_const, ceil_div, flatten, is_underscore, product, wrap
from .layout import (
    Layout, _as_layout, _concat, _modes, _to_tuple, append, compact_col_major, cosize,
    fmt_int_tuple, make_layout, make_ordered_layout, tile_unzip, zip as zip_layout,
)

__all__ = [
    "coalesce", "coalesce_shape", "filter", "filter_zeros", "composition", "complement",
    "right_inverse", "left_inverse", "logical_divide", "zipped_divide", "tiled_divide",
    "flat_divide", "logical_product", "zipped_product", "tiled_product", "flat_product",
    "blocked_product", "raked_product", "tile_to_shape", "upcast", "downcast", "recast_layout",
    "max_common_layout", "max_common_vector", "nullspace", "max_alignment",
    "domain_distribute", "flatten_layout", "unflatten_layout",
]


def _dispatch(x, name):
    """Non-Layout operands (composed layouts, tensors) implement the algebra themselves."""
    f = getattr(x, "_cute_" + name, None)
    return f


def _layout_arg(x, op, arg):
    if isinstance(x, Layout):
        return x
    if isinstance(x, (int, tuple)) and not isinstance(x, bool):
        return make_layout(x)
    return _as_layout(x, op, arg)


# ---------------------------------------------------------------------------------------------
# Coalesce and filter


def _bw_coalesce(old_shape, old_stride, new_shape, new_stride) -> Layout:
    """CuTe's right-to-left coalesce of flat modes onto the seed mode ``new_shape:new_stride``."""
    ns, nd = [new_shape], [new_stride]
    single = True
    for s, d in zip(reversed(old_shape), reversed(old_stride)):
        if _is_const(s, 1):
            continue
        if single and _is_const(ns[0], 1):
            ns[0], nd[0] = s, d
            continue
        p = s * d
        if isinstance(ns[0], int) and isinstance(p, int) and isinstance(nd[0], int) and p == nd[0]:
            ns[0], nd[0] = s * ns[0], d
            continue
        ns.insert(0, s)
        nd.insert(0, d)
        single = False
    if single:
        if _is_const(ns[0], 1):
            return Layout(1, 0)
        return Layout(ns[0], nd[0])
    return Layout(tuple(ns), tuple(nd))


def coalesce(L, profile=None):
    """Merge modes of ``L`` without changing it as a function on ``[0, size(L))``.

    Laws: ``size(R) == size(L)``; ``depth(R) <= 1``; ``R(i) == L(i)`` for ``0 <= i < size(L)``.
    Size-1 modes vanish; ``s0:d0, s1:d1`` merge into ``s0*s1:d0`` when ``d1 == s0*d0``.
    With a ``profile`` (an IntTuple), coalesce applies at its terminals, mode by mode, and
    modes of ``L`` past the profile pass through.
    ``coalesce((2,(1,6)):(1,(6,2))) == 12:1``.
    """
    f = _dispatch(L, "coalesce")
    if f is not None:
        return f(profile)
    L = _layout_arg(L, "coalesce", "layout")
    if isinstance(profile, tuple):
        if len(profile) > L.rank():
            raise LayoutError("coalesce", "profile", f"has more modes than the layout's rank {L.rank()}",
                              expected=fmt_int_tuple(L.shape), actual=fmt_int_tuple(profile))
        return _transform2(L, profile, lambda l, p: coalesce(l, p))
    f = L._flat_modes()
    if f:
        return _coalesce_flat(f)
    fs, fd = flatten(wrap(L.shape)), flatten(wrap(L.stride))
    if not fs:  # an empty layout: CuTe's _1:_0
        return Layout(1, 0)
    return _bw_coalesce(fs[:-1], fd[:-1], fs[-1], fd[-1])


def _coalesce_pairs(f, seed=None) -> list:
    """``_bw_coalesce`` on plain-int flat modes ``((s, d), ...)``: the coalesced ``[(s, d), ...]``
    (``[(1, 0)]`` when nothing is left)."""
    s0, d0 = f[-1] if seed is None else seed
    out = [(s0, d0)]
    for s, d in reversed(f[:-1]):
        if s == 1:
            continue
        hs, hd = out[-1]
        if len(out) == 1 and hs == 1:
            out[-1] = (s, d)
        elif s * d == hd:
            out[-1] = (s * hs, d)
        else:
            out.append((s, d))
    if len(out) == 1 and out[0][0] == 1:
        return [(1, 0)]
    out.reverse()
    return out


def _from_pairs(pairs) -> Layout:
    """The flat layout of plain-int ``[(s, d), ...]`` (one mode: an int layout)."""
    if len(pairs) == 1:
        L = Layout._raw(pairs[0][0], pairs[0][1])
    else:
        L = Layout._raw(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))
    object.__setattr__(L, "_flat", tuple(pairs))
    return L


def _coalesce_flat(f, seed=None) -> Layout:
    """``_bw_coalesce`` for plain-int flat modes ``((s, d), ...)`` (the common, static case)."""
    return _from_pairs(_coalesce_pairs(f, seed))


def _coalesce_x(L: Layout) -> Layout:
    """Coalesce that keeps the function outside the domain too (a trailing size-1 mode becomes a
    size-2 seed so its stride survives) — used inside composition."""
    f = L._flat_modes()
    if f:
        s, d = f[-1]
        return _coalesce_flat(f, (2 if s == 1 else s, d))
    fs, fd = flatten(wrap(L.shape)), flatten(wrap(L.stride))
    if not fs:
        return Layout(1, 0)
    seed = 2 if _is_const(fs[-1], 1) else fs[-1]
    return _bw_coalesce(fs[:-1], fd[:-1], seed, fd[-1])


def coalesce_shape(shape):
    """Merge adjacent static (or adjacent symbolic) extents of a shape: all-static -> one int."""
    fl = flatten(wrap(shape))
    if not fl:
        return 1
    out = [fl[0]]
    for a in fl[1:]:
        if isinstance(out[-1], int) == isinstance(a, int):
            out[-1] = out[-1] * a
        else:
            out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def filter_zeros(L, profile=None):
    """Set the extent of every stride-0 mode (or every mode at a 0 of ``profile``) to 1.

    Law: ``filter_zeros(L)(c)`` equals ``L(c)`` wherever the coordinate exists.
    """
    f = _dispatch(L, "filter_zeros")
    if f is not None:
        return f(profile)
    L = _layout_arg(L, "filter_zeros", "layout")
    if profile is None:
        return Layout(it.filter_zeros(L.stride, L.shape), L.stride)
    return Layout(it.filter_zeros(profile, L.shape), L.stride)


def filter(L, profile=None):
    """Remove stride-0 and size-1 modes and coalesce: ``coalesce(filter_zeros(L))`` (``1:0`` if empty).

    Law: the image of ``filter(L)`` equals the image of ``L`` and ``filter(L)`` is injective when
    the non-zero part of ``L`` is.
    """
    f = _dispatch(L, "filter")
    if f is not None:
        return f(profile)
    L = _layout_arg(L, "filter", "layout")
    if isinstance(profile, tuple):
        if len(profile) > L.rank():
            raise LayoutError("filter", "profile", f"has more modes than the layout's rank {L.rank()}",
                              expected=fmt_int_tuple(L.shape), actual=fmt_int_tuple(profile))
        return _transform2(L, profile, lambda l, p: filter(l, p))
    return coalesce(filter_zeros(L))


def flatten_layout(L):
    """``flatten(L)``: the same function with a flat shape and stride."""
    L = _layout_arg(L, "flatten", "layout")
    return Layout(flatten(L.shape), flatten(L.stride))


def unflatten_layout(L, profile):
    """Reshape a flat layout's modes into ``profile``'s structure."""
    L = _layout_arg(L, "unflatten", "layout")
    return Layout(it.unflatten(L.shape, profile), it.unflatten(L.stride, profile))


def _transform2(L: Layout, t, f):
    """By-mode application of ``f`` to ``L``'s modes and the entries of tuple ``t``; extra modes of
    ``L`` are kept (CuTe's two-argument transform_layout)."""
    ms = _modes(L)
    out = [f(ms[i], t[i]) for i in range(len(t))] + ms[len(t):]
    return _concat(out)


def _check_tiler_rank(op, L: Layout, tiler):
    if len(tiler) == 0:
        raise LayoutError(op, "tiler", "is an empty tuple", expected="at least one mode",
                          actual="()")
    if len(tiler) > L.rank():
        raise LayoutError(op, "tiler", f"has {len(tiler)} modes but the layout has rank {L.rank()}",
                          expected=f"at most {L.rank()} modes", actual=_fmt_tiler(tiler))


def _fmt_tiler(t):
    if isinstance(t, tuple):
        return "<" + ",".join(_fmt_tiler(a) for a in t) + ">"
    return str(t)


# ---------------------------------------------------------------------------------------------
# Composition


def composition(A, B):
    """``R = A ∘ B``: ``R(c) == A(B(c))`` for every coordinate ``c`` of ``B``; ``compatible(B, R)``.

    ``B`` may be a layout, an int ``n`` (``n:1``), ``_`` (identity) or a tuple of those applied
    mode by mode (modes of ``A`` not covered by the tuple are dropped, as in CuTe C++).
    Raises :class:`LayoutError` when ``B``'s strides or extents do not divide ``A``'s modes
    (CuTe's stride and shape divisibility conditions), including the cases where CuTe's weak
    check would return a wrong layout (NVIDIA/cutlass#3177).
    ``(6,2):(8,2) ∘ (4,3):(3,1) == ((2,2),3):((24,2),8)``.
    """
    f = _dispatch(A, "compose")
    if f is not None:
        return f(B)
    g = _dispatch(B, "rcompose")
    if g is not None:
        return g(A)
    A = _layout_arg(A, "composition", "lhs")
    if isinstance(B, Layout):
        flat = _coalesce_x(A)
        R = _composition_impl(flat.shape, flat.stride, B.shape, B.stride, A, B)
        if isinstance(B.shape, tuple) and not _distributes(flat, B, R, A):
            raise LayoutError("composition", "rhs", "has modes whose images add up across a mode "
                              "boundary of the lhs, so composing mode by mode (as CuTe C++ does) "
                              "gives a layout with R(c) != A(B(c)) (NVIDIA/cutlass#2955)",
                              expected=f"{A} ∘ {B} distributing over the modes of the rhs",
                              actual=str(B))
        return R
    if isinstance(B, list):
        B = tuple(B)
    if isinstance(B, tuple):
        _check_tiler_rank("composition", A, B)
        ms = _modes(A)
        return _concat([composition(ms[i], B[i]) for i in range(len(B))])
    if is_underscore(B):
        return A
    if it.is_int(B):
        if isinstance(B, int) and B < 1:
            raise LayoutError("composition", "rhs", "is a non-positive extent", expected=">= 1",
                              actual=B)
        flat = _coalesce_x(A)
        return _composition_impl(flat.shape, flat.stride, B, 1, A, B)
    raise LayoutError("composition", "rhs", "must be a Layout, an int, _ or a tuple of those",
                      actual=repr(B))


def _distributes(flat: Layout, B: Layout, R: Layout, A: Layout) -> bool:
    """Does ``A ∘ B`` distribute over ``B``'s modes, i.e. ``A(sum B_i(x_i)) == sum A(B_i(x_i))``?

    Fast sufficient test: write indices in ``A``'s mixed radix (its coalesced modes, the last one
    unbounded); if, at every digit, the largest digits the modes of ``B`` can produce add up to
    less than the radix, adding their images never carries, and ``A`` is additive on them.
    Otherwise check the law on every coordinate of ``B`` (vectorised with NumPy).
    """
    ls = flat.shape
    if not isinstance(ls, tuple):
        return True  # A is a single mode: linear
    modes = [(s, d) for s, d in zip(flatten(B.shape), flatten(B.stride))
             if not _is_const(s, 1) and not _is_const(d, 0)]
    if len(modes) <= 1:
        return True
    if not (it.is_static(ls) and all(isinstance(s, int) and isinstance(d, int) for s, d in modes)):
        return True  # symbolic: CuTe trusts the caller; so do we
    if any(d < 0 for _s, d in modes):
        return True  # negative offsets: C++'s truncating division decides; we follow C++
    n = len(ls) - 1
    radix_start = [1] * (n + 1)
    for j in range(n):
        radix_start[j + 1] = radix_start[j] * ls[j]
    total = [0] * n
    for s, d in modes:
        for j in range(n):
            base, r = radix_start[j], ls[j]
            if d % (base * r) == 0:
                continue  # every multiple of d has digit j == 0
            if (s - 1) * d < base * r:
                total[j] += ((s - 1) * d) // base  # the digit grows monotonically: no wrap
            elif d % base == 0 and s * (d // base) >= r * (d // base) // math.gcd(d // base, r):
                total[j] += r - math.gcd(d // base, r)  # k*q mod r runs through all multiples of g
            elif s <= 1024:
                total[j] += max(((k * d) // base) % r for k in range(s))
            else:
                total[j] += r - 1
    if all(total[j] < ls[j] for j in range(n)):
        return True
    return _agrees_everywhere(R, A, B)


def _flat_ints(L: Layout):
    ss, dd = flatten(L.shape), flatten(L.stride)
    ss = ss if isinstance(ss, tuple) else (ss,)
    dd = dd if isinstance(dd, tuple) else (dd,)
    if all(type(x) is int for x in ss + dd):
        return ss, dd
    return None


def _np_eval(flat, idx):
    """``L(i)`` for an array of 1-D indices (colexicographic, the last mode not wrapped)."""
    ss, dd = flat
    out, rem = 0, idx
    for k, (s, d) in enumerate(zip(ss, dd)):
        digit = rem if k == len(ss) - 1 else rem % s
        rem = rem // s
        out = out + digit * d
    return out


def _agrees_everywhere(R: Layout, A: Layout, B: Layout) -> bool:
    """``R(i) == A(B(i))`` for every index of ``B`` (vectorised; exact)."""
    fr, fa, fb = _flat_ints(R), _flat_ints(A), _flat_ints(B)
    n = product(B.shape)
    if fr is None or fa is None or fb is None or n > (1 << 24):
        shape, stride = A.shape, A.stride
        return all(R(i) == it._crd2idx(B(i), shape, stride) for i in range(n))
    import numpy as np
    idx = np.arange(n, dtype=np.int64)
    return bool(np.array_equal(_np_eval(fr, idx), _np_eval(fa, _np_eval(fb, idx))))


def _composition_impl(ls, ld, rs, rd, A, B) -> Layout:
    if type(rs) is int and type(rd) is int and type(ls) is tuple \
            and all(type(x) is int for x in ls) and all(type(x) is int for x in ld):
        return _composition_int(ls, ld, rs, rd, A, B)
    return _composition_general(ls, ld, rs, rd, A, B)


def _composition_general(ls, ld, rs, rd, A, B) -> Layout:
    if isinstance(rs, tuple):
        return _concat([_composition_impl(ls, ld, s, d, A, B) for s, d in zip(rs, rd)])
    if _is_const(rd, 0):
        return Layout(rs, rd)
    if not isinstance(ls, tuple):
        return Layout(rs, rd * ld)
    R = len(ls)
    result_shape, result_stride = [], []
    rest_shape, rest_stride = rs, rd
    for i in range(R - 1):
        curr_shape, curr_stride = ls[i], ld[i]
        static = isinstance(curr_shape, int) and isinstance(rest_stride, int)
        if static and not (rest_stride % curr_shape == 0 or abs(rest_stride) < curr_shape):
            raise LayoutError("composition", "rhs", f"stride {rest_stride} does not divide "
                              f"and is not smaller than the lhs mode of extent {curr_shape} "
                              f"(stride divisibility condition)",
                              expected=f"{A} ∘ {B} with divisible strides", actual=str(B))
        next_shape = ceil_div(curr_shape, abs(rest_stride))
        next_stride = ceil_div(abs(rest_stride), curr_shape) * it.signum(rest_stride)
        if _is_const(next_shape, 1) or _is_const(rest_shape, 1):
            rest_stride = next_stride
            continue
        new_shape = it._min(next_shape, rest_shape)
        if isinstance(new_shape, int) and isinstance(rest_shape, int):
            if rest_shape % new_shape != 0:
                raise LayoutError("composition", "rhs", f"extent {rest_shape} is not divisible by "
                                  f"{new_shape}, the part of the lhs mode of extent {curr_shape} it "
                                  f"covers (shape divisibility condition)",
                                  expected=f"{A} ∘ {B} with divisible shapes", actual=str(B))
            if (static and curr_shape % abs(rest_stride) != 0 and new_shape != rest_shape):
                # CuTe's weak condition accepts this and returns a wrong layout (cutlass#3177).
                raise LayoutError("composition", "rhs", f"stride {rest_stride} does not divide the "
                                  f"lhs mode of extent {curr_shape} that the rhs continues past, "
                                  f"so no layout equals A(B(c)) (NVIDIA/cutlass#3177)",
                                  expected=f"{curr_shape} % {abs(rest_stride)} == 0", actual=str(B))
        result_shape.append(new_shape)
        result_stride.append(rest_stride * curr_stride)
        rest_shape = rest_shape // new_shape if isinstance(rest_shape, int) and isinstance(new_shape, int) \
            else it._floordiv(rest_shape, new_shape)
        rest_stride = next_stride
    if not result_shape:
        return Layout(rest_shape, rest_stride * ld[R - 1])
    if _is_const(rest_shape, 1):
        return Layout(it.unwrap(tuple(result_shape)), it.unwrap(tuple(result_stride)))
    return Layout(tuple(result_shape) + (rest_shape,), tuple(result_stride) + (rest_stride * ld[R - 1],))


def _composition_int(ls, ld, rs, rd, A, B) -> Layout:
    """``_composition_impl`` for a plain-int flat lhs (rank >= 2) and one plain-int rhs mode."""
    if rd == 0:
        return Layout._raw(rs, 0)
    R = len(ls)
    result_shape, result_stride = [], []
    rest_shape, rest_stride = rs, rd
    for i in range(R - 1):
        curr_shape = ls[i]
        a = rest_stride if rest_stride >= 0 else -rest_stride
        if not (rest_stride % curr_shape == 0 or a < curr_shape):
            return _composition_general(ls, ld, rs, rd, A, B)  # raises the divisibility error
        next_shape = -(-curr_shape // a)
        next_stride = -(-a // curr_shape) * (1 if rest_stride > 0 else -1 if rest_stride < 0 else 0)
        if next_shape == 1 or rest_shape == 1:
            rest_stride = next_stride
            continue
        new_shape = next_shape if next_shape < rest_shape else rest_shape
        if rest_shape % new_shape != 0 or (curr_shape % a != 0 and new_shape != rest_shape):
            return _composition_general(ls, ld, rs, rd, A, B)  # raises (incl. cutlass#3177)
        result_shape.append(new_shape)
        result_stride.append(rest_stride * ld[i])
        rest_shape //= new_shape
        rest_stride = next_stride
    if not result_shape:
        return Layout._raw(rest_shape, rest_stride * ld[R - 1])
    if rest_shape == 1:
        if len(result_shape) == 1:
            return Layout._raw(result_shape[0], result_stride[0])
        return Layout._raw(tuple(result_shape), tuple(result_stride))
    return Layout._raw(tuple(result_shape) + (rest_shape,), tuple(result_stride) + (rest_stride * ld[R - 1],))


# ---------------------------------------------------------------------------------------------
# Complement


def complement(L, cotarget=None):
    """The layout of the "holes" of ``L`` up to ``cotarget`` (default ``cosize(filter(L))``).

    Laws: ``R`` is ordered (strictly increasing on its domain); its image meets ``L``'s image
    only at 0; ``size(R) >= cotarget / size(filter(L))``; ``make_layout(L, R)`` is injective.
    ``cotarget`` may be an int or a shape (a layout gives its shape).
    ``complement(4:2, 24) == (2,3):(1,8)``.
    """
    f = _dispatch(L, "complement")
    if f is not None:
        return f(cotarget)
    L = _layout_arg(L, "complement", "layout")
    if type(cotarget) is int and cotarget < 1:
        raise LayoutError("complement", "cotarget", "must be a positive extent (or a shape of them)",
                          expected=">= 1", actual=cotarget)
    if cotarget is None or type(cotarget) is int or (
            type(cotarget) is tuple and all(type(c) is int and c >= 1 for c in cotarget)):
        R = _complement_flat(L, cotarget)
        if R is not None:
            return R
    fl = filter(L)
    if cotarget is None:
        cotarget = cosize(fl)
    elif isinstance(cotarget, Layout):
        cotarget = cotarget.shape
    else:
        cotarget = _to_tuple(cotarget)
        it._check(cotarget, "complement", "cotarget")
    shape_, stride_ = wrap(fl.shape), wrap(fl.stride)
    if len(stride_) == 1 and _is_const(stride_[0], 0):
        return make_layout(coalesce_shape(cotarget))
    R = len(shape_)
    if R > 1 and not it.is_static(stride_):
        raise SymbolicError("complement", "layout", "has symbolic strides; CuTe allows a dynamic-"
                            "stride complement only for rank-1 layouts", actual=str(L))
    for d in stride_:
        if isinstance(d, int) and d < 0:
            raise LayoutError("complement", "layout", "has a negative stride", actual=str(L))
    shape_, stride_ = list(shape_), list(stride_)
    result_shape, result_stride = [], [1]
    for i in range(R - 1):
        min_stride = min(stride_)
        min_idx = stride_.index(min_stride)
        new_shape = min_stride // result_stride[i]
        if new_shape == 0:
            raise LayoutError("complement", "layout", "is not injective (or its strides do not "
                              "nest), so it has no complement", actual=str(L))
        result_shape.append(new_shape)
        result_stride.append(min_stride * shape_[min_idx])
        del shape_[min_idx], stride_[min_idx]
    new_shape = stride_[0] // result_stride[R - 1] if isinstance(stride_[0], int) else \
        it._floordiv(stride_[0], result_stride[R - 1])
    if _is_const(new_shape, 0):
        raise LayoutError("complement", "layout", "is not injective (or its strides do not "
                          "nest), so it has no complement", actual=str(L))
    result_shape.append(new_shape)
    new_stride = stride_[0] * shape_[0]
    rest_shape = coalesce_shape(ceil_div(cotarget, new_stride))
    rest_stride = compact_col_major(rest_shape, new_stride)
    return coalesce(Layout((tuple(result_shape), rest_shape), (tuple(result_stride), rest_stride)))


def _complement_flat(L: Layout, cotarget):
    """``complement`` for plain-int layouts, non-negative strides and an int cotarget; None to
    take the general path (which also raises the errors)."""
    f = L._flat_modes()
    if not f:
        return None
    modes = [(s, d) for s, d in f if d != 0 and s != 1]
    if any(d < 0 for _s, d in modes):
        return None
    fm = _coalesce_pairs(modes) if modes else [(1, 0)]
    if cotarget is None:
        cotarget = 1 + sum((s - 1) * d for s, d in fm)
    if len(fm) == 1 and fm[0][1] == 0:
        if type(cotarget) is tuple:
            return None
        return Layout._raw(cotarget, 0 if cotarget == 1 else 1)
    shape_, stride_ = [s for s, _d in fm], [d for _s, d in fm]
    R = len(shape_)
    result = []
    cur = 1
    for _ in range(R - 1):
        min_stride = min(stride_)
        k = stride_.index(min_stride)
        new_shape = min_stride // cur
        if new_shape == 0:
            return None  # not injective: the general path raises
        result.append((new_shape, cur))
        cur = min_stride * shape_[k]
        del shape_[k], stride_[k]
    new_shape = stride_[0] // cur
    if new_shape == 0:
        return None
    result.append((new_shape, cur))
    new_stride = stride_[0] * shape_[0]
    if type(cotarget) is int:
        rest_shape = -(-cotarget // new_stride)
    else:  # CuTe's left fold of ceil_div over the cotarget's modes, then coalesced to one int
        rest_shape, b = 1, new_stride
        for c in cotarget:
            rest_shape *= -(-c // b)
            b = -(-b // c)
    result.append((rest_shape, 0 if rest_shape == 1 else new_stride))
    return _coalesce_flat(tuple(result))


# ---------------------------------------------------------------------------------------------
# Inverses


def _prefix_shapes(shapes):
    out = [1]
    for s in shapes:
        out.append(out[-1] * s)
    return out


def right_inverse(L):
    """``R`` with ``L(R(i)) == i`` for ``0 <= i < size(R)`` (as large as the contiguous part of
    ``L``'s image starting at 0 allows; ``1:0`` when ``0, 1`` are not both reachable).

    ``right_inverse((2,4,6):(4,1,8)) == (4,2,6):(2,1,8)``; ``right_inverse(_) == _``.
    """
    if is_underscore(L):
        return L
    f = _dispatch(L, "right_inverse")
    if f is not None:
        return f()
    L = _layout_arg(L, "right_inverse", "layout")
    c = coalesce(L)
    f = c._flat_modes()
    if f:  # plain ints
        modes, pre = [], 1
        for s_, d_ in f:
            modes.append((d_, s_, pre))
            pre *= s_
        modes.sort(key=lambda m: m[0])
        out, curr = [(1, 0)], 1
        for d_, s_, p_ in modes:
            if d_ == curr:
                out.append((s_, p_))
                curr = s_ * d_
        return _coalesce_flat(tuple(out))
    lshape, lstride = wrap(c.shape), wrap(c.stride)
    pre = _prefix_shapes(lshape)
    idx = [i for i, d in enumerate(lstride) if isinstance(d, int)]
    idx.sort(key=lambda i: lstride[i])
    rs, rd, curr = [1], [0], 1
    for i in idx:
        if lstride[i] == curr:
            rs.append(lshape[i])
            rd.append(pre[i])
            curr = lshape[i] * lstride[i]
    return coalesce(Layout(tuple(rs), tuple(rd)))


def left_inverse(L):
    """``R`` with ``R(L(i)) == i`` for ``0 <= i < size(L)`` when ``L`` is injective (a
    quasi-inverse otherwise: ``L(R(L(i))) == L(i)``). Uses CuTe C++'s construction, so values off
    the image of ``L`` match C++ (``left_inverse(4:2) == (2,4):(0,1)``; pycute differs).
    """
    if is_underscore(L):
        return L
    f = _dispatch(L, "left_inverse")
    if f is not None:
        return f()
    L = _layout_arg(L, "left_inverse", "layout")
    c = coalesce(L)
    lshape, lstride = wrap(c.shape), wrap(c.stride)
    if not it.is_static(lstride):
        raise SymbolicError("left_inverse", "layout", "needs static strides", actual=str(L))
    pre = _prefix_shapes(lshape)
    order = sorted(range(len(lstride)), key=lambda i: lstride[i])
    rs, rd = [], [0]
    for i in order:
        d = lstride[i]
        if d == 0:
            continue
        sz = product(tuple(rs))
        if d % sz != 0:
            raise LayoutError("left_inverse", "layout", f"stride {d} is not divisible by the size "
                              f"{sz} of the modes below it (left inverse divisibility condition)",
                              actual=str(L))
        rs.append(d // sz)
        rd.append(pre[i])
    rs.append(lshape[order[-1]])
    return coalesce(Layout(tuple(rs), tuple(rd)))


# ---------------------------------------------------------------------------------------------
# Divides


def logical_divide(L, tiler):
    """Split ``L`` into ``(tile, rest)``: ``composition(L, make_layout(T, complement(T, shape(coalesce(L)))))``.

    A tuple tiler divides mode by mode (``((TileM,RestM),(TileN,RestN),L...)``, extra modes of
    ``L`` kept); an int ``n`` means ``n:1``; ``_`` keeps the mode. Law: ``R(c) == L(T*(c))`` with
    ``T* = make_layout(T, complement(T, ...))``; mode 0 of the result is ``composition(L, T)``.
    ``logical_divide((4,2,3):(2,1,8), 4:2) == ((2,2),(2,3)):((4,1),(2,8))``.
    """
    f = _dispatch(L, "logical_divide")
    if f is not None:
        return f(tiler)
    L = _layout_arg(L, "logical_divide", "layout")
    if isinstance(tiler, list):
        tiler = tuple(tiler)
    if isinstance(tiler, Layout):
        cot = coalesce(L).shape
        return composition(L, make_layout(tiler, complement(tiler, cot)))
    if isinstance(tiler, tuple):
        _check_tiler_rank("logical_divide", L, tiler)
        return _transform2(L, tiler, logical_divide)
    if is_underscore(tiler):
        return L
    if it.is_int(tiler):
        return logical_divide(L, make_layout(tiler))
    raise LayoutError("logical_divide", "tiler", "must be a Layout, an int, _ or a tuple of those",
                      actual=repr(tiler))


def _check_not_underscore(op, tiler):
    if is_underscore(tiler):
        raise LayoutError(op, "tiler", "must be a Layout, an int or a tuple of tilers; a "
                          "top-level '_' leaves no (tile, rest) modes to gather", actual="_")


def _unpack_rest(r: Layout) -> Layout:
    """``r(_, (_, _, ...))`` of a zipped ``(tile, rest)`` layout: the rest's modes unpacked."""
    if isinstance(r, Layout) and isinstance(r.shape, tuple) and len(r.shape) == 2:
        rest_s, rest_d = r.shape[1], r.stride[1]
        if isinstance(rest_s, tuple) and len(rest_s) >= 2:  # a rank-1 rest stays a tuple mode
            return Layout._raw((r.shape[0],) + rest_s, (r.stride[0],) + rest_d)
        return r
    return r(it._, _rep(it.rank(r.shape[1])))


def _rep(n):
    return it._ if n == 1 else tuple(it._ for _ in range(n))


def zipped_divide(L, tiler):
    """``((TileM,TileN,...),(RestM,RestN,...,L...))``: the logical divide with tiles gathered.

    Law: mode 0 equals ``composition(L, tiler)``.
    """
    f = _dispatch(L, "zipped_divide")
    if f is not None:
        return f(tiler)
    _check_not_underscore("zipped_divide", tiler)
    return tile_unzip(logical_divide(L, tiler), tiler)


def tiled_divide(L, tiler):
    """``((TileM,TileN,...),RestM,RestN,...,L...)``: the zipped divide with its rest mode unpacked."""
    f = _dispatch(L, "tiled_divide")
    if f is not None:
        return f(tiler)
    return _unpack_rest(zipped_divide(L, tiler))


def flat_divide(L, tiler):
    """``(TileM,TileN,...,RestM,RestN,...,L...)``: both modes of the zipped divide unpacked."""
    f = _dispatch(L, "flat_divide")
    if f is not None:
        return f(tiler)
    r = zipped_divide(L, tiler)
    return r(_rep(it.rank(r.shape[0])), _rep(it.rank(r.shape[1])))


# ---------------------------------------------------------------------------------------------
# Products


def logical_product(A, B):
    """Reproduce ``A`` by ``B``: ``make_layout(A, composition(complement(A, size(A)*cosize(B)), B))``.

    Laws: rank 2; mode 0 is ``A``; ``compatible(B, mode 1)``. A tuple ``B`` multiplies by mode;
    an int ``n`` means ``n:1`` (pycute wrongly divides there).
    ``logical_product((2,2):(4,1), 6:1) == ((2,2),(2,3)):((4,1),(2,8))``.
    """
    f = _dispatch(A, "logical_product")
    if f is not None:
        return f(B)
    A = _layout_arg(A, "logical_product", "block")
    if isinstance(B, list):
        B = tuple(B)
    if isinstance(B, Layout):
        return make_layout(A, composition(complement(A, A.size() * cosize(B)), B))
    if isinstance(B, tuple):
        _check_tiler_rank("logical_product", A, B)
        return _transform2(A, B, logical_product)
    if is_underscore(B):
        return A
    if it.is_int(B):
        return logical_product(A, make_layout(B))
    raise LayoutError("logical_product", "tiler", "must be a Layout, an int, _ or a tuple of those",
                      actual=repr(B))


def zipped_product(A, B):
    """``((M,N,...),(TileM,TileN,...,L...))``: the logical product with block modes gathered."""
    f = _dispatch(A, "zipped_product")
    if f is not None:
        return f(B)
    _check_not_underscore("zipped_product", B)
    return tile_unzip(logical_product(A, B), B)


def tiled_product(A, B):
    """``((M,N,...),TileM,TileN,...,L...)``."""
    f = _dispatch(A, "tiled_product")
    if f is not None:
        return f(B)
    return _unpack_rest(zipped_product(A, B))


def flat_product(A, B):
    """``(M,N,...,TileM,TileN,...,L...)``."""
    f = _dispatch(A, "flat_product")
    if f is not None:
        return f(B)
    r = zipped_product(A, B)
    return r(_rep(it.rank(r.shape[0])), _rep(it.rank(r.shape[1])))


def _rank_product(op, A, B):
    A = _layout_arg(A, op, "block")
    B = _layout_arg(B, op, "tiler")
    R = max(A.rank(), B.rank())
    res = logical_product(append(A, n=R), append(B, n=R))
    return res[0], res[1]


def blocked_product(A, B):
    """Blocks of ``A`` arranged by ``B``: mode ``i`` is ``(A_i, B_i)`` (rank-sensitive; both
    padded to the larger rank with ``1:0``). Law: ``R((a, b))`` at block coordinate ``b`` is
    ``A(a) + size(A)``-scaled offset of ``B(b)``; ``size(R) == size(A) * size(B)``.
    ``blocked_product((2,5):(5,1), (3,4):(1,3)) == ((2,3),(5,4)):((5,10),(1,30))``.
    """
    f = _dispatch(A, "blocked_product")
    if f is not None:
        return f(B)
    a, b = _rank_product("blocked_product", A, B)
    return zip_layout(a, b)


def raked_product(A, B):
    """``A`` interleaved ("raked") across ``B``: mode ``i`` is ``(B_i, A_i)``.
    ``raked_product((2,5):(5,1), (3,4):(1,3)) == ((3,2),(4,5)):((10,5),(30,1))``.
    """
    f = _dispatch(A, "raked_product")
    if f is not None:
        return f(B)
    a, b = _rank_product("raked_product", A, B)
    return zip_layout(b, a)


def tile_to_shape(block, trg_shape, order=None):
    """Repeat ``block`` to fill ``trg_shape``: ``blocked_product(block, make_ordered_layout(
    ceil_div(trg, block), order))``; each mode of the block must divide the target's.
    Law: ``product_each(shape(R)) == product_each(trg_shape)``.
    """
    f = _dispatch(block, "tile_to_shape")
    if f is not None:
        return f(trg_shape, order)
    block = _layout_arg(block, "tile_to_shape", "block")
    trg_shape = _to_tuple(trg_shape)
    if isinstance(trg_shape, Layout):
        trg_shape = trg_shape.shape
    it._check(trg_shape, "tile_to_shape", "trg_shape")
    R = it.rank(trg_shape)
    if block.rank() > R:
        raise LayoutError("tile_to_shape", "block", f"has rank {block.rank()} > rank {R} of the target shape",
                          expected=fmt_int_tuple(trg_shape), actual=str(block))
    padded = append(block, n=R)
    block_shape = it.product_each(padded.shape)
    target_shape = it.product_each(trg_shape)
    if it.is_static(target_shape) and it.is_static(block_shape):
        for i, (t, b) in enumerate(zip(target_shape, block_shape)):
            if t % b != 0:
                raise LayoutError("tile_to_shape", "trg_shape", f"mode {i} of extent {t} is not a "
                                  f"multiple of the block's extent {b}",
                                  expected=f"multiples of {fmt_int_tuple(block_shape)}",
                                  actual=fmt_int_tuple(trg_shape))
    product_shape = ceil_div(target_shape, block_shape)
    if order is None:
        tiler = make_layout(product_shape)
    else:
        tiler = make_ordered_layout(product_shape, _to_tuple(order))
    return blocked_product(padded, tiler)


# ---------------------------------------------------------------------------------------------
# Element-type changes


def _upcast(s, d, n):
    if isinstance(s, tuple):
        return _concat([_upcast(a, b, n) for a, b in zip(s, d)])
    if _is_const(d, 0):
        return Layout(s, d)
    if isinstance(d, int):
        if d % n != 0 and n % abs(d) != 0:
            raise LayoutError("upcast", "layout", f"stride {d} and factor {n} do not divide each "
                              "other (divisibility condition)", actual=d)
        return Layout(ceil_div(s, ceil_div(n, abs(d))), it.signum(d) * ceil_div(abs(d), n))
    return Layout(s, it._floordiv(d, n))


def upcast(L, n: int):
    """View ``n`` consecutive elements as one: shapes shrink along stride-1 modes, strides divide.

    Law (for a layout whose stride-1 mode is a multiple of n): ``upcast(L, n)(c) * n ==
    L(c')`` for the first element ``c'`` of each group.
    """
    f = _dispatch(L, "upcast")
    if f is not None:
        return f(n)
    L = _layout_arg(L, "upcast", "layout")
    _check_factor("upcast", n)
    return _upcast(L.shape, L.stride, n)


def _downcast(s, d, n):
    if isinstance(s, tuple):
        return _concat([_downcast(a, b, n) for a, b in zip(s, d)])
    if _is_const(d, 1) or _is_const(d, -1):
        return Layout(s * n, d)
    return Layout(s, d * n)


def downcast(L, n: int):
    """View each element as ``n`` elements: stride-1 modes grow ``n``-fold, other strides scale.

    Requires a stride-1 mode ("downcast requires adjacent elements").
    """
    f = _dispatch(L, "downcast")
    if f is not None:
        return f(n)
    L = _layout_arg(L, "downcast", "layout")
    _check_factor("downcast", n)
    if not any(_is_const(d, 1) for d in flatten(wrap(L.stride))):
        raise LayoutError("downcast", "layout", "has no stride-1 mode (downcast requires adjacent "
                          "elements)", actual=str(L))
    return _downcast(L.shape, L.stride, n)


def _check_factor(op, n):
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise LayoutError(op, "n", "must be a positive int", actual=repr(n))


def recast_layout(L, old_bits: int, new_bits: int):
    """Re-express ``L`` (indexing ``old_bits``-wide elements) for ``new_bits``-wide elements:
    ``upcast``/``downcast`` by the reduced ratio ``new_bits / old_bits`` (CuTe's recast_layout).
    """
    for name, v in (("old_bits", old_bits), ("new_bits", new_bits)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise LayoutError("recast_layout", name, "must be a positive int", actual=repr(v))
    r = Fraction(new_bits, old_bits)
    if r == 1:
        return L
    if r.numerator == 1:
        return downcast(L, r.denominator)
    if r.denominator == 1:
        return upcast(L, r.numerator)
    return downcast(upcast(L, r.numerator), r.denominator)


# ---------------------------------------------------------------------------------------------
# Vectorisation helpers


def max_common_layout(a, b):
    """The largest ``R`` with ``a(R(i)) == i`` and ``b(R(i)) == i`` for ``i < size(R)`` (the
    contiguous run two layouts agree on): ``composition(right_inverse(b), common mode 0)``.
    """
    a = _layout_arg(a, "max_common_layout", "a")
    b = _layout_arg(b, "max_common_layout", "b")
    inv_b = right_inverse(b)
    common = coalesce(composition(a, inv_b))
    s0 = wrap(common.shape)[0]
    d0 = wrap(common.stride)[0]
    if isinstance(s0, int) and _is_const(d0, 1):
        return composition(inv_b, Layout(s0, d0))
    return Layout(1, 0)


def max_common_vector(a, b) -> int:
    """The number ``N`` of contiguous elements on which ``a`` and ``b`` agree with the identity:
    the vector width a copy between them can use. ``N >= 1``.
    """
    a = _layout_arg(a, "max_common_vector", "a")
    b = _layout_arg(b, "max_common_vector", "b")
    common = coalesce(composition(a, right_inverse(b)))
    s0 = wrap(common.shape)[0]
    d0 = wrap(common.stride)[0]
    if isinstance(s0, int) and _is_const(d0, 1):
        return s0
    return 1


def nullspace(L):
    """The domain coordinates (as 1-D indices of ``L``) that ``L`` maps to 0 through stride-0
    modes. Laws: ``L(R(i)) == 0``; ``size(R) == size(L) / size(filter(L))`` for injective
    non-zero parts; ``1:0`` when there is none.
    """
    L = _layout_arg(L, "nullspace", "layout")
    fd = flatten(wrap(L.stride))
    fs = flatten(wrap(L.shape))
    iseq = [i for i, d in enumerate(fd) if _is_const(d, 0)]
    if not iseq:
        return Layout(1, 0)
    rstride = compact_col_major(fs)
    return Layout(it.unwrap(tuple(fs[i] for i in iseq)), it.unwrap(tuple(rstride[i] for i in iseq)))


def max_alignment(L) -> int:
    """The largest ``N`` such that ``upcast(L, N)`` is valid (static parts only)."""
    L = _layout_arg(L, "max_alignment", "layout")
    c = coalesce(L)
    ss = tuple(s if isinstance(s, int) else 1 for s in wrap(c.shape))
    dd = tuple(d if isinstance(d, int) else 0 for d in wrap(c.stride))
    fl = Layout(ss, dd)
    permuted = logical_divide(fl, right_inverse(fl))
    return it.gcd(product(permuted.shape[0]), _first_leaf(permuted.stride[1]))


def _first_leaf(t):
    while isinstance(t, tuple):
        t = t[0]
    return t


def domain_distribute(a, b: int):
    """Distribute ``b`` elements over shape ``a`` by gcds, ordered: ``domain_distribute((15,14), 6)
    == (3,2):(1,15)``."""
    fs = flatten(wrap(a.shape if isinstance(a, Layout) else a))
    res, rest = [], b
    for x in fs:
        g = it.gcd(x, rest)
        res.append(g)
        rest //= g
    return coalesce(Layout(tuple(res), compact_col_major(fs)))
