"""Epilogue Visitor Trees (EVT): the fusion half of a GEMM epilogue, as a frozen expression tree.

The nodes mirror CUTLASS's SM90 fusion callbacks (``include/cutlass/epilogue/fusion/``):

=========================  ======================================  ===========================
cute_py node               CUTLASS node                            value at output (m, n)
=========================  ======================================  ===========================
``AccFetch()``             ``Sm90AccFetch``                        ``acc[m, n]``
``SrcFetch(dtype)``        ``Sm90SrcFetch``                        ``C[m, n]``
``ScalarBroadcast(name)``  ``Sm90ScalarBroadcast``                 ``alpha`` (constant, kernel
                                                                   argument or ``*ptr``)
``RowBroadcast(name)``     ``Sm90RowBroadcast``                    ``v[n]`` (a length-N row)
``ColBroadcast(name)``     ``Sm90ColBroadcast``                    ``v[m]`` (a length-M column)
``AuxLoad(name)``          ``Sm90AuxLoad``                         ``aux[m, n]``
``Compute(op, *xs)``       ``Sm90Compute<op>`` / ``Sm90EVT``       ``op(x0[m,n], x1[m,n], ...)``
``AuxStore(x, name)``      ``Sm90AuxStore``                        ``x[m, n]``; also writes
                                                                   ``name[m, n] = x[m, n]``
``RowReduction(x, name)``  ``Sm90RowReduction``                    ``x[m, n]``; also
                                                                   ``name[n] = reduce_m x``
``ColReduction(x, name)``  ``Sm90ColReduction``                    ``x[m, n]``; also
                                                                   ``name[m] = reduce_n x``
``ScalarReduction(x, n)``  ``Sm90ScalarReduction``                 ``x[m, n]``; also
                                                                   ``name[0] = reduce x``
=========================  ======================================  ===========================

(As in CUTLASS, a *row* broadcast is a vector indexed by the column ``n`` that is the same on
every row — CUTLASS's "per-column bias" — and a *column* broadcast is indexed by ``m``, the
"per-row bias".)

A tree is the value the epilogue writes to ``D`` (converted to D's element type by the
collective).  Nodes are frozen and hashable; equal sub-trees are one value, so a tree is really a
DAG and a shared sub-expression is computed once (CUTLASS's ``Sm90TopologicalVisitor``).  Every
node is checked when it is built (op names, arities, dtypes, argument names, one C dtype per tree,
one role per name), so a tree that exists is well formed; :func:`bind_arguments` checks the
tensors of one launch against a problem shape.  :func:`evaluate` is the NumPy float64 reference
that *defines* what every node means; the CUDA lowering (``cute_py.backends.cuda.epilogue``) must
agree with it.
"""

from __future__ import annotations

import keyword
import math
import re
from typing import Any, Iterator

import numpy as np

from ..errors import LaunchError, TensorError
from ..numeric import BYTES, canonical_type

__all__ = [
    "Node", "AccFetch", "SrcFetch", "ScalarBroadcast", "RowBroadcast", "ColBroadcast",
    "AuxLoad", "Compute", "AuxStore", "RowReduction", "ColReduction", "ScalarReduction",
    "COMPUTE_OPS", "REDUCTION_OPS", "DTYPES",
    "multiply_add", "add", "multiply", "minus", "maximum", "minimum", "negate", "relu", "gelu",
    "gelu_erf", "silu", "sigmoid", "clamp", "convert",
    "linear_combination", "lin_comb_per_row_bias", "lin_comb_per_col_bias", "lin_comb_elt_act",
    "lin_comb_bias_elt_act", "lin_comb_bias_elt_act_aux",
    "nodes", "inputs", "outputs", "bind_arguments", "evaluate", "evaluate_all", "round_to",
    "reduction_identity", "iter_tree",
]

# ---------------------------------------------------------------------------------------------
# Element types

DTYPES = ("float16", "bfloat16", "float32")
_DTYPE_BYTES = {t: BYTES[t] for t in DTYPES}


def _dtype(value, op: str, arg: str = "dtype") -> str:
    """Normalise a dtype-like (name, alias, NumPy dtype) to one of :data:`DTYPES`."""
    key = canonical_type(value, op, arg, error=TensorError)
    if key not in DTYPES:
        raise TensorError(op, arg, "is not a supported element type",
                          expected=" | ".join(DTYPES), actual=value)
    return key


