"""A small seeded generator of random shapes and layouts for the algebra's tests.

Plain functions of a ``random.Random`` (so the C++ oracle and the benchmark can draw the same
cases from a seed) plus thin hypothesis wrappers. Covers nested shapes, size-1 modes, stride 0,
negative strides and non-powers of two. (``cute_py.testing`` holds the public strategies.)
"""

from __future__ import annotations

import random

from cute_py import Layout
from cute_py.int_tuple import flatten, product, unflatten

__all__ = [
    "random_shape", "random_layout", "random_compact_layout", "random_injective_layout",
    "random_tiler", "random_coord", "shapes", "layouts", "compact_layouts", "injective_layouts",
    "seeds",
]

_EXTENTS = (1, 1, 2, 2, 2, 3, 4, 4, 5, 6, 8)


def _nest(rng: random.Random, leaves: list, depth: int):
    """Group a flat list of leaves into a random nested tuple of depth <= ``depth``."""
    if depth == 0 or len(leaves) == 1 and rng.random() < 0.7:
        return leaves[0] if len(leaves) == 1 else tuple(leaves)
    n = len(leaves)
    cuts = sorted(rng.sample(range(1, n), rng.randint(0, min(3, n - 1)))) if n > 1 else []
    parts, prev = [], 0
    for c in cuts + [n]:
        parts.append(leaves[prev:c])
        prev = c
    out = []
    for p in parts:
        if len(p) > 1 and rng.random() < 0.5:
            out.append(_nest(rng, p, depth - 1))
        elif len(p) == 1 and rng.random() < 0.1 and depth > 1:
            out.append((p[0],))
        else:
            out.extend(p)
    return out[0] if len(out) == 1 and rng.random() < 0.5 else tuple(out)


def random_shape(rng: random.Random, max_leaves: int = 4, max_size: int = 256, depth: int = 2):
    """A random shape: an int or a nested tuple whose leaves multiply to at most ``max_size``."""
    n = rng.randint(1, max_leaves)
    leaves, total = [], 1
    for _ in range(n):
        e = rng.choice(_EXTENTS)
        if total * e > max_size:
            e = 1
        leaves.append(e)
        total *= e
    return _nest(rng, leaves, depth)


def random_compact_layout(rng: random.Random, shape=None, **kw) -> Layout:
    """A compact layout (a permutation of column-major strides) of a random shape."""
    shape = random_shape(rng, **kw) if shape is None else shape
    fs = flatten(shape) if isinstance(shape, tuple) else (shape,)
    order = list(range(len(fs)))
    rng.shuffle(order)
    strides = [0] * len(fs)
    cur = 1
    for i in order:
        strides[i] = cur
        cur *= fs[i]
    return Layout(shape, unflatten(tuple(strides), shape) if isinstance(shape, tuple) else strides[0])


def random_injective_layout(rng: random.Random, shape=None, **kw) -> Layout:
    """An injective layout with gaps: compact strides scaled up by random factors along the order."""
    shape = random_shape(rng, **kw) if shape is None else shape
    fs = flatten(shape) if isinstance(shape, tuple) else (shape,)
    order = list(range(len(fs)))
    rng.shuffle(order)
    strides = [0] * len(fs)
    cur = rng.choice((1, 1, 2, 3))
    for i in order:
        strides[i] = cur
        cur *= fs[i] * rng.choice((1, 1, 1, 2, 3))
    return Layout(shape, unflatten(tuple(strides), shape) if isinstance(shape, tuple) else strides[0])


def random_layout(rng: random.Random, negative: bool = False, **kw) -> Layout:
    """A layout of any kind: compact, injective with gaps, with stride-0 modes, or arbitrary."""
    kind = rng.random()
    if kind < 0.35:
        L = random_compact_layout(rng, **kw)
    elif kind < 0.7:
        L = random_injective_layout(rng, **kw)
    else:
        L = random_injective_layout(rng, **kw)
        fs, fd = flatten((L.shape,)), list(flatten((L.stride,)))
        for i in range(len(fd)):
            r = rng.random()
            if r < 0.3:
                fd[i] = 0
            elif r < 0.45:
                fd[i] = rng.randint(1, 12)
        L = Layout(L.shape, unflatten(tuple(fd), L.shape) if isinstance(L.shape, tuple) else fd[0])
    if negative and rng.random() < 0.3:
        fd = [(-d if rng.random() < 0.5 else d) for d in flatten((L.stride,))]
        L = Layout(L.shape, unflatten(tuple(fd), L.shape) if isinstance(L.shape, tuple) else fd[0])
    return L


def random_tiler(rng: random.Random, L: Layout):
    """A tiler for ``L``: a layout, an int, or a by-mode tuple of layouts/ints/``_`` whose tiles
    tend to divide ``L``'s modes."""
    def divisor_of(n):
        ds = [d for d in range(1, n + 1) if n % d == 0]
        return rng.choice(ds)

    def tile_layout(n):
        t = divisor_of(n)
        r = rng.random()
        if r < 0.4:
            return t
        if r < 0.7:
            rest = n // t
            d = divisor_of(rest) if rest > 1 else 1
            return Layout(t, d)
        return random_compact_layout(rng, shape=random_shape(rng, max_leaves=2, max_size=t)) \
            if t > 1 else Layout(1, 0)

    shp = L.shape if isinstance(L.shape, tuple) else (L.shape,)
    if rng.random() < 0.4 or len(shp) == 1:
        t = tile_layout(product(L.shape))
        return t if isinstance(t, Layout) else (Layout(t, 1) if rng.random() < 0.5 else t)
    k = rng.randint(1, len(shp))
    from cute_py import _
    return tuple(_ if rng.random() < 0.1 else tile_layout(product(s)) for s in shp[:k])


def random_coord(rng: random.Random, shape):
    """A random in-range hierarchical coordinate of ``shape``."""
    if isinstance(shape, tuple):
        return tuple(random_coord(rng, s) for s in shape)
    return rng.randrange(shape)


# ---------------------------------------------------------------------------------------------
# hypothesis wrappers (seeds -> values; shrinking is by seed, which is enough for small cases)

try:
    from hypothesis import strategies as st

    seeds = st.integers(min_value=0, max_value=2**32 - 1)

    def shapes(**kw):
        return seeds.map(lambda s: random_shape(random.Random(s), **kw))

    def layouts(**kw):
        return seeds.map(lambda s: random_layout(random.Random(s), **kw))

    def compact_layouts(**kw):
        return seeds.map(lambda s: random_compact_layout(random.Random(s), **kw))

    def injective_layouts(**kw):
        return seeds.map(lambda s: random_injective_layout(random.Random(s), **kw))
except ImportError:  # pragma: no cover
    pass
