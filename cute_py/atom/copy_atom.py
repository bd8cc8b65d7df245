"""``Copy_Atom(op, value_type)``: a copy instruction viewed in elements of ``value_type``.

CuTe (``include/cute/atom/copy_atom.hpp:52-75``): ``ValLayoutSrc/Dst/Ref =
recast_layout<uint1_t, ValType>(SrcLayout/DstLayout/RefLayout)``, i.e. the bit layouts upcast by
``sizeof_bits(ValType)``; ``size<0>`` of each must equal ``size(ThrID)``; ``NumValSrc =
size<1>(ValLayoutSrc)``. Example: ``Copy_Atom(SM75_U32x4_LDSM_N, "float16")`` has
``ValLayoutSrc = (32,8):(8,1)`` and ``ValLayoutDst = (32,(2,4)):(2,(1,64))``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..algebra import recast_layout
from ..errors import AtomError
from ..int_tuple import product
from ..layout import Layout
from .copy_traits import CopyOp
from .mma_atom import canonical_type, sizeof_bits

__all__ = ["Copy_Atom", "make_copy_atom"]


def _as_op(op, value_type) -> CopyOp:
    if isinstance(op, CopyOp):
        return op
    if callable(op):
        if getattr(op, "_needs_bits", False):
            return op(sizeof_bits(value_type))
        try:
            r = op()
        except TypeError:
            r = None
        if isinstance(r, CopyOp):
            return r
    raise AtomError("Copy_Atom", "op", "must be a copy op (e.g. SM75_U32x4_LDSM_N or "
                    "UniversalCopy(128))", actual=repr(op))


@dataclass(frozen=True, init=False)
class Copy_Atom:
    """CuTe's ``Copy_Atom<Copy_Traits<Op>, ValType>``: frozen, hashable.

    Attributes: ``op`` (the :class:`CopyOp`), ``value_type`` (canonical name), ``thr_id``,
    ``val_layout_src/dst/ref`` (``(thr, val) -> element``), ``num_val_src``, ``num_val_dst``.
    Law: ``val_layout_src == recast_layout(op.src_layout, 1, sizeof_bits(value_type))``.
    """

    op: CopyOp
    value_type: str
    val_layout_src: Layout = field(compare=False, repr=False)
    val_layout_dst: Layout = field(compare=False, repr=False)
    val_layout_ref: Layout = field(compare=False, repr=False)

    def __init__(self, op, value_type):
        vt = canonical_type(value_type, "Copy_Atom", "value_type")
        op = _as_op(op, vt)
        vbits = sizeof_bits(vt)
        lays = []
        for nm, L in (("SrcLayout", op.src_layout), ("DstLayout", op.dst_layout),
                      ("RefLayout", op.ref_layout)):
            per_thr = L.size() // op.thr_id.size()
            if per_thr % vbits != 0:
                raise AtomError("Copy_Atom", "value_type",
                                f"does not divide the {per_thr} bits per thread of {op.name}'s "
                                f"{nm}", expected=f"a width dividing {per_thr}",
                                actual=f"{vt} ({vbits} bits)")
            V = recast_layout(L, 1, vbits)
            if it_size0(V) != op.thr_id.size():
                raise AtomError("Copy_Atom", "value_type", f"{op.name} is not valid for "
                                f"{nm} of {vt}", expected=f"size<0> == {op.thr_id.size()}",
                                actual=str(V))
            lays.append(V)
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "value_type", vt)
        object.__setattr__(self, "val_layout_src", lays[0])
        object.__setattr__(self, "val_layout_dst", lays[1])
        object.__setattr__(self, "val_layout_ref", lays[2])

    def __reduce__(self):
        return (Copy_Atom, (self.op, self.value_type))

    # CuTe names -------------------------------------------------------------------------------
    @property
    def thr_id(self) -> Layout:
        return self.op.thr_id

    ThrID = thr_id

    @property
    def ValLayoutSrc(self):
        return self.val_layout_src

    @property
    def ValLayoutDst(self):
        return self.val_layout_dst

    @property
    def ValLayoutRef(self):
        return self.val_layout_ref

    @property
    def num_threads(self) -> int:
        return self.op.thr_id.size()

    @property
    def num_val_src(self) -> int:
        """``NumValSrc = size<1>(ValLayoutSrc)``: values of ``value_type`` per thread per call."""
        return Layout(self.val_layout_src.shape[1]).size()

    @property
    def num_val_dst(self) -> int:
        return Layout(self.val_layout_dst.shape[1]).size()

    NumValSrc = num_val_src
    NumValDst = num_val_dst

    @property
    def value_bits(self) -> int:
        return sizeof_bits(self.value_type)

    def __str__(self):
        return "\n".join([f"Copy_Atom {self.op.name} of {self.value_type}",
                          f"  PTX:          {self.op.ptx}",
                          f"  ThrID:        {self.thr_id}",
                          f"  ValLayoutSrc: {self.val_layout_src}",
                          f"  ValLayoutDst: {self.val_layout_dst}",
                          f"  ValLayoutRef: {self.val_layout_ref}",
                          f"  ValueType:    {self.value_bits}b"])

    def cpp_str(self) -> str:
        """The text C++'s ``print(Copy_Atom)`` writes (ints without the ``_`` prefix)."""
        return "\n".join(["Copy_Atom",
                          f"  ThrID:        {self.thr_id}",
                          f"  ValLayoutSrc: {self.val_layout_src}",
                          f"  ValLayoutDst: {self.val_layout_dst}",
                          f"  ValLayoutRef: {self.val_layout_ref}",
                          f"  ValueType:    {self.value_bits}b"])

    def __repr__(self):
        return f"Copy_Atom({self.op.name}, {self.value_type!r})"


def it_size0(V: Layout) -> int:
    return product(V.shape[0])


def make_copy_atom(op, value_type) -> Copy_Atom:
    """``Copy_Atom(op, value_type)``; an existing atom is returned unchanged when its value type
    matches."""
    if isinstance(op, Copy_Atom):
        if canonical_type(value_type) != op.value_type:
            return Copy_Atom(op.op, value_type)
        return op
    return Copy_Atom(op, value_type)
