"""The fused arguments of the one-call GEMM as an Epilogue Visitor Tree.

``cute_py.gemm(A, B, C, alpha, beta, *, bias=, activation=, epilogue=, **tensors)`` describes
its epilogue with plain arguments; :func:`fused_epilogue` turns them into the EVT tree the
kernels run (:mod:`cute_py.epilogue.evt`) and says where each named argument of the tree comes
from.  Pure Python: it looks at shapes and dtype names only (NumPy dtypes, CuPy dtypes, torch
dtypes or strings), never at data, and imports neither CuPy nor torch, so the checks also run
while ``torch.compile`` traces on fake tensors.

=====================  =======================================================================
call argument          tree
=====================  =======================================================================
(nothing)              ``None``: the plain GEMM ``D = A @ B`` (the fast plain path)
``alpha != 1``         ``alpha * acc`` (``alpha`` a float kernel argument)
``C``, ``beta != 0``   ``beta * C + alpha * acc`` (``linear_combination``, runtime alpha, beta)
``bias`` (N,) / (1, N) ``... + bias[n]`` (``RowBroadcast``: one value per output column, the
                       ``nn.Linear`` / ``torch.addmm`` convention)
``bias`` (M, 1)        ``... + bias[m]`` (``ColBroadcast``: one value per output row)
``activation``         ``act(...)``, one of :data:`ACTIVATIONS`
``epilogue=tree``      ``tree`` itself; its inputs/outputs from ``C``, ``alpha``, ``beta``,
                       ``bias`` (its vector named ``bias``) and ``**tensors``
=====================  =======================================================================

A ``C`` with ``beta == 0`` is not read (as ``torch.addmm``: NaNs in C do not propagate).

Law (tested on random data): ``evt.evaluate(tree, acc, **bind_fused(names, ...)) ==
act(alpha * acc + beta * C + bias)`` in float64, with C and bias rounded to their dtypes and
alpha, beta to float32.
"""

from __future__ import annotations

import math

from ..errors import LaunchError
from . import evt

__all__ = ["ACTIVATIONS", "fused_epilogue", "bind_fused", "fused_call", "dtype_name"]

#: the activation names ``gemm(..., activation=)`` accepts (EVT compute ops; ``"identity"``
#: is also accepted and means no activation, as ``activation=None``)
ACTIVATIONS = ("relu", "gelu", "gelu_erf", "silu", "sigmoid")

_OP = "gemm"


def dtype_name(dtype) -> str | None:
    """The EVT element-type name (float16 / bfloat16 / float32) of a NumPy, CuPy or torch dtype
    or a dtype string; ``uint16`` is read as bfloat16 bits (how CuPy holds bfloat16).  None
    for anything else."""
    if isinstance(dtype, type):                # np.float16, np.uint16, ...
        dtype = getattr(dtype, "__name__", dtype)
    name = getattr(dtype, "name", None)
    text = str(name if isinstance(name, str) else dtype).lower()
    if text.startswith("torch."):
        text = text[len("torch."):]
    text = {"half": "float16", "float": "float32", "uint16": "bfloat16"}.get(text, text)
    return text if text in evt.DTYPES else None


def _shape_of(x):
    s = getattr(x, "shape", None)
    return None if s is None else tuple(int(v) for v in s)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) or \
        type(x).__module__ == "numpy" and getattr(x, "ndim", 1) == 0 and \
        str(getattr(x, "dtype", "")).startswith(("float", "int"))