def _bf16_round(x: np.ndarray) -> np.ndarray:
    """Round float values to bfloat16 (round to nearest even), returned as float64."""
    f = np.asarray(x, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32).astype(np.float64)
    return np.where(np.isnan(f), np.nan, out)


def round_to(x, dtype) -> np.ndarray:
    """``x`` rounded to the element type ``dtype`` (float16 / bfloat16 / float32), as float64.

    Law: ``round_to(round_to(x, t), t) == round_to(x, t)`` and values representable in ``t`` are
    unchanged.
    """
    dtype = _dtype(dtype, "round_to")
    x = np.asarray(x, dtype=np.float64)
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        return _bf16_round(x)
    return x.astype(np.float32).astype(np.float64)


# ---------------------------------------------------------------------------------------------
# Ops

def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def _gelu_erf(x):
    from math import erf
    return 0.5 * x * (1.0 + np.vectorize(erf, otypes=[np.float64])(x / math.sqrt(2.0)))


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


# name -> (arity, number of float parameters, numpy reference taking (*children, *params))
COMPUTE_OPS: dict[str, tuple[int, int, Any]] = {
    "multiply_add": (3, 0, lambda a, b, c: a * b + c),
    "add": (2, 0, lambda a, b: a + b),
    "minus": (2, 0, lambda a, b: a - b),
    "multiply": (2, 0, lambda a, b: a * b),
    "maximum": (2, 0, lambda a, b: np.maximum(a, b)),
    "minimum": (2, 0, lambda a, b: np.minimum(a, b)),
    "negate": (1, 0, lambda a: -a),
    "identity": (1, 0, lambda a: a),
    "relu": (1, 0, lambda a: np.maximum(a, 0.0)),
    "gelu": (1, 0, _gelu_tanh),
    "gelu_erf": (1, 0, _gelu_erf),
    "silu": (1, 0, lambda a: a * _sigmoid(a)),
    "sigmoid": (1, 0, _sigmoid),
    "clamp": (1, 2, lambda a, lo, hi: np.clip(a, lo, hi)),
}
COMPUTE_OPS["convert"] = COMPUTE_OPS["identity"]

REDUCTION_OPS = ("sum", "max", "min", "absmax")


def reduction_identity(op: str) -> float:
    """The identity element of a reduction op (what its output buffer starts from)."""
    return {"sum": 0.0, "absmax": 0.0, "max": -math.inf, "min": math.inf}[op]


_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_RESERVED = {"C", "D", "acc", "M", "N", "L", "m", "n"}

# the "kind" of a value: how it varies over the output tile
_SCALAR, _ROW, _COL, _MATRIX = "scalar", "row", "col", "matrix"


def _join_kinds(kinds) -> str:
    ks = set(kinds) - {_SCALAR}
    if not ks:
        return _SCALAR
    if ks == {_ROW}:
        return _ROW
    if ks == {_COL}:
        return _COL
    return _MATRIX


# ---------------------------------------------------------------------------------------------
# Nodes

