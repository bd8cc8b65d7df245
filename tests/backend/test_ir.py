"""Expression IR: simplification preserves values, bounds are sound, rendering is valid C whose
value matches, CSE names are deterministic, and lowering matches cute_py.crd2idx."""

import random

import pytest
from hypothesis import given, strategies as st

import cute_py as cute
from cute_py import int_tuple
from cute_py.errors import LayoutError, SymbolicError
from cute_py.backends.cuda import ir, lower
from cute_py.backends.cuda.render import CodeBuilder, render_expr

VARS = {"tid": (0, 255), "bid": (0, 1023), "i": (0, 7)}


def _vars():
    return {k: ir.var(k, lo, hi) for k, (lo, hi) in VARS.items()}


# A random program over non-negative integers: ("var", name) | ("const", c) | (op, a, b/const)
def programs(depth=4):
    leaf = st.one_of(st.sampled_from([("var", k) for k in VARS]),
                     st.integers(0, 300).map(lambda c: ("const", c)))

    def extend(children):
        k = st.sampled_from([1, 2, 3, 4, 5, 8, 16, 32, 48, 64, 128, 256])
        return st.one_of(
            st.tuples(st.just("add"), children, children),
            st.tuples(st.just("mul"), children, k),
            st.tuples(st.just("floordiv"), children, k),
            st.tuples(st.just("mod"), children, k),
            st.tuples(st.just("xor"), children, children),
            st.tuples(st.just("and"), children, st.integers(0, 1023)),
            st.tuples(st.just("shr"), children, st.integers(0, 6)),
            st.tuples(st.just("shl"), children, st.integers(0, 3)),
            st.tuples(st.just("swz"), children, st.tuples(st.integers(0, 3), st.integers(0, 3),
                                                          st.integers(1, 4))),
        )
    return st.recursive(leaf, extend, max_leaves=12)


def build(p, vs):
    op = p[0]
    if op == "var":
        return vs[p[1]]
    if op == "const":
        return ir.const(p[1])
    a = build(p[1], vs)
    if op in ("add", "xor"):
        b = build(p[2], vs)
        return ir.add(a, b) if op == "add" else ir.xor(a, b)
    if op == "swz":
        return ir.swizzle(a, *p[2])
    return {"mul": ir.mul, "floordiv": ir.floordiv, "mod": ir.mod, "and": ir.and_,
            "shr": ir.shr, "shl": ir.shl}[op](a, p[2])


def reference(p, env):
    op = p[0]
    if op == "var":
        return env[p[1]]
    if op == "const":
        return p[1]
    a = reference(p[1], env)
    if op == "add":
        return a + reference(p[2], env)
    if op == "xor":
        return a ^ reference(p[2], env)
    if op == "swz":
        B, M, S = p[2]
        return a ^ ((a & (((1 << B) - 1) << (M + S))) >> S)
    k = p[2]
    return {"mul": lambda: a * k, "floordiv": lambda: a // k, "mod": lambda: a % k,
            "and": lambda: a & k, "shr": lambda: a >> k, "shl": lambda: a << k}[op]()


def envs(seed, n=40):
    rng = random.Random(seed)
    out = [{k: lo for k, (lo, hi) in VARS.items()}, {k: hi for k, (lo, hi) in VARS.items()}]
    out += [{k: rng.randint(lo, hi) for k, (lo, hi) in VARS.items()} for _ in range(n)]
    return out


def c_eval(text, env):
    # For + - * / % << >> & ^ | C and Python share precedence; C '/' on non-negatives is '//'.
    return eval(text.replace("/", "//"), {}, dict(env))


@given(programs(), st.integers(0, 10**6))
def test_simplification_preserves_value_and_bounds(p, seed):
    node = build(p, _vars())
    for env in envs(seed):
        want = reference(p, env)
        got = ir.evaluate(node, env)
        assert got == want
        assert node.lo <= got <= node.hi
        if ir.fits_int32(node):
            assert c_eval(render_expr(node), env) == want
            # the same value with power-of-2 shifts / masks of non-negatives spelled / and %
            assert c_eval(render_expr(node, divide=True), env) == want


