"""``MMA_Atom``: one hardware matrix-multiply instruction as a frozen value.

An atom is CuTe's ``MMA_Traits`` (``include/cute/atom/mma_traits.hpp``) made concrete:

* ``thr_id``     ``ThrID``:   logical thread id -> thread index within the atom
* ``shape_mnk``  ``Shape_MNK``: the (M, N, K) of one instruction
* ``layout_A``   ``ALayout``: ``(thr, val) -> m + M*k``  (column-major index in the M x K tile)
* ``layout_B``   ``BLayout``: ``(thr, val) -> n + N*k``
* ``layout_C``   ``CLayout``: ``(thr, val) -> m + M*n``

plus the element types (``d_type``, ``a_type``, ``b_type``, ``c_type``), the PTX instruction it
stands for, where A and B come from (registers or shared-memory descriptors) and, for wgmma,
the operands' majorness. Law (tested for every atom): ``layout_C`` is a bijection from
``(thr, val)`` onto ``[0, M*N)`` and ``layout_A``/``layout_B`` cover ``[0, M*K)``/``[0, N*K)``.

The atom constructors (``UniversalFMA``, ``SM80_16x8x16_F32F16F16F32_TN``, ...) live in
:mod:`cute_py.atom.mma_traits_sm80` and :mod:`cute_py.atom.mma_traits_sm90`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import AtomError, check_fields
from ..numeric import canonical_type, sizeof_bits
from ..int_tuple import is_int
from ..layout import Layout, fmt_int_tuple
from .. import int_tuple as it

__all__ = ["MMA_Atom", "UniversalFMA", "canonical_type", "sizeof_bits", "make_mma_atom"]


# ---------------------------------------------------------------------------------------------
# Element types: canonical names and widths

# canonical_type / sizeof_bits live in cute_py.numeric (one table for the package); imported
# above, so the old import path cute_py.atom.mma_atom.sizeof_bits keeps working.


# ---------------------------------------------------------------------------------------------
# The atom


@dataclass(frozen=True)
class MMA_Atom:
    """One MMA instruction: CuTe's ``MMA_Atom<MMA_Traits<Op>>`` as a frozen, hashable value.

    Fields are CuTe's traits (``thr_id``, ``shape_mnk``, ``layout_A/B/C``) and value types, the
    PTX it stands for, and operand sources. ``str(atom)`` prints the traits as C++'s
    ``print(MMA_Atom)`` does plus a header naming the instruction.
    """

    name: str
    thr_id: Layout
    shape_mnk: tuple
    layout_A: Layout
    layout_B: Layout
    layout_C: Layout
    d_type: str
    a_type: str
    b_type: str
    c_type: str
    ptx: str
    arch: int = 0
    a_source: str = "rmem"      # "rmem" registers, "smem" a shared-memory descriptor (wgmma)
    b_source: str = "rmem"
    a_major: str = "K"          # "K" or "MN": majorness of the A/B shared-memory tile (wgmma)
    b_major: str = "K"
    registers: tuple = field(default=(), compare=True)  # ((kind, count) for D, A, B, C)

    def __post_init__(self):
        check_fields(self, AtomError, {
            "name": str, "thr_id": Layout, "shape_mnk": tuple, "layout_A": Layout,
            "layout_B": Layout, "layout_C": Layout, "d_type": str, "a_type": str, "b_type": str,
            "c_type": str, "ptx": str, "arch": int, "a_source": str, "b_source": str,
            "a_major": str, "b_major": str, "registers": tuple})
        if len(self.shape_mnk) != 3 or not all(is_int(x) and isinstance(x, int) and x > 0
                                               for x in self.shape_mnk):
            raise AtomError("MMA_Atom", "shape_mnk", "must be three positive ints",
                            actual=self.shape_mnk)
        M, N, K = self.shape_mnk
        nthr = self.thr_id.size()
        for nm, L, extent in (("layout_A", self.layout_A, M * K),
                              ("layout_B", self.layout_B, N * K),
                              ("layout_C", self.layout_C, M * N)):
            if it.rank(L.shape) != 2 or it.product(L.shape[0]) != nthr:
                raise AtomError("MMA_Atom", nm, "must be a (thr, val) layout with size<0> == "
                                "size(thr_id)", expected=nthr, actual=str(L))
            if L.cosize() > extent:
                raise AtomError("MMA_Atom", nm, "maps outside the atom's tile",
                                expected=f"cosize <= {extent}", actual=str(L))

    # CuTe's type names -------------------------------------------------------------------------
    @property
    def ThrID(self) -> Layout:
        return self.thr_id

    @property
    def Shape_MNK(self) -> tuple:
        return self.shape_mnk

    @property
    def LayoutA_TV(self) -> Layout:
        return self.layout_A

    @property
    def LayoutB_TV(self) -> Layout:
        return self.layout_B

    @property
    def LayoutC_TV(self) -> Layout:
        return self.layout_C

    @property
    def num_threads(self) -> int:
        """``size(ThrID)``: 1 (FMA), 32 (mma.sync warp) or 128 (wgmma warpgroup)."""
        return self.thr_id.size()

    @property
    def frg_type_A(self) -> str:
        """``FrgTypeA``: the A register type, or ``"smem_desc"`` when A is a wgmma descriptor."""
        return "smem_desc" if self.a_source == "smem" else self.a_type

    @property
    def frg_type_B(self) -> str:
        return "smem_desc" if self.b_source == "smem" else self.b_type

    @property
    def frg_type_C(self) -> str:
        return self.c_type

    def __str__(self):
        M, N, K = self.shape_mnk
        where = {1: "one thread", 32: "one warp (32 threads)", 128: "one warpgroup (128 threads)"}
        head = f"MMA_Atom {self.name}"
        lines = [head,
                 f"  PTX:        {self.ptx}",
                 f"  Arch:       {'sm_' + str(self.arch) if self.arch else 'any'}; "
                 f"{where.get(self.num_threads, f'{self.num_threads} threads')}",
                 f"  Types:      D={self.d_type} A={self.a_type} B={self.b_type} C={self.c_type}"]
        if self.arch >= 90:
            lines.append(f"  Operands:   A from {self.a_source} ({self.a_major}-major), "
                         f"B from {self.b_source} ({self.b_major}-major)")
        lines += [f"  ThrID:      {self.thr_id}",
                  f"  Shape_MNK:  {fmt_int_tuple(self.shape_mnk)}",
                  f"  LayoutA_TV: {self.layout_A}",
                  f"  LayoutB_TV: {self.layout_B}",
                  f"  LayoutC_TV: {self.layout_C}"]
        return "\n".join(lines)

    def __repr__(self):
        if self.arch >= 90:
            return f"{self.name}(a_major={self.a_major!r}, b_major={self.b_major!r})"
        return f"{self.name}()"

    # C++ print(MMA_Atom) text (no header), for comparing with CuTe's output
    def cpp_str(self) -> str:
        """The text C++'s ``print(MMA_Atom)`` writes (ints without the ``_`` prefix)."""
        return "\n".join(["MMA_Atom",
                          f"  ThrID:      {self.thr_id}",
                          f"  Shape_MNK:  {fmt_int_tuple(self.shape_mnk)}",
                          f"  LayoutA_TV: {self.layout_A}",
                          f"  LayoutB_TV: {self.layout_B}",
                          f"  LayoutC_TV: {self.layout_C}"])

    # TV helpers ---------------------------------------------------------------------------------
    def thr_val_to_mk(self, thr: int, val: int):
        """``(m, k)`` of A value ``val`` of atom thread ``thr``."""
        M, _, K = self.shape_mnk
        return it.idx2crd(self.layout_A(self._tv(thr, val, "thr_val_to_mk")), (M, K))

    def thr_val_to_nk(self, thr: int, val: int):
        _, N, K = self.shape_mnk
        return it.idx2crd(self.layout_B(self._tv(thr, val, "thr_val_to_nk")), (N, K))

    def thr_val_to_mn(self, thr: int, val: int):
        M, N, _ = self.shape_mnk
        return it.idx2crd(self.layout_C(self._tv(thr, val, "thr_val_to_mn")), (M, N))

    @staticmethod
    def _tv(thr, val, op):
        for name, v in (("thr", thr), ("val", val)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise AtomError(f"MMA_Atom.{op}", name, "must be an int", actual=repr(v))
        return (thr, val)


def make_mma_atom(x) -> MMA_Atom:
    """``MMA_Atom(op)``: accept an atom, or a zero-argument atom constructor (``SM80_...``)."""
    if isinstance(x, MMA_Atom):
        return x
    if callable(x):
        try:
            a = x()
        except TypeError:
            a = None
        if isinstance(a, MMA_Atom):
            return a
    raise AtomError("make_mma_atom", "atom", "must be an MMA_Atom or an MMA op constructor",
                    actual=repr(x))


def UniversalFMA(d_type="float32", a_type=None, b_type=None, c_type=None) -> MMA_Atom:
    """CuTe's ``UniversalFMA<D,A,B,C>``: one thread computes ``d = a * b + c`` (MNK = 1x1x1).

    All four layouts are ``(1,1):(0,0)`` (``Layout<Shape<_1,_1>>``), ``ThrID = 1:0``. Types
    default to ``d_type`` (``UniversalFMA("float16")`` is an fp16 FMA).
    """
    d = canonical_type(d_type, "UniversalFMA", "d_type")
    a = canonical_type(a_type if a_type is not None else d, "UniversalFMA", "a_type")
    b = canonical_type(b_type if b_type is not None else a, "UniversalFMA", "b_type")
    c = canonical_type(c_type if c_type is not None else d, "UniversalFMA", "c_type")
    one = Layout((1, 1), (0, 0))
    return MMA_Atom(name="UniversalFMA", thr_id=Layout(1, 0), shape_mnk=(1, 1, 1),
                    layout_A=one, layout_B=one, layout_C=one,
                    d_type=d, a_type=a, b_type=b, c_type=c,
                    ptx="(none: fma(d, a, b, c) in registers)", arch=0,
                    registers=((d, 1), (a, 1), (b, 1), (c, 1)))