class Node:
    """Base class of EVT nodes: frozen, hashable, compared by structure.

    Every node has ``children`` (a tuple of nodes), ``dtype`` (the element type of its value),
    ``kind`` (``"scalar"``, ``"row"``, ``"col"`` or ``"matrix"``: how its value varies over the
    output) and ``signature`` (``{name: (role, dtype)}`` for every named argument of the tree).
    """

    __slots__ = ("_key", "_hash", "children", "dtype", "kind", "signature")
    _label = "node"

    def _init(self, key: tuple, children: tuple, dtype: str, kind: str, own: dict | None = None):
        op = type(self).__name__
        for i, c in enumerate(children):
            if not isinstance(c, Node):
                raise TensorError(op, f"child {i}", "is not an EVT node",
                                  expected="Node", actual=type(c).__name__)
        sig: dict[str, tuple[str, str]] = {}
        for part in [c.signature for c in children] + [own or {}]:
            for name, role in part.items():
                if name in sig and sig[name] != role:
                    raise TensorError(op, name, "is used with two different roles in one tree",
                                      expected=sig[name], actual=role)
                sig[name] = role
        object.__setattr__(self, "_key", (type(self).__name__,) + key)
        object.__setattr__(self, "_hash", hash(self._key))
        object.__setattr__(self, "children", children)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "signature", dict(sorted(sig.items())))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is frozen")

    # pickling (e.g. configs sent to a compile pool): state by slot; the hash is recomputed
    # in the receiving process because string hashes differ between processes
    def __getstate__(self):
        names = [n for c in type(self).__mro__ for n in getattr(c, "__slots__", ())]
        return {n: getattr(self, n) for n in names if n != "_hash" and hasattr(self, n)}

    def __setstate__(self, state):
        for n, v in state.items():
            object.__setattr__(self, n, v)
        object.__setattr__(self, "_hash", hash(self._key))

    def __eq__(self, other):
        return isinstance(other, Node) and self._key == other._key

    def __hash__(self):
        return self._hash

    # arithmetic sugar: builds Compute nodes
    def __add__(self, other):
        return Compute("add", self, _lift(other))

    def __radd__(self, other):
        return Compute("add", _lift(other), self)

    def __sub__(self, other):
        return Compute("minus", self, _lift(other))

    def __rsub__(self, other):
        return Compute("minus", _lift(other), self)

    def __mul__(self, other):
        return Compute("multiply", self, _lift(other))

    def __rmul__(self, other):
        return Compute("multiply", _lift(other), self)

    def __neg__(self):
        return Compute("negate", self)

    def pretty(self) -> str:
        """A multi-line drawing of the tree with each node's CUTLASS name and dtype."""
        lines: list[str] = []

        def walk(node, prefix, last, top):
            head = "" if top else prefix + ("└─ " if last else "├─ ")
            lines.append(head + node._describe())
            ext = "" if top else prefix + ("   " if last else "│  ")
            for i, c in enumerate(node.children):
                walk(c, ext, i == len(node.children) - 1, False)

        walk(self, "", True, True)
        return "\n".join(lines)

    def _describe(self) -> str:  # one line for pretty()
        return f"{self._label} -> {self.dtype}"


def _lift(x) -> Node:
    if isinstance(x, Node):
        return x
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return ScalarBroadcast(None, value=float(x))
    raise TensorError("Node arithmetic", "operand", "must be an EVT node or a number",
                      actual=type(x).__name__)


def _check_name(name, op: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name) or keyword.iskeyword(name) \
            or name in _RESERVED or name.startswith("cute_") or "__" in name:
        raise TensorError(op, "name", "must be a plain identifier (letters, digits, _), not "
                          f"one of {sorted(_RESERVED)}", expected="identifier", actual=name)
    return name


class AccFetch(Node):
    """The accumulator (``Sm90AccFetch``): ``value[m, n] = acc[m, n]`` (float32)."""

    __slots__ = ()
    _label = "AccFetch"

    def __init__(self):
        self._init((), (), "float32", _MATRIX)

    def __repr__(self):
        return "AccFetch()"

    def __str__(self):
        return "acc"


class SrcFetch(Node):
    """The source matrix C (``Sm90SrcFetch``): ``value[m, n] = C[m, n]``; C is loaded by the
    epilogue's producer.  One C dtype per tree."""

    __slots__ = ()
    _label = "SrcFetch"

    def __init__(self, dtype="float16"):
        dtype = _dtype(dtype, "SrcFetch")
        self._init((dtype,), (), dtype, _MATRIX, {"C": ("src", dtype)})

    def __repr__(self):
        return f"SrcFetch({self.dtype!r})"

    def __str__(self):
        return "C"


class ScalarBroadcast(Node):
    """A scalar (``Sm90ScalarBroadcast``), the same at every (m, n).

    - ``value`` given: a compile-time constant (``name`` may be ``None``);
    - ``value`` omitted, ``ptr=False``: a float kernel argument ``name`` given at launch;
    - ``ptr=True``: a device pointer ``name`` (one element of ``dtype``) read by the kernel.
    """

    __slots__ = ("name", "value", "ptr")
    _label = "ScalarBroadcast"

    def __init__(self, name=None, value=None, *, ptr: bool = False, dtype="float32"):
        op = "ScalarBroadcast"
        dtype = _dtype(dtype, op)
        if value is not None:
            if ptr:
                raise TensorError(op, "ptr", "cannot be combined with a constant value",
                                  expected="ptr=False", actual=True)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise TensorError(op, "value", "must be a finite number", actual=value)
            value = float(value)
            if name is not None:
                _check_name(name, op)
            own = {}
        else:
            _check_name(name, op)
            own = {name: ("scalar_ptr" if ptr else "scalar", dtype)}
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "ptr", bool(ptr))
        self._init((name, value, bool(ptr), dtype), (), dtype, _SCALAR, own)

    @property
    def is_constant(self) -> bool:
        return self.value is not None

    def __repr__(self):
        if self.value is not None:
            return f"ScalarBroadcast({self.name!r}, value={self.value!r})"
        return f"ScalarBroadcast({self.name!r}, ptr={self.ptr!r}, dtype={self.dtype!r})"

    def __str__(self):
        if self.value is not None:
            return repr(self.value) if self.name is None else f"{self.name}={self.value!r}"
        return ("*" if self.ptr else "") + self.name

    def _describe(self):
        return f"ScalarBroadcast({self}) -> {self.dtype}"


