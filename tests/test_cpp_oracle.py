"""cute_py against real CuTe C++ (CUTLASS 4.2 headers from the pip package ``nvidia-cutlass``).

Seeded random cases of every operation are printed by compiled C++ and compared with ``str`` of
ours (C++'s ``_N`` read as ``N``). Cases where *we* raise a :class:`~cute_py.errors.CuteError` are
sent to C++ too: C++ must reject them at compile time (a ``static_assert``) or return a result
that violates the operation's own law (NVIDIA/cutlass#3177-style) — never a valid answer.

``CUTE_PY_ORACLE_SCALE`` (default 1) scales the number of cases. Skips cleanly without g++,
the CUDA headers or ``nvidia-cutlass``.
"""

from __future__ import annotations

import itertools
import os
import random
from dataclasses import dataclass, field

import pytest

import cute_py as cute
from cute_py import Layout, _
from cute_py.errors import CuteError
from cute_py.int_tuple import flatten, product

import cpp_oracle as co
from strategies_core import (
    random_compact_layout, random_coord, random_injective_layout, random_layout, random_shape,
    random_tiler,
)

pytestmark = pytest.mark.skipif(not co.available(), reason=f"C++ oracle: {co.why_unavailable()}")

SCALE = float(os.environ.get("CUTE_PY_ORACLE_SCALE", "0.5"))  # 1 -> ~1560 cases
MAX_RAISE_CHECKS = 12  # per family: cases we reject, sent to C++ to confirm the rejection


def S(x) -> str:
    """Our result printed like C++ (layouts, IntTuples, ints, print_layout text)."""
    if isinstance(x, Layout):
        return str(x)
    return cute.fmt_int_tuple(x)


@dataclass
class Case:
    cpp: str                 # a C++ statement printing the result
    ours: object             # thunk computing our printed result (may raise CuteError)
    desc: str                # human-readable description
    law: object = None       # law(cpp_text) -> bool: does C++'s output satisfy the op's law?


@dataclass
class Family:
    name: str
    count: int
    gen: object              # gen(rng) -> Case
    cases: list = field(default_factory=list)
    raising: list = field(default_factory=list)


def P(x) -> str:
    return co.cpp(x)


def parse(text: str) -> Layout:
    return cute.parse_layout(co.normalize(text))


def _evals(L):
    return [L(i) for i in range(L.size())]


def composition_law(A, B):
    """C++'s result R must satisfy R(c) == A(B(c)) on B's domain and compatible(B, R)."""
    def law(text):
        R = parse(text)
        Bl = B if isinstance(B, Layout) else Layout(B)
        if not cute.compatible(Bl.shape, R.shape):
            return False
        # C++ extends A past its domain through the last mode: evaluate A the same way
        return all(R(i) == cute.crd2idx(Bl(i), A.shape, A.stride) for i in range(Bl.size()))
    return law


def bymode_composition_law(A, T):
    def law(text):
        R = parse(text)
        for i, t in enumerate(T):
            if t is _:
                continue
            tl = t if isinstance(t, Layout) else Layout(t)
            if not composition_law(A[i], tl)(str(R[i])):
                return False
        return True
    return law


# ---------------------------------------------------------------------------------------------
# Case generators


def g_coalesce(rng):
    L = random_layout(rng, negative=True)
    return Case(f"print(coalesce({P(L)}));", lambda: S(cute.coalesce(L)), f"coalesce({L})")


def _profile(rng, shape):
    if isinstance(shape, tuple):
        k = rng.randint(1, len(shape))
        return tuple(_profile(rng, s) if rng.random() < 0.4 else 1 for s in shape[:k])
    return 1


def g_coalesce_profile(rng):
    L = random_layout(rng)
    if not isinstance(L.shape, tuple):
        L = Layout((L.shape, 2), (L.stride, 7))
    prof = _profile(rng, L.shape)
    if not isinstance(prof, tuple):
        prof = (prof,)
    return Case(f"print(coalesce({P(L)}, {P(prof)}));", lambda: S(cute.coalesce(L, prof)),
                f"coalesce({L}, {prof})")


def g_composition(rng):
    A = random_layout(rng, negative=rng.random() < 0.2)
    if rng.random() < 0.5:
        B = random_layout(rng, max_leaves=3, max_size=max(2, A.size()))
    else:
        B = random_injective_layout(rng, max_leaves=3, max_size=32)
    return Case(f"print(composition({P(A)}, {P(B)}));", lambda: S(cute.composition(A, B)),
                f"composition({A}, {B})", composition_law(A, B))


