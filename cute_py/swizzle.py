"""``Swizzle(B, M, S)``: CuTe's XOR bit-permutation of integer offsets (``include/cute/swizzle.hpp``).

::

    0bxxxxxxxxxxxxxxxYYYxxxxxxxZZZxxxx
                                  ^--^ M: least-significant bits kept constant
                     ^-^       ^-^     B: number of bits in the mask
                       ^---------^     S: distance the YYY mask is shifted (negative: left)

    f(o) = o ^ ((o & yyy_msk) >> S)          (ZZZ ^= YYY)

``Swizzle(3, 4, 3)`` is ``o ^ ((o & 0x380) >> 3)``: the 16-byte chunk index (bits 4-6) of a byte
offset is XORed with its 128-byte row index (bits 7-9) — the SW128 pattern of Hopper shared memory.
A swizzle is an involution (``f(f(o)) == o``) and a bijection on every aligned block of
``period == 2**(B + M + |S|)`` offsets. ``Swizzle(0, M, S)`` is the identity.
"""

from __future__ import annotations

from .errors import LayoutError, SymbolicError

__all__ = ["Swizzle", "make_swizzle", "is_swizzle"]


def _shiftr(x: int, s: int) -> int:
    return x >> s if s >= 0 else x << -s


def _popcount(x: int) -> int:
    return bin(x).count("1")


def _ctz(x: int) -> int:
    return (x & -x).bit_length() - 1


