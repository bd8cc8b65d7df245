"""The one kernel builder: statements and IR expressions rendered into one CUDA translation unit.

Every generator (copies, tiled copies, both GEMM families, both epilogues) emits through a
:class:`KernelBuilder`:

* **parameters** (:meth:`KernelBuilder.param`): typed, in order; an integer parameter comes back
  as an IR variable with bounds, so index maps built on it simplify;
* **statements**: declarations (:meth:`decl`, :meth:`let` with CSE), assignments, loops
  (:meth:`for_`), branches (:meth:`if_` / :meth:`else_`), scopes, barriers and calls into the
  PTX library (:meth:`call`: the name must be a wrapper of ``cute_py/*.cuh``, see
  :mod:`backends.cuda.ptx`);
* **expressions**: IR nodes (rendered with the CSE names in scope), or C text for values that are
  not index arithmetic (``acc[j][i]``, ``alpha * x``).

Law: names are deterministic (parameters first, then ``hint``, ``hint_1``, ... in order of
creation), so the same kernel description renders the same text; a CSE name bound inside a
block is forgotten when the block closes, so a name is never used outside its C scope.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from . import ir, ptx
from .ir import Node
from .render import CodeBuilder

__all__ = ["KernelBuilder", "Param", "ARCH_GUARDS"]

#: ``arch`` -> the preprocessor condition the kernel body is compiled under (the body of an
#: sm_90a kernel is empty in an sm_80 build, so every generated source compiles for both).
ARCH_GUARDS = {
    None: None,
    "sm80": "defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800",
    "sm90a": "defined(__CUDA_ARCH_FEAT_SM90_ALL)",
}

_INT_TYPES = {"int": (-(1 << 31), (1 << 31) - 1), "unsigned": (0, (1 << 32) - 1),
              "u32": (0, (1 << 32) - 1), "long long": (-(1 << 63), (1 << 63) - 1),
              "i64": (-(1 << 63), (1 << 63) - 1), "u64": (0, (1 << 64) - 1)}


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its C type and name (``const u16* __restrict__``, ``A``)."""

    ctype: str
    name: str

    def decl(self) -> str:
        sep = "" if self.ctype.endswith("*") else " "
        return f"{self.ctype}{sep}{self.name}"


def _arg(x, names) -> str:
    if isinstance(x, Node):
        from .render import render_expr
        return render_expr(x, names)
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x!r}f"
    if isinstance(x, str):
        return x
    raise TypeError(f"builder: cannot render an argument of type {type(x).__name__}")


