"""A tiny expression IR for integer index maps, simplified as it is built.

Nodes are immutable and *interned* (hash-consed): building the same expression twice gives the
same object, so ``is``/``==`` is structural equality and a node is a cheap dict key (for CSE).
Every node carries inclusive bounds ``lo <= value <= hi`` derived from its operands; variables
get theirs from the caller (``threadIdx.x < 256``, a loop counter ``< 8``, a runtime size within
``[1, 2**31)``).  The smart constructors use the bounds to simplify:

* constant folding; ``x + 0``, ``x * 1``, ``x * 0``; constants gathered to the right;
* ``x // 2**k`` -> ``x >> k`` and ``x % 2**k`` -> ``x & (2**k - 1)`` (for ``x >= 0``);
* ``x // a == 0`` and ``x % a == x`` when ``0 <= x < a`` — so ``(x // a) % b`` becomes ``x // a``
  when ``x < a * b`` (CuTe's last-mode rule falls out of the bounds);
* ``(x // a) // b -> x // (a*b)``, ``(x % a) % b -> x % b`` when ``b | a``;
* ``(c*k*y + r) // c -> k*y + r // c`` and ``(c*k*y + r) % c -> r % c`` for ``r >= 0``;
* swizzles: ``x ^ ((x & yyy) >> S)`` is ``x`` when the yyy bits of ``x`` are known zero.

Semantics: integer arithmetic on unbounded ints; ``floordiv``/``mod`` are floor division and its
remainder for non-negative dividends (the only ones index maps produce; they render as C ``/``
and ``%``).  Comparisons and ``land`` give 0/1.  ``evaluate(node, env)`` is the reference
interpreter the tests compare the simplified forms against.
"""

from __future__ import annotations

__all__ = [
    "Node", "const", "var", "add", "sub", "mul", "floordiv", "mod", "xor", "and_", "or_", "shl",
    "shr", "select", "lt", "le", "eq", "land", "swizzle", "as_node", "evaluate", "fits_int32",
    "INF", "thread_idx", "block_idx", "loop_var", "param",
]

#: Stand-in for "unbounded" in node bounds.
INF = 1 << 80

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


class Node:
    """An interned IR node: ``op`` and ``args`` (nodes, or Python values for const/var)."""

    __slots__ = ("op", "args", "lo", "hi", "__weakref__")

    def __init__(self, op, args, lo, hi):
        self.op = op
        self.args = args
        self.lo = lo
        self.hi = hi

    # identity equality + default hash: correct because nodes are interned
    def __repr__(self):  # structural and fully parenthesised; C text comes from render.py
        return f"<{_text(self)}>"

    @property
    def is_const(self) -> bool:
        return self.op == "const"

    @property
    def value(self) -> int:
        if self.op != "const":
            raise TypeError("not a constant")
        return self.args[0]

    # operators build simplified nodes
    def __add__(self, o): return add(self, o)
    def __radd__(self, o): return add(o, self)
    def __sub__(self, o): return sub(self, o)
    def __rsub__(self, o): return sub(o, self)
    def __mul__(self, o): return mul(self, o)
    def __rmul__(self, o): return mul(o, self)
    def __floordiv__(self, o): return floordiv(self, o)
    def __mod__(self, o): return mod(self, o)
    def __xor__(self, o): return xor(self, o)
    def __rxor__(self, o): return xor(o, self)
    def __and__(self, o): return and_(self, o)
    def __rand__(self, o): return and_(o, self)
    def __or__(self, o): return or_(self, o)
    def __ror__(self, o): return or_(o, self)
    def __lshift__(self, o): return shl(self, o)
    def __rshift__(self, o): return shr(self, o)


_table: dict = {}


def _mk(op, args, lo, hi) -> Node:
    key = (op, args)
    n = _table.get(key)
    if n is None:
        lo = max(lo, -INF)
        hi = min(hi, INF)
        if lo > hi:  # empty range can only come from contradictory var bounds
            raise ValueError(f"ir: empty bounds [{lo}, {hi}] for {op}")
        n = Node(op, args, lo, hi)
        _table[key] = n
    return n


