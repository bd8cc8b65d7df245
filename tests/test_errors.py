"""Bad input: every user mistake raises a ``cute_py.errors`` class naming the argument.

No RecursionError, AttributeError, IndexError, TypeError (other than our IntTupleError, which is
also a TypeError) or ZeroDivisionError may escape; a seeded fuzz over every public operation
checks that too.
"""

from __future__ import annotations

import random

import pytest

import cute_py as cute
from cute_py import Layout, _
from cute_py.errors import CuteError, IntTupleError, LayoutError, ParseError

L44 = Layout((4, 4))

BAD = [
    # (id, thunk, error class, words the message must contain)
    ("bool leaf", lambda: Layout((True, 2)), IntTupleError, "shape"),
    ("float leaf", lambda: Layout((2.0, 2)), IntTupleError, "shape"),
    ("str shape", lambda: Layout("abc"), IntTupleError, "shape"),
    ("None shape", lambda: Layout(None), IntTupleError, "shape"),
    ("bool stride", lambda: Layout((2, 2), (1, False)), IntTupleError, "stride"),
    ("stride not congruent", lambda: Layout((2, 3), (1,)), LayoutError, "stride"),
    ("int stride for tuple shape", lambda: Layout((2, 3), 5), LayoutError, "stride"),
    ("zero extent", lambda: Layout((0, 2)), LayoutError, "shape"),
    ("negative extent", lambda: Layout(-3), LayoutError, "shape"),
    ("list with junk", lambda: Layout([2, [3, "a"]]), IntTupleError, "shape"),
    ("tiler rank too large", lambda: cute.logical_divide(L44, (2, 2, 2)), LayoutError, "tiler"),
    ("tiler of wrong type", lambda: cute.logical_divide(Layout(8), "x"), LayoutError, "tiler"),
    ("empty tiler", lambda: cute.zipped_divide(L44, ()), LayoutError, "tiler"),
    ("top-level _ for tiled_divide", lambda: cute.tiled_divide(L44, _), LayoutError, "tiler"),
    ("composition tiler rank", lambda: cute.composition(L44, (2, 2, 2)), LayoutError, "tiler"),
    ("composition float rhs", lambda: cute.composition(Layout(4), 2.5), LayoutError, "rhs"),
    ("composition zero rhs", lambda: cute.composition(Layout(4), 0), LayoutError, "rhs"),
    ("stride divisibility", lambda: cute.composition(Layout((4, 6), (1, 5)), Layout(2, 6)),
     LayoutError, "stride divisibility"),
    ("shape divisibility", lambda: cute.composition(Layout((4, 6), (1, 5)), Layout(6, 1)),
     LayoutError, "shape divisibility"),
    ("cutlass#3177", lambda: cute.composition(Layout((4, 6, 8), (2, 3, 5)), Layout(6, 3)),
     LayoutError, "3177"),
    ("non-injective complement", lambda: cute.complement(Layout((2, 2), (1, 1)), 8),
     LayoutError, "injective"),
    ("negative-stride complement", lambda: cute.complement(Layout(4, -1), 8), LayoutError,
     "negative"),
    ("complement str cotarget", lambda: cute.complement(Layout(4), "x"), IntTupleError, "cotarget"),
    ("complement float cotarget", lambda: cute.complement(Layout(4), 2.5), IntTupleError,
     "cotarget"),
    ("non-injective product", lambda: cute.logical_product(Layout((2, 2), (1, 1)), Layout(4)),
     LayoutError, "injective"),
    ("negative nested coordinate", lambda: L44((-1, 0)), IntTupleError, "coord"),
    ("negative coordinate", lambda: Layout(4)(-1), IntTupleError, "coord"),
    ("coordinate of wrong rank", lambda: L44((1, 2, 3)), IntTupleError, "coord"),
    ("tuple coordinate for rank-1", lambda: Layout(4)((1, 2)), IntTupleError, "coord"),
    ("float coordinate", lambda: Layout(4)(1.5), IntTupleError, "coord"),
    ("missing coordinate", lambda: Layout(4)(), IntTupleError, "coord"),
    ("slice of wrong rank", lambda: L44((_, 1, 1)), IntTupleError, "coord"),
    ("slice_and_offset negative", lambda: cute.slice_and_offset((_, -1), L44), IntTupleError,
     "coord"),
    ("crd2idx rank", lambda: cute.crd2idx((1, 2), (2, 3, 4)), IntTupleError, "coord"),
    ("crd2idx zero extent", lambda: cute.crd2idx(3, (2, 0)), LayoutError, "shape"),
    ("idx2crd rank", lambda: cute.idx2crd((1, 2), (2, 3, 4)), IntTupleError, "idx"),
    ("idx2crd junk stride", lambda: cute.idx2crd(4, 4, ((8, 8),)), IntTupleError, "stride"),
    ("parse empty", lambda: cute.parse_layout(""), ParseError, "text"),
    ("parse unbalanced", lambda: cute.parse_layout("((2,2),4:((1,4),2)"), ParseError, "text"),
    ("parse not congruent", lambda: cute.parse_layout("(2,2):(1,2,3)"), ParseError, "congruent"),
    ("parse trailing text", lambda: cute.parse_layout("4:1 x"), ParseError, "trailing"),
    ("parse non-str", lambda: cute.parse_layout(42), ParseError, "str"),
    ("parse underscore", lambda: cute.parse_layout("(_,2):(1,2)"), ParseError, "_"),
    ("parse too deep", lambda: cute.parse_layout("(" * 5000 + "1" + ")" * 5000), ParseError,
     "deep"),
    ("upcast by 0", lambda: cute.upcast(Layout(8), 0), LayoutError, "n"),
    ("upcast divisibility", lambda: cute.upcast(Layout(8, 3), 2), LayoutError, "divid"),
    ("downcast without stride 1", lambda: cute.downcast(Layout(8, 2), 2), LayoutError, "stride-1"),
    ("recast 0 bits", lambda: cute.recast_layout(Layout(8), 0, 16), LayoutError, "old_bits"),
    ("tile_to_shape not divisible", lambda: cute.tile_to_shape(Layout((2, 2)), (3, 4)),
     LayoutError, "trg_shape"),
    ("tile_to_shape rank", lambda: cute.tile_to_shape(Layout((2, 2, 2)), (4, 4)), LayoutError,
     "block"),
    ("coalesce profile rank", lambda: cute.coalesce(Layout((2, 2)), (1, 1, 1)), LayoutError,
     "profile"),
    ("filter profile rank", lambda: cute.filter(Layout((2, 2)), (1, 1, 1)), LayoutError,
     "profile"),
    ("mode out of range", lambda: L44[5], LayoutError, "mode"),
    ("mode of wrong type", lambda: L44["a"], LayoutError, "mode"),
    ("select out of range", lambda: cute.select(L44, 3), LayoutError, "mode"),
    ("take bad range", lambda: cute.take(L44, 1, 5), LayoutError, "range"),
    ("group empty range", lambda: cute.group(L44, 2, 1), LayoutError, "range"),
    ("make_layout mixing", lambda: cute.make_layout(Layout(2), (2,)), LayoutError, "args"),
    ("make_layout nothing", lambda: cute.make_layout(), LayoutError, "shape"),
    ("ordered layout order rank", lambda: cute.make_ordered_layout((2, 3), (1, 2, 3)),
     LayoutError, "order"),
    ("ordered layout float order", lambda: cute.make_ordered_layout((2, 3), (1.0, 2)),
     IntTupleError, "order"),
    ("shape_div indivisible", lambda: cute.shape_div(6, 4), IntTupleError, "b"),
    ("ceil_div by 0", lambda: cute.ceil_div(6, 0), IntTupleError, "b"),
    ("round_up by 0", lambda: cute.round_up(6, 0), IntTupleError, "b"),
    ("product of a str", lambda: cute.product(("a", 2)), IntTupleError, "t"),
    ("size of an object", lambda: cute.size(object()), IntTupleError, "x"),
    ("cosize of a tuple", lambda: cute.cosize((2, 3)), LayoutError, "layout"),
    ("zip mismatched", lambda: cute.zip(Layout(((2, 2), 2))), LayoutError, "layout"),
    ("append n too small", lambda: cute.append(L44, n=1), LayoutError, "n"),
    ("print_layout non-layout", lambda: cute.print_layout("x"), LayoutError, "layout"),
    ("max_common_vector non-layout", lambda: cute.max_common_vector(Layout(4), "x"), LayoutError,
     "b"),
    ("nullspace of None", lambda: cute.nullspace(None), LayoutError, "layout"),
    ("evenly_divides junk tiler", lambda: cute.evenly_divides((4,), [2, "x"]), IntTupleError,
     "tiler"),
    ("get_hier_coord non-int", lambda: cute.get_hier_coord(Layout(4), Layout(2)), IntTupleError,
     "idx"),
    ("slice_and_offset of an int", lambda: cute.slice_and_offset((_, 1), 4), LayoutError,
     "layout"),
]