class _Vector(Node):
    __slots__ = ("name",)

    def __init__(self, name, dtype="float16"):
        op = type(self).__name__
        _check_name(name, op)
        dtype = _dtype(dtype, op)
        object.__setattr__(self, "name", name)
        self._init((name, dtype), (), dtype, self._kind, {name: (self._role, dtype)})

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r}, {self.dtype!r})"

    def _describe(self):
        return f"{self._label}({self}) -> {self.dtype}"


class RowBroadcast(_Vector):
    """A length-N row vector broadcast over M (``Sm90RowBroadcast``): ``value[m, n] = v[n]``."""

    __slots__ = ()
    _label, _kind, _role = "RowBroadcast", _ROW, "row"

    def __str__(self):
        return f"{self.name}[n]"


class ColBroadcast(_Vector):
    """A length-M column vector broadcast over N (``Sm90ColBroadcast``): ``value[m, n] = v[m]``."""

    __slots__ = ()
    _label, _kind, _role = "ColBroadcast", _COL, "col"

    def __str__(self):
        return f"{self.name}[m]"


class AuxLoad(_Vector):
    """An auxiliary M x N input (``Sm90AuxLoad``): ``value[m, n] = aux[m, n]``; loaded by the
    epilogue's producer like C."""

    __slots__ = ()
    _label, _kind, _role = "AuxLoad", _MATRIX, "aux_load"

    def __str__(self):
        return f"{self.name}[m,n]"


class Compute(Node):
    """An elementwise op on its children (``Sm90Compute<op>`` under ``Sm90EVT``).

    ``value = round_to(op(*children, *params), dtype)``: children are converted to the compute
    type (float32), the op applied, the result converted to ``dtype`` (``"convert"`` is the
    identity op and exists for this conversion).  Ops: see :data:`COMPUTE_OPS`; ``clamp``
    takes ``params=(lo, hi)``.  ``gelu`` is the tanh approximation, ``gelu_erf`` the exact one.
    """

    __slots__ = ("op", "params")
    _label = "Compute"

    def __init__(self, op: str, *children, dtype="float32", params=()):
        name = "Compute"
        if op not in COMPUTE_OPS:
            raise TensorError(name, "op", "is not a known compute op",
                              expected=" | ".join(sorted(COMPUTE_OPS)), actual=op)
        arity, nparams, _ = COMPUTE_OPS[op]
        children = tuple(_lift(c) if isinstance(c, (int, float)) and not isinstance(c, bool)
                         else c for c in children)
        if len(children) != arity:
            raise TensorError(name, "children", f"of op {op!r} have the wrong count",
                              expected=arity, actual=len(children))
        for i, c in enumerate(children):
            if not isinstance(c, Node):
                raise TensorError(name, f"child {i}", "is not an EVT node",
                                  expected="Node", actual=type(c).__name__)
        params = tuple(params)
        if len(params) != nparams or not all(
                isinstance(p, (int, float)) and not isinstance(p, bool) for p in params):
            raise TensorError(name, "params", f"of op {op!r} must be {nparams} numbers",
                              expected=nparams, actual=params)
        params = tuple(float(p) for p in params)
        if op == "clamp" and not params[0] <= params[1]:
            raise TensorError(name, "params", "of clamp must satisfy lo <= hi",
                              expected="lo <= hi", actual=params)
        dtype = _dtype(dtype, name)
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "params", params)
        self._init((op, params, dtype, children), children, dtype,
                   _join_kinds(c.kind for c in children) if children else _SCALAR)

    def __repr__(self):
        args = ", ".join([repr(self.op)] + [repr(c) for c in self.children])
        if self.params:
            args += f", params={self.params!r}"
        if self.dtype != "float32":
            args += f", dtype={self.dtype!r}"
        return f"Compute({args})"

    def __str__(self):
        args = ", ".join([str(c) for c in self.children] + [repr(p) for p in self.params])
        if self.op == "convert":
            return f"convert<{self.dtype}>({args})"
        return f"{self.op}({args})"

    def _describe(self):
        p = f"{list(self.params)}" if self.params else ""
        return f"Compute<{self.op}{p}> -> {self.dtype}"