def test_render_divide_spelling():
    t = ir.var("tid", 0, 255)
    assert render_expr(ir.shr(t, 2), divide=True) == "tid / 4"
    assert render_expr(ir.mul(ir.and_(t, 3), 8), divide=True) == "tid % 4 * 8"
    assert render_expr(ir.and_(ir.shr(t, 3), 1), divide=True) == "tid / 8 % 2"
    assert render_expr(ir.and_(t, 6), divide=True) == "tid & 6"    # not a low mask
    assert render_expr(ir.shr(t, 2)) == "tid >> 2"


@given(programs(), st.integers(0, 10**6))
def test_cse_rendering_matches(p, seed):
    node = build(p, _vars())
    cb = CodeBuilder(indent=0)
    cb.cse([node])
    final = cb.expr(node)
    for env in envs(seed, 10):
        scope = dict(env)
        for line in cb.lines:  # "const int t = ...;"
            lhs, rhs = line[len("const int "):].rstrip(";").split(" = ", 1)
            scope[lhs] = c_eval(rhs, scope)
        if ir.fits_int32(node):
            assert c_eval(final, scope) == reference(p, env)


def test_interning_is_structural_equality():
    t = ir.var("tid", 0, 255)
    assert (t * 4 + 1) is (t * 4 + 1)
    assert ir.const(3) is ir.const(3)
    assert (t * 4 + 1) is not (t * 4 + 2)


