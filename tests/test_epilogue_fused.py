"""The one-call GEMM's fused arguments as EVT trees (cute_py.epilogue.fused): the law
``evaluate(tree) == act(alpha*acc + beta*C + bias)`` and the argument checks."""

import numpy as np
import pytest

from cute_py.epilogue import evt
from cute_py.epilogue.fused import (ACTIVATIONS, bind_fused, dtype_name, fused_call,
                                    fused_epilogue)
from cute_py.errors import LaunchError

rng = np.random.default_rng(20)

_ACT = {
    None: lambda x: x,
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "gelu_erf": lambda x: 0.5 * x * (1 + np.vectorize(__import__("math").erf)(x / np.sqrt(2))),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}


def _bf16_bits(x):
    """float -> raw bfloat16 bits (uint16), round to nearest even; and the rounded values."""
    r = evt.round_to(x, "bfloat16").astype(np.float32)
    return (r.view(np.uint32) >> 16).astype(np.uint16), r.astype(np.float64)


def _array(x, dt):
    """(array as a launch would hold it, its values rounded to dt as float64)."""
    if dt == "bfloat16":
        return _bf16_bits(x)
    a = np.asarray(x).astype(dt)
    return a, a.astype(np.float64)


@pytest.mark.parametrize("activation", [None] + list(ACTIVATIONS))
@pytest.mark.parametrize("bias", [None, "n", "1n", "m1"])
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_law_tree_equals_numpy_formula(activation, bias, dt):
    for M, N, alpha, beta, has_c in ((37, 53, 1.0, 0.0, False), (1, 9, 0.75, 0.0, False),
                                     (29, 3, 1.25, -0.5, True), (17, 17, 1.0, 1.0, True)):
        acc = rng.standard_normal((M, N)) * 2
        bshape = {None: None, "n": (N,), "1n": (1, N), "m1": (M, 1)}[bias]
        tree, names = fused_epilogue(M, N, D_dtype=dt, C_dtype=dt, has_c=has_c, alpha=alpha,
                                     beta=beta, bias_shape=bshape, bias_dtype=dt,
                                     activation=activation)
        plain = not has_c and alpha == 1.0 and bias is None and activation is None
        assert (tree is None) == plain
        if plain:
            assert names == {}
            continue
        C, c64 = _array(rng.standard_normal((M, N)), dt) if has_c else (None, 0.0)
        b, b64 = _array(rng.standard_normal(bshape), dt) if bshape else (None, 0.0)
        got = evt.evaluate(tree, acc, **bind_fused(names, C=C, bias=b))
        a32, be32 = float(np.float32(alpha)), float(np.float32(beta))
        want = _ACT[activation](a32 * acc + be32 * c64 + b64)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        # the output rounded to D's dtype agrees too
        np.testing.assert_allclose(evt.round_to(got, dt), evt.round_to(want, dt),
                                   rtol=1e-2, atol=1e-2)


def test_beta_zero_does_not_read_c_and_trees_match_the_kernels_defaults():
    tree, names = fused_epilogue(8, 8, D_dtype="float16", C_dtype="float16", has_c=True,
                                 alpha=2.0, beta=0.0)
    assert "C" not in tree.signature and names == {"alpha": 2.0}
    # C read: the same tree as gemm_sm90's default linear-combination kernel (one cache key)
    tree, names = fused_epilogue(8, 8, D_dtype="bfloat16", C_dtype="bfloat16", has_c=True,
                                 alpha=1.0, beta=0.5)
    assert tree == evt.linear_combination(element_c="bfloat16")
    assert names == {"alpha": 1.0, "beta": 0.5, "C": "C"}
    # relu(alpha*acc + beta*C + bias): the shipped fused configuration's tree
    tree, _ = fused_epilogue(8, 8, D_dtype="float16", C_dtype="float16", has_c=True,
                             alpha=1.5, beta=0.5, bias_shape=(8,), bias_dtype="float16",
                             activation="relu")
    assert tree == evt.lin_comb_bias_elt_act("relu", bias="col")
    tree, _ = fused_epilogue(8, 8, D_dtype="float16", bias_shape=(8,), bias_dtype="float16",
                             activation="gelu")
    assert tree == evt.lin_comb_bias_elt_act("gelu", bias="col", alpha=1.0, beta=0.0)