def fused_epilogue(M: int, N: int, *, D_dtype, C_dtype=None, has_c: bool = False,
                   alpha: float = 1.0, beta: float = 0.0, bias_shape=None, bias_dtype=None,
                   activation: str | None = None, epilogue=None, tensors=None):
    """``(tree, names)`` for the call ``gemm(A, B, C, alpha, beta, bias=, activation=,
    epilogue=, **tensors)`` with an M x N output of ``D_dtype``.

    - ``has_c`` / ``C_dtype``: whether the call passed C, and its dtype;
    - ``bias_shape`` / ``bias_dtype``: the bias (None when absent): ``(N,)`` or ``(1, N)``
      (per output column) or ``(M, 1)`` (per output row);
    - ``epilogue``: an EVT tree (then ``activation`` must be None; the call's C, alpha, beta
      and bias bind to the tree's ``C``, scalar ``alpha`` / ``beta`` and vector ``bias``);
      ``tensors``: the call's ``**tensors`` (arrays with ``shape`` / ``dtype``, or numbers for
      scalar arguments), checked against the tree's signature (shape, dtype).

    Returns ``(None, {})`` for the plain GEMM (no C read, ``alpha == 1``, no bias, no
    activation, no tree).  Otherwise ``names`` maps every argument of the tree to where it
    comes from: a float (the value of a scalar kernel argument: alpha, beta), ``"C"``,
    ``"bias"`` (a length-N or length-M vector once :func:`bind_fused` flattened it), or the
    key of ``tensors``.  Every mistake raises :class:`LaunchError` naming the call's argument
    (``gemm: bias ...``).
    """
    if tensors is None:
        tensors = {}
    for arg, v in (("M", M), ("N", N)):
        if isinstance(v, bool) or not hasattr(v, "__index__") or v < 1:
            raise LaunchError(_OP, arg, "must be a positive int", actual=v)
    M, N = int(M), int(N)
    d_dt = dtype_name(D_dtype)
    if d_dt is None:
        raise LaunchError(_OP, "out", "has an element type the epilogue cannot write",
                          expected=" | ".join(evt.DTYPES), actual=D_dtype)
    for arg, v in (("alpha", alpha), ("beta", beta)):
        if not _is_number(v) or not math.isfinite(float(v)):
            raise LaunchError(_OP, arg, "must be a finite number", actual=v)
    alpha, beta = float(alpha), float(beta)
    c_dt = None
    if has_c:
        c_dt = dtype_name(C_dtype)
        if c_dt is None:
            raise LaunchError(_OP, "C", "has an unsupported element type",
                              expected=" | ".join(evt.DTYPES), actual=C_dtype)
    if epilogue is not None:
        return _tree_call(M, N, epilogue, has_c, c_dt, alpha, beta, bias_shape, bias_dtype,
                          activation, tensors)
    if tensors:
        name = sorted(tensors)[0]
        raise LaunchError(_OP, name, "is a named tensor, but the call has no epilogue tree "
                          "that reads it", expected="epilogue=<EVT tree>", actual=name)
    if activation == "identity":
        activation = None
    if activation is not None and activation not in ACTIVATIONS:
        raise LaunchError(_OP, "activation", "is not a known activation",
                          expected=" | ".join(("identity",) + ACTIVATIONS), actual=activation)
    bias_kind = None
    if bias_shape is not None:
        bias_kind = _bias_kind(M, N, bias_shape)
        b_dt = dtype_name(bias_dtype)
        if b_dt is None:
            raise LaunchError(_OP, "bias", "has an unsupported element type",
                              expected=" | ".join(evt.DTYPES), actual=bias_dtype)
    use_c = has_c and beta != 0.0
    if not use_c and alpha == 1.0 and bias_kind is None and activation is None:
        return None, {}
    names: dict = {}
    if use_c:
        x = evt.linear_combination(None, None, element_c=c_dt)
        names.update(alpha=alpha, beta=beta, C="C")
    elif alpha != 1.0:
        x = evt.linear_combination(None, 0.0)
        names["alpha"] = alpha
    else:
        x = evt.AccFetch()
    if bias_kind is not None:
        x = evt.add(x, (evt.RowBroadcast if bias_kind == "row" else evt.ColBroadcast)(
            "bias", b_dt))
        names["bias"] = "bias"
    if activation is not None:
        x = evt.Compute(activation, x)
    return x, names


def _bias_kind(M, N, shape) -> str:
    """"row" (a RowBroadcast: indexed by n) or "col" (a ColBroadcast: indexed by m)."""
    shape = tuple(shape)
    if shape in ((N,), (1, N)):
        return "row"
    if shape == (M, 1):
        return "col"
    raise LaunchError(_OP, "bias", "must be a length-N vector (one value per output column, "
                      "as nn.Linear) or an (M, 1) column (one value per output row)",
                      expected=f"({N},) or (1, {N}) or ({M}, 1)", actual=shape)