#: op -> infix symbol, for ``repr`` only (C rendering, with precedence, is render.py's job)
_SYMBOLS = {"add": "+", "mul": "*", "floordiv": "//", "mod": "%", "shl": "<<", "shr": ">>",
            "lt": "<", "le": "<=", "eq": "==", "and": "&", "xor": "^", "or": "|", "land": "&&"}


def _text(n: Node) -> str:
    if n.op == "const":
        return str(n.args[0])
    if n.op == "var":
        return n.args[0]
    parts = [_text(a) if isinstance(a, Node) else repr(a) for a in n.args]
    if n.op == "select":
        return f"({parts[0]} ? {parts[1]} : {parts[2]})"
    sym = _SYMBOLS.get(n.op)
    return f"({f' {sym} '.join(parts)})" if sym else f"{n.op}({', '.join(parts)})"


def const(v: int) -> Node:
    """An integer constant."""
    if isinstance(v, bool) or not isinstance(v, int):
        v = int(v)
    return _mk("const", (v,), v, v)


def var(name: str, lo: int = -INF, hi: int = INF) -> Node:
    """A variable rendered as ``name`` with inclusive bounds ``[lo, hi]``."""
    if not isinstance(name, str) or not name:
        raise ValueError("ir.var: name must be a non-empty str")
    if lo > hi:
        raise ValueError(f"ir.var: {name} has empty bounds [{lo}, {hi}]")
    return _mk("var", (name, lo, hi), lo, hi)


def thread_idx(n_threads: int, axis: str = "x") -> Node:
    """``threadIdx.<axis>`` as the int ``tid`` (kernels declare ``const int tid = threadIdx.x``)."""
    return var("tid" if axis == "x" else f"tid_{axis}", 0, n_threads - 1)


def block_idx(n_blocks: int = INF, axis: str = "x") -> Node:
    """``blockIdx.<axis>`` as the int ``bid`` (kernels declare ``const int bid = blockIdx.x``)."""
    return var("bid" if axis == "x" else f"bid_{axis}", 0, n_blocks - 1)


def loop_var(name: str, extent: int) -> Node:
    """A loop counter ``0 <= name < extent``."""
    return var(name, 0, extent - 1)


def param(name: str, lo: int = 0, hi: int = _INT32_MAX) -> Node:
    """A runtime integer kernel parameter with known bounds."""
    return var(name, lo, hi)


def as_node(x) -> Node:
    if isinstance(x, Node):
        return x
    if isinstance(x, bool):
        return const(int(x))
    if isinstance(x, int):
        return const(x)
    try:
        import operator
        return const(operator.index(x))
    except TypeError:
        raise TypeError(f"ir: cannot make a node of {type(x).__name__}") from None


def fits_int32(n: Node) -> bool:
    return _INT32_MIN <= n.lo and n.hi <= _INT32_MAX


def _is_pow2(c: int) -> bool:
    return c > 0 and c & (c - 1) == 0


def _mask_hi(h: int) -> int:
    """Smallest 2**k - 1 >= h (h >= 0)."""
    return (1 << max(h, 0).bit_length()) - 1


# ---------------------------------------------------------------------------------------------
# linear views: node == sum(coef * term) + c


def _linear(n: Node):
    """(terms: list of (node, coef), constant) with n == sum(coef*node) + constant."""
    if n.op == "const":
        return [], n.value
    if n.op == "add":
        t1, c1 = _linear(n.args[0])
        t2, c2 = _linear(n.args[1])
        return t1 + t2, c1 + c2
    if n.op == "mul" and n.args[1].op == "const":
        t, c = _linear(n.args[0])
        k = n.args[1].value
        return [(x, a * k) for x, a in t], c * k
    return [(n, 1)], 0


def _from_linear(terms, c) -> Node:
    out = const(0)
    for x, a in terms:
        out = add(out, mul(x, a))
    return add(out, c)


# ---------------------------------------------------------------------------------------------
# constructors


