"""EVT trees (cute_py.epilogue.evt): building, checking, printing, hashing, NumPy semantics."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cute_py.epilogue import evt
from cute_py.epilogue.evt import (
    AccFetch, AuxLoad, AuxStore, ColBroadcast, ColReduction, Compute, RowBroadcast, RowReduction,
    ScalarBroadcast, ScalarReduction, SrcFetch, bind_arguments, evaluate, evaluate_all, inputs,
    lin_comb_bias_elt_act, lin_comb_bias_elt_act_aux, lin_comb_elt_act, lin_comb_per_col_bias,
    lin_comb_per_row_bias, linear_combination, nodes, outputs, round_to,
)
from cute_py.errors import CuteError, LaunchError, TensorError

rng = np.random.default_rng(0)


def _data(M=5, N=7):
    return (rng.standard_normal((M, N)), rng.standard_normal((M, N)).astype(np.float16),
            rng.standard_normal(N).astype(np.float16), rng.standard_normal(M).astype(np.float16))


# -- building and checking ----------------------------------------------------------------------

def test_nodes_are_frozen_and_hash_by_structure():
    a = lin_comb_bias_elt_act("gelu")
    b = lin_comb_bias_elt_act("gelu")
    assert a == b and hash(a) == hash(b) and a is not b
    assert lin_comb_bias_elt_act("relu") != a
    assert len({a, b, lin_comb_bias_elt_act("relu")}) == 2
    with pytest.raises(AttributeError):
        a.op = "relu"
    with pytest.raises(AttributeError):
        AccFetch().dtype = "float16"


def test_constants_are_part_of_the_key():
    assert ScalarBroadcast(None, value=1.0) != ScalarBroadcast(None, value=2.0)
    assert linear_combination(1.0, 0.0) == AccFetch()           # alpha=1, beta=0: no C, no mul
    assert "C" not in linear_combination(2.0, 0.0).signature


def test_shared_subtrees_are_one_node():
    x = AccFetch() * ScalarBroadcast("s")
    t = Compute("multiply", x, Compute("sigmoid", x))
    assert sum(1 for n in nodes(t) if n == x) == 1
    order = nodes(t)
    for i, n in enumerate(order):             # topological: children first
        for c in n.children:
            assert order.index(c) < i


@pytest.mark.parametrize("bad, err", [
    (lambda: Compute("tanhh", AccFetch()), "op"),
    (lambda: Compute("add", AccFetch()), "children"),
    (lambda: Compute("clamp", AccFetch()), "params"),
    (lambda: Compute("clamp", AccFetch(), params=(2.0, 1.0)), "params"),
    (lambda: Compute("relu", AccFetch(), dtype="int8"), "dtype"),
    (lambda: Compute("relu", "acc"), "child 0"),
    (lambda: SrcFetch("float64"), "dtype"),
    (lambda: RowBroadcast("C"), "name"),
    (lambda: RowBroadcast("2x"), "name"),
    (lambda: RowBroadcast("for"), "name"),
    (lambda: ScalarBroadcast(None), "name"),
    (lambda: ScalarBroadcast("a", value=math.inf), "value"),
    (lambda: ScalarBroadcast("a", value=1.0, ptr=True), "ptr"),
    (lambda: RowReduction(RowBroadcast("b"), "r"), "child"),
    (lambda: RowReduction(AccFetch(), "r", "mean"), "op"),
    (lambda: ColReduction(AccFetch(), "r", "sum", dtype="float16"), "dtype"),
    (lambda: AccFetch() + SrcFetch("float16") + SrcFetch("float32"), "C"),
    (lambda: AccFetch() + RowBroadcast("b") + ColBroadcast("b"), "b"),
    (lambda: AuxStore(AccFetch(), "b") + RowBroadcast("b"), "b"),
    (lambda: lin_comb_bias_elt_act("tanh"), "activation"),
    (lambda: lin_comb_bias_elt_act("relu", bias="diag"), "bias"),
    (lambda: AccFetch() + "x", "operand"),
])
def test_bad_trees_raise_named_errors(bad, err):
    with pytest.raises(TensorError) as e:
        bad()
    assert isinstance(e.value, CuteError) and e.value.arg == err


def test_signature_inputs_outputs():
    t = ScalarReduction(lin_comb_bias_elt_act_aux("relu", bias="row"), "amax", "absmax")
    assert inputs(t) == {"C": ("src", "float16"), "alpha": ("scalar", "float32"),
                         "beta": ("scalar", "float32"), "bias": ("col", "float16")}
    assert outputs(t) == {"aux": ("aux_store", "float16"),
                          "amax": ("scalar_reduce:absmax", "float32")}


# -- printing -----------------------------------------------------------------------------------

def test_str_and_pretty():
    t = lin_comb_bias_elt_act("gelu")
    assert str(t) == "gelu(add(multiply_add(beta, C, multiply(alpha, acc)), bias[n]))"
    p = t.pretty().splitlines()
    assert p[0] == "Compute<gelu> -> float32"
    assert p[-1] == "   └─ RowBroadcast(bias[n]) -> float16"
    assert str(Compute("clamp", AccFetch(), params=(0, 6))) == "clamp(acc, 0.0, 6.0)"
    assert str(evt.convert(AccFetch(), "bf16")) == "convert<bfloat16>(acc)"
    assert str(ScalarBroadcast("s", ptr=True)) == "*s"
    assert str(ColReduction(AccFetch(), "r", "max")) == "col_reduce<max:r>(acc)"


def test_repr_evaluates_back():
    from cute_py.epilogue.evt import (AccFetch, AuxStore, ColBroadcast, Compute,  # noqa: F401
                                      RowBroadcast, ScalarBroadcast, SrcFetch)
    for t in [lin_comb_bias_elt_act_aux("silu"), lin_comb_per_row_bias(2.0, 0.5),
              ScalarReduction(AuxLoad("z", "bf16") * AccFetch(), "s", "sum"),
              Compute("clamp", AccFetch(), params=(-1, 1), dtype="float16")]:
        assert eval(repr(t)) == t


# -- semantics ----------------------------------------------------------------------------------

def test_linear_combination_law():
    acc, C, _, _ = _data()
    t = linear_combination()
    np.testing.assert_allclose(evaluate(t, acc, C=C, alpha=0.5, beta=-2.0),
                               -2.0 * C.astype(np.float64) + np.float32(0.5) * acc)


def test_bias_orientation():
    acc, C, bn, bm = _data()
    np.testing.assert_allclose(
        evaluate(lin_comb_per_col_bias(1.0, 0.0), acc, bias=bn), acc + bn.astype(float)[None, :])
    np.testing.assert_allclose(
        evaluate(lin_comb_per_row_bias(1.0, 0.0), acc, bias=bm), acc + bm.astype(float)[:, None])


@pytest.mark.parametrize("op, ref", [
    ("relu", lambda x: np.maximum(x, 0)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("silu", lambda x: x / (1 + np.exp(-x))),
    ("gelu", lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))),
    ("gelu_erf", lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
])
def test_activations(op, ref):
    acc = rng.standard_normal((4, 6)) * 3
    np.testing.assert_allclose(evaluate(lin_comb_elt_act(op, 1.0, 0.0), acc), ref(acc),
                               rtol=1e-12, atol=1e-12)


def test_gelu_variants_differ_slightly():
    x = np.linspace(-4, 4, 101)[None, :]
    a = evaluate(evt.gelu(AccFetch()), x)
    b = evaluate(evt.gelu_erf(AccFetch()), x)
    assert 0 < np.abs(a - b).max() < 1e-2


def test_clamp_and_binary_ops():
    acc, C, _, _ = _data()
    np.testing.assert_allclose(evaluate(evt.clamp(AccFetch(), -0.5, 0.25), acc),
                               np.clip(acc, -0.5, 0.25))
    c = SrcFetch("float16")
    np.testing.assert_allclose(evaluate(evt.maximum(AccFetch(), c), acc, C=C),
                               np.maximum(acc, C.astype(float)))
    np.testing.assert_allclose(evaluate(AccFetch() - c, acc, C=C), acc - C.astype(float))


def test_convert_rounds():
    acc = rng.standard_normal((3, 3))
    np.testing.assert_array_equal(evaluate(evt.convert(AccFetch(), "float16"), acc),
                                  acc.astype(np.float16).astype(float))
    bf = evaluate(evt.convert(AccFetch(), "bfloat16"), acc)
    assert np.all(bf.astype(np.float32).view(np.uint32) & 0xFFFF == 0)
    assert np.abs(bf - acc).max() <= 2 ** -8 * np.abs(acc).max()


@settings(max_examples=100, deadline=None)
@given(st.floats(-1e4, 1e4, allow_nan=False), st.sampled_from(["float16", "bfloat16", "float32"]))
def test_round_to_is_idempotent(x, dtype):
    r = round_to(x, dtype)
    assert round_to(r, dtype) == r
    assert abs(r - x) <= abs(x) * 2 ** -7 + 1e-30 or dtype == "float16"


def test_bf16_bits_input():
    acc = np.zeros((2, 2))
    bits = np.array([[0x3F80, 0x4000], [0xBF80, 0x0000]], dtype=np.uint16)  # 1, 2, -1, 0
    np.testing.assert_array_equal(evaluate(AccFetch() + AuxLoad("x", "bf16"), acc, x=bits),
                                  [[1, 2], [-1, 0]])


def test_aux_and_reductions():
    acc, C, bn, _ = _data(6, 9)
    t = lin_comb_bias_elt_act_aux("relu", alpha=1.0, beta=1.0)
    t = RowReduction(ColReduction(ScalarReduction(t, "amax", "absmax"), "cs", "sum"), "rm", "max")
    r = evaluate_all(t, acc, C=C, bias=bn)
    z = acc + C.astype(float) + bn.astype(float)[None, :]
    d = np.maximum(z, 0)
    np.testing.assert_allclose(r["aux"], z.astype(np.float16).astype(float))
    np.testing.assert_allclose(r["D"], d)
    np.testing.assert_allclose(r["amax"], [np.abs(d).max()])
    np.testing.assert_allclose(r["cs"], d.sum(1))
    np.testing.assert_allclose(r["rm"], d.max(0))


def test_pointer_scalar_and_broadcast_root():
    acc = rng.standard_normal((3, 4))
    t = AccFetch() * ScalarBroadcast("s", ptr=True)
    np.testing.assert_allclose(evaluate(t, acc, s=np.array([3.0], np.float32)), 3 * acc)
    np.testing.assert_allclose(evaluate(RowBroadcast("b", "float32"), acc,
                                        b=np.arange(4, dtype=np.float32)),
                               np.broadcast_to(np.arange(4.0), (3, 4)))


def test_bind_arguments_failures():
    t = lin_comb_bias_elt_act("relu")
    acc, C, bn, bm = _data(5, 7)
    ok = dict(C=C, bias=bn, alpha=1.0, beta=1.0)
    bind_arguments(t, 5, 7, ok)
    for change, arg in [({"C": C[:, :6]}, "C"), ({"bias": bm}, "bias"), ({"alpha": "x"}, "alpha"),
                        ({"gamma": 1.0}, "gamma")]:
        with pytest.raises(LaunchError) as e:
            bind_arguments(t, 5, 7, {**ok, **change})
        assert e.value.arg == arg
    with pytest.raises(LaunchError) as e:
        evaluate(t, acc, C=C, alpha=1.0, beta=1.0)
    assert e.value.arg == "bias"
    with pytest.raises(LaunchError):
        evaluate(t, acc[0], **ok)
    with pytest.raises(LaunchError) as e:
        bind_arguments(AuxStore(AccFetch(), "z"), 5, 7, {}, need_outputs=True)
    assert e.value.arg == "z"


def test_operator_sugar():
    acc, C, _, bm = _data()
    t = 2 * AccFetch() + 1 - ColBroadcast("v")
    np.testing.assert_allclose(evaluate(t, acc, v=bm), 2 * acc + 1 - bm.astype(float)[:, None])


def test_trees_pickle_with_their_hash_recomputed():
    """EVT trees (and configs holding them) cross process boundaries, e.g. a compile pool."""
    import pickle
    import subprocess
    import sys
    t = evt.lin_comb_bias_elt_act("gelu", alpha=1.0, beta=0.0)
    blob = pickle.dumps(t)
    assert pickle.loads(blob) == t and hash(pickle.loads(blob)) == hash(t)
    code = ("import pickle, sys; t = pickle.loads(sys.stdin.buffer.read()); "
            "from cute_py.epilogue import evt; "
            "print(t == evt.lin_comb_bias_elt_act('gelu', alpha=1.0, beta=0.0) and "
            "hash(t) == hash(evt.lin_comb_bias_elt_act('gelu', alpha=1.0, beta=0.0)))")
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True)
    assert out.stdout.strip() == b"True", out.stderr