def _tree_call(M, N, tree, has_c, c_dt, alpha, beta, bias_shape, bias_dtype, activation,
               tensors):
    if not isinstance(tree, evt.Node):
        raise LaunchError(_OP, "epilogue", "must be an EVT tree (cute_py.epilogue.evt node)",
                          actual=type(tree).__name__)
    if activation is not None:
        raise LaunchError(_OP, "activation", "cannot be combined with an epilogue tree; put "
                          "it in the tree (e.g. evt.lin_comb_bias_elt_act)", actual=activation)
    sig = tree.signature
    names: dict = {}
    if bias_shape is not None:       # binds to the tree's vector named "bias"
        role, dtype = sig.get("bias", ("", ""))
        if role not in ("row", "col"):
            raise LaunchError(_OP, "bias", "is given but the epilogue tree has no row/column "
                              "vector named 'bias' to bind it to (put the bias in the tree)",
                              actual=tuple(bias_shape))
        shape = tuple(bias_shape)
        want = ((N,), (1, N)) if role == "row" else ((M,), (M, 1))
        if shape not in want:
            raise LaunchError(_OP, "bias", f"has the wrong shape for the tree's {role} vector",
                              expected=" or ".join(map(str, want)), actual=shape)
        if dtype_name(bias_dtype) != dtype:
            raise LaunchError(_OP, "bias", f"has the wrong dtype for the tree's {role} vector",
                              expected=dtype, actual=bias_dtype)
        names["bias"] = "bias"
    for key in tensors:
        if key in ("C", "D"):
            raise LaunchError(_OP, key, f"is an argument of gemm itself, not a named tensor "
                              f"(pass it as gemm(A, B, C=...) / out=)", actual=key)
        if key not in sig:
            raise LaunchError(_OP, key, "is not an argument of the epilogue tree",
                              expected=sorted(k for k in sig if k != "C"), actual=key)
    if "C" in sig:
        want = sig["C"][1]
        if not has_c:
            raise LaunchError(_OP, "C", f"is required: the epilogue tree reads C ({want})")
        if c_dt != want:
            raise LaunchError(_OP, "C", "has a dtype other than the tree's SrcFetch",
                              expected=want, actual=c_dt)
        names["C"] = "C"
    elif has_c:
        raise LaunchError(_OP, "C", "is given but the epilogue tree does not read C "
                          "(no SrcFetch)")
    for arg, value, default in (("alpha", alpha, 1.0), ("beta", beta, 0.0)):
        role = sig.get(arg, ("",))[0]
        if role == "scalar" and arg not in tensors:
            names[arg] = value
        elif value != default:
            raise LaunchError(_OP, arg, "is given but the epilogue tree has no scalar argument "
                              f"{arg!r} left to bind it to", actual=value)
    for name, (role, dtype) in sig.items():
        if name in names:
            continue
        base = role.split(":")[0]
        if name not in tensors:
            kind = "output" if name in evt.outputs(tree) else "input"
            raise LaunchError(_OP, name, f"is missing: the epilogue tree's {base} {kind} "
                              f"({dtype})", expected=name)
        value = tensors[name]
        if base == "scalar":
            if not _is_number(value):
                raise LaunchError(_OP, name, "must be a number (a scalar kernel argument)",
                                  actual=type(value).__name__)
            names[name] = name
            continue
        shape = _shape_of(value)
        if shape is None:
            raise LaunchError(_OP, name, f"must be an array ({base}, {dtype})",
                              actual=type(value).__name__)
        want = {"src": (M, N), "aux_load": (M, N), "aux_store": (M, N), "row": (N,),
                "col": (M,), "row_reduce": (N,), "col_reduce": (M,)}.get(base)
        if want is None:
            ok = math.prod(shape) == 1
            want = (1,)
        else:
            ok = shape == want
        if not ok:
            raise LaunchError(_OP, name, f"has the wrong shape for the tree's {base} argument",
                              expected=want, actual=shape)
        got = dtype_name(getattr(value, "dtype", None))
        if got != dtype:
            raise LaunchError(_OP, name, f"has the wrong dtype for the tree's {base} argument",
                              expected=dtype, actual=getattr(value, "dtype", None))
        names[name] = name
    return tree, names


def bind_fused(names: dict, *, C=None, bias=None, tensors=None) -> dict:
    """The ``tensors`` dict of a launch (``Sm90Gemm.prepare(tensors=...)``, ``evt.evaluate``):
    ``names`` from :func:`fused_epilogue` with the call's arrays.  A ``(1, N)`` or ``(M, 1)``
    bias is flattened to a vector (``reshape(-1)``, a view for NumPy, CuPy and torch).

    Law: ``set(bind_fused(names, ...)) == set(names)``.
    """
    tensors = tensors or {}
    out = {}
    for name, src in names.items():
        if not isinstance(src, str):
            out[name] = src
        elif src == "C" and name == "C":
            out[name] = C
        elif src == "bias" and name == "bias" and bias is not None and "bias" not in tensors:
            out[name] = bias.reshape(-1) if len(_shape_of(bias) or ()) != 1 else bias
        else:
            try:
                out[name] = tensors[src]
            except KeyError:
                raise LaunchError("gemm", src, "is missing") from None
    return out



def fused_call(M: int, N: int, D_dtype, C=None, alpha=1.0, beta=0.0, *, bias=None,
               activation=None, epilogue=None, tensors=None):
    """:func:`fused_epilogue` then :func:`bind_fused` on the call's own arrays (anything with
    ``shape`` and ``dtype``: NumPy, CuPy, torch): ``(tree, launch_tensors)``, ``(None, {})``
    for the plain GEMM.  ``launch_tensors`` is what ``Sm90Gemm.prepare(tensors=...)`` and
    ``evt.evaluate`` take (the same objects, a 2-D bias flattened by ``reshape(-1)``)."""
    tensors = dict(tensors or {})
    if bias is not None and _shape_of(bias) is None:
        raise LaunchError(_OP, "bias", "must be an array", actual=type(bias).__name__)
    tree, names = fused_epilogue(
        M, N, D_dtype=D_dtype, C_dtype=None if C is None else getattr(C, "dtype", None),
        has_c=C is not None, alpha=alpha, beta=beta,
        bias_shape=None if bias is None else _shape_of(bias),
        bias_dtype=None if bias is None else getattr(bias, "dtype", None),
        activation=activation, epilogue=epilogue, tensors=tensors)
    if tree is None:
        return None, {}
    return tree, bind_fused(names, C=C, bias=bias, tensors=tensors)