def g_composition_int(rng):
    A = random_layout(rng)
    n = rng.choice([d for d in range(1, A.size() + 1) if A.size() % d == 0] + [rng.randint(1, 9)])
    return Case(f"print(composition({P(A)}, {P(n)}));", lambda: S(cute.composition(A, n)),
                f"composition({A}, {n})", composition_law(A, Layout(n)))


def g_composition_bymode(rng):
    A = random_layout(rng)
    if not isinstance(A.shape, tuple):
        A = Layout((A.shape, 3), (A.stride, 64))
    T = random_tiler(rng, A)
    if not isinstance(T, tuple):
        T = (T,)
    return Case(f"print(composition({P(A)}, {P(T)}));", lambda: S(cute.composition(A, T)),
                f"composition({A}, {T})", bymode_composition_law(A, T))


def _complement_law(L, cot):
    def law(text):
        R = parse(text)
        img = {L(i) for i in range(L.size())}
        rim = [R(i) for i in range(R.size())]
        if any(b <= a for a, b in zip(rim, rim[1:])):
            return False
        return not (set(rim) - {0}) & img
    return law


def g_complement(rng):
    L = random_layout(rng) if rng.random() < 0.3 else random_injective_layout(rng, max_size=64)
    mode = rng.random()
    if mode < 0.2:
        return Case(f"print(complement({P(L)}));", lambda: S(cute.complement(L)),
                    f"complement({L})", _complement_law(L, None))
    if mode < 0.7:
        c = cute.cosize(L) * rng.choice((1, 1, 2, 3)) + rng.choice((0, 0, 0, 1, 5))
        return Case(f"print(complement({P(L)}, {P(c)}));", lambda: S(cute.complement(L, c)),
                    f"complement({L}, {c})", _complement_law(L, c))
    c = tuple(rng.choice((2, 3, 4, 5, 7, 8)) for _ in range(rng.randint(1, 3)))
    return Case(f"print(complement({P(L)}, {P(c)}));", lambda: S(cute.complement(L, c)),
                f"complement({L}, {c})", _complement_law(L, c))


def g_right_inverse(rng):
    L = random_layout(rng) if rng.random() < 0.5 else random_compact_layout(rng)
    return Case(f"print(right_inverse({P(L)}));", lambda: S(cute.right_inverse(L)),
                f"right_inverse({L})")


def g_left_inverse(rng):
    r = rng.random()
    L = random_compact_layout(rng) if r < 0.3 else (
        random_injective_layout(rng) if r < 0.8 else random_layout(rng))

    def law(text):
        R = parse(text)
        return all(R(L(i)) == i for i in range(L.size()))
    return Case(f"print(left_inverse({P(L)}));", lambda: S(cute.left_inverse(L)),
                f"left_inverse({L})", law)


def _div_case(op, rng):
    L = random_layout(rng)
    T = random_tiler(rng, L)
    fn = getattr(cute, op)
    return Case(f"print({op}({P(L)}, {P(T)}));", lambda: S(fn(L, T)), f"{op}({L}, {T})")


def g_logical_divide(rng):
    return _div_case("logical_divide", rng)


def g_zipped_divide(rng):
    return _div_case("zipped_divide", rng)


def g_tiled_divide(rng):
    return _div_case("tiled_divide", rng)


def g_flat_divide(rng):
    return _div_case("flat_divide", rng)


def _prod_tiler(rng, A):
    if rng.random() < 0.5 or not isinstance(A.shape, tuple):
        return random_layout(rng, max_leaves=2, max_size=12)
    k = rng.randint(1, len(A.shape))
    return tuple(rng.choice([_, rng.randint(1, 4), random_layout(rng, max_leaves=2, max_size=6)])
                 for _i in range(k))


def _prod_case(op, rng, layouts_only=False):
    A = random_injective_layout(rng, max_size=16) if rng.random() < 0.8 else \
        random_layout(rng, max_size=16)
    B = random_layout(rng, max_leaves=3, max_size=12) if layouts_only else _prod_tiler(rng, A)
    fn = getattr(cute, op)
    return Case(f"print({op}({P(A)}, {P(B)}));", lambda: S(fn(A, B)), f"{op}({A}, {B})")