def add(a, b) -> Node:
    """``a + b``."""
    a, b = as_node(a), as_node(b)
    if a.is_const and b.is_const:
        return const(a.value + b.value)
    if a.is_const:
        a, b = b, a
    if b.is_const and b.value == 0:
        return a
    if a.is_const and a.value == 0:
        return b
    if b.is_const and a.op == "add" and a.args[1].is_const:  # (x + c1) + c2
        return add(a.args[0], a.args[1].value + b.value)
    if b.op == "add" and b.args[1].is_const:  # a + (y + c) -> (a + y) + c
        return add(add(a, b.args[0]), b.args[1])
    if a.op == "add" and a.args[1].is_const:  # (x + c) + b -> (x + b) + c
        return add(add(a.args[0], b), a.args[1])
    return _mk("add", (a, b), a.lo + b.lo, a.hi + b.hi)


def sub(a, b) -> Node:
    """``a - b`` (as ``a + b * -1``)."""
    return add(a, mul(b, -1))


def mul(a, b) -> Node:
    """``a * b``."""
    a, b = as_node(a), as_node(b)
    if a.is_const and b.is_const:
        return const(a.value * b.value)
    if a.is_const:
        a, b = b, a
    if b.is_const:
        k = b.value
        if k == 0:
            return const(0)
        if k == 1:
            return a
        if a.op == "mul" and a.args[1].is_const:
            return mul(a.args[0], a.args[1].value * k)
        if a.op == "add" and a.args[1].is_const:  # (x + c) * k -> x*k + c*k
            return add(mul(a.args[0], k), a.args[1].value * k)
    cands = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
    return _mk("mul", (a, b), min(cands), max(cands))