class Swizzle:
    """CuTe's ``Swizzle<B, M, S>`` — a frozen, hashable functor on integer offsets.

    Law: ``sw(o) == o ^ ((o & sw.yyy_msk) >> S)`` (a left shift for negative ``S``); ``sw(sw(o)) == o``;
    ``sw`` permutes each aligned block of ``sw.period`` offsets and fixes the low ``M`` bits.
    Requires ``B >= 0``, ``M >= 0`` and ``|S| >= B``. Printed ``Sw<B,M,S>`` as in CuTe.
    """

    __slots__ = ("num_bits", "num_base", "num_shft")

    def __init__(self, B: int, M: int, S: int | None = None):
        if S is None:
            S = B
        for name, v in (("B", B), ("M", M), ("S", S)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise LayoutError("Swizzle", name, "must be a Python int (swizzles are static)",
                                  actual=repr(v))
        if B < 0:
            raise LayoutError("Swizzle", "B", "must be >= 0", expected="B >= 0", actual=B)
        if M < 0:
            raise LayoutError("Swizzle", "M", "must be >= 0", expected="M >= 0", actual=M)
        if abs(S) < B:
            raise LayoutError("Swizzle", "S", "must satisfy |S| >= B (the masks would overlap)",
                              expected=f"|S| >= {B}", actual=S)
        object.__setattr__(self, "num_bits", B)
        object.__setattr__(self, "num_base", M)
        object.__setattr__(self, "num_shft", S)

    def __setattr__(self, name, value):
        raise AttributeError("Swizzle is immutable")

    # CuTe's named constants ----------------------------------------------------------------
    @property
    def B(self) -> int:
        return self.num_bits

    @property
    def M(self) -> int:
        return self.num_base

    @property
    def S(self) -> int:
        return self.num_shft

    @property
    def bit_msk(self) -> int:
        return (1 << self.num_bits) - 1

    @property
    def yyy_msk(self) -> int:
        """The source bits: ``bit_msk << (M + max(0, S))``."""
        return self.bit_msk << (self.num_base + max(0, self.num_shft))

    @property
    def zzz_msk(self) -> int:
        """The destination bits: ``bit_msk << (M - min(0, S))``."""
        return self.bit_msk << (self.num_base - min(0, self.num_shft))

    @property
    def msk_sft(self) -> int:
        return self.num_shft

    @property
    def swizzle_code(self) -> int:
        return self.yyy_msk | self.zzz_msk

    @property
    def period(self) -> int:
        """``2**(B + M + |S|)``: the swizzle is a bijection on every aligned block of this size."""
        return 1 << (self.num_bits + self.num_base + abs(self.num_shft))

    def is_identity(self) -> bool:
        return self.num_bits == 0

    # evaluation -----------------------------------------------------------------------------
    def apply(self, offset):
        if isinstance(offset, bool) or not isinstance(offset, int):
            if isinstance(offset, tuple):
                raise LayoutError("Swizzle", "offset", "must be an int, not a tuple", actual=offset)
            if self.num_bits == 0:
                return offset
            if type(offset).__module__.startswith("sympy"):
                raise SymbolicError("Swizzle", "offset", f"is symbolic ({offset}); {self} XORs bits "
                                    "of a concrete offset — substitute values first (cute.subs)",
                                    actual=str(offset))
            raise LayoutError("Swizzle", "offset", "must be an int", actual=repr(offset))
        return offset ^ _shiftr(offset & self.yyy_msk, self.num_shft)

    def __call__(self, offset):
        """``o ^ ((o & yyy_msk) >> S)``."""
        return self.apply(offset)

    # value semantics ------------------------------------------------------------------------
    def __eq__(self, other):
        if not isinstance(other, Swizzle):
            return NotImplemented
        return (self.num_bits, self.num_base, self.num_shft) == (other.num_bits, other.num_base,
                                                                 other.num_shft)

    def __hash__(self):
        return hash(("Swizzle", self.num_bits, self.num_base, self.num_shft))

    def __reduce__(self):
        return (Swizzle, (self.num_bits, self.num_base, self.num_shft))

    def __str__(self):
        return f"Sw<{self.num_bits},{self.num_base},{self.num_shft}>"

    def __repr__(self):
        return f"Swizzle({self.num_bits}, {self.num_base}, {self.num_shft})"

    def __format__(self, spec):
        return format(str(self), spec)

    # algebra hooks (see cute_py.algebra); _cute_compose / _cute_rcompose (Swizzle o Layout and
    # Layout o Swizzle, which make composed layouts) are installed by cute_py.composed.
    def _cute_right_inverse(self):
        return self

    def _cute_left_inverse(self):
        return self

    def _cute_upcast(self, n):
        """``upcast<N>``: ``M - log2 N`` (bits below the base are dropped from the mask)."""
        lg = _log2_exact("upcast", n)
        new_m = self.num_base - lg
        if new_m >= 0:
            return Swizzle(self.num_bits, new_m, self.num_shft)
        return Swizzle(max(self.num_bits + new_m, 0), 0, self.num_shft)

    def _cute_downcast(self, n):
        """``downcast<N>``: ``M + log2 N``."""
        lg = _log2_exact("downcast", n)
        return Swizzle(self.num_bits, self.num_base + lg, self.num_shft)


def _log2_exact(op, n) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or n & (n - 1):
        raise LayoutError(op, "n", "must be a power of two for a swizzle", actual=repr(n))
    return n.bit_length() - 1


def is_swizzle(x) -> bool:
    return isinstance(x, Swizzle)


def make_swizzle(*args) -> Swizzle:
    """``make_swizzle(B, M, S)`` builds ``Swizzle(B, M, S)``; ``make_swizzle(Y, Z)`` builds the
    swizzle from its masks as CuTe's ``make_swizzle<Y, Z>()`` does:
    ``make_swizzle(0b1000, 0b0100) == Swizzle(1, 2, 1)``,
    ``make_swizzle(0b11000000, 0b00000110) == Swizzle(2, 1, 5)``.
    Law: ``make_swizzle(sw.yyy_msk, sw.zzz_msk) == sw`` for every non-identity ``sw``.
    """
    if len(args) == 3:
        return Swizzle(*args)
    if len(args) != 2:
        raise LayoutError("make_swizzle", "args", "expects (B, M, S) or the masks (Y, Z)",
                          actual=f"{len(args)} arguments")
    Y, Z = args
    for name, v in (("Y", Y), ("Z", Z)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise LayoutError("make_swizzle", name, "must be a non-negative int mask", actual=repr(v))
    by, bz = _popcount(Y), _popcount(Z)
    if by != bz:
        raise LayoutError("make_swizzle", "Z", "has a different number of bits than Y",
                          expected=f"{by} bits", actual=bin(Z))
    if by == 0:
        return Swizzle(0, 0, 0)
    tz_y, tz_z = _ctz(Y), _ctz(Z)
    M = min(tz_y, tz_z) % 32
    S = tz_y - tz_z
    if abs(S) < by:
        raise LayoutError("make_swizzle", "Y", "overlaps Z; no Swizzle has these masks",
                          actual=(bin(Y), bin(Z)))
    sw = Swizzle(by, M, S)
    if (Y | Z) != sw.swizzle_code:
        raise LayoutError("make_swizzle", "Y", "masks are not contiguous runs of equal length; no "
                          "Swizzle has these masks", expected=bin(sw.swizzle_code), actual=bin(Y | Z))
    return sw