def test_identities():
    t = ir.var("tid", 0, 255)
    assert t + 0 is t and t * 1 is t and (t * 0).value == 0
    assert render_expr(t // 16) == "tid >> 4"
    assert render_expr(t % 32) == "tid & 31"
    assert render_expr(t // 12) == "tid / 12"
    assert render_expr(t % 12) == "tid % 12"
    assert (t // 256).value == 0
    assert t % 256 is t
    # bounds-aware (x // a) % b -> x // a when x < a*b; generic when not
    assert (t // 16) % 16 is t // 16
    assert render_expr((t // 16) % 8) == "(tid >> 4) & 7"
    assert render_expr((t // 3) % 86) == "tid / 3"
    # nested divisions and mods
    assert t // 4 // 8 is t // 32
    assert (t % 64) % 8 is t % 8
    # linear terms pulled through div/mod
    b = ir.var("bid", 0, 1023)
    x = b * 256 + t
    assert x // 256 is b
    assert x % 256 is t
    assert render_expr((x // 16) % 16) == "tid >> 4"
    assert render_expr((t * 4) // 64) == "tid >> 4"
    assert render_expr((t * 4) % 64) == "(tid & 15) * 4"
    assert (x + 3) - 3 is x


def test_swizzle_simplification():
    t = ir.var("tid", 0, 255)
    # Swizzle<3,2,6>: yyy bits are 8..10; tid*4 < 1024 has them, tid < 256 does not
    assert ir.swizzle(t, 3, 2, 6) is t
    s = ir.swizzle(t * 4, 3, 2, 6)
    assert render_expr(s) == "(tid * 4) ^ (((tid * 4) & 1792) >> 6)"
    assert ir.swizzle(t * 4, 0, 2, 6) is t * 4
    for v in range(256):
        o = v * 4
        assert ir.evaluate(s, {"tid": v}) == o ^ ((o & 0x700) >> 6)


def test_comparisons_and_select():
    t = ir.var("tid", 0, 255)
    assert ir.lt(t, 256).value == 1 and ir.lt(t, 0).value == 0
    assert render_expr(ir.lt(t, 100)) == "tid < 100"
    assert ir.select(1, t, 3) is t
    c = ir.land(ir.lt(t, 100), 1, ir.le(t, 50))
    assert render_expr(c) == "tid < 100 && tid <= 50"
    assert ir.land(ir.lt(t, 100), 0).value == 0
    assert render_expr(ir.select(ir.lt(t, 9), t, 9)) == "(tid < 9 ? tid : 9)"


def test_int64_widening():
    big = ir.var("row", 0, 100000)
    e = big * 100000 + ir.var("col", 0, 99999)
    assert not ir.fits_int32(e)
    assert render_expr(e) == "(long long)row * 100000 + col"
    cb = CodeBuilder(indent=0)
    cb.let(e, "off")
    assert cb.lines == ["const long long off = (long long)row * 100000 + col;"]


def test_subtraction_renders_minus():
    t = ir.var("tid", 0, 255)
    n = ir.var("n", 0, 9)
    assert render_expr(t - n * 3) == "tid - n * 3"
    assert render_expr(t - 5) == "tid - 5"


def test_cse_names_are_deterministic():
    def gen():
        t = ir.var("tid", 0, 255)
        a = (t * 3) % 7
        cb = CodeBuilder(indent=0)
        cb.cse([a + 1, a * 2, t // 5 + t // 5 * 2], hint="t")
        return cb.lines, cb.expr(a + 1)
    assert gen() == gen()
    lines, e = gen()
    assert lines == ["const int t = tid * 3 % 7;", "const int t_1 = tid / 5;"]
    assert e == "t + 1"


def test_fresh_names():
    cb = CodeBuilder()
    cb.reserve("src")
    assert [cb.fresh("src"), cb.fresh("src"), cb.fresh("x")] == ["src_1", "src_2", "x"]


def test_errors():
    t = ir.var("tid", 0, 255)
    with pytest.raises(ZeroDivisionError):
        ir.floordiv(t, 0)
    with pytest.raises(ValueError):
        ir.mod(t, ir.var("n", 0, 5))  # divisor may be 0
    with pytest.raises(ValueError):
        ir.var("x", 3, 2)
    with pytest.raises(ValueError):
        ir.shr(t, t)


# ---------------------------------------------------------------------------------------------
# lowering


def shapes(depth=2):
    leaf = st.integers(1, 6)
    return st.recursive(leaf, lambda ch: st.lists(ch, min_size=1, max_size=3).map(tuple),
                        max_leaves=5)


def strides_like(shape, draw):
    if isinstance(shape, tuple):
        return tuple(strides_like(s, draw) for s in shape)
    return draw(st.integers(0, 40))


@st.composite
def layouts(draw):
    shape = draw(shapes())
    return shape, strides_like(shape, draw)


@given(layouts(), st.integers(0, 10**6))
def test_crd2idx_matches_algebra_int_coord(L, seed):
    shape, stride = L
    n = cute.size(cute.make_layout(shape, stride=stride))
    x = ir.var("x", 0, 2 * n)
    node = lower.crd2idx(x, shape, stride)
    rng = random.Random(seed)
    lay = cute.make_layout(shape, stride=stride)
    for v in [0, n - 1] + [rng.randrange(n) for _ in range(20)]:
        assert ir.evaluate(node, {"x": v}) == cute.crd2idx(v, lay)
    for v in (n, 2 * n):  # past the domain: the last mode extends (int_tuple has no range check)
        assert ir.evaluate(node, {"x": v}) == int_tuple.crd2idx(v, shape, stride)


@given(layouts(), st.integers(0, 10**6))
def test_crd2idx_matches_algebra_hier_coord(L, seed):
    shape, stride = L
    lay = cute.make_layout(shape, stride=stride)
    rng = random.Random(seed)
    top = shape if isinstance(shape, tuple) else (shape,)
    tops = stride if isinstance(stride, tuple) else (stride,)
    vs = tuple(ir.var(f"c{i}", 0, cute.size(s) - 1) for i, s in enumerate(top))
    node = lower.crd2idx(vs if isinstance(shape, tuple) else vs[0], shape, stride)
    for _ in range(10):
        c = tuple(rng.randrange(cute.size(s)) for s in top)
        want = cute.crd2idx(c if isinstance(shape, tuple) else c[0], lay)
        assert ir.evaluate(node, {f"c{i}": v for i, v in enumerate(c)}) == want
        # idx2crd round trip through the same shape
        assert tops is not None


def test_idx2crd_last_mode_not_modulo():
    crd = lower.idx2crd(ir.var("i", 0, 1000), (4, 8))
    assert render_expr(crd[0]) == "i & 3" and render_expr(crd[1]) == "i >> 2"
    crd = lower.idx2crd(ir.var("i", 0, 31), (4, (2, 4)))
    assert render_expr(crd[1][1]) == "i >> 3"


def test_layout_objects_and_symbols():
    import sympy
    M = sympy.Symbol("M")
    L = cute.make_layout((M, 8))
    i = ir.var("i", 0, 1000)
    j = ir.var("j", 0, 7)
    node = lower.layout_apply(L, (i, j))
    assert render_expr(node) == "i + (long long)j * M"  # M < 2**31: 64-bit offsets
    assert ir.evaluate(node, {"i": 5, "j": 3, "M": 100}) == 305
    off = lower.layout_apply(L, i * 8 + j)  # int coordinate over a runtime shape
    assert ir.evaluate(off, {"i": 2, "j": 3, "M": 7}) == cute.crd2idx(19, cute.make_layout((7, 8)))
    p = ir.param("K", 1, 4096)  # tighter bounds keep 32-bit arithmetic
    node = lower.crd2idx((i, j), (M, 8), (1, M), symbols={"M": p})
    assert render_expr(node) == "i + j * K"


def test_to_ir_sympy_forms():
    import sympy
    M, N = sympy.symbols("M N")
    s = {}
    e = lower.to_ir(sympy.floor((M + 7) / 8) * 2 + sympy.Mod(N, 4) + M ** 2, s)
    assert ir.evaluate(e, {"M": 13, "N": 7}) == ((13 + 7) // 8) * 2 + 7 % 4 + 169
    c = lower.to_ir(sympy.ceiling(M / 16), s)
    assert ir.evaluate(c, {"M": 17}) == 2


def test_lowering_errors():
    with pytest.raises(LayoutError):
        lower.crd2idx((ir.const(1), ir.const(2)), (4, 8, 2), (1, 4, 32))
    with pytest.raises(LayoutError):
        lower.crd2idx(ir.const(1), (4, 8), 1)
    with pytest.raises(LayoutError):
        lower.shape_stride("4:1")
    with pytest.raises(SymbolicError):
        lower.to_ir(1.5)
    with pytest.raises(SymbolicError):
        import sympy
        lower.to_ir(sympy.Symbol("M") / 3)


def test_swizzle_apply_forms():
    t = ir.var("tid", 0, 255)
    a = lower.swizzle_apply(t * 4, (3, 2, 6))

    class Sw:
        bits, base, shift = 3, 2, 6
    assert lower.swizzle_apply(t * 4, Sw()) is a


def test_composed_apply_lowers_nested_compositions():
    """Law: ``ir.evaluate(lower.composed_apply(L, c)) == L(c)`` for a swizzle over an offset
    layout, and for a layout composed over a composed layout with an offset."""
    import cute_py as cute
    from backends.cuda import lower
    inner = cute.make_composed_layout(cute.Swizzle(2, 2, 3), 4, cute.make_layout((8, 16), (16, 1)))
    outer = cute.make_composed_layout(cute.make_layout(256, 2), 3, inner)
    for L in (inner, outer):
        for r in range(8):
            for c in range(16):
                assert ir.evaluate(lower.composed_apply(L, (r, c)), {}) == L((r, c)), (L, r, c)
