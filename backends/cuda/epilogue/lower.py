"""Lowering an EVT tree (``cute_py.epilogue.evt``) into CUDA: the consumer's ``visit`` function.

The tree becomes one ``__device__ __forceinline__`` function that computes D for one output
element from the values the collective fetched for it::

    float cute_epi_visit(float acc, float src, float aux_<name>..., float row_<name>...,
                         float col_<name>..., bool valid, <scalars>, float& store_<name>...,
                         float& red_<name>...)

Shared sub-trees are computed once (the tree is a DAG).  Reductions fold their input into a
register accumulator ``red_<name>`` (identity for elements outside the problem, ``valid ==
false``); aux stores hand their value out through ``store_<name>``.  The collective decides where
each input comes from (smem stage, gmem, kernel argument) — see :mod:`.sm90`.
"""

from __future__ import annotations

from dataclasses import dataclass

from cute_py.epilogue import evt
from cute_py.numeric import C_STORAGE
from cute_py.epilogue.evt import (
    AccFetch, AuxLoad, AuxStore, ColBroadcast, ColReduction, Compute, Node, RowBroadcast,
    RowReduction, ScalarBroadcast, ScalarReduction, SrcFetch,
)

__all__ = ["CTYPE", "CONV", "MATH_HELPERS", "to_float", "from_float", "LoweredTree", "lower_tree", "float_literal",
           "reduce_combine", "reduce_identity_literal", "atomic_reduce"]

CTYPE = {t: C_STORAGE[t] for t in evt.DTYPES}    # the epilogue's types; cute_py.numeric's table


#: the conversion functions a lowered tree calls: the PTX library's wrappers
#: (``cute_py/ptx_common.cuh``, a source with ``using namespace cute_py``).
CONV = {
    "headers": {"to": {"float16": "f16_bits_to_f32", "bfloat16": "bf16_bits_to_f32"},
                "from": {"float16": "f32_to_f16_bits", "bfloat16": "f32_to_bf16_bits"}},
}


def to_float(expr: str, dtype: str, conv: str = "headers") -> str:
    """C++ converting a value of ``dtype`` (16-bit types as raw bits) to float."""
    if dtype == "float32":
        return f"({expr})"
    return f"{CONV[conv]['to'][dtype]}({expr})"


def from_float(expr: str, dtype: str, conv: str = "headers") -> str:
    """C++ converting a float to ``dtype`` (round to nearest even; 16-bit types as raw bits)."""
    if dtype == "float32":
        return f"({expr})"
    return f"{CONV[conv]['from'][dtype]}({expr})"


def float_literal(x: float) -> str:
    """A C++ float literal that reads back exactly (``1.5f``, ``-INFINITY``)."""
    if x == float("inf"):
        return "INFINITY"
    if x == float("-inf"):
        return "(-INFINITY)"
    r = repr(float(x))
    if "e" not in r and "." not in r:
        r += ".0"
    return f"{r}f"


_OP_CODE = {
    "multiply_add": "fmaf({0}, {1}, {2})",
    "add": "({0} + {1})",
    "minus": "({0} - {1})",
    "multiply": "({0} * {1})",
    "maximum": "fmaxf({0}, {1})",
    "minimum": "fminf({0}, {1})",
    "negate": "(-{0})",
    "identity": "({0})",
    "convert": "({0})",
    "relu": "fmaxf({0}, 0.0f)",
    "gelu": "cute_epi_gelu_tanh({0})",
    "gelu_erf": "cute_epi_gelu_erf({0})",
    "silu": "cute_epi_silu({0})",
    "sigmoid": "cute_epi_sigmoid({0})",
    "clamp": "fminf(fmaxf({0}, {p0}), {p1})",
}