def g_logical_product(rng):
    return _prod_case("logical_product", rng)


def g_zipped_product(rng):
    return _prod_case("zipped_product", rng)


def g_tiled_product(rng):
    return _prod_case("tiled_product", rng)


def g_flat_product(rng):
    return _prod_case("flat_product", rng)


def g_blocked_product(rng):
    return _prod_case("blocked_product", rng, layouts_only=True)


def g_raked_product(rng):
    return _prod_case("raked_product", rng, layouts_only=True)


def g_tile_to_shape(rng):
    R = rng.randint(1, 3)
    bshape = tuple(rng.choice((1, 2, 3, 4)) for _i in range(rng.randint(1, R)))
    block = random_compact_layout(rng, shape=bshape if len(bshape) > 1 else bshape[0])
    trg = tuple((bshape[i] if i < len(bshape) else 1) * rng.choice((1, 2, 3))
                for i in range(R))
    if rng.random() < 0.15 and R > 0:
        trg = tuple(t + 1 for t in trg)  # usually not divisible: must be rejected
    if rng.random() < 0.5:
        order = tuple(rng.sample(range(R), R))
        return Case(f"print(tile_to_shape({P(block)}, {P(trg)}, {P(order)}));",
                    lambda: S(cute.tile_to_shape(block, trg, order)),
                    f"tile_to_shape({block}, {trg}, {order})")
    return Case(f"print(tile_to_shape({P(block)}, {P(trg)}));",
                lambda: S(cute.tile_to_shape(block, trg)), f"tile_to_shape({block}, {trg})")


def g_upcast(rng):
    L = random_layout(rng, negative=True)
    n = rng.choice((2, 4, 8))
    return Case(f"print(upcast<{n}>({P(L)}));", lambda: S(cute.upcast(L, n)), f"upcast({L}, {n})")


def g_downcast(rng):
    L = random_compact_layout(rng) if rng.random() < 0.8 else random_layout(rng)
    n = rng.choice((2, 3, 4))
    return Case(f"print(downcast<{n}>({P(L)}));", lambda: S(cute.downcast(L, n)),
                f"downcast({L}, {n})")


_TYPES = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t"}


def g_recast(rng):
    L = random_compact_layout(rng)
    a, b = rng.choice(list(_TYPES)), rng.choice(list(_TYPES))
    return Case(f"print(recast_layout<{_TYPES[a]}, {_TYPES[b]}>({P(L)}));",
                lambda: S(cute.recast_layout(L, a, b)), f"recast_layout({L}, {a}, {b})")


def _two_of_a_shape(rng):
    shape = random_shape(rng, max_size=128)
    a = random_compact_layout(rng, shape=shape) if rng.random() < 0.7 else \
        random_layout(rng)
    b = random_compact_layout(rng, shape=shape)
    if rng.random() < 0.3:
        a = Layout(a.shape, a.stride) if a.shape == shape else random_compact_layout(rng, shape=shape)
        b = a
    return a, b


def g_max_common_vector(rng):
    a, b = _two_of_a_shape(rng)
    return Case(f"print(max_common_vector({P(a)}, {P(b)}));",
                lambda: S(cute.max_common_vector(a, b)), f"max_common_vector({a}, {b})")


def g_max_common_layout(rng):
    a, b = _two_of_a_shape(rng)
    return Case(f"print(max_common_layout({P(a)}, {P(b)}));",
                lambda: S(cute.max_common_layout(a, b)), f"max_common_layout({a}, {b})")


def g_nullspace(rng):
    L = random_layout(rng)
    return Case(f"print(nullspace({P(L)}));", lambda: S(cute.nullspace(L)), f"nullspace({L})")


def g_make_layout_like(rng):
    L = random_layout(rng)
    return Case(f"print(make_layout_like({P(L)}));", lambda: S(cute.make_layout_like(L)),
                f"make_layout_like({L})")


def g_make_fragment_like(rng):
    L = random_layout(rng)
    return Case(f"print(make_fragment_like({P(L)}));", lambda: S(cute.make_fragment_like(L)),
                f"make_fragment_like({L})")