class _PassThrough(Node):
    """A node that passes its child's value through and writes a side output ``name``."""

    __slots__ = ("name", "reduce_op")
    _role = ""

    def __init__(self, child, name, dtype, reduce_op=None):
        op = type(self).__name__
        if not isinstance(child, Node):
            raise TensorError(op, "child", "is not an EVT node", actual=type(child).__name__)
        _check_name(name, op)
        dtype = _dtype(dtype, op)
        if child.kind != _MATRIX:
            raise TensorError(op, "child", "must vary over both m and n (a matrix value)",
                              expected="matrix", actual=child.kind)
        if reduce_op is not None:
            if reduce_op not in REDUCTION_OPS:
                raise TensorError(op, "op", "is not a known reduction",
                                  expected=" | ".join(REDUCTION_OPS), actual=reduce_op)
            if dtype != "float32":
                raise TensorError(op, "dtype", "of a reduction output must be float32 "
                                  "(reduced with atomics)", expected="float32", actual=dtype)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "reduce_op", reduce_op)
        role = self._role if reduce_op is None else f"{self._role}:{reduce_op}"
        self._init((name, dtype, reduce_op, child), (child,), child.dtype, _MATRIX,
                   {name: (role, dtype)})

    @property
    def child(self) -> Node:
        return self.children[0]


class AuxStore(_PassThrough):
    """Writes its child to an auxiliary M x N output (``Sm90AuxStore``) and passes it through:
    ``name[m, n] = round_to(x[m, n], dtype)``, ``value = x``."""

    __slots__ = ("store_dtype",)
    _label, _role = "AuxStore", "aux_store"

    def __init__(self, child, name, dtype="float16"):
        object.__setattr__(self, "store_dtype", _dtype(dtype, "AuxStore"))
        super().__init__(child, name, dtype)

    def __repr__(self):
        return f"AuxStore({self.child!r}, {self.name!r}, {self.store_dtype!r})"

    def __str__(self):
        return f"store<{self.name}:{self.store_dtype}>({self.child})"

    def _describe(self):
        return f"AuxStore({self.name}: {self.store_dtype}) -> {self.dtype}"


class _Reduction(_PassThrough):
    __slots__ = ()

    def __init__(self, child, name, op="sum", dtype="float32"):
        super().__init__(child, name, dtype, reduce_op=op)

    def __repr__(self):
        return f"{type(self).__name__}({self.child!r}, {self.name!r}, {self.reduce_op!r})"

    def __str__(self):
        return f"{self._short}<{self.reduce_op}:{self.name}>({self.child})"

    def _describe(self):
        return f"{self._label}<{self.reduce_op}>({self.name}: float32) -> {self.dtype}"


class RowReduction(_Reduction):
    """Reduces its child over M into a length-N row (``Sm90RowReduction``), passing it through:
    ``name[n] = reduce_{m < M} x[m, n]``.  Ops: sum, max, min, absmax."""

    __slots__ = ()
    _label, _role, _short = "RowReduction", "row_reduce", "row_reduce"


class ColReduction(_Reduction):
    """Reduces its child over N into a length-M column (``Sm90ColReduction``):
    ``name[m] = reduce_{n < N} x[m, n]``."""

    __slots__ = ()
    _label, _role, _short = "ColReduction", "col_reduce", "col_reduce"


class ScalarReduction(_Reduction):
    """Reduces its child over the whole output into one value (``Sm90ScalarReduction``), e.g.
    the absmax of D for FP8 scaling: ``name[0] = reduce_{m, n} x[m, n]``."""

    __slots__ = ()
    _label, _role, _short = "ScalarReduction", "scalar_reduce", "scalar_reduce"


# ---------------------------------------------------------------------------------------------
# Builders (CUTLASS's functor names)

