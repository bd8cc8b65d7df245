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
