"""IntTuples: ints and (nested) tuples of IntTuples — CuTe's shapes, strides and coordinates.

Semantics follow CuTe C++ (``include/cute/int_tuple.hpp``, ``stride.hpp``) with every Python
``int`` treated as a *static* value. A leaf may also be a sympy integer expression (a runtime
size); such leaves are *dynamic* and only take part in the operations CuTe allows on dynamic
values (see :mod:`cute_py.symbolic`).

    IntTuple = int | tuple[IntTuple, ...]

The underscore ``_`` (also ``None``) marks a sliced mode inside a coordinate.
"""

from __future__ import annotations

from functools import reduce
from typing import Any, Union

from .errors import IntTupleError

IntTuple = Union[int, tuple]

__all__ = [
    "IntTuple", "Underscore", "_",
    "is_int", "is_tuple", "is_static", "is_underscore", "has_underscore",
    "rank", "depth", "size", "product", "product_each", "product_like", "inner_product",
    "sum_", "elem_scale", "shape_div", "shape_min", "ceil_div", "round_up",
    "prefix_product", "suffix_product", "congruent", "weakly_congruent", "compatible",
    "weakly_compatible", "evenly_divides", "crd2idx", "idx2crd", "crd2crd", "slice_", "dice",
    "flatten", "unflatten", "elem_less", "elem_leq", "filter_zeros", "repeat_like", "wrap",
    "unwrap", "tuple_max", "signum", "abs_", "gcd", "lcm", "increment",
]