def multiply_add(a, b, c, dtype="float32") -> Compute:
    """``a * b + c`` (CUTLASS ``multiply_add``)."""
    return Compute("multiply_add", a, b, c, dtype=dtype)


def add(a, b, dtype="float32") -> Compute:
    """``a + b``."""
    return Compute("add", a, b, dtype=dtype)


def minus(a, b, dtype="float32") -> Compute:
    """``a - b``."""
    return Compute("minus", a, b, dtype=dtype)


def multiply(a, b, dtype="float32") -> Compute:
    """``a * b``."""
    return Compute("multiply", a, b, dtype=dtype)


def maximum(a, b, dtype="float32") -> Compute:
    """``max(a, b)``."""
    return Compute("maximum", a, b, dtype=dtype)


def minimum(a, b, dtype="float32") -> Compute:
    """``min(a, b)``."""
    return Compute("minimum", a, b, dtype=dtype)


def negate(a, dtype="float32") -> Compute:
    """``-a``."""
    return Compute("negate", a, dtype=dtype)


def relu(a, dtype="float32") -> Compute:
    """``max(a, 0)``."""
    return Compute("relu", a, dtype=dtype)


def gelu(a, dtype="float32") -> Compute:
    """GELU, tanh approximation: ``0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))``."""
    return Compute("gelu", a, dtype=dtype)


def gelu_erf(a, dtype="float32") -> Compute:
    """GELU, exact: ``0.5 a (1 + erf(a / sqrt(2)))``."""
    return Compute("gelu_erf", a, dtype=dtype)


def silu(a, dtype="float32") -> Compute:
    """``a * sigmoid(a)``."""
    return Compute("silu", a, dtype=dtype)


def sigmoid(a, dtype="float32") -> Compute:
    """``1 / (1 + exp(-a))``."""
    return Compute("sigmoid", a, dtype=dtype)


def clamp(a, lo: float, hi: float, dtype="float32") -> Compute:
    """``min(max(a, lo), hi)``; requires ``lo <= hi``."""
    return Compute("clamp", a, params=(lo, hi), dtype=dtype)


def convert(a, dtype) -> Compute:
    """``round_to(a, dtype)``: a type conversion (CUTLASS's NumericConverter)."""
    return Compute("convert", a, dtype=dtype)


_ACTIVATIONS = ("identity", "relu", "gelu", "gelu_erf", "silu", "sigmoid")


def _scalar(x, default_name) -> Node:
    if isinstance(x, Node):
        if x.kind != _SCALAR:
            raise TensorError("linear_combination", default_name, "must be a scalar node",
                              actual=x.kind)
        return x
    if x is None:
        return ScalarBroadcast(default_name)
    return ScalarBroadcast(None, value=x) if not isinstance(x, str) else ScalarBroadcast(x)


def linear_combination(alpha=None, beta=None, element_c="float16") -> Node:
    """CUTLASS ``LinearCombination``: ``D = beta * C + alpha * acc``.

    ``alpha``/``beta``: ``None`` (runtime kernel arguments named alpha/beta), a number
    (compile-time constant), a name, or a ``ScalarBroadcast`` (e.g. a device pointer).
    A constant ``beta == 0`` drops C (no C load), a constant ``alpha == 1`` drops the multiply.
    """
    a = _scalar(alpha, "alpha")
    b = _scalar(beta, "beta")
    scaled = AccFetch() if (a.is_constant and a.value == 1.0) else multiply(a, AccFetch())
    if b.is_constant and b.value == 0.0:
        return scaled
    return multiply_add(b, SrcFetch(element_c), scaled)


def _bias(bias: str, name: str, dtype) -> Node:
    if bias == "row":      # per-row bias: indexed by m (CUTLASS LinCombPerRowBias -> ColBroadcast)
        return ColBroadcast(name, dtype)
    if bias == "col":
        return RowBroadcast(name, dtype)
    raise TensorError("lin_comb_bias", "bias", "must be 'row' (indexed by m) or 'col' "
                      "(indexed by n)", expected="'row' | 'col'", actual=bias)


def lin_comb_per_row_bias(alpha=None, beta=None, element_c="float16", element_bias="float16",
                          name="bias") -> Node:
    """CUTLASS ``LinCombPerRowBias``: ``D[m, n] = beta * C + alpha * acc + bias[m]``."""
    return add(linear_combination(alpha, beta, element_c), ColBroadcast(name, element_bias))


