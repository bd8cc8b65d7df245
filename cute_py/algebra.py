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
import sys
from operator import itemgetter

from . import int_tuple as it
from .errors import LayoutError, SymbolicError
from .int_tuple import _is_const, ceil_div, flatten, is_underscore, product, wrap
from .layout import (
    Layout, _as_layout, _concat, _layout_raw, _modes, _to_tuple, append, compact_col_major,
    cosize, fmt_int_tuple, make_layout, make_ordered_layout, tile_unzip, zip as zip_layout,
)

# The fast paths below work on a layout's flat modes ``((s0, d0), (s1, d1), ...)`` (plain ints,
# ``Layout._flat``, computed by the constructor) and build their results without re-validation;
# every other operand (symbolic values, composed layouts, tensors, tuples of tilers) and every
# error case goes through the general code, which raises the documented errors.

_first = itemgetter(0)
_second = itemgetter(1)


# ---------------------------------------------------------------------------------------------
# Layout helpers built on the algebra (they live here, not in layout.py, so that layout.py never
# imports the algebra); the Layout methods compose / with_shape / tile are installed below.


def with_shape(L, shape_):
    """``composition(L, make_layout(shape))``: view the same codomain through a new shape.
    Law: ``with_shape(L, s)(c) == L(make_layout(s)(c))``."""
    return composition(L, make_layout(_to_tuple(shape_)))


def make_fragment_like(L):
    """Register-fragment layout like ``L``: mode 0 compact column-major, the other modes ordered
    like L's strides (CuTe's ``make_fragment_like``). A shape gives ``make_layout(shape)``.
    """
    if not isinstance(L, Layout):
        if hasattr(L, "layout") and isinstance(L.layout, Layout):
            L = L.layout
        else:
            return make_layout(_to_tuple(L))
    R = L.rank()
    if R > 1 and it.is_static(L.shape):
        mode0 = Layout(L.shape[0], compact_col_major(it.filter_zeros(L.stride[0], L.shape[0])))
        rest = make_ordered_layout(L.shape[1:], L.stride[1:])
        return tiled_product(mode0, rest)
    return make_layout(L.shape)


def _layout_compose(self, *others):
    """``composition(self, other)``; several arguments form a by-mode tiler."""
    return composition(self, others[0] if len(others) == 1 else tuple(others))


def _layout_with_shape(self, *shape):
    """``composition(self, make_layout(shape))``: view the same codomain through a new shape."""
    return with_shape(self, shape[0] if len(shape) == 1 else tuple(shape))


def _layout_tile(self, *tiler):
    """``tiled_divide(self, tiler)``."""
    return tiled_divide(self, tiler[0] if len(tiler) == 1 else tuple(tiler))


Layout.compose = _layout_compose
Layout.with_shape = _layout_with_shape
Layout.tile = _layout_tile
# the old import paths cute_py.layout.with_shape / .make_fragment_like keep working (the
# module, not cute_py.layout, which is CuTe's function layout())
_layout_module = sys.modules[Layout.__module__]
_layout_module.with_shape = with_shape
_layout_module.make_fragment_like = make_fragment_like