def test_at_least_30_distinct_bad_inputs():
    assert len({b[0] for b in BAD}) >= 30


@pytest.mark.parametrize("name,thunk,cls,words", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_named_error(name, thunk, cls, words):
    with pytest.raises(cls) as info:
        thunk()
    err = info.value
    assert isinstance(err, CuteError)
    assert err.op and err.arg, "errors carry the operation and the argument's name"
    assert words.lower() in str(err).lower(), str(err)


def test_error_fields():
    with pytest.raises(LayoutError) as info:
        Layout((2, 3), (1,))
    e = info.value
    assert (e.op, e.arg) == ("Layout", "stride")
    assert e.expected is not None and e.actual is not None


def _junk(rng, d=0):
    r = rng.random()
    if r < 0.4:
        return rng.choice([0, 1, 2, 3, 4, 6, -1, -2, 8])
    if r < 0.5:
        return rng.choice([1.5, True, None, "a", _, [], [2, 3]])
    if d > 2:
        return 2
    return tuple(_junk(rng, d + 1) for _i in range(rng.randint(0, 3)))


def _arg(rng):
    if rng.random() < 0.5:
        try:
            return Layout(_junk(rng), _junk(rng) if rng.random() < 0.5 else None)
        except CuteError:
            pass
    return _junk(rng)


_OPS = [
    cute.coalesce, cute.composition, cute.complement, cute.right_inverse, cute.left_inverse,
    cute.logical_divide, cute.zipped_divide, cute.tiled_divide, cute.flat_divide,
    cute.logical_product, cute.zipped_product, cute.tiled_product, cute.flat_product,
    cute.blocked_product, cute.raked_product, cute.tile_to_shape, cute.upcast, cute.downcast,
    cute.max_common_vector, cute.max_common_layout, cute.nullspace, cute.make_layout_like,
    cute.make_fragment_like, cute.make_ordered_layout, cute.crd2idx, cute.idx2crd, cute.filter,
    cute.filter_zeros, cute.size, cute.cosize, cute.make_layout, cute.shape_div, cute.ceil_div,
    cute.prefix_product, cute.product, cute.compatible, cute.congruent, cute.format_layout,
    cute.parse_layout, cute.slice_, cute.dice, cute.flatten, cute.select, cute.get,
    cute.with_shape, cute.slice_and_offset, cute.get_flat_coord, cute.get_hier_coord, cute.zip,
    cute.evenly_divides, cute.round_up, cute.inner_product, cute.crd2crd, cute.elem_less,
]


@pytest.mark.parametrize("seed", range(4))
def test_fuzz_no_raw_python_errors(seed):
    rng = random.Random(seed)
    for _i in range(2500):
        op = rng.choice(_OPS)
        args = [_arg(rng) for _j in range(rng.choice([1, 2, 2, 3]))]
        try:
            op(*args)
        except CuteError:
            pass
        except TypeError as e:  # calling with the wrong number of arguments is fine
            if "argument" not in str(e):
                raise AssertionError(f"{op.__name__}{tuple(args)!r} raised {e!r}") from e
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"{op.__name__}{tuple(args)!r} raised {e!r}") from e