def lin_comb_per_col_bias(alpha=None, beta=None, element_c="float16", element_bias="float16",
                          name="bias") -> Node:
    """CUTLASS ``LinCombPerColBias``: ``D[m, n] = beta * C + alpha * acc + bias[n]``."""
    return add(linear_combination(alpha, beta, element_c), RowBroadcast(name, element_bias))


def _act(x, activation):
    if activation not in _ACTIVATIONS:
        raise TensorError("lin_comb_elt_act", "activation", "is not a known activation",
                          expected=" | ".join(_ACTIVATIONS), actual=activation)
    return x if activation == "identity" else Compute(activation, x)


def lin_comb_elt_act(activation="relu", alpha=None, beta=None, element_c="float16") -> Node:
    """CUTLASS ``LinCombEltAct``: ``D = act(beta * C + alpha * acc)``."""
    return _act(linear_combination(alpha, beta, element_c), activation)


def lin_comb_bias_elt_act(activation="relu", bias="col", alpha=None, beta=None,
                          element_c="float16", element_bias="float16", name="bias") -> Node:
    """CUTLASS ``LinCombPerRow/ColBiasEltAct``: ``D = act(beta * C + alpha * acc + bias)``;
    ``bias="row"`` is indexed by m, ``bias="col"`` by n (one bias per output column, the usual
    neural-network layout with D = X @ W)."""
    x = add(linear_combination(alpha, beta, element_c), _bias(bias, name, element_bias))
    return _act(x, activation)


def lin_comb_bias_elt_act_aux(activation="relu", bias="col", alpha=None, beta=None,
                              element_c="float16", element_bias="float16",
                              element_aux="float16", name="bias", aux="aux") -> Node:
    """CUTLASS ``LinCombPerRowBiasEltActAux``: the pre-activation ``Z = beta*C + alpha*acc +
    bias`` is written to the aux output and ``D = act(Z)``."""
    z = add(linear_combination(alpha, beta, element_c), _bias(bias, name, element_bias))
    return _act(AuxStore(z, aux, element_aux), activation)


# ---------------------------------------------------------------------------------------------
# Tree queries

def nodes(tree: Node) -> list[Node]:
    """Every distinct node of ``tree`` once, children before parents (a topological order)."""
    seen: set = set()
    order: list[Node] = []

    def walk(n):
        if n in seen:
            return
        for c in n.children:
            walk(c)
        seen.add(n)
        order.append(n)

    if not isinstance(tree, Node):
        raise TensorError("nodes", "tree", "is not an EVT node", actual=type(tree).__name__)
    walk(tree)
    return order


def inputs(tree: Node) -> dict[str, tuple[str, str]]:
    """The tree's named inputs: ``{name: (role, dtype)}``; roles src, scalar, scalar_ptr, row,
    col, aux_load."""
    return {k: v for k, v in tree.signature.items() if v[0] in
            ("src", "scalar", "scalar_ptr", "row", "col", "aux_load")}


def outputs(tree: Node) -> dict[str, tuple[str, str]]:
    """The tree's side outputs: ``{name: (role, dtype)}``; roles aux_store and
    row_reduce:op / col_reduce:op / scalar_reduce:op."""
    return {k: v for k, v in tree.signature.items() if k not in inputs(tree)}


def _expected_shape(role: str, M: int, N: int):
    base = role.split(":")[0]
    return {"src": (M, N), "aux_load": (M, N), "aux_store": (M, N), "row": (N,), "col": (M,),
            "row_reduce": (N,), "col_reduce": (M,), "scalar_reduce": (1,),
            "scalar_ptr": (1,)}.get(base)