#: The activations' device functions; ``tanh.approx`` is the header's ``tanh_approx_f32``
#: (no inline asm in generated text); the rest is plain CUDA math.
MATH_HELPERS = r"""
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
__device__ __forceinline__ float cute_epi_gelu_tanh(float x) {
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  float u = 0.7978845608028654f * fmaf(0.044715f * x, x * x, x);
  return 0.5f * x * (1.0f + tanh_approx_f32(u));
}
__device__ __forceinline__ float cute_epi_gelu_erf(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
}
__device__ __forceinline__ float cute_epi_sigmoid(float x) {
  return __fdividef(1.0f, 1.0f + __expf(-x));
}
__device__ __forceinline__ float cute_epi_silu(float x) { return x * cute_epi_sigmoid(x); }
"""


def reduce_identity_literal(op: str) -> str:
    return float_literal(evt.reduction_identity(op))


def emit_reduction_state(kb, lowered, frag) -> tuple[dict, list]:
    """Declare a consumer thread's reduction accumulators, each set to its operation's
    identity: ``red_<name>`` for a scalar reduction, ``cr_<name>_<m>`` per accumulator row
    offset ``m`` of the fragment for a column reduction (row reductions are declared per
    subtile by the epilogues).  Returns ``(reds, col_m)``: ``{name: (kind, op)}`` and the row
    offsets."""
    reds = {n: (k, o) for n, k, o in lowered.reductions}
    col_m = sorted({frag.m_val[v] for v in range(frag.num_values)})
    for name, (kind, op) in reds.items():
        ident = reduce_identity_literal(op)
        if kind == "scalar":
            kb.decl("float", f"red_{name}", ident, hint=False)
        elif kind == "col":
            for m in col_m:
                kb.decl("float", f"cr_{name}_{m}", ident, hint=False)
    return reds, col_m


def reduce_combine(op: str, a: str, b: str) -> str:
    """C++ combining two partial reductions."""
    return {"sum": f"({a} + {b})", "max": f"fmaxf({a}, {b})", "min": f"fminf({a}, {b})",
            "absmax": f"fmaxf({a}, {b})"}[op]


def atomic_reduce(op: str, ptr: str, value: str) -> str:
    """C++ statement folding ``value`` into ``*ptr`` atomically."""
    if op == "sum":
        return f"atomicAdd({ptr}, {value});"
    if op == "absmax":   # value >= 0: int order == float order
        return f"atomicMax(reinterpret_cast<int*>({ptr}), __float_as_int({value}));"
    if op == "max":
        return (f"{{ float v_ = {value}; if (v_ >= 0.0f) atomicMax(reinterpret_cast<int*>({ptr}), "
                f"__float_as_int(v_)); else atomicMin(reinterpret_cast<unsigned*>({ptr}), "
                f"__float_as_uint(v_)); }}")
    if op == "min":
        return (f"{{ float v_ = {value}; if (v_ >= 0.0f) atomicMin(reinterpret_cast<int*>({ptr}), "
                f"__float_as_int(v_)); else atomicMax(reinterpret_cast<unsigned*>({ptr}), "
                f"__float_as_uint(v_)); }}")
    raise ValueError(op)


@dataclass(frozen=True)
class LoweredTree:
    """What the collective needs to know about a tree, plus the visit function's source.

    ``loads``: matrix inputs fetched per subtile through smem (``"C"`` first, then aux loads) as
    ``(name, dtype)``; ``stores``: aux outputs as ``(name, dtype)``; ``rows``/``cols``: broadcast
    vectors ``(name, dtype)``; ``scalars``: runtime scalar arguments (float kernel params);
    ``scalar_ptrs``: ``(name, dtype)``; ``reductions``: ``(name, kind, op)`` with kind
    row/col/scalar.
    """

    tree: Node
    loads: tuple
    stores: tuple
    rows: tuple
    cols: tuple
    scalars: tuple
    scalar_ptrs: tuple
    reductions: tuple
    source: str

    @property
    def needs_acc(self) -> bool:
        return any(isinstance(n, AccFetch) for n in evt.nodes(self.tree))

    def visit_params(self) -> list[str]:
        """The visit function's parameter declarations, in call order."""
        ps = ["float acc"]
        ps += [f"float ld_{n}" for n, _ in self.loads]
        ps += [f"float row_{n}" for n, _ in self.rows]
        ps += [f"float col_{n}" for n, _ in self.cols]
        ps += ["bool valid"]
        ps += [f"float s_{n}" for n in self.scalars]
        ps += [f"float s_{n}" for n, _ in self.scalar_ptrs]
        ps += [f"float& st_{n}" for n, _ in self.stores]
        ps += [f"float& red_{n}" for n, _, _ in self.reductions]
        return ps


