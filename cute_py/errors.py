"""The library's error hierarchy.

Every user mistake raises a :class:`CuteError` subclass that names the operation, the offending
argument, what was expected and what was given.  Callers test with ``isinstance``; the fields are
structured so that tools need not parse the message.

    CuteError
    ├── IntTupleError     malformed shapes, strides, coordinates
    ├── LayoutError       algebra preconditions (divisibility, injectivity, ranks)
    ├── ParseError        unreadable layout text
    ├── SymbolicError     an operation that needs static values met a symbol
    ├── AtomError         unsupported MMA/copy atom combinations, bad tiled MMA/copy recipes
    ├── TensorError       tensor engines, offsets, partitioning
    ├── CompileError      NVRTC/nvcc failures (carries the log and the numbered source)
    └── LaunchError       arguments that do not fit a kernel (dtype, shape, stride, alignment)
"""

from __future__ import annotations

__all__ = [
    "CuteError",
    "IntTupleError",
    "LayoutError",
    "ParseError",
    "SymbolicError",
    "AtomError",
    "TensorError",
    "CompileError",
    "LaunchError",
]


def _short(value, limit: int = 120) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class CuteError(ValueError):
    """Base class of every error cute_py raises for a user mistake.

    ``op`` is the public operation, ``arg`` the argument's name, ``expected`` and ``actual``
    describe the violated condition.  ``str(err)`` reads
    ``"op: arg <detail> (expected <expected>, got <actual>)"``.
    """

    def __init__(self, op: str, arg: str | None = None, detail: str = "", *,
                 expected=None, actual=None):
        self.op = op
        self.arg = arg
        self.detail = detail
        self.expected = expected
        self.actual = actual
        parts = [f"{op}:"]
        if arg:
            parts.append(arg)
        if detail:
            parts.append(detail)
        msg = " ".join(parts)
        extra = []
        if expected is not None:
            extra.append(f"expected {_short(expected)}")
        if actual is not None:
            extra.append(f"got {_short(actual)}")
        if extra:
            msg += " (" + ", ".join(extra) + ")"
        super().__init__(msg)


class IntTupleError(CuteError, TypeError):
    """A shape, stride or coordinate is malformed (non-int leaf, wrong profile, out of range)."""


class LayoutError(CuteError):
    """A layout-algebra precondition is violated."""


class ParseError(CuteError):
    """Text could not be read as CuTe layout notation."""


class SymbolicError(CuteError):
    """An operation CuTe only allows on static values received a symbolic one."""


class AtomError(CuteError):
    """An MMA or copy atom, or a tiled MMA / tiled copy recipe, is invalid."""


class TensorError(CuteError):
    """A tensor engine, offset or partitioning request is invalid."""


class CompileError(CuteError):
    """Device-code compilation failed; ``log`` holds the compiler log, ``source`` the code."""

    def __init__(self, op: str, log: str, source: str, options=()):
        self.log = log
        self.source = source
        self.options = tuple(options)
        numbered = "\n".join(f"{i + 1:5d}  {line}" for i, line in enumerate(source.splitlines()))
        super().__init__(op, None, f"compilation failed with options {list(self.options)}\n"
                                   f"--- compiler log ---\n{log}\n--- source ---\n{numbered}")


class LaunchError(CuteError):
    """Kernel arguments do not match what the kernel was built for."""


# ---------------------------------------------------------------------------------------------
# The public boundary

#: Python and dependency errors that, escaping a public function, mean its arguments were wrong.
_FOREIGN = (TypeError, AttributeError, ValueError, IndexError, KeyError, ZeroDivisionError,
            ArithmeticError, RecursionError, NotImplementedError)


def public(op: str | None = None, error: type = None, arg: str | None = None):
    """Decorator for a public entry point that takes objects of many kinds (layouts, atoms, tiled
    MMAs, tensors): its own checks raise errors naming the argument; a Python or dependency error
    that still escapes (an attribute missing on an object of the wrong kind, a sympy error, a too
    deep nesting) is re-raised as ``error`` (default :class:`CuteError`) naming ``op`` and
    chained to the original, so no foreign exception leaks to the user.

    Hot algebra functions are not wrapped (they validate their arguments themselves)."""
    import functools

    def deco(fn):
        name = op or fn.__name__
        cls = error or CuteError

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except CuteError:
                raise
            except _FOREIGN as e:
                if isinstance(e, RecursionError):
                    detail = "are nested too deeply"
                elif isinstance(e, NotImplementedError):
                    detail = f"ask for what is not supported ({_short(e, 200)})"
                elif "Relational" in str(e):  # sympy could not decide a comparison
                    raise SymbolicError(name, arg or "arguments", "need static values here (a "
                                        "symbolic comparison cannot be decided)",
                                        actual=_short(e, 200)) from e
                else:
                    detail = f"are invalid ({type(e).__name__}: {_short(e, 200)})"
                raise cls(name, arg or "arguments", detail) from e
        wrapper.__wrapped__ = fn
        return wrapper
    return deco


def check_fields(obj, error: type, spec: dict) -> None:
    """Constructor check of a frozen value: ``spec`` maps a field name to the type(s) it must
    have (bools are not ints); a wrong field raises ``error`` naming the class and the field."""
    op = type(obj).__name__
    for name, types in spec.items():
        v = getattr(obj, name)
        ok = isinstance(v, types) and not (isinstance(v, bool) and bool not in (
            types if isinstance(types, tuple) else (types,)))
        if not ok:
            want = types if isinstance(types, tuple) else (types,)
            raise error(op, name, "has the wrong type",
                        expected=" or ".join(t.__name__ for t in want),
                        actual=f"{_short(repr(v), 60)} of type {type(v).__name__}")


def check_index(op: str, arg: str, i, n: int, error: type = None) -> int:
    """``i`` must be an int in ``[-n, n)`` (a mode or operand index); returns it."""
    if not isinstance(i, int) or isinstance(i, bool) or not -n <= i < n:
        raise (error or CuteError)(op, arg, "is not a valid index", expected=f"an int in [{-n}, {n})",
                                   actual=repr(i))
    return i