def test_dtype_names():
    assert dtype_name(np.float16) == "float16" and dtype_name(np.dtype("float32")) == "float32"
    assert dtype_name("torch.bfloat16") == "bfloat16" and dtype_name(np.uint16) == "bfloat16"
    assert dtype_name("torch.half") == "float16" and dtype_name(np.int8) is None


def _err(match, **kw):
    args = dict(D_dtype="float16")
    args.update(kw)
    with pytest.raises(LaunchError, match=match) as e:
        fused_epilogue(kw.pop("M", 6), kw.pop("N", 5), **{k: v for k, v in args.items()
                                                             if k not in ("M", "N")})
    assert str(e.value).startswith("gemm: ")
    return e.value


def test_bad_fused_arguments_name_the_call_argument():
    assert _err("bias", bias_shape=(6,), bias_dtype="float16").arg == "bias"   # M, not N
    assert _err("bias", bias_shape=(6, 5), bias_dtype="float16").arg == "bias"
    assert _err("bias", bias_shape=(5,), bias_dtype="int32").arg == "bias"
    assert _err("activation", activation="tanh").arg == "activation"
    assert _err("activation", activation="Identity").arg == "activation"
    assert _err("alpha", alpha=float("nan")).arg == "alpha"
    assert _err("beta", beta="1").arg == "beta"
    assert _err("C", has_c=True, C_dtype="int8", beta=1.0).arg == "C"
    assert _err("out", D_dtype="int8").arg == "out"
    assert _err("M", M=0).arg == "M" and _err("N", N=2.0).arg == "N"
    assert fused_epilogue(np.int64(3), np.int32(4), D_dtype="float16", alpha=2.0)[0] is not None
    assert _err("scale", tensors={"scale": np.ones(5)}).arg == "scale"


def test_identity_activation_is_no_activation():
    """``activation="identity"`` (documented by ``cute_py.gemm``) is ``activation=None``."""
    assert fused_epilogue(6, 5, D_dtype="float16", activation="identity") == (None, {})
    for kw in ({"alpha": 2.0}, {"bias_shape": (5,), "bias_dtype": "float16"}):
        assert fused_epilogue(6, 5, D_dtype="float16", activation="identity", **kw) == \
            fused_epilogue(6, 5, D_dtype="float16", **kw)


def test_tree_with_bias_or_activation_is_refused():
    t = evt.lin_comb_elt_act("relu", beta=0.0)
    assert _err("bias", epilogue=t, bias_shape=(5,), bias_dtype="float16").arg == "bias"
    t = evt.lin_comb_bias_elt_act_aux("gelu", alpha=1.0, beta=0.0)       # bias[n] (float16)
    aux = {"aux": np.empty((6, 5), np.float16)}
    for shape in ((5,), (1, 5)):
        _, names = fused_epilogue(6, 5, D_dtype="float16", epilogue=t, bias_shape=shape,
                                  bias_dtype="float16", tensors=aux)
        assert names == {"bias": "bias", "aux": "aux"}
        assert bind_fused(names, bias=np.ones(shape), tensors=aux)["bias"].shape == (5,)
    assert _err("bias", epilogue=t, bias_shape=(6, 1), bias_dtype="float16", tensors=aux
                ).arg == "bias"
    assert _err("bias", epilogue=t, bias_shape=(5,), bias_dtype="float32", tensors=aux
                ).arg == "bias"
    assert _err("missing", epilogue=t, tensors=aux).arg == "bias"
    assert _err("activation", epilogue=t, activation="relu").arg == "activation"
    assert _err("epilogue", epilogue="relu").arg == "epilogue"