def lower_tree(tree: Node, conv: str = "headers") -> LoweredTree:
    """Lower ``tree`` to a :class:`LoweredTree` (deterministic: equal trees give equal source);
    ``conv``: the 16-bit conversion functions it calls (a key of :data:`CONV`)."""
    order = evt.nodes(tree)
    ids = {n: i for i, n in enumerate(order)}
    loads, stores, rows, cols, scalars, sptrs, reds = [], [], [], [], [], [], []
    body = []
    for n in order:
        v = f"v{ids[n]}"
        t = type(n)
        if t is AccFetch:
            e = "acc"
        elif t is SrcFetch:
            if ("C", n.dtype) not in loads:
                loads.insert(0, ("C", n.dtype))
            e = "ld_C"
        elif t is AuxLoad:
            if (n.name, n.dtype) not in loads:
                loads.append((n.name, n.dtype))
            e = f"ld_{n.name}"
        elif t is ScalarBroadcast:
            if n.value is not None:
                e = float_literal(n.value)
            elif n.ptr:
                if (n.name, n.dtype) not in sptrs:
                    sptrs.append((n.name, n.dtype))
                e = f"s_{n.name}"
            else:
                if n.name not in scalars:
                    scalars.append(n.name)
                e = f"s_{n.name}"
        elif t is RowBroadcast:
            if (n.name, n.dtype) not in rows:
                rows.append((n.name, n.dtype))
            e = f"row_{n.name}"
        elif t is ColBroadcast:
            if (n.name, n.dtype) not in cols:
                cols.append((n.name, n.dtype))
            e = f"col_{n.name}"
        elif t is Compute:
            args = [f"v{ids[c]}" for c in n.children]
            kw = {f"p{i}": float_literal(p) for i, p in enumerate(n.params)}
            e = _OP_CODE[n.op].format(*args, **kw)
            if n.dtype != "float32":   # round through the node's output type
                e = to_float(from_float(e, n.dtype, conv), n.dtype, conv)
        elif t is AuxStore:
            stores.append((n.name, n.store_dtype))
            body.append(f"  st_{n.name} = v{ids[n.child]};")
            e = f"v{ids[n.child]}"
        else:
            kind = {RowReduction: "row", ColReduction: "col", ScalarReduction: "scalar"}[t]
            reds.append((n.name, kind, n.reduce_op))
            x = f"v{ids[n.child]}"
            if n.reduce_op == "absmax":
                x = f"fabsf({x})"
            x = f"(valid ? {x} : {reduce_identity_literal(n.reduce_op)})"
            body.append(f"  red_{n.name} = {reduce_combine(n.reduce_op, f'red_{n.name}', x)};")
            e = f"v{ids[n.child]}"
        body.append(f"  const float {v} = {e};")
    body.append(f"  return v{ids[tree]};")
    lt = LoweredTree(tree, tuple(loads), tuple(stores), tuple(rows), tuple(cols), tuple(scalars),
                     tuple(sptrs), tuple(reds), "")
    params = ",\n    ".join(lt.visit_params())
    src = (f"// EVT: {tree}\n"
           f"__device__ __forceinline__ float cute_epi_visit(\n    {params}) {{\n"
           + "\n".join(body) + "\n}\n")
    return LoweredTree(tree, tuple(loads), tuple(stores), tuple(rows), tuple(cols),
                       tuple(scalars), tuple(sptrs), tuple(reds), src)