def g_make_ordered_layout(rng):
    shape = random_shape(rng)
    fl = flatten(shape) if isinstance(shape, tuple) else (shape,)
    if rng.random() < 0.6:
        order_flat = [rng.randint(0, len(fl)) for _i in fl]
        order = cute.unflatten(tuple(order_flat), shape) if isinstance(shape, tuple) else order_flat[0]
    else:  # coarser order (weakly congruent)
        order = tuple(rng.randint(0, 4) for _i in shape) if isinstance(shape, tuple) else 0
    return Case(f"print(make_ordered_layout({P(shape)}, {P(order)}));",
                lambda: S(cute.make_ordered_layout(shape, order)),
                f"make_ordered_layout({shape}, {order})")


def g_crd2idx(rng):
    L = random_layout(rng, negative=True)
    if rng.random() < 0.5:
        c = random_coord(rng, L.shape)
    else:
        c = rng.randrange(L.size())
    return Case(f"print(crd2idx({P(c)}, {P(L.shape)}, {P(L.stride)}));",
                lambda: S(cute.crd2idx(c, L)), f"crd2idx({c}, {L})")


def g_crd2idx_compact(rng):
    shape = random_shape(rng)
    c = random_coord(rng, shape) if rng.random() < 0.5 else rng.randrange(product(shape) * 2)
    return Case(f"print(crd2idx({P(c)}, {P(shape)}));", lambda: S(cute.crd2idx(c, shape)),
                f"crd2idx({c}, {shape})")


def g_idx2crd(rng):
    shape = random_shape(rng)
    i = rng.randrange(product(shape))
    return Case(f"print(idx2crd({P(i)}, {P(shape)}));", lambda: S(cute.idx2crd(i, shape)),
                f"idx2crd({i}, {shape})")


def g_idx2crd_stride(rng):
    L = random_compact_layout(rng)
    i = rng.randrange(L.size())
    return Case(f"print(idx2crd({P(i)}, {P(L.shape)}, {P(L.stride)}));",
                lambda: S(cute.idx2crd(i, L.shape, L.stride)), f"idx2crd({i}, {L.shape}, {L.stride})")


def g_eval(rng):
    L = random_layout(rng, negative=True)
    c = random_coord(rng, L.shape) if rng.random() < 0.5 else rng.randrange(L.size())
    return Case(f"print({P(L)}({P(c)}));", lambda: S(L(c)), f"{L}({c})")


def g_print_layout(rng):
    shape = (random_shape(rng, max_leaves=2, max_size=8), random_shape(rng, max_leaves=2, max_size=8))
    L = random_layout(rng, negative=True) if False else random_injective_layout(rng, shape=shape)
    if rng.random() < 0.3:
        L = random_compact_layout(rng, shape=shape)
    return Case(f"print_layout({P(L)});", lambda: cute.format_layout(L), f"print_layout({L})")


FAMILIES = [
    Family("coalesce", 80, g_coalesce),
    Family("coalesce_profile", 50, g_coalesce_profile),
    Family("composition", 160, g_composition),
    Family("composition_int", 30, g_composition_int),
    Family("composition_bymode", 80, g_composition_bymode),
    Family("complement", 110, g_complement),
    Family("right_inverse", 60, g_right_inverse),
    Family("left_inverse", 60, g_left_inverse),
    Family("logical_divide", 60, g_logical_divide),
    Family("zipped_divide", 40, g_zipped_divide),
    Family("tiled_divide", 30, g_tiled_divide),
    Family("flat_divide", 30, g_flat_divide),
    Family("logical_product", 50, g_logical_product),
    Family("zipped_product", 25, g_zipped_product),
    Family("tiled_product", 25, g_tiled_product),
    Family("flat_product", 25, g_flat_product),
    Family("blocked_product", 40, g_blocked_product),
    Family("raked_product", 40, g_raked_product),
    Family("tile_to_shape", 40, g_tile_to_shape),
    Family("upcast", 40, g_upcast),
    Family("downcast", 30, g_downcast),
    Family("recast_layout", 20, g_recast),
    Family("max_common_vector", 40, g_max_common_vector),
    Family("max_common_layout", 30, g_max_common_layout),
    Family("nullspace", 30, g_nullspace),
    Family("make_layout_like", 30, g_make_layout_like),
    Family("make_fragment_like", 30, g_make_fragment_like),
    Family("make_ordered_layout", 30, g_make_ordered_layout),
    Family("crd2idx", 50, g_crd2idx),
    Family("crd2idx_compact", 30, g_crd2idx_compact),
    Family("idx2crd", 30, g_idx2crd),
    Family("idx2crd_stride", 20, g_idx2crd_stride),
    Family("evaluate", 40, g_eval),
    Family("print_layout", 25, g_print_layout),
]