def test_tree_arguments_are_checked_by_name():
    M, N = 6, 5
    scaled = evt.AccFetch() * evt.ColBroadcast("scale", "float32")
    tree = evt.ScalarReduction(evt.AuxStore(scaled, "scaled", "float16")
                               + evt.AuxLoad("residual", "float16"), "amax", "absmax")
    good = dict(scale=np.ones(M, np.float32), residual=np.ones((M, N), np.float16),
                scaled=np.empty((M, N), np.float16), amax=np.empty(1, np.float32))
    t, names = fused_epilogue(M, N, D_dtype="float16", epilogue=tree, tensors=good)
    assert t is tree and set(names) == set(good)
    assert set(bind_fused(names, tensors=good)) == set(good)
    for name, bad, match in (("scale", np.ones(N, np.float32), "shape"),
                             ("scale", np.ones(M, np.float16), "dtype"),
                             ("residual", np.ones((M, N), np.float32), "dtype"),
                             ("residual", np.ones((N, M), np.float16), "shape"),
                             ("scaled", 3.0, "array"),
                             ("amax", np.ones(2, np.float32), "shape")):
        e = _err(match, epilogue=tree, tensors={**good, name: bad})
        assert e.arg == name
    for name in good:
        rest = {k: v for k, v in good.items() if k != name}
        assert _err("missing", epilogue=tree, tensors=rest).arg == name
    assert _err("not an argument", epilogue=tree, tensors={**good, "bias": good["scale"]}
                ).arg == "bias"
    assert _err("C", epilogue=tree, tensors=good, has_c=True, C_dtype="float16").arg == "C"
    assert _err("alpha", epilogue=tree, tensors=good, alpha=2.0).arg == "alpha"
    assert _err("C", epilogue=tree, tensors={**good, "C": good["residual"]}).arg == "C"


def test_tree_binds_c_alpha_beta_from_the_call():
    M, N = 7, 9
    tree = evt.lin_comb_bias_elt_act("silu", bias="row")   # bias indexed by m
    acc = rng.standard_normal((M, N))
    C = rng.standard_normal((M, N)).astype(np.float16)
    bias = rng.standard_normal(M).astype(np.float16)
    _, names = fused_epilogue(M, N, D_dtype="float16", has_c=True, C_dtype="float16",
                              alpha=0.5, beta=2.0, epilogue=tree, tensors={"bias": bias})
    got = evt.evaluate(tree, acc, **bind_fused(names, C=C, tensors={"bias": bias}))
    x = 0.5 * acc + 2.0 * C.astype(np.float64) + bias.astype(np.float64)[:, None]
    np.testing.assert_allclose(got, x / (1 + np.exp(-x)), rtol=1e-6, atol=1e-6)
    assert _err("C", epilogue=tree, tensors={"bias": bias}, M=M, N=N).arg == "C"
    assert _err("C", epilogue=tree, tensors={"bias": bias}, M=M, N=N, has_c=True,
                C_dtype="float32").arg == "C"
    # a scalar given by name in **tensors wins over the call's default
    _, names = fused_epilogue(M, N, D_dtype="float16", has_c=True, C_dtype="float16",
                              epilogue=tree, tensors={"bias": bias, "alpha": 3.0})
    assert names["alpha"] == "alpha" and names["beta"] == 0.0


def test_module_imports_neither_torch_nor_cupy():
    import subprocess
    import sys
    code = ("import sys, cute_py.epilogue.fused; "
            "assert 'torch' not in sys.modules and 'cupy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fused_call_on_arrays():
    M, N = 9, 11
    acc = rng.standard_normal((M, N))
    C = rng.standard_normal((M, N)).astype(np.float16)
    bias = rng.standard_normal((M, 1)).astype(np.float32)
    tree, bound = fused_call(M, N, np.float16, C, 0.5, 2.0, bias=bias, activation="relu")
    assert set(bound) == {"C", "alpha", "beta", "bias"} and bound["bias"].shape == (M,)
    want = np.maximum(0.5 * acc + 2.0 * C.astype(np.float64) + bias.astype(np.float64), 0)
    np.testing.assert_allclose(evt.evaluate(tree, acc, **bound), want, rtol=1e-6, atol=1e-6)
    assert fused_call(M, N, "float16", C, 1.0, 0.0) == (None, {})
    with pytest.raises(LaunchError, match="gemm: bias"):
        fused_call(M, N, "float16", bias=np.ones((M, N), np.float16))
    with pytest.raises(LaunchError, match="gemm: bias must be an array"):
        fused_call(M, N, "float16", bias=1.0)
