"""IR -> CUDA C, through a per-op table, plus a small statement builder with deterministic names.

``render_expr(node, names)`` prints one expression with C precedence (parentheses only where
needed; bitwise operands always parenthesised), ``-`` for negative terms, and ``long long``
arithmetic where the node's bounds leave ``int``.  :class:`CodeBuilder` collects statements,
names shared subexpressions (CSE) in first-use order, and indents blocks: the same kernel
description always prints the same text.
"""

from __future__ import annotations

from contextlib import contextmanager

from .ir import Node, const, fits_int32, mul

__all__ = ["render_expr", "ctype_of", "CodeBuilder", "OPS"]

#: op -> (C operator, precedence: smaller binds tighter)
OPS = {
    "mul": ("*", 5), "floordiv": ("/", 5), "mod": ("%", 5),
    "add": ("+", 6),
    "shl": ("<<", 7), "shr": (">>", 7),
    "lt": ("<", 9), "le": ("<=", 9),
    "eq": ("==", 10),
    "and": ("&", 11), "xor": ("^", 12), "or": ("|", 13),
    "land": ("&&", 14),
}
_BITWISE = {"and", "xor", "or", "shl", "shr"}
_SELECT_PREC = 16


def ctype_of(node: Node) -> str:
    """``int`` when the node's bounds fit 32 bits, else ``long long``."""
    return "int" if fits_int32(node) else "long long"


def render_expr(node: Node, names: dict | None = None, *, divide: bool = False) -> str:
    """C text of ``node``; nodes in ``names`` print as their names.

    ``divide``: spell ``x >> k`` and ``x & (2**k - 1)`` of a non-negative ``x`` as ``x / 2**k``
    and ``x % 2**k`` (the same value).  The spelling matters to NVVM: it rematerializes cheap
    shift / mask chains of ``threadIdx.x`` inside loops (re-reading ``%tid.x`` and redoing the
    address arithmetic every iteration) but keeps a signed ``int`` division hoisted -- the
    per-thread copy coordinates of the SM80 GEMM mainloop are rendered this way
    (``benchmarks/sass_compare_sm80.py``)."""
    return _render(node, names or {}, divide)[0]


def _pow2_operand(n: Node):
    """``(x, d)`` when ``n`` is ``x >> k`` (d = 2**k, op ``/``) or ``x & (2**k - 1)`` (d =
    2**k, op ``%``) with ``x >= 0``; else None."""
    if n.op not in ("shr", "and") or n.args[0].lo < 0 or n.args[1].op != "const":
        return None
    c = n.args[1].value
    if n.op == "shr":
        return n.args[0], 1 << c
    return (n.args[0], c + 1) if c > 0 and (c + 1) & c == 0 else None


def _render(n: Node, names, divide: bool = False) -> tuple[str, int]:
    if n in names:
        return names[n], 0
    if n.op == "const":
        v = n.value
        text = str(v) if fits_int32(n) else f"{v}LL"
        return (text, 0) if v >= 0 else (f"({text})", 0)
    if n.op == "var":
        return n.args[0], 0
    if n.op == "select":
        c, _ = _render(n.args[0], names, divide)
        a, _ = _render(n.args[1], names, divide)
        b, _ = _render(n.args[2], names, divide)
        return f"({c} ? {a} : {b})", 0
    a, b = n.args
    if n.op == "add":
        if b.op == "const" and b.value < 0:
            return _binary("-", 6, a, const(-b.value), n, names, divide)
        if b.op == "mul" and b.args[1].op == "const" and b.args[1].value < 0 and b not in names:
            return _binary("-", 6, a, mul(b.args[0], -b.args[1].value), n, names, divide)
    if divide:
        p2 = _pow2_operand(n)
        if p2 is not None:
            return _binary("/" if n.op == "shr" else "%", 5, p2[0], const(p2[1]), n, names,
                           divide, bitwise=False)
    sym, prec = OPS[n.op]
    return _binary(sym, prec, a, b, n, names, divide)


def _binary(sym, prec, a, b, n, names, divide=False, bitwise=None):
    la, pa = _render(a, names, divide)
    lb, pb = _render(b, names, divide)
    bitwise = n.op in _BITWISE if bitwise is None else bitwise
    # both operands are int but the result is not: compute in 64 bits
    widen = (not fits_int32(n) and fits_int32(a) and fits_int32(b)
             and n.op in ("add", "mul", "shl") and a.op != "const")
    if widen:
        la = f"(long long){la}" if pa == 0 else f"(long long)({la})"
    elif pa > prec or (bitwise and pa > 0):
        la = f"({la})"
    if (pb >= prec and pb > 0) or (bitwise and pb > 0):
        lb = f"({lb})"
    return f"{la} {sym} {lb}", prec


class CodeBuilder:
    """Statements with indentation, named temporaries and CSE.

    ``let(node, hint)`` binds ``node`` to a fresh name (``hint``, ``hint_1``, ... in order of
    creation) unless it is a constant, a variable or already named; later renders of any
    expression containing ``node`` use the name.
    """

    def __init__(self, indent: int = 1):
        self.lines: list[str] = []
        self.names: dict = {}
        self._used: set = set()
        self.level = indent

    def reserve(self, *names: str) -> None:
        """Mark names (parameters, declared locals) as taken."""
        self._used.update(names)

    def fresh(self, hint: str) -> str:
        name, i = hint, 0
        while name in self._used:
            i += 1
            name = f"{hint}_{i}"
        self._used.add(name)
        return name

    def line(self, text: str = "") -> None:
        self.lines.append(("  " * self.level + text) if text else "")

    def expr(self, node: Node) -> str:
        return render_expr(node, self.names)

    def let(self, node: Node, hint: str = "t") -> str:
        if node.op in ("const", "var"):
            return self.expr(node)
        if node in self.names:
            return self.names[node]
        text = self.expr(node)
        name = self.fresh(hint)
        self.line(f"const {ctype_of(node)} {name} = {text};")
        self.names[node] = name
        return name

    def cse(self, roots, hint: str = "t") -> None:
        """Name every non-trivial subexpression used more than once among ``roots``."""
        count: dict = {}
        order: list = []

        def visit(n):
            if n.op in ("const", "var") or n in self.names:
                return
            c = count.get(n, 0)
            count[n] = c + 1
            if c:
                return
            for a in n.args:
                if isinstance(a, Node):
                    visit(a)
            order.append(n)  # post-order: operands before users

        for r in roots:
            visit(r)
        for n in order:
            if count[n] > 1:
                self.let(n, hint)

    @contextmanager
    def block(self, header: str):
        self.line(header + " {")
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.line("}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