_inner = []  # the composition(A, B) being computed when ours raised


def _recording_impl(real):
    def impl(ls, ld, rs, rd, A, B):
        _inner.append((A, B))
        r = real(ls, ld, rs, rd, A, B)
        _inner.pop()
        return r
    return impl


def _build():
    """Draw every family's cases (seeded), split them into accepted and rejected-by-us."""
    from cute_py import algebra
    real = algebra._composition_impl
    algebra._composition_impl = _recording_impl(real)
    try:
        for k, fam in enumerate(FAMILIES):
            rng = random.Random(1000 + k)
            target = max(1, int(fam.count * SCALE))
            tries = 0
            while len(fam.cases) < target and tries < 50 * target:
                tries += 1
                case = fam.gen(rng)
                _inner.clear()
                try:
                    case.expected = case.ours()
                except CuteError as e:
                    case.error = e
                    case.inner = None
                    if _inner and len(fam.raising) < MAX_RAISE_CHECKS:
                        A, B = _inner[-1]
                        if isinstance(B, int):
                            B = Layout(B)
                        case.inner = Case(f"print(composition({P(A)}, {P(B)}));", None,
                                          f"composition({A}, {B})", composition_law(A, B))
                    if len(fam.raising) < MAX_RAISE_CHECKS:
                        fam.raising.append(case)
                    continue
                fam.cases.append(case)
    finally:
        algebra._composition_impl = real


@pytest.fixture(scope="module")
def oracle():
    _build()
    main = [c for f in FAMILIES for c in f.cases]
    checks = [c for f in FAMILIES for c in f.raising]
    checks += [c.inner for c in checks if c.inner is not None]
    # the rejected cases go into small chunks: C++ rejections cost a recompile of their chunk
    outs = co.run_cases([c.cpp for c in main] + [c.cpp for c in checks],
                        chunks=_split(len(main), co.CHUNK) + _split(len(checks), 40))
    for c, o in zip(main + checks, outs):
        c.cpp_out = o
    return FAMILIES


def _split(n, k):
    m = max(1, -(-n // k)) if n else 0
    return [n // m + (1 if i < n % m else 0) for i in range(m)]


@pytest.mark.parametrize("name", [f.name for f in FAMILIES])
def test_matches_cpp(oracle, name):
    fam = next(f for f in oracle if f.name == name)
    assert len(fam.cases) >= max(1, int(fam.count * SCALE) // 2), f"too few valid {name} cases"
    bad = []
    for c in fam.cases:
        if c.cpp_out == co.REJECTED:
            bad.append(f"{c.desc}: ours {c.expected}, C++ rejects it at compile time")
        elif co.normalize(c.cpp_out).rstrip("\n") != c.expected.rstrip("\n"):
            bad.append(f"{c.desc}:\n  ours {c.expected}\n  C++  {co.normalize(c.cpp_out)}")
    assert not bad, f"{len(bad)}/{len(fam.cases)} {name} cases differ from CuTe C++:\n" + \
        "\n".join(bad[:10])


@pytest.mark.parametrize("name", [f.name for f in FAMILIES])
def test_our_rejections_are_justified(oracle, name):
    """Where we raise, C++ rejects too or returns a result that breaks the op's own law."""
    fam = next(f for f in oracle if f.name == name)
    bad = []
    for c in fam.raising:
        if c.cpp_out == co.REJECTED:
            continue  # C++ static_asserts too
        if c.law is not None and not c.law(c.cpp_out):
            continue  # C++ returns a wrong layout (cutlass#3177-style): raising is right
        if c.inner is not None and (c.inner.cpp_out == co.REJECTED or
                                    not c.inner.law(c.inner.cpp_out)):
            continue  # the composition inside the op is one C++ rejects or gets wrong
        bad.append(f"{c.desc}: ours raise {type(c.error).__name__}: {c.error}\n"
                   f"  but C++ returns {co.normalize(c.cpp_out)}")
    assert not bad, "\n".join(bad[:10])


def test_case_counts(oracle):
    total = sum(len(f.cases) for f in oracle)
    assert total >= int(1400 * SCALE)
    print(f"C++ oracle: {total} agreeing cases, "
          f"{sum(len(f.raising) for f in oracle)} of our rejections confirmed")