def floordiv(a, b) -> Node:
    """``a // b`` (floor; ``b > 0``; rendered as C ``/`` for ``a >= 0``)."""
    a, b = as_node(a), as_node(b)
    if b.hi < 1 or b.lo < 1:
        if b.is_const:
            raise ZeroDivisionError(f"ir.floordiv: divisor {b.value} must be positive")
        raise ValueError("ir.floordiv: a variable divisor needs bounds lo >= 1")
    if a.is_const and b.is_const:
        return const(a.value // b.value)
    if b.is_const and b.value == 1:
        return a
    if a.lo >= 0 and a.hi < b.lo:
        return const(0)
    if b.is_const:
        d = b.value
        if a.op == "floordiv" and a.args[1].is_const:
            return floordiv(a.args[0], a.args[1].value * d)
        if a.op == "shr":
            return floordiv(a.args[0], d << a.args[1].value)
        if a.op == "mul" and a.args[1].is_const and a.args[1].value > 0 \
                and d % a.args[1].value == 0:  # (x*k) // (k*m) -> x // m
            return floordiv(a.args[0], d // a.args[1].value)
        terms, c = _linear(a)
        if len(terms) > 1 or (terms and terms[0][1] != 1) or c:
            q, r = divmod(c, d)
            out = [(x, k // d) for x, k in terms if k % d == 0]
            rest = _from_linear([(x, k) for x, k in terms if k % d != 0], r)
            if (out or q) and rest.lo >= 0:
                return add(add(floordiv(rest, d), _from_linear(out, 0)), q)
        if _is_pow2(d) and a.lo >= 0:
            return shr(a, d.bit_length() - 1)
        lo, hi = (a.lo // d, a.hi // d)
    else:
        lo = min(a.lo // b.lo, a.lo // b.hi) if a.lo < 0 else 0
        hi = a.hi // b.lo if a.hi >= 0 else a.hi // b.hi
        lo = min(lo, hi)
    return _mk("floordiv", (a, b), lo, hi)


def mod(a, b) -> Node:
    """``a % b`` (floor remainder; ``b > 0``; rendered as C ``%`` for ``a >= 0``)."""
    a, b = as_node(a), as_node(b)
    if b.hi < 1 or b.lo < 1:
        if b.is_const:
            raise ZeroDivisionError(f"ir.mod: modulus {b.value} must be positive")
        raise ValueError("ir.mod: a variable modulus needs bounds lo >= 1")
    if a.is_const and b.is_const:
        return const(a.value % b.value)
    if b.is_const and b.value == 1:
        return const(0)
    if a.lo >= 0 and a.hi < b.lo:
        return a
    if b.is_const:
        d = b.value
        if a.op == "mod" and a.args[1].is_const and a.args[1].value % d == 0:
            return mod(a.args[0], d)
        if a.op == "and" and a.args[1].is_const and _is_pow2(d) and a.args[0].lo >= 0 \
                and (a.args[1].value + 1) % d == 0 and _is_pow2(a.args[1].value + 1):
            return mod(a.args[0], d)
        if a.op == "mul" and a.args[1].is_const and a.args[1].value > 0 \
                and d % a.args[1].value == 0:  # (x*k) % (k*m) -> (x % m) * k
            k = a.args[1].value
            return mul(mod(a.args[0], d // k), k)
        terms, c = _linear(a)
        kept = [(x, k) for x, k in terms if k % d != 0]
        if len(kept) != len(terms) or (c and not 0 <= c < d):
            rest = _from_linear(kept, c % d)
            if rest.lo >= 0:
                return mod(rest, d)
        if _is_pow2(d) and a.lo >= 0:
            return and_(a, d - 1)
        lo, hi = (0, min(a.hi, d - 1)) if a.lo >= 0 else (-(d - 1), d - 1)
    else:
        lo, hi = (0, min(a.hi, b.hi - 1)) if a.lo >= 0 else (-(b.hi - 1), b.hi - 1)
    return _mk("mod", (a, b), lo, hi)


def _nonneg(*ns):
    return all(n.lo >= 0 for n in ns)


def xor(a, b) -> Node:
    """``a ^ b`` (bitwise, non-negative operands)."""
    a, b = as_node(a), as_node(b)
    if a.is_const and b.is_const:
        return const(a.value ^ b.value)
    if a.is_const:
        a, b = b, a
    if b.is_const and b.value == 0:
        return a
    if a is b:
        return const(0)
    hi = _mask_hi(max(a.hi, b.hi)) if _nonneg(a, b) else INF
    return _mk("xor", (a, b), 0 if _nonneg(a, b) else -INF, hi)


def and_(a, b) -> Node:
    """``a & b`` (bitwise, non-negative operands)."""
    a, b = as_node(a), as_node(b)
    if a.is_const and b.is_const:
        return const(a.value & b.value)
    if a.is_const:
        a, b = b, a
    if b.is_const:
        m = b.value
        if m == 0:
            return const(0)
        if a.lo >= 0 and _is_pow2(m + 1) and a.hi <= m:
            return a
        if a.op == "and" and a.args[1].is_const:
            return and_(a.args[0], a.args[1].value & m)
    if a is b:
        return a
    if _nonneg(a) or _nonneg(b):
        hi = min(x.hi for x in (a, b) if x.lo >= 0)
        return _mk("and", (a, b), 0, hi)
    return _mk("and", (a, b), -INF, INF)


def or_(a, b) -> Node:
    """``a | b`` (bitwise, non-negative operands)."""
    a, b = as_node(a), as_node(b)
    if a.is_const and b.is_const:
        return const(a.value | b.value)
    if a.is_const:
        a, b = b, a
    if b.is_const and b.value == 0:
        return a
    if a is b:
        return a
    if _nonneg(a, b):
        return _mk("or", (a, b), max(a.lo, b.lo), _mask_hi(max(a.hi, b.hi)))
    return _mk("or", (a, b), -INF, INF)


def shl(a, k) -> Node:
    """``a << k`` for a constant ``k >= 0`` (a multiplication by ``2**k``)."""
    a, k = as_node(a), as_node(k)
    if not k.is_const or k.value < 0:
        raise ValueError("ir.shl: shift must be a constant >= 0")
    s = k.value
    if s == 0:
        return a
    if a.is_const:
        return const(a.value << s)
    if a.op == "shl":
        return shl(a.args[0], a.args[1].value + s)
    return _mk("shl", (a, k), a.lo << s if a.lo >= 0 else a.lo * (1 << s), a.hi * (1 << s))


def shr(a, k) -> Node:
    """``a >> k`` for a constant ``k >= 0`` and ``a >= 0`` (floor division by ``2**k``)."""
    a, k = as_node(a), as_node(k)
    if not k.is_const or k.value < 0:
        raise ValueError("ir.shr: shift must be a constant >= 0")
    s = k.value
    if s == 0:
        return a
    if a.is_const:
        return const(a.value >> s)
    if a.lo >= 0 and a.hi < (1 << s):
        return const(0)
    if a.op == "shr":
        return shr(a.args[0], a.args[1].value + s)
    return _mk("shr", (a, k), a.lo >> s, a.hi >> s)


def select(c, a, b) -> Node:
    """``c ? a : b``."""
    c, a, b = as_node(c), as_node(a), as_node(b)
    if c.is_const:
        return a if c.value else b
    if a is b:
        return a
    return _mk("select", (c, a, b), min(a.lo, b.lo), max(a.hi, b.hi))


def lt(a, b) -> Node:
    """``a < b`` as 0/1."""
    a, b = as_node(a), as_node(b)
    if a.hi < b.lo:
        return const(1)
    if a.lo >= b.hi:
        return const(0)
    return _mk("lt", (a, b), 0, 1)


def le(a, b) -> Node:
    """``a <= b`` as 0/1."""
    a, b = as_node(a), as_node(b)
    if a.hi <= b.lo:
        return const(1)
    if a.lo > b.hi:
        return const(0)
    return _mk("le", (a, b), 0, 1)


def eq(a, b) -> Node:
    """``a == b`` as 0/1."""
    a, b = as_node(a), as_node(b)
    if a is b:
        return const(1)
    if a.hi < b.lo or b.hi < a.lo:
        return const(0)
    if a.is_const and b.is_const:
        return const(int(a.value == b.value))
    return _mk("eq", (a, b), 0, 1)


def land(*cs) -> Node:
    """Logical and of 0/1 conditions (``&&``); ``land()`` is 1."""
    out = const(1)
    for c in cs:
        c = as_node(c)
        if c.is_const:
            if not c.value:
                return const(0)
            continue
        out = c if (out.is_const and out.value) else _mk("land", (out, c), 0, 1)
    return out


def swizzle(x, B: int, M: int, S: int) -> Node:
    """CuTe ``Swizzle<B,M,S>`` applied to offset ``x``: ``x ^ ((x & yyy) >> S)`` with
    ``yyy = ((1<<B)-1) << (M + max(0,S))`` (``S < 0`` shifts left).  Identity when ``B == 0`` or
    the yyy bits of ``x`` are known zero."""
    x = as_node(x)
    if B == 0:
        return x
    yyy = ((1 << B) - 1) << (M + max(0, S))
    if x.lo >= 0 and x.hi < (1 << (M + max(0, S))):
        return x
    bits = and_(x, yyy)
    moved = shr(bits, S) if S >= 0 else shl(bits, -S)
    return xor(x, moved)


# ---------------------------------------------------------------------------------------------
# reference interpreter

_EVAL = {
    "add": lambda a, b: a + b, "mul": lambda a, b: a * b, "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b, "xor": lambda a, b: a ^ b, "and": lambda a, b: a & b,
    "or": lambda a, b: a | b, "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b,
    # written to work elementwise on NumPy integer arrays too
    "lt": lambda a, b: (a < b) * 1, "le": lambda a, b: (a <= b) * 1,
    "eq": lambda a, b: (a == b) * 1, "land": lambda a, b: ((a != 0) & (b != 0)) * 1,
}


def evaluate(node: Node, env: dict) -> int:
    """The value of ``node`` with variables from ``env`` (name -> int, or NumPy int64 arrays to
    evaluate many points at once)."""
    memo: dict = {}

    def ev(n):
        r = memo.get(n)
        if r is not None:
            return r
        if n.op == "const":
            r = n.value
        elif n.op == "var":
            r = env[n.args[0]]
        elif n.op == "select":
            c = ev(n.args[0])
            if isinstance(c, int):
                r = ev(n.args[1]) if c else ev(n.args[2])
            else:
                import numpy as np
                r = np.where(c != 0, ev(n.args[1]), ev(n.args[2]))
        else:
            r = _EVAL[n.op](ev(n.args[0]), ev(n.args[1]))
        memo[n] = r
        return r

    return ev(node)