class KernelBuilder(CodeBuilder):
    """A ``__global__`` kernel under construction (see the module docstring).

    ``threads``: ``__launch_bounds__`` block size (``min_blocks`` its second argument);
    ``cluster``: static cluster dims (sm_90a); ``arch``: a key of :data:`ARCH_GUARDS`;
    ``origin``: what the first comment line names as the generator.
    """

    def __init__(self, name: str, *, threads: int, min_blocks: int | None = None,
                 cluster: tuple | None = None, arch: str | None = None, origin: str = "",
                 description: str = "", includes=("cute_py/prelude.cuh",)):
        super().__init__(indent=1)
        if arch not in ARCH_GUARDS:
            raise ValueError(f"builder: unknown arch {arch!r}")
        self.name = name
        self.threads = threads
        self.min_blocks = min_blocks
        self.cluster = tuple(cluster) if cluster else None
        self.arch = arch
        self.origin = origin
        self.description = description
        self.includes = tuple(includes)
        self.params: list[Param] = []
        self.helpers: list[str] = []
        self._scopes: list[list] = []
        self.reserve(name)

    # ------------------------------------------------------------------ signature and preamble

    def param(self, ctype: str, name: str, lo: int | None = None, hi: int | None = None):
        """Append a parameter; integer types give back an IR variable with bounds ``[lo, hi]``
        (default: the type's range), pointers and other types give back the name."""
        if name in self._used:
            raise ValueError(f"builder: parameter name {name!r} is taken")
        self.params.append(Param(ctype, name))
        self.reserve(name)
        base = ctype.replace("const ", "").strip()
        if base in _INT_TYPES:
            tlo, thi = _INT_TYPES[base]
            return ir.var(name, tlo if lo is None else lo, thi if hi is None else hi)
        return name

    def helper(self, text: str) -> None:
        """Device code placed before the kernel (generated PTX wrappers, constant tables).
        The same text twice is kept once."""
        if text not in self.helpers:
            self.helpers.append(text)

    # ------------------------------------------------------------------ statements

    def comment(self, text: str) -> None:
        for ln in text.split("\n"):
            self.line(f"// {ln}" if ln else "//")

    def stmt(self, text: str) -> None:
        """One C statement that is not index arithmetic (``acc[i] = 0.0f;``)."""
        self.line(text if text.endswith((";", "}")) else text + ";")

    def expr(self, x) -> str:  # accepts nodes, C text and Python numbers
        return _arg(x, self.names)

    def let(self, node, hint: str = "t") -> str:
        node = ir.as_node(node) if not isinstance(node, Node) else node
        had = node in self.names
        name = super().let(node, hint)
        if not had and node in self.names and self._scopes:
            self._scopes[-1].append(node)
        return name

    def decl(self, ctype: str, name: str, init=None, *, hint: bool = True) -> str:
        """Declare ``ctype name [= init];``; with ``hint`` the name is made unique
        (``name_1``...); returns the name used."""
        nm = self.fresh(name) if hint else name
        if not hint:
            self.reserve(name)
        self.line(f"{ctype} {nm};" if init is None else f"{ctype} {nm} = {self.expr(init)};")
        return nm

    def var(self, ctype: str, name: str, init=None, lo: int | None = None,
            hi: int | None = None) -> Node:
        """Declare an integer variable and return it as an IR variable (for index maps);
        bounds default to those of ``init`` (an IR node) or of the type."""
        nm = self.decl(ctype, name, init)
        if lo is None or hi is None:
            if isinstance(init, Node) and ctype.replace("const ", "") in ("int", "long long"):
                lo = init.lo if lo is None else lo
                hi = init.hi if hi is None else hi
            else:
                tlo, thi = _INT_TYPES.get(ctype.replace("const ", "").strip(), (-ir.INF, ir.INF))
                lo = tlo if lo is None else lo
                hi = thi if hi is None else hi
        return ir.var(nm, lo, hi)

    def assign(self, lhs: str, rhs, op: str = "=") -> None:
        self.line(f"{lhs} {op} {self.expr(rhs)};")

    def call(self, fn: str, *args, template: str | None = None) -> None:
        """``fn<template>(args...);`` where ``fn`` is a PTX-library wrapper."""
        self.line(self.call_expr(fn, *args, template=template) + ";")

    def call_expr(self, fn: str, *args, template: str | None = None) -> str:
        """The C text of a call to the PTX-library wrapper ``fn`` (for use in an expression)."""
        ptx.require(fn)
        t = f"<{template}>" if template is not None else ""
        return f"{fn}{t}({', '.join(self.expr(a) for a in args)})"

    def sync_threads(self) -> None:
        self.line("__syncthreads();")

    # ------------------------------------------------------------------ blocks

    @contextmanager
    def block(self, header: str):
        self._scopes.append([])
        self.line((header + " {") if header else "{")
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.line("}")
            for n in self._scopes.pop():
                self.names.pop(n, None)

    def scope(self):
        """A plain ``{ ... }`` block (its CSE names end with it)."""
        return self.block("")

    @contextmanager
    def for_(self, name: str, start, stop, step=1, *, unroll=None, ctype: str = "int",
             hint: bool = True):
        """``for (int name = start; name < stop; name += step)``; yields the counter as an IR
        variable whose bounds follow from constant (or bounded IR) ``start`` / ``stop``.
        ``unroll``: True -> ``#pragma unroll``, an int n -> ``#pragma unroll n``.  With
        ``hint`` the counter's name is made unique (``name_1``...); ``hint=False`` keeps
        ``name`` (as :meth:`decl`: a loop whose counter other code names, e.g. a kernel's
        ``tile`` loop that occurs once per warp role)."""
        if hint:
            nm = self.fresh(name)
        else:
            nm = name
            self.reserve(name)
        lo = start.lo if isinstance(start, Node) else (start if isinstance(start, int) else 0)
        hi = (stop.hi - 1) if isinstance(stop, Node) else (
            stop - 1 if isinstance(stop, int) else (1 << 31) - 1)
        counter = ir.var(nm, min(lo, hi), hi) if lo <= hi else ir.var(nm, lo, lo)
        if unroll is True:
            self.line("#pragma unroll")
        elif isinstance(unroll, int) and unroll is not False:
            self.line(f"#pragma unroll {unroll}")
        inc = f"++{nm}" if (isinstance(step, int) and step == 1) else f"{nm} += {self.expr(step)}"
        with self.block(f"for ({ctype} {nm} = {self.expr(start)}; {nm} < {self.expr(stop)}; {inc})"):
            yield counter

    @contextmanager
    def if_(self, cond):
        with self.block(f"if ({self.expr(cond)})"):
            yield

    @contextmanager
    def else_(self, cond=None):
        """``else`` (or ``else if (cond)``) after an :meth:`if_` block."""
        closing = self.lines.pop()
        if closing.strip() != "}":
            raise ValueError("builder: else_ must follow an if_ block")
        tail = " else {" if cond is None else f" else if ({self.expr(cond)}) {{"
        self.lines.append(closing + tail)
        self._scopes.append([])
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.line("}")
            for n in self._scopes.pop():
                self.names.pop(n, None)

    # ------------------------------------------------------------------ output

    def signature(self) -> str:
        attrs = []
        if self.cluster:
            attrs.append("CUTE_PY_SM90_CLUSTER_DIMS ")
        lb = f"{self.threads}" + (f", {self.min_blocks}" if self.min_blocks is not None else "")
        params = ",\n    ".join(p.decl() for p in self.params)
        return (f'extern "C" __global__ void {"".join(attrs)}__launch_bounds__({lb}) '
                f"{self.name}(\n    {params})")

    def source(self) -> str:
        """The whole translation unit: header comment, includes, helpers, the kernel."""
        out = [f"// generated by {self.origin}" + (f" -- {self.description}"
                                                   if self.description else "")]
        out += [f'#include "{h}"' for h in self.includes]
        out.append("using namespace cute_py;")
        out += [h.rstrip("\n") for h in self.helpers]
        if self.cluster:
            dims = ", ".join(str(d) for d in (tuple(self.cluster) + (1, 1))[:3])
            out.append("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n"
                       "#define CUTE_PY_SM90_CLUSTER_DIMS\n#else\n"
                       f"#define CUTE_PY_SM90_CLUSTER_DIMS __cluster_dims__({dims})\n#endif")
        out.append(self.signature())
        out.append("{")
        guard = ARCH_GUARDS[self.arch]
        if guard:
            out.append(f"#if {guard}")
        body = self.text() if self.lines else ""
        out.append(body.rstrip("\n"))
        if guard:
            out.append("#endif")
        out.append("}")
        return "\n".join(x for x in out if x != "") + "\n"