def bind_arguments(tree: Node, M: int, N: int, tensors: dict, *, op="evaluate",
                   need_outputs=False) -> dict:
    """Check ``tensors`` (name -> array-like or float) against ``tree`` for an M x N output.

    Every input of the tree must be given with its shape (C and aux: (M, N); row vectors: (N,);
    column vectors: (M,); pointer scalars: one element; argument scalars: a number).  With
    ``need_outputs`` every side output must be given too.  Unknown names are rejected.  Returns
    the dict restricted to the tree's names.  Raises :class:`LaunchError` naming the argument.
    """
    sig = tree.signature
    for name in tensors:
        if name not in sig:
            raise LaunchError(op, name, "is not an argument of this epilogue tree",
                              expected=sorted(sig), actual=name)
    out = {}
    for name, (role, dtype) in sig.items():
        is_output = name in outputs(tree)
        if name not in tensors:
            if is_output and not need_outputs:
                continue
            raise LaunchError(op, name, f"is missing ({role}, {dtype})", expected=name)
        value = tensors[name]
        if role == "scalar":
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating,
                                                                  np.integer)):
                raise LaunchError(op, name, "must be a number (a scalar kernel argument)",
                                  actual=type(value).__name__)
            out[name] = float(value)
            continue
        shape = tuple(getattr(value, "shape", np.shape(value)))
        want = _expected_shape(role, M, N)
        if role in ("scalar_ptr", "scalar_reduce"):
            ok = int(np.prod(shape)) >= 1
        else:
            ok = shape == want
        if not ok:
            raise LaunchError(op, name, f"has the wrong shape for a {role} argument",
                              expected=want, actual=shape)
        out[name] = value
    return out


def evaluate_all(tree: Node, acc, **tensors) -> dict:
    """The reference semantics of ``tree`` in float64: returns ``{"D": value, name: output}``
    for D (before D's own rounding) and every side output (aux stores rounded to their dtype;
    reductions over all M x N elements).  ``acc`` is the M x N accumulator."""
    acc = np.asarray(acc, dtype=np.float64)
    if acc.ndim != 2:
        raise LaunchError("evaluate", "acc", "must be an M x N matrix", actual=acc.shape)
    M, N = acc.shape
    args = bind_arguments(tree, M, N, tensors)
    memo: dict = {}
    side: dict = {}
    for node in nodes(tree):
        t = type(node)
        if t is AccFetch:
            v = acc
        elif t is SrcFetch:
            v = round_to(_host(args["C"], node.dtype), node.dtype)
        elif t is ScalarBroadcast:
            if node.value is not None:
                v = np.float64(node.value)
            elif node.ptr:
                v = np.float64(round_to(np.ravel(_host(args[node.name], node.dtype))[:1], node.dtype)[0])
            else:
                v = np.float64(np.float32(args[node.name]))
        elif t is RowBroadcast:
            v = round_to(_host(args[node.name], node.dtype), node.dtype)[None, :]
        elif t is ColBroadcast:
            v = round_to(_host(args[node.name], node.dtype), node.dtype)[:, None]
        elif t is AuxLoad:
            v = round_to(_host(args[node.name], node.dtype), node.dtype)
        elif t is Compute:
            fn = COMPUTE_OPS[node.op][2]
            with np.errstate(over="ignore", invalid="ignore"):
                v = fn(*[memo[c] for c in node.children], *node.params)
            if node.dtype != "float32" or node.op == "convert":
                v = round_to(v, node.dtype)
        else:
            v = memo[node.child]
            full = np.broadcast_to(v, (M, N))
            if t is AuxStore:
                side[node.name] = round_to(full, node.store_dtype)
            else:
                red = {"sum": np.sum, "max": np.max, "min": np.min,
                       "absmax": lambda a, axis=None: np.max(np.abs(a), axis=axis)}[node.reduce_op]
                axis = {RowReduction: 0, ColReduction: 1, ScalarReduction: None}[t]
                r = red(full, axis=axis)
                side[node.name] = np.atleast_1d(np.asarray(r, dtype=np.float64))
        memo[node] = v
    side["D"] = np.broadcast_to(memo[tree], (M, N)).astype(np.float64)
    return side


def evaluate(tree: Node, acc, **tensors) -> np.ndarray:
    """The reference value of ``D`` (float64, before D's rounding): see :func:`evaluate_all`.

    Law: ``evaluate(linear_combination(), acc, C=c, alpha=a, beta=b) == b*c + a*acc``.
    """
    return evaluate_all(tree, acc, **tensors)["D"]


def _host(x, dtype="float32"):
    """A float64 host copy of an array-like (CuPy arrays via ``.get()``); for bfloat16 a
    ``uint16`` array is read as raw bfloat16 bits (NumPy and CuPy have no bfloat16)."""
    if hasattr(x, "get") and not isinstance(x, np.ndarray):
        x = x.get()
    a = np.asarray(x)
    if dtype == "bfloat16" and a.dtype == np.uint16:
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def iter_tree(tree: Node) -> Iterator[Node]:
    """Every node of the tree in pre-order (shared nodes repeat)."""
    yield tree
    for c in tree.children:
        yield from iter_tree(c)