class Underscore:
    """CuTe's ``_``: in a coordinate it keeps (slices) the mode; in a tiler it is the identity."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "_"

    __str__ = __repr__

    def __reduce__(self):
        return (Underscore, ())


_ = Underscore()


# ---------------------------------------------------------------------------------------------
# Predicates


def _is_symbolic(x) -> bool:
    # Duck-typed so that importing this module does not import sympy.
    return type(x).__module__.startswith("sympy") and getattr(x, "is_integer", None) is not False


def is_int(x) -> bool:
    """True for an integer leaf: a Python ``int`` (not ``bool``) or a sympy integer expression."""
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or _is_symbolic(x)


def is_static(x) -> bool:
    """True when every leaf of ``x`` is a Python int (CuTe's static values)."""
    if isinstance(x, tuple):
        return all(is_static(a) for a in x)
    return isinstance(x, int) and not isinstance(x, bool)


def is_tuple(x) -> bool:
    """True for a tuple (a rank-R IntTuple); an int is not a tuple."""
    return isinstance(x, tuple)


def is_underscore(x) -> bool:
    """True for ``_`` (or ``None``, the Python DSL's spelling)."""
    return x is _ or x is None


def has_underscore(x) -> bool:
    """True when ``x`` contains ``_``/``None`` anywhere (a slicing coordinate)."""
    if isinstance(x, tuple):
        return any(has_underscore(a) for a in x)
    return is_underscore(x)


def _check(x, op: str, arg: str, allow_underscore: bool = False):
    """Validate that ``x`` is an IntTuple; raise IntTupleError naming ``arg`` otherwise."""
    if isinstance(x, tuple):
        for a in x:
            _check(a, op, arg, allow_underscore)
        return
    if allow_underscore and is_underscore(x):
        return
    if not is_int(x):
        raise IntTupleError(op, arg, "must be an int or a nested tuple of ints",
                            actual=f"{x!r} of type {type(x).__name__}")


# ---------------------------------------------------------------------------------------------
# Arithmetic on leaves (kept in one place so symbolic leaves behave)


def signum(a):
    """-1, 0 or 1: the sign of ``a`` (leafwise on tuples)."""
    if isinstance(a, tuple):
        return tuple(signum(x) for x in a)
    if isinstance(a, int):
        return (a > 0) - (a < 0)
    import sympy
    return sympy.sign(a)


def abs_(a):
    """Leafwise absolute value."""
    if isinstance(a, tuple):
        return tuple(abs_(x) for x in a)
    return abs(a)


def gcd(a, b):
    import math
    if isinstance(a, int) and isinstance(b, int):
        return math.gcd(a, b)
    import sympy
    return sympy.gcd(a, b)


def lcm(a, b):
    import math
    if isinstance(a, int) and isinstance(b, int):
        return a * b // math.gcd(a, b) if a and b else 0
    import sympy
    return sympy.lcm(a, b)


def _floordiv(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    import sympy
    return sympy.floor(sympy.sympify(a) / b)


def _mod(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    import sympy
    return sympy.Mod(a, b)


def _cdiv(a, b):
    """Integer ceiling division of two leaves (CuTe: (a + b - 1) / b for positive values)."""
    if isinstance(a, int) and isinstance(b, int):
        return -((-a) // b)
    import sympy
    return sympy.ceiling(sympy.sympify(a) / b)


def _min(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a if a < b else b
    import sympy
    return sympy.Min(a, b)


def _is_const(x, value) -> bool:
    """Static check: x is the Python int ``value`` (CuTe's is_constant)."""
    return isinstance(x, int) and not isinstance(x, bool) and x == value


# ---------------------------------------------------------------------------------------------
# Structure


def rank(t) -> int:
    """Number of top-level modes: ``rank(int) == 1``."""
    return len(t) if isinstance(t, tuple) else 1


def depth(t) -> int:
    """Nesting depth: ``depth(int) == 0``, ``depth((a, (b, c))) == 2``."""
    if isinstance(t, tuple):
        return 1 + max((depth(a) for a in t), default=0)
    return 0


def product(t):
    """Product of all leaves: ``product((2, (3, 4))) == 24``, ``product(()) == 1``."""
    if isinstance(t, tuple):
        return reduce(lambda acc, a: acc * product(a), t, 1)
    if is_underscore(t):
        raise IntTupleError("product", "t", "has an underscore leaf")
    return t


size = product


def product_each(t):
    """Product of each top-level mode, as a tuple: ``product_each((4,(2,3))) == (4, 6)``.

    An int is wrapped first: ``product_each(4) == (4,)`` (CuTe's ``transform(wrap(t), product)``).
    """
    return tuple(product(a) for a in wrap(t))


def product_like(t, guide):
    """Products of ``t`` at the leaves of ``guide``: ``product_like(((2,3),4), (0,0)) == (6, 4)``."""
    if isinstance(guide, tuple):
        if not isinstance(t, tuple) or len(t) != len(guide):
            raise IntTupleError("product_like", "t", "is not weakly congruent to the guide",
                                expected=guide, actual=t)
        return tuple(product_like(a, g) for a, g in zip(t, guide))
    return product(t)


def sum_(t):
    """Sum of all leaves."""
    if isinstance(t, tuple):
        return reduce(lambda acc, a: acc + sum_(a), t, 0)
    return t


def tuple_max(t):
    """Largest leaf."""
    if isinstance(t, tuple):
        return max((tuple_max(a) for a in t), default=0)
    return t


def inner_product(a, b):
    """Sum of leafwise products of two congruent IntTuples (``crd2idx`` for congruent coords)."""
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            raise IntTupleError("inner_product", "b", "is not congruent to a", expected=a, actual=b)
        return reduce(lambda acc, xy: acc + inner_product(*xy), zip(a, b), 0)
    if isinstance(b, tuple):
        raise IntTupleError("inner_product", "b", "is not congruent to a", expected=a, actual=b)
    return a * b


def elem_scale(a, b):
    """Scale the leaves of ``a`` by the products of the matching modes of ``b``."""
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            raise IntTupleError("elem_scale", "b", "rank does not match a", expected=a, actual=b)
        return tuple(elem_scale(x, y) for x, y in zip(a, b))
    return a * product(b)


def wrap(t) -> tuple:
    """``t`` if it is a tuple, else ``(t,)``."""
    return t if isinstance(t, tuple) else (t,)


def unwrap(t):
    """Remove rank-1 tuple wrappers: ``unwrap(((4,),)) == 4``; ``unwrap((2,3)) == (2,3)``."""
    while isinstance(t, tuple) and len(t) == 1:
        t = t[0]
    return t


def repeat_like(t, x):
    """An IntTuple congruent to ``t`` whose every leaf is ``x``."""
    if isinstance(t, tuple):
        return tuple(repeat_like(a, x) for a in t)
    return x


def flatten(t):
    """The leaves of ``t`` as a flat tuple (an int stays an int): ``flatten((1,(2,3))) == (1,2,3)``."""
    if isinstance(t, tuple):
        for a in t:
            if isinstance(a, tuple):
                break
        else:
            return t  # already flat
        out: list = []
        stack = [iter(t)]
        while stack:
            for a in stack[-1]:
                if isinstance(a, tuple):
                    stack.append(iter(a))
                    break
                out.append(a)
            else:
                stack.pop()
        return tuple(out)
    return t


def unflatten(flat, profile):
    """Inverse of :func:`flatten`: shape the flat tuple ``flat`` like ``profile``.

    Law: ``unflatten(flatten(t), t) == t``.
    """
    flat_t = flat if isinstance(flat, tuple) else (flat,)
    n_leaves = len(flatten(profile)) if isinstance(profile, tuple) else 1
    if len(flat_t) != n_leaves:
        raise IntTupleError("unflatten", "flat", f"has {len(flat_t)} leaves but the profile has {n_leaves}",
                            expected=profile, actual=flat)
    it = iter(flat_t)

    def build(p):
        if isinstance(p, tuple):
            return tuple(build(a) for a in p)
        return next(it)

    if not isinstance(profile, tuple):
        return flat_t[0]
    return build(profile)


# ---------------------------------------------------------------------------------------------
# Division-like operations


def shape_div(a, b):
    """CuTe's shape division, congruent to ``a``.

    tuple/tuple: by mode (equal ranks). tuple/int: a left fold
    ``r_i = shape_div(a_i, b); b = shape_div(b, size(a_i))``. int/tuple: ``shape_div(a, size(b))``.
    int/int: requires ``a % b == 0 or b % a == 0`` and gives ``a // b`` or ``1`` (sign kept).
    ``shape_div((4,5,6), 40) == (1,1,3)``; ``shape_div((3,4), 6) == (1,2)``.
    """
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(a) != len(b):
                raise IntTupleError("shape_div", "b", "rank does not match a", expected=a, actual=b)
            return tuple(shape_div(x, y) for x, y in zip(a, b))
        out = []
        for ai in a:
            out.append(shape_div(ai, b))
            b = shape_div(b, product(ai))
        return tuple(out)
    if isinstance(b, tuple):
        return shape_div(a, product(b))
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise IntTupleError("shape_div", "b", "is zero")
        if a % b != 0 and b % a != 0:
            raise IntTupleError("shape_div", "b", f"does not divide and is not divisible by {a}",
                                expected="a % b == 0 or b % a == 0", actual=b)
        q = abs(a) // abs(b)
        s = signum(a) * signum(b)
        return q * s if q != 0 else s
    # dynamic: CuTe computes a / b (or the sign when it truncates to 0); assume divisibility
    return _floordiv(a, b) if not (isinstance(a, int) and a == 0) else 0


def shape_min(a, b):
    """``min`` of two shapes where a tuple ``a`` keeps its structure only when ``b`` covers it."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        # CuTe: static_assert(!is_tuple); the composition fold only uses leaves
        raise IntTupleError("shape_min", "a", "must be an int")
    return _min(a, b)


def ceil_div(a, b):
    """Ceiling division generalised to IntTuples (CuTe's left fold).

    tuple/tuple: by mode, ``b`` padded with 1s (rank(b) <= rank(a)). tuple/int: a left fold
    ``r_i = ceil_div(a_i, b); b = ceil_div(b, a_i)`` — so ``ceil_div((12,32),32) == (1,11)``.
    int/tuple: ``ceil_div(a, size(b))``. int/int: ``(a + b - 1) // b``.
    """
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(b) > len(a):
                raise IntTupleError("ceil_div", "b", "has a larger rank than a", expected=a, actual=b)
            b = b + (1,) * (len(a) - len(b))
            return tuple(ceil_div(x, y) for x, y in zip(a, b))
        out = []
        for ai in a:
            out.append(ceil_div(ai, b))
            b = ceil_div(b, ai)
        return tuple(out)
    if isinstance(b, tuple):
        return ceil_div(a, product(b))
    if _is_const(b, 0):
        raise IntTupleError("ceil_div", "b", "is zero")
    return _cdiv(a, b)


def round_up(a, b):
    """Round ``a`` up to a multiple of ``b`` (by mode for tuples; ``b`` padded with 1s)."""
    if isinstance(a, tuple):
        bt = b if isinstance(b, tuple) else (b,)
        if len(bt) > len(a):
            raise IntTupleError("round_up", "b", "has a larger rank than a", expected=a, actual=b)
        bt = bt + (1,) * (len(a) - len(bt))
        return tuple(round_up(x, y) for x, y in zip(a, bt))
    if isinstance(b, tuple):
        raise IntTupleError("round_up", "b", "is a tuple but a is an int", actual=b)
    return _cdiv(a, b) * b


def prefix_product(a, init=1):
    """Exclusive prefix product congruent to ``a`` (CuTe's compact column-major strides).

    ``prefix_product(((2,3),4)) == ((1,2),6)``.
    """
    if isinstance(a, tuple):
        if isinstance(init, tuple):
            if len(init) != len(a):
                raise IntTupleError("prefix_product", "init", "rank does not match a", expected=a, actual=init)
            return tuple(prefix_product(x, i) for x, i in zip(a, init))
        out = []
        for ai in a:
            out.append(prefix_product(ai, init))
            init = init * product(ai)
        return tuple(out)
    if isinstance(init, tuple):
        raise IntTupleError("prefix_product", "init", "is a tuple but a is an int", actual=init)
    return init


def suffix_product(a, init=1):
    """Exclusive suffix product congruent to ``a`` (compact row-major strides, CuTe's LayoutRight)."""
    if isinstance(a, tuple):
        out = []
        for ai in reversed(a):
            out.append(suffix_product(ai, init))
            init = init * product(ai)
        return tuple(reversed(out))
    return init


# ---------------------------------------------------------------------------------------------
# Profiles


def congruent(a, b) -> bool:
    """Same hierarchical profile: ``congruent((2,(3,4)), (1,(5,6)))``."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))
    return not isinstance(a, tuple) and not isinstance(b, tuple)


def weakly_congruent(a, b) -> bool:
    """``a``'s profile is a coarsening of ``b``'s: an int in ``a`` matches any sub-tuple of ``b``."""
    if not isinstance(a, tuple):
        return True
    if not isinstance(b, tuple):
        return False
    return len(a) == len(b) and all(weakly_congruent(x, y) for x, y in zip(a, b))


def compatible(a, b) -> bool:
    """Shape ``a`` is compatible with shape ``b``: same size and every coordinate of ``a`` is one of ``b``.

    An int ``a`` is compatible with ``b`` iff ``a == size(b)``.
    """
    if not isinstance(a, tuple):
        return a == product(b)
    if not isinstance(b, tuple):
        return False
    return len(a) == len(b) and all(compatible(x, y) for x, y in zip(a, b))


def weakly_compatible(a, b) -> bool:
    """Every int of ``a`` divides the size of the matching mode of ``b``."""
    if not isinstance(a, tuple):
        pb = product(b)
        return pb % a == 0
    if not isinstance(b, tuple):
        return False
    return len(a) == len(b) and all(weakly_compatible(x, y) for x, y in zip(a, b))


def evenly_divides(shape, tiler) -> bool:
    """The tiler divides the shape without residue, by mode when the tiler is a tuple.

    Law: ``size(shape) == size(tiler) * size(ceil_div(shape, tiler))`` at every tiled mode.
    """
    if not isinstance(tiler, tuple) and hasattr(tiler, "shape"):  # a layout tiles by its shape
        tiler = tiler.shape
    if isinstance(tiler, tuple):
        if not isinstance(shape, tuple) or len(tiler) > len(shape):
            return False
        return all(evenly_divides(s, t) for s, t in zip(shape, tiler))
    if is_underscore(tiler):
        return True
    t = product(tiler)
    return product(shape) == t * product(ceil_div(shape, t))


# ---------------------------------------------------------------------------------------------
# Coordinates


def crd2idx(crd, shape, stride=None):
    """Map a coordinate to an index through ``shape:stride`` (default: compact column-major).

    A tuple coordinate needs a tuple shape of the same rank: the index is the sum over modes.
    An int coordinate into a tuple shape is split colexicographically: every mode but the last
    takes ``crd % size(mode)``; the last takes the rest *without* a modulo (CuTe's rule, so 1-D
    coordinates past the end extend the last mode).
    """
    if stride is None:
        stride = prefix_product(shape)
    return _crd2idx(crd, shape, stride)


def _crd2idx(crd, shape, stride):
    if isinstance(crd, tuple):
        if not isinstance(shape, tuple):
            raise IntTupleError("crd2idx", "coord", f"is a tuple but the shape {shape} is an int",
                                expected="an int coordinate", actual=crd)
        if len(crd) != len(shape):
            raise IntTupleError("crd2idx", "coord", f"has rank {len(crd)} but the shape has rank {len(shape)}",
                                expected=shape, actual=crd)
        total = 0
        for c, s, d in zip(crd, shape, stride):
            total = total + _crd2idx(c, s, d)
        return total
    if is_underscore(crd):
        raise IntTupleError("crd2idx", "coord", "contains '_': slice the layout instead of evaluating it")
    if not is_int(crd):
        raise IntTupleError("crd2idx", "coord", "must be an int or a tuple of ints", actual=repr(crd))
    if isinstance(shape, tuple):
        total = 0
        n = len(shape)
        for i, (s, d) in enumerate(zip(shape, stride)):
            if i == n - 1:
                total = total + _crd2idx(crd, s, d)
            else:
                ps = product(s)
                total = total + _crd2idx(_mod(crd, ps), s, d)
                crd = _floordiv(crd, ps)
        return total
    return crd * stride


def idx2crd(idx, shape, stride=None):
    """Map an index to a coordinate of ``shape`` (the inverse of :func:`crd2idx` for compact strides).

    Without ``stride``: an int index into a tuple shape is split colexicographically (compact
    column-major), the last mode taking the rest *without* a modulo, as CuTe does
    (``idx2crd(100, (4,4)) == (0,25)``); an int index into an int shape is returned unchanged.
    With ``stride``, each leaf is ``(idx // d) % s`` (only meaningful for compact layouts),
    size-1 leaves give 0.
    Law: ``crd2idx(idx2crd(i, s), s) == i`` for every ``i >= 0`` (past ``size(s)`` too).
    """
    if stride is None:
        if isinstance(idx, tuple):
            if not isinstance(shape, tuple) or len(idx) != len(shape):
                raise IntTupleError("idx2crd", "idx", "is not congruent to the shape", expected=shape, actual=idx)
            return tuple(idx2crd(i, s) for i, s in zip(idx, shape))
        if isinstance(shape, tuple):
            # CuTe's fold: every mode but the last takes idx % size(mode), the last takes the
            # rest unwrapped (idx2crd(100, (4,4)) == (0,25)), recursively
            out = []
            n = len(shape)
            for i, s in enumerate(shape):
                if i == n - 1:
                    out.append(idx2crd(idx, s))
                else:
                    ps = product(s)
                    out.append(idx2crd(_mod(idx, ps), s))
                    idx = _floordiv(idx, ps)
            return tuple(out)
        return idx
    if isinstance(idx, tuple):
        if not isinstance(shape, tuple) or len(idx) != len(shape):
            raise IntTupleError("idx2crd", "idx", "is not congruent to the shape", expected=shape, actual=idx)
        if not isinstance(stride, tuple) or len(stride) != len(shape):
            raise IntTupleError("idx2crd", "stride", "is not congruent to the shape", expected=shape, actual=stride)
        return tuple(idx2crd(i, s, d) for i, s, d in zip(idx, shape, stride))
    if isinstance(shape, tuple):
        if not isinstance(stride, tuple) or len(stride) != len(shape):
            raise IntTupleError("idx2crd", "stride", "is not congruent to the shape", expected=shape, actual=stride)
        return tuple(idx2crd(idx, s, d) for s, d in zip(shape, stride))
    if isinstance(stride, tuple):
        raise IntTupleError("idx2crd", "stride", "is a tuple but the shape is an int",
                            expected=shape, actual=stride)
    if _is_const(shape, 1) or _is_const(stride, 0):
        return 0
    return _mod(_floordiv(idx, stride), shape)


def crd2crd(crd, src_shape, dst_shape):
    """Convert a coordinate of ``src_shape`` into the matching coordinate of ``dst_shape``.

    By mode where all three are tuples; otherwise ``idx2crd(crd2idx(crd, src), dst)``.
    (CuTe C++'s argument order; pycute's is ``(crd, dst, src)``.)
    """
    if isinstance(crd, tuple) and isinstance(src_shape, tuple) and isinstance(dst_shape, tuple):
        if not (len(crd) == len(src_shape) == len(dst_shape)):
            raise IntTupleError("crd2crd", "coord", "ranks of coord, src_shape and dst_shape differ",
                                actual=(crd, src_shape, dst_shape))
        return tuple(crd2crd(c, s, d) for c, s, d in zip(crd, src_shape, dst_shape))
    if product(src_shape) != product(dst_shape):
        raise IntTupleError("crd2crd", "dst_shape", "size differs from src_shape",
                            expected=product(src_shape), actual=product(dst_shape))
    return idx2crd(crd2idx(crd, src_shape), dst_shape)


def increment(crd, shape):
    """The colexicographic successor of ``crd`` in ``shape`` (wrapping the last mode freely)."""
    idx = crd2idx(crd, shape)
    return idx2crd(idx + 1, shape)


def slice_(crd, trg):
    """Keep the elements of ``trg`` paired with ``_`` in ``crd``, flattening the coordinate's tuples.

    ``slice_(_, t) == t``; ``slice_((_, 1), (a, b)) == (a,)``;
    ``slice_((_, (_, 1)), (a, (b, c))) == (a, b)``.
    """
    if isinstance(crd, tuple):
        if not isinstance(trg, tuple) or len(crd) != len(trg):
            raise IntTupleError("slice_", "coord", "rank does not match the sliced tuple",
                                expected=trg, actual=crd)
        out: list = []
        for c, t in zip(crd, trg):
            out.extend(_lift_slice(c, t))
        return tuple(out)
    if is_underscore(crd):
        return trg
    return ()


def _lift_slice(c, t) -> tuple:
    if isinstance(c, tuple):
        return slice_(c, t)
    if is_underscore(c):
        return (t,)
    return ()


def dice(crd, trg):
    """Keep the elements of ``trg`` paired with integers in ``crd`` (the complement of :func:`slice_`).

    Used for projections: ``dice((1, _, 1), (a, b, c)) == (a, c)``; ``dice(1, t) == t``.
    """
    if isinstance(crd, tuple):
        if not isinstance(trg, tuple) or len(crd) != len(trg):
            raise IntTupleError("dice", "coord", "rank does not match the diced tuple",
                                expected=trg, actual=crd)
        out: list = []
        for c, t in zip(crd, trg):
            out.extend(_lift_dice(c, t))
        return tuple(out)
    if is_underscore(crd):
        return ()
    return trg


def _lift_dice(c, t) -> tuple:
    if isinstance(c, tuple):
        return dice(c, t)
    if is_underscore(c):
        return ()
    return (t,)


def elem_less(a, b) -> bool:
    """Elementwise ``a < b`` (the predication test ``elem_less(coord, shape)``).

    For tuples: every mode of ``a`` present in ``b`` is less; if ``a`` has more modes than ``b``
    the result is False; if ``a`` is exhausted first it is True.
    """
    if isinstance(a, tuple) and isinstance(b, tuple):
        for i, x in enumerate(a):
            if i >= len(b):
                return False
            if not elem_less(x, b[i]):
                return False
        return True
    if isinstance(a, tuple) or isinstance(b, tuple):
        raise IntTupleError("elem_less", "a", "and b must both be ints or both tuples", actual=(a, b))
    return bool(a < b)


def elem_leq(a, b) -> bool:
    """Elementwise ``a <= b``."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) > len(b):
            return False
        return all(elem_leq(x, y) for x, y in zip(a, b))
    return bool(a <= b)


def filter_zeros(a, b=None):
    """Replace the elements of ``b`` paired with a static 0 in ``a`` by 1 (``b`` defaults to ``a``)."""
    if b is None:
        b = a
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            raise IntTupleError("filter_zeros", "b", "is not congruent to a", expected=a, actual=b)
        return tuple(filter_zeros(x, y) for x, y in zip(a, b))
    if _is_const(a, 0):
        return repeat_like(b, 1)
    return b


def _validate_coord(crd: Any, op: str = "coord"):
    _check(crd, op, "coord", allow_underscore=True)