__all__ = [
    "coalesce", "coalesce_shape", "filter", "filter_zeros", "composition", "complement",
    "right_inverse", "left_inverse", "logical_divide", "zipped_divide", "tiled_divide",
    "flat_divide", "logical_product", "zipped_product", "tiled_product", "flat_product",
    "blocked_product", "raked_product", "tile_to_shape", "upcast", "downcast", "recast_layout",
    "max_common_layout", "max_common_vector", "nullspace", "max_alignment",
    "domain_distribute", "flatten_layout", "unflatten_layout", "with_shape", "make_fragment_like",
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
        if isinstance(ns[0], int) and _static_eq(p, nd[0]):
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


def _is_basis(x) -> bool:
    return getattr(x, "_cute_scaled_basis", False)


def _static_eq(p, q) -> bool:
    """``p == q`` provable statically: two ints, or two ScaledBasis strides (coordinate layouts)
    of the same mode with int values (``4*E(0) == 4@0``)."""
    if type(p) is int and type(q) is int:
        return p == q
    if _is_basis(p) and _is_basis(q):
        return type(p.value) is int and type(q.value) is int and p == q
    return False


def coalesce(L, profile=None):
    """Merge modes of ``L`` without changing it as a function on ``[0, size(L))``.

    Laws: ``size(R) == size(L)``; ``depth(R) <= 1``; ``R(i) == L(i)`` for ``0 <= i < size(L)``.
    Size-1 modes vanish; ``s0:d0, s1:d1`` merge into ``s0*s1:d0`` when ``d1 == s0*d0``.
    With a ``profile`` (an IntTuple), coalesce applies at its terminals, mode by mode, and
    modes of ``L`` past the profile pass through.
    ``coalesce((2,(1,6)):(1,(6,2))) == 12:1``.
    """
    if type(L) is Layout and profile is None:
        f = L._flat
        if f:
            return _from_pairs(_coalesce_pairs(f))
    f = _dispatch(L, "coalesce")
    if f is not None:
        return f(profile)
    L = _layout_arg(L, "coalesce", "layout")
    if isinstance(profile, tuple):
        if len(profile) > L.rank():
            raise LayoutError("coalesce", "profile", f"has more modes than the layout's rank {L.rank()}",
                              expected=fmt_int_tuple(L.shape), actual=fmt_int_tuple(profile))
        return _transform2(L, profile, lambda l, p: coalesce(l, p))
    f = L._flat
    if f:
        return _coalesce_flat(f)
    fs, fd = flatten(wrap(L.shape)), flatten(wrap(L.stride))
    if not fs:  # an empty layout: CuTe's _1:_0
        return Layout(1, 0)
    return _bw_coalesce(fs[:-1], fd[:-1], fs[-1], fd[-1])


def _coalesce_pairs(f, seed=None) -> list:
    """``_bw_coalesce`` on plain-int flat modes ``((s, d), ...)``: the coalesced ``[(s, d), ...]``
    (``[(1, 0)]`` when nothing is left). ``seed`` replaces the last mode as the starting one."""
    hs, hd = f[-1] if seed is None else seed
    done = []  # finished modes, right to left
    for k in range(len(f) - 2, -1, -1):
        s, d = f[k]
        if s == 1:
            continue
        if hs == 1:  # only the seed can have extent 1: replace it
            hs, hd = s, d
        elif s * d == hd:
            hs, hd = s * hs, d
        else:
            done.append((hs, hd))
            hs, hd = s, d
    if not done:
        return [(1, 0)] if hs == 1 else [(hs, hd)]
    done.append((hs, hd))
    done.reverse()
    return done


def _coalesce_x_pairs(f) -> list:
    """``_coalesce_pairs`` keeping the function outside the domain (see :func:`_coalesce_x`)."""
    s, d = f[-1]
    return _coalesce_pairs(f, (2 if s == 1 else s, d))


def _from_pairs(pairs) -> Layout:
    """The flat layout of plain-int ``[(s, d), ...]`` (one mode: an int layout)."""
    if len(pairs) == 1:
        s, d = pairs[0]
        return _layout_raw(s, d, (pairs[0],))
    ss, dd = zip(*pairs)
    return _layout_raw(ss, dd, tuple(pairs))


def _coalesce_flat(f, seed=None) -> Layout:
    """``_bw_coalesce`` for plain-int flat modes ``((s, d), ...)`` (the common, static case)."""
    return _from_pairs(_coalesce_pairs(f, seed))


def _coalesce_x(L: Layout) -> Layout:
    """Coalesce that keeps the function outside the domain too (a trailing size-1 mode becomes a
    size-2 seed so its stride survives) — used inside composition."""
    f = L._flat
    if f:
        return _from_pairs(_coalesce_x_pairs(f))
    fs, fd = flatten(wrap(L.shape)), flatten(wrap(L.stride))
    if not fs:
        return Layout(1, 0)
    seed = 2 if _is_const(fs[-1], 1) else fs[-1]
    return _bw_coalesce(fs[:-1], fd[:-1], seed, fd[-1])


def _coalesce_x_by(L: Layout, profile) -> Layout:
    """CuTe's ``coalesce_x(layout, profile)``: :func:`_coalesce_x` at the terminals of
    ``profile``, mode by mode (modes past the profile are kept)."""
    if not isinstance(profile, tuple):
        return _coalesce_x(L)
    ms = _modes(L)
    if len(profile) > len(ms):
        raise LayoutError("composition", "rhs", f"has coordinates of rank {len(profile)} but the "
                          f"lhs has rank {len(ms)}", expected=f"rank <= {len(ms)}",
                          actual=fmt_int_tuple(profile))
    return _concat([_coalesce_x_by(ms[i], profile[i]) for i in range(len(profile))]
                   + ms[len(profile):])


def _basis_get(b, t):
    """``basis_get``: the (nested) mode of ``t`` the basis ``b`` names (an int ``t`` is its
    own mode 0)."""
    for m in b.modes:
        if isinstance(t, tuple):
            if not 0 <= m < len(t):
                raise LayoutError("composition", "rhs", f"has a stride {b} naming mode {m} of a "
                                  f"lhs mode of rank {len(t)}", actual=str(b))
            t = t[m]
        elif m != 0:
            raise LayoutError("composition", "rhs", f"has a stride {b} naming mode {m} of a "
                              "rank-1 lhs mode", actual=str(b))
    return t


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
    """``R = A ∘ B``: ``R(c) == A(B(c))`` for every coordinate ``c`` of ``B`` with ``B(c)`` in
    ``A``'s domain (past it, ``R`` continues ``A``'s coalesced form as C++ does); ``compatible(B, R)``.

    ``B`` may be a layout, an int ``n`` (``n:1``), ``_`` (identity) or a tuple of those applied
    mode by mode (modes of ``A`` not covered by the tuple are dropped, as in CuTe C++).
    Raises :class:`LayoutError` when ``B``'s strides or extents do not divide ``A``'s modes
    (CuTe's stride and shape divisibility conditions), including the cases where CuTe's weak
    check would return a wrong layout (NVIDIA/cutlass#3177).
    ``(6,2):(8,2) ∘ (4,3):(3,1) == ((2,2),3):((24,2),8)``.
    """
    if type(A) is Layout and type(B) is Layout:
        af, bf = A._flat, B._flat
        if af and bf:
            return _compose_flat(A, B, _coalesce_x_pairs(af), bf)
    f = _dispatch(A, "compose")
    if f is not None:
        return f(B)
    g = _dispatch(B, "rcompose")
    if g is not None:
        return g(A)
    A = _layout_arg(A, "composition", "lhs")
    if isinstance(B, Layout):
        if any(_is_basis(d) for d in flatten(wrap(B.stride))):
            # a coordinate-valued rhs (E(i) strides): CuTe coalesces the lhs by the rhs's
            # coprofile and sends each E(i)-strided mode to the lhs's mode i
            from .layout import coprofile
            flat = _coalesce_x_by(A, coprofile(B))
            return _composition_impl(flat.shape, flat.stride, B.shape, B.stride, A, B)
        flat = _coalesce_x(A)
        R = _composition_impl(flat.shape, flat.stride, B.shape, B.stride, A, B)
        if isinstance(B.shape, tuple) and not _distributes(flat, B, R, A):
            _raise_not_distributive(A, B)
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


def _raise_not_distributive(A, B):
    raise LayoutError("composition", "rhs", "has modes whose images add up across a mode "
                      "boundary of the lhs, so composing mode by mode (as CuTe C++ does) "
                      "gives a layout with R(c) != A(B(c)) (NVIDIA/cutlass#2955)",
                      expected=f"{A} ∘ {B} distributing over the modes of the rhs",
                      actual=str(B))


def _compose_flat(A: Layout, B: Layout, cf, bf) -> Layout:
    """``composition(A, B)`` for plain-int layouts; ``cf`` is ``A``'s flat modes coalesced by
    :func:`_coalesce_x_pairs`, ``bf`` ``B``'s flat modes. The result has ``B``'s nesting with
    every leaf ``s:d`` of ``B`` replaced by ``A ∘ s:d``."""
    bs = B.shape
    out = []
    if type(bs) is int:
        rs, rd = _compose_leaf(cf, bs, B.stride, out, A, B)
        return _layout_raw(rs, rd, tuple(out))
    rs, rd = _compose_nest(cf, bs, B.stride, out, A, B)
    R = _layout_raw(rs, rd, tuple(out))
    if len(cf) > 1 and not _distributes_pairs(cf, bf, R, A, B):
        _raise_not_distributive(A, B)
    return R


def _compose_nest(cf, bs, bd, out, A, B):
    """Shape and stride of ``A ∘ bs:bd`` for a tuple ``bs``, leaf by leaf (flat modes to ``out``)."""
    ss, ds = [], []
    for s, d in zip(bs, bd):
        if type(s) is int:
            s, d = _compose_leaf(cf, s, d, out, A, B)
        else:
            s, d = _compose_nest(cf, s, d, out, A, B)
        ss.append(s)
        ds.append(d)
    return tuple(ss), tuple(ds)


def _compose_leaf(cf, rs, rd, out, A, B):
    """Shape and stride of ``A ∘ rs:rd`` for one plain-int mode (CuTe's fold over the coalesced
    modes ``cf`` of ``A``); appends its flat modes to ``out``. A violated divisibility condition
    is raised by :func:`_composition_general`.

    The fold keeps the sign of ``rd`` and walks ``|rd|`` through the modes of ``A``: a mode that
    ``|rd|`` is a multiple of is stepped over (``|rd| /= extent``); a mode larger than ``|rd|``
    contributes ``ceil(extent / |rd|)`` (or what is left of ``rs``) at stride ``|rd| * d_A``,
    after which ``|rd|`` is 1; the rest of ``rs`` goes to the last mode of ``A``.
    """
    if rd == 0:
        out.append((rs, 0))
        return rs, 0
    n = len(cf) - 1
    if n == 0:
        d = rd * cf[0][1]
        out.append((rs, d))
        return rs, d
    sign = 1 if rd > 0 else -1
    a = rd * sign
    rest = rs
    res = []
    for i in range(n):
        cs, cd = cf[i]
        if a % cs == 0:
            a //= cs
            continue
        if a > cs:
            _compose_error(cf, rs, rd, A, B)  # stride divisibility condition
        if rest == 1:
            a = 1
            continue
        m = -(-cs // a)
        if m >= rest:  # the rest of the rhs fits in this mode: done
            res.append((rest, sign * a * cd))
            break
        if rest % m != 0 or cs % a != 0:
            _compose_error(cf, rs, rd, A, B)  # shape divisibility (or cutlass#3177)
        res.append((m, sign * a * cd))
        rest //= m
        a = 1
    else:
        res.append((rest, sign * a * cf[n][1]))
    out.extend(res)
    if len(res) == 1:
        return res[0]
    return tuple(zip(*res))


def _compose_error(cf, rs, rd, A, B):
    """Raise the divisibility error of ``A ∘ rs:rd`` (the general fold names the condition)."""
    ls, ld = zip(*cf)
    _composition_general(ls, ld, rs, rd, A, B)
    raise AssertionError("unreachable: the composition fold accepted what the fast path did not")


def _max_digit(s: int, d: int, base: int, r: int) -> int:
    """An upper bound of digit ``(k*d // base) % r`` over ``k < s`` (exact where cheap), for a
    mode ``s:d`` whose multiples are not all 0 in that digit (``d % (base*r) != 0``)."""
    if (s - 1) * d < base * r:
        return ((s - 1) * d) // base  # the digit grows monotonically: no wrap
    if base % d == 0:
        # floor(k / (base/d)) takes every value up to ((s-1)*d)//base >= r (no-wrap case above
        # excluded), so the digit takes every residue
        return r - 1
    if d % base == 0:
        # k*q mod r (q = d/base) takes multiples of g = gcd(q, r) only: at most r - g (exact
        # once k runs through a period r/g; an upper bound before)
        return r - math.gcd(d // base, r)
    if s <= 64:
        return max(((k * d) // base) % r for k in range(s))
    return r - 1  # an upper bound (the exact check decides when it matters)


def _distributes_pairs(cf, bf, R: Layout, A: Layout, B: Layout) -> bool:
    """:func:`_distributes` for plain-int flat modes (``cf``: ``A`` coalesced, ``bf``: ``B``)."""
    modes = [(s, d) for s, d in bf if s != 1 and d != 0]
    if len(modes) <= 1:
        return True
    for _s, d in modes:
        if d < 0:
            return True  # negative offsets: C++'s truncating division decides; we follow C++
    n = len(cf) - 1
    starts = [1] * (n + 1)
    for j in range(n):
        starts[j + 1] = starts[j] * cf[j][0]
    total = [0] * n
    for s, d in modes:
        hi = (s - 1) * d  # the largest offset of the mode
        for j in range(n):
            base = starts[j]
            if base > hi:
                break  # this digit and the ones above stay 0
            br = starts[j + 1]
            if d % br == 0:
                continue  # every multiple of d has digit j == 0
            total[j] += _max_digit(s, d, base, cf[j][0])
    for j in range(n):
        if total[j] >= cf[j][0]:
            return _agrees_everywhere(R, A, B)
    return True


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
            total[j] += _max_digit(s, d, base, r)
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
    """``R(i) == A(B(i))`` for every index of ``B`` with ``B(i)`` in ``A``'s domain (vectorised;
    exact). Past ``A``'s domain ``R`` continues ``A`` as C++ does (a permutation tile smaller
    than an MMA atom pads this way), which need not be ``A``'s own formula there."""
    fr, fa, fb = _flat_ints(R), _flat_ints(A), _flat_ints(B)
    n = product(B.shape)
    size_a = product(A.shape)
    if fr is None or fa is None or fb is None or n > (1 << 24):
        shape, stride = A.shape, A.stride
        return all(R(i) == it._crd2idx(B(i), shape, stride) for i in range(n)
                   if 0 <= B(i) < size_a)
    import numpy as np
    idx = np.arange(n, dtype=np.int64)
    b = _np_eval(fb, idx)
    inside = (b >= 0) & (b < size_a)
    return bool(np.array_equal(_np_eval(fr, idx)[inside], _np_eval(fa, b[inside])))


def _composition_impl(ls, ld, rs, rd, A, B) -> Layout:
    if type(rs) is int and type(rd) is int and type(ls) is tuple \
            and all(type(x) is int for x in ls) and all(type(x) is int for x in ld):
        out = []
        s, d = _compose_leaf(tuple(zip(ls, ld)), rs, rd, out, A, B)
        return _layout_raw(s, d, tuple(out))
    return _composition_general(ls, ld, rs, rd, A, B)


def _divides(b, a) -> bool:
    """``a % b == 0`` provable for every value of the symbols (ints: decided)."""
    if isinstance(a, int) and isinstance(b, int):
        return b != 0 and a % b == 0
    import sympy
    try:
        return sympy.simplify(sympy.Mod(a, b)) == 0
    except (TypeError, ValueError):  # pragma: no cover - sympy refuses the expression
        return False


def _symbolic_raise(A, B, what):
    raise SymbolicError("composition", "rhs", f"needs {what}, which the symbolic sizes do not "
                        "prove; CuTe's dynamic composition assumes it and returns a layout that "
                        "is not A o B for other values (substitute the sizes first)",
                        actual=f"{A} o {B}")


def _symbolic_step(curr_shape, rest_stride, A, B):
    """``(next_shape, next_stride)`` of one fold step with a symbolic lhs extent or rhs stride,
    where a divisibility condition is provable; SymbolicError otherwise."""
    sign = it.signum(rest_stride)
    d = abs(rest_stride)
    if _divides(curr_shape, d):  # the rhs stride steps over the whole lhs mode
        return 1, it._floordiv(d, curr_shape) * sign
    if _divides(d, curr_shape):  # the rhs stride divides the lhs mode
        return it._floordiv(curr_shape, d), sign
    _symbolic_raise(A, B, f"{d} to divide or be a multiple of the lhs extent {curr_shape}")


def _symbolic_min(next_shape, rest_shape, A, B):
    """``min(next_shape, rest_shape)`` where one divides the other provably (the shape
    divisibility condition); SymbolicError otherwise."""
    if _divides(rest_shape, next_shape):  # rest_shape <= next_shape: the rhs fits
        return rest_shape
    if _divides(next_shape, rest_shape):  # positive extents: next_shape <= rest_shape
        return next_shape
    _symbolic_raise(A, B, f"the rhs extent {rest_shape} and the lhs part {next_shape} to "
                    "divide one another")


def _composition_general(ls, ld, rs, rd, A, B) -> Layout:
    if isinstance(rs, tuple):
        return _concat([_composition_impl(ls, ld, s, d, A, B) for s, d in zip(rs, rd)])
    if _is_basis(rd):  # CuTe: compose with the lhs mode the basis names, by the basis's value
        return _composition_impl(_basis_get(rd, ls), _basis_get(rd, ld), rs, rd.value, A, B)
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
        if not static:
            # symbolic: CuTe trusts the caller; we continue only where the divisibility the fold
            # needs is provable for every value of the symbols, else a wrong layout could follow
            next_shape, next_stride = _symbolic_step(curr_shape, rest_stride, A, B)
        else:
            next_shape = ceil_div(curr_shape, abs(rest_stride))
            next_stride = ceil_div(abs(rest_stride), curr_shape) * it.signum(rest_stride)
        if _is_const(next_shape, 1) or _is_const(rest_shape, 1):
            rest_stride = next_stride
            continue
        new_shape = it._min(next_shape, rest_shape)
        if not (isinstance(new_shape, int) and isinstance(rest_shape, int)):
            new_shape = _symbolic_min(next_shape, rest_shape, A, B)
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


# ---------------------------------------------------------------------------------------------
# Complement


def complement(L, cotarget=None):
    """The layout of the "holes" of ``L`` up to ``cotarget`` (default ``cosize(filter(L))``).

    Laws (CuTe's post-conditions, for every ``L`` this accepts): ``R`` is ordered (strictly
    increasing on its domain); ``R(i) != L(j)`` for ``i >= 1`` (the images meet only at 0);
    ``make_layout(filter(L), R)`` is injective — ``filter(L)``, not ``L``: stride-0 modes
    repeat 0 (``complement(2:0, 2) == 2:1``).
    *Covering* and C++'s size bound ``size(R) >= cotarget / size(filter(L))`` hold only when
    ``filter(L)``'s strides nest (sorted by stride, each stride is a multiple of the previous
    stride times its extent): then ``make_layout(filter(L), R)`` is a bijection onto
    ``[0, size(filter(L)) * size(R))``, which contains ``[0, cotarget)``. Otherwise C++'s
    truncating division leaves holes uncovered and the bound can fail, and we return C++'s
    values: ``complement((2,2):(1,3), 3) == 1:0`` (``make_layout`` of the two misses 2);
    ``complement((3,2):(2,8), 57) == (2,4):(1,16)`` (size 8 < 57/6).
    ``cotarget`` may be an int or a shape (a layout gives its shape).
    ``complement(4:2, 24) == (2,3):(1,8)``.
    """
    if type(L) is Layout and (cotarget is None or type(cotarget) is int and cotarget >= 1):
        R = _complement_flat(L, cotarget)
        if R is not None:
            return R
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
    """``complement`` for plain-int layouts, non-negative strides and an int cotarget (or a
    tuple of positive ints); None to take the general path (which also raises the errors)."""
    f = L._flat
    if not f:
        return None
    pairs = _complement_pairs(f, cotarget)
    return None if pairs is None else _from_pairs(pairs)


def _complement_pairs(f, cotarget):
    """The flat modes of ``complement`` of the flat modes ``f`` (see :func:`_complement_flat`)."""
    modes = []
    for s, d in f:  # filter: drop stride-0 and size-1 modes
        if d != 0 and s != 1:
            if d < 0:
                return None
            modes.append((s, d))
    if not modes:  # CuTe: make_layout(coalesce_shape(cotarget))
        if cotarget is None:
            cotarget = 1
        elif type(cotarget) is tuple:
            n = 1
            for c in cotarget:
                n *= c
            cotarget = n
        return [(cotarget, 0 if cotarget == 1 else 1)]
    fm = _coalesce_pairs(modes)
    if cotarget is None:
        cotarget = 1
        for s, d in fm:
            cotarget += (s - 1) * d
    if len(fm) > 1:
        fm.sort(key=_second)  # CuTe picks the smallest remaining stride each step (stable)
    result = []
    cur = 1
    for s, d in fm:
        new_shape = d // cur
        if new_shape == 0:
            return None  # not injective: the general path raises
        result.append((new_shape, cur))
        cur = d * s
    if type(cotarget) is int:
        rest_shape = -(-cotarget // cur)
    else:  # CuTe's left fold of ceil_div over the cotarget's modes, then coalesced to one int
        rest_shape, b = 1, cur
        for c in cotarget:
            rest_shape *= -(-c // b)
            b = -(-b // c)
    result.append((rest_shape, 0 if rest_shape == 1 else cur))
    return _coalesce_pairs(result)


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
    if type(L) is Layout and L._flat:
        return _from_pairs(_right_inverse_pairs(_coalesce_pairs(L._flat)))
    if is_underscore(L):
        return L
    f = _dispatch(L, "right_inverse")
    if f is not None:
        return f()
    L = _layout_arg(L, "right_inverse", "layout")
    c = coalesce(L)
    f = c._flat
    if f:  # plain ints
        return _from_pairs(_right_inverse_pairs(f))
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


def _by_stride(f) -> list:
    """``[(d, s, p), ...]`` for the flat modes ``f`` (``p``: the mode's position in the 1-D
    domain, the product of the extents before it), sorted by stride (stable)."""
    modes, pre = [], 1
    for s, d in f:
        modes.append((d, s, pre))
        pre *= s
    if len(modes) > 1:
        modes.sort(key=_first)
    return modes


def _right_inverse_pairs(f) -> list:
    """The flat modes of ``right_inverse`` of the coalesced plain-int flat modes ``f``."""
    out, curr = [(1, 0)], 1
    for d, s, p in _by_stride(f):
        if d == curr:
            out.append((s, p))
            curr = s * d
    return _coalesce_pairs(out)


def _left_inverse_pairs(f):
    """The flat modes of ``left_inverse`` of the coalesced plain-int flat modes ``f``; None for
    negative strides or a failed divisibility condition (the general path decides)."""
    modes = _by_stride(f)
    if modes[0][0] < 0:
        return None
    shapes, strides, sz = [], [0], 1
    for d, s, p in modes:
        if d == 0:
            continue
        if d % sz != 0:
            return None
        q = d // sz
        shapes.append(q)
        strides.append(p)
        sz *= q
    shapes.append(modes[-1][1])  # the extent of the largest-stride mode
    return _coalesce_pairs(list(zip(shapes, strides)))


def left_inverse(L):
    """``R`` with ``R(L(i)) == i`` for ``0 <= i < size(L)`` — a law only when ``L`` is
    injective. For a non-injective ``L`` C++'s construction still returns a layout, and so do
    we, but no law holds for it (not even ``L(R(L(i))) == L(i)``: ``left_inverse((2,3):(2,1))
    == (2,2):(2,1)`` and ``L(R(L(5))) == 1 != L(5) == 4``). Uses CuTe C++'s construction, so
    values off the image of ``L`` match C++ (``left_inverse(4:2) == (2,4):(0,1)``; pycute
    differs).
    """
    if type(L) is Layout and L._flat:
        pairs = _left_inverse_pairs(_coalesce_pairs(L._flat))
        if pairs is not None:
            return _from_pairs(pairs)
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
    if type(L) is Layout and type(tiler) is Layout and L._flat and tiler._flat:
        R = _logical_divide_flat(L, tiler)
        if R is not None:
            return R
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


def _logical_divide_flat(L: Layout, T: Layout):
    """``logical_divide`` of plain-int layouts; None where the complement needs the general path
    (which raises)."""
    lf, tf = L._flat, T._flat
    cl = _coalesce_pairs(lf)  # coalesce(L), whose shape is the complement's cotarget
    cot = cl[0][0] if len(cl) == 1 else tuple(s for s, _d in cl)
    comp = _complement_pairs(tf, cot)
    if comp is None:
        return None
    if len(comp) == 1:
        cs, cd = comp[0]
    else:
        cs, cd = zip(*comp)
    B = _layout_raw((T.shape, cs), (T.stride, cd), tf + tuple(comp))
    # composition(L, B); coalesce(L) is its coalesced lhs unless L ends in a size-1 mode
    cf = cl if lf[-1][0] != 1 else _coalesce_x_pairs(lf)
    return _compose_flat(L, B, cf, B._flat)


def _check_not_underscore(op, tiler):
    if is_underscore(tiler):
        raise LayoutError(op, "tiler", "must be a Layout, an int or a tuple of tilers; a "
                          "top-level '_' leaves no (tile, rest) modes to gather", actual="_")


def _unpack_rest(r: Layout) -> Layout:
    """``r(_, (_, _, ...))`` of a zipped ``(tile, rest)`` layout: the rest's modes unpacked."""
    if isinstance(r, Layout) and isinstance(r.shape, tuple) and len(r.shape) == 2:
        rest_s, rest_d = r.shape[1], r.stride[1]
        if isinstance(rest_s, tuple) and len(rest_s) >= 2:  # a rank-1 rest stays a tuple mode
            # the leaves keep their order: the flat modes stay
            return _layout_raw((r.shape[0],) + rest_s, (r.stride[0],) + rest_d, r._flat)
        return r
    return r(it._, _rep(it.rank(r.shape[1])))


def _rep(n):
    return it._ if n == 1 else tuple(it._ for _ in range(n))


def zipped_divide(L, tiler):
    """``((TileM,TileN,...),(RestM,RestN,...,L...))``: the logical divide with tiles gathered.

    Law: mode 0 equals ``composition(L, tiler)``.
    """
    if type(L) is Layout and type(tiler) is Layout:
        return logical_divide(L, tiler)  # a layout tiler leaves nothing to gather
    f = _dispatch(L, "zipped_divide")
    if f is not None:
        return f(tiler)
    _check_not_underscore("zipped_divide", tiler)
    return tile_unzip(logical_divide(L, tiler), tiler)


def tiled_divide(L, tiler):
    """``((TileM,TileN,...),RestM,RestN,...,L...)``: the zipped divide with its rest mode unpacked."""
    if type(L) is Layout and type(tiler) is Layout:
        return _unpack_rest(logical_divide(L, tiler))
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
    if type(A) is Layout and type(B) is Layout and A._flat and B._flat:
        R = _logical_product_flat(A, B)
        if R is not None:
            return R
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


def _logical_product_flat(A: Layout, B: Layout):
    """``logical_product`` of plain-int layouts; None where the complement needs the general
    path (which raises)."""
    af, bf = A._flat, B._flat
    size_a, cosize_b = 1, 1
    for s, _d in af:
        size_a *= s
    for s, d in bf:
        cosize_b += (s - 1) * (d if d >= 0 else -d)
    comp = _complement_pairs(af, size_a * cosize_b)
    if comp is None:
        return None
    C = composition(_from_pairs(comp), B)
    return _layout_raw((A.shape, C.shape), (A.stride, C.stride), af + C._flat)


def zipped_product(A, B):
    """``((M,N,...),(TileM,TileN,...,L...))``: the logical product with block modes gathered."""
    if type(A) is Layout and type(B) is Layout:
        return logical_product(A, B)  # a layout tiler leaves nothing to gather
    f = _dispatch(A, "zipped_product")
    if f is not None:
        return f(B)
    _check_not_underscore("zipped_product", B)
    return tile_unzip(logical_product(A, B), B)


def tiled_product(A, B):
    """``((M,N,...),TileM,TileN,...,L...)``."""
    if type(A) is Layout and type(B) is Layout:
        return _unpack_rest(logical_product(A, B))
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
