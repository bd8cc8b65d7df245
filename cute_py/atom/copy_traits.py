"""Copy operations and their traits in **bits** (CuTe ``include/cute/atom/copy_traits*.hpp``).

A :class:`CopyOp` is CuTe's ``Copy_Traits<Op>``:

* ``thr_id``      ``ThrID``:     logical thread id -> thread index
* ``src_layout``  ``SrcLayout``: ``(src_thr, src_val) -> bit``
* ``dst_layout``  ``DstLayout``: ``(dst_thr, dst_val) -> bit``
* ``ref_layout``  ``RefLayout``: ``(thr, val) -> bit``, the order a TiledCopy's TV layout is in

The bit order is abstract (only used to relate source and destination). ``Copy_Atom(op, T)``
(:mod:`cute_py.atom.copy_atom`) recasts these to elements of ``T``.

Ops: ``UniversalCopy(bits)``; SM80 ``cp.async`` (``SM80_CP_ASYNC_CACHEALWAYS(bits)``,
``SM80_CP_ASYNC_CACHEGLOBAL(bits)``, ``_ZFILL`` variants); SM75 ``ldmatrix``
(``SM75_U32x{1,2,4}_LDSM_N``, ``SM75_U16x{2,4,8}_LDSM_T``); SM90 ``stmatrix``
(``SM90_U32x{1,2,4}_STSM_N``, ``SM90_U16x{2,4,8}_STSM_T``); SM90 TMA (``SM90_TMA_LOAD(bits)``,
``SM90_TMA_LOAD_MULTICAST(bits)``, ``SM90_TMA_STORE(bits)``) whose one value is the whole box.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import int_tuple as it
from ..errors import AtomError, check_fields
from ..layout import Layout
from .mma_atom import canonical_type, sizeof_bits

__all__ = [
    "CopyOp", "UniversalCopy",
    "SM80_CP_ASYNC_CACHEALWAYS", "SM80_CP_ASYNC_CACHEGLOBAL",
    "SM80_CP_ASYNC_CACHEALWAYS_ZFILL", "SM80_CP_ASYNC_CACHEGLOBAL_ZFILL",
    "SM75_U32x1_LDSM_N", "SM75_U32x2_LDSM_N", "SM75_U32x4_LDSM_N",
    "SM75_U16x2_LDSM_T", "SM75_U16x4_LDSM_T", "SM75_U16x8_LDSM_T",
    "SM90_U32x1_STSM_N", "SM90_U32x2_STSM_N", "SM90_U32x4_STSM_N",
    "SM90_U16x2_STSM_T", "SM90_U16x4_STSM_T", "SM90_U16x8_STSM_T",
    "SM90_TMA_LOAD", "SM90_TMA_LOAD_MULTICAST", "SM90_TMA_STORE",
]


@dataclass(frozen=True)
class CopyOp:
    """A copy instruction with CuTe's ``Copy_Traits`` (layouts in bits); frozen and hashable.

    ``kind`` is one of ``"universal"``, ``"cp.async"``, ``"ldmatrix"``, ``"stmatrix"``,
    ``"tma_load"``, ``"tma_store"``; ``src_space``/``dst_space`` are ``"gmem"``, ``"smem"`` or
    ``"rmem"``; ``ptx`` is the instruction it stands for.
    """

    name: str
    thr_id: Layout
    src_layout: Layout
    dst_layout: Layout
    ref_layout: Layout
    ptx: str
    kind: str
    src_space: str = "any"
    dst_space: str = "any"
    arch: int = 0
    zfill: bool = False

    def __post_init__(self):
        check_fields(self, AtomError, {
            "name": str, "thr_id": Layout, "src_layout": Layout, "dst_layout": Layout,
            "ref_layout": Layout, "ptx": str, "kind": str, "src_space": str, "dst_space": str,
            "arch": int, "zfill": bool})

    @property
    def ThrID(self):
        return self.thr_id

    @property
    def SrcLayout(self):
        return self.src_layout

    @property
    def DstLayout(self):
        return self.dst_layout

    @property
    def RefLayout(self):
        return self.ref_layout

    @property
    def num_threads(self) -> int:
        return self.thr_id.size()

    @property
    def src_bits_per_thread(self) -> int:
        return self.src_layout.size() // self.thr_id.size()

    @property
    def dst_bits_per_thread(self) -> int:
        return self.dst_layout.size() // self.thr_id.size()

    def __str__(self):
        return "\n".join([f"Copy_Traits {self.name}",
                          f"  PTX:       {self.ptx}",
                          f"  ThrID:     {self.thr_id}",
                          f"  SrcLayout: {self.src_layout}  (bits)",
                          f"  DstLayout: {self.dst_layout}  (bits)",
                          f"  RefLayout: {self.ref_layout}  (bits)"])

    def __repr__(self):
        return self.name


def _bits_arg(op, x, allowed=None):
    try:
        b = sizeof_bits(x)
    except AtomError:
        raise AtomError(op, "bits", "must be a bit width or an element type", actual=repr(x)) from None
    if b < 1 or (allowed is not None and b not in allowed):
        raise AtomError(op, "bits", "is not a width this instruction supports",
                        expected=sorted(allowed) if allowed else "a positive width", actual=b)
    return b


def _vec(bits):
    return Layout((1, bits), (0, 1))   # Layout<Shape<_1, Int<bits>>>


_UTYPE = {8: "uint8", 16: "uint16", 32: "uint32", 64: "uint64", 128: "uint128"}


def UniversalCopy(bits=None, dst_bits=None) -> CopyOp:
    """CuTe's ``UniversalCopy<S, D>``: one thread assigns ``dst = src`` of ``bits`` bits
    (an int, or an element type such as ``"uint128"``). ``SrcLayout = (1,bits):(0,1)``.

    ``UniversalCopy()`` without a width is completed by ``Copy_Atom(UniversalCopy, T)`` to
    ``UniversalCopy(sizeof_bits(T))``.
    """
    if bits is None:
        raise AtomError("UniversalCopy", "bits", "is required (or pass UniversalCopy itself to "
                        "Copy_Atom, which uses the value type's width)")
    s = _bits_arg("UniversalCopy", bits)
    d = _bits_arg("UniversalCopy", dst_bits) if dst_bits is not None else s
    nm = f"UniversalCopy<{_UTYPE.get(s, f'{s}b')}" + (f",{_UTYPE.get(d, f'{d}b')}>" if d != s else ">")
    return CopyOp(name=nm, thr_id=Layout(1), src_layout=_vec(s), dst_layout=_vec(d),
                  ref_layout=_vec(s), ptx=f"(none: {s}-bit register/memory assignment)",
                  kind="universal")


UniversalCopy._needs_bits = True


def _cp_async(name, cg, zfill, bits):
    allowed = {128} if cg else {32, 64, 128}
    b = _bits_arg(name, bits if bits is not None else 128, allowed)
    nm = f"{name}<{_UTYPE[b]}>"
    cache = "cg" if cg else "ca"
    size = b // 8
    ptx = (f"cp.async.{cache}.shared.global.L2::128B [dst], [src], {size}"
           + (", src_size (0 when the predicate is false: zero-fill)" if zfill else ""))
    return CopyOp(name=nm, thr_id=Layout(1), src_layout=_vec(b), dst_layout=_vec(b),
                  ref_layout=_vec(b), ptx=ptx, kind="cp.async", src_space="gmem",
                  dst_space="smem", arch=80, zfill=zfill)


def SM80_CP_ASYNC_CACHEALWAYS(bits=128) -> CopyOp:
    """``cp.async.ca.shared.global`` of 4, 8 or 16 bytes (``bits`` in {32, 64, 128})."""
    return _cp_async("SM80_CP_ASYNC_CACHEALWAYS", False, False, bits)


def SM80_CP_ASYNC_CACHEGLOBAL(bits=128) -> CopyOp:
    """``cp.async.cg.shared.global`` (L2 only); 16 bytes only."""
    return _cp_async("SM80_CP_ASYNC_CACHEGLOBAL", True, False, bits)


def SM80_CP_ASYNC_CACHEALWAYS_ZFILL(bits=128) -> CopyOp:
    """``cp.async.ca`` with a source size of 0 (zero-fill) when the predicate is false."""
    return _cp_async("SM80_CP_ASYNC_CACHEALWAYS_ZFILL", False, True, bits)


def SM80_CP_ASYNC_CACHEGLOBAL_ZFILL(bits=128) -> CopyOp:
    """``cp.async.cg`` (16 bytes) with zero-fill when the predicate is false."""
    return _cp_async("SM80_CP_ASYNC_CACHEGLOBAL_ZFILL", True, True, bits)


# --- ldmatrix / stmatrix (bit layouts from copy_traits_sm75.hpp) --------------------------------

_LDSM = {
    # name: (src bits, dst bits, x, trans)
    "SM75_U32x1_LDSM_N": (Layout(((8, 4), 128), ((128, 0), 1)), Layout((32, 32), (32, 1)), 1, False),
    "SM75_U32x2_LDSM_N": (Layout(((16, 2), 128), ((128, 0), 1)),
                          Layout((32, (32, 2)), (32, (1, 1024))), 2, False),
    "SM75_U32x4_LDSM_N": (Layout((32, 128), (128, 1)), Layout((32, (32, 4)), (32, (1, 1024))), 4, False),
    "SM75_U16x2_LDSM_T": (Layout(((8, 4), 128), ((128, 0), 1)),
                          Layout(((4, 8), (16, 2)), ((256, 16), (1, 128))), 1, True),
    "SM75_U16x4_LDSM_T": (Layout(((16, 2), 128), ((128, 0), 1)),
                          Layout(((4, 8), (16, 2, 2)), ((256, 16), (1, 128, 1024))), 2, True),
    "SM75_U16x8_LDSM_T": (Layout((32, 128), (128, 1)),
                          Layout(((4, 8), (16, 2, 4)), ((256, 16), (1, 128, 1024))), 4, True),
}


def _ldsm(name):
    src, dst, x, trans = _LDSM[name]
    regs = ", ".join(f"%{i}" for i in range(x))
    ptx = f"ldmatrix.sync.aligned.x{x}{'.trans' if trans else ''}.m8n8.shared.b16 {{{regs}}}, [%{x}]"

    def make() -> CopyOp:
        return CopyOp(name=name, thr_id=Layout(32), src_layout=src, dst_layout=dst, ref_layout=dst,
                      ptx=ptx, kind="ldmatrix", src_space="smem", dst_space="rmem", arch=75)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"``{ptx}``: a warp loads {x} 8x8 b16 matrices{' transposed' if trans else ''}"
                    f" from shared memory (threads 0..{8 * x - 1} give the row addresses).\n\n"
                    f"SrcLayout (bits) ``{src}``, DstLayout = RefLayout ``{dst}``.")
    return make


def _stsm(name, ld_name):
    src_ld, dst_ld, x, trans = _LDSM[ld_name]
    regs = ", ".join(f"%{i + 1}" for i in range(x))
    ptx = f"stmatrix.sync.aligned.x{x}{'.trans' if trans else ''}.m8n8.shared.b16 [%0], {{{regs}}}"

    def make() -> CopyOp:
        return CopyOp(name=name, thr_id=Layout(32), src_layout=dst_ld, dst_layout=src_ld,
                      ref_layout=dst_ld, ptx=ptx, kind="stmatrix", src_space="rmem",
                      dst_space="smem", arch=90)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"``{ptx}``: the mirror of ``{ld_name}`` (its Dst is our Src and its Src our "
                    f"Dst); RefLayout = SrcLayout ``{dst_ld}`` (bits).")
    return make


SM75_U32x1_LDSM_N = _ldsm("SM75_U32x1_LDSM_N")
SM75_U32x2_LDSM_N = _ldsm("SM75_U32x2_LDSM_N")
SM75_U32x4_LDSM_N = _ldsm("SM75_U32x4_LDSM_N")
SM75_U16x2_LDSM_T = _ldsm("SM75_U16x2_LDSM_T")
SM75_U16x4_LDSM_T = _ldsm("SM75_U16x4_LDSM_T")
SM75_U16x8_LDSM_T = _ldsm("SM75_U16x8_LDSM_T")
SM90_U32x1_STSM_N = _stsm("SM90_U32x1_STSM_N", "SM75_U32x1_LDSM_N")
SM90_U32x2_STSM_N = _stsm("SM90_U32x2_STSM_N", "SM75_U32x2_LDSM_N")
SM90_U32x4_STSM_N = _stsm("SM90_U32x4_STSM_N", "SM75_U32x4_LDSM_N")
SM90_U16x2_STSM_T = _stsm("SM90_U16x2_STSM_T", "SM75_U16x2_LDSM_T")
SM90_U16x4_STSM_T = _stsm("SM90_U16x4_STSM_T", "SM75_U16x4_LDSM_T")
SM90_U16x8_STSM_T = _stsm("SM90_U16x8_STSM_T", "SM75_U16x8_LDSM_T")


# --- TMA -------------------------------------------------------------------------------------

def _tma_bits(op, num_bits, box_shape, value_type):
    if num_bits is None:
        if box_shape is None or value_type is None:
            raise AtomError(op, "num_bits", "is required (or give box_shape and value_type)")
        num_bits = it.product(box_shape) * sizeof_bits(canonical_type(value_type, op, "value_type"))
    if not isinstance(num_bits, int) or isinstance(num_bits, bool) or num_bits < 8 or num_bits % 8:
        raise AtomError(op, "num_bits", "must be a positive whole number of bytes in bits",
                        actual=repr(num_bits))
    return num_bits


def SM90_TMA_LOAD(num_bits=None, *, box_shape=None, value_type=None) -> CopyOp:
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes``: one
    thread issues the load of a whole box. CuTe's traits ``Copy_Traits<SM90_TMA_LOAD,
    NumBitsPerTMA>`` have ``SrcLayout = DstLayout = (1,NumBitsPerTMA):(0,1)``: the box is one
    value. ``num_bits`` or ``box_shape`` and ``value_type`` give its size."""
    b = _tma_bits("SM90_TMA_LOAD", num_bits, box_shape, value_type)
    return CopyOp(name=f"SM90_TMA_LOAD<{b}b>", thr_id=Layout(1), src_layout=_vec(b),
                  dst_layout=_vec(b), ref_layout=_vec(b), kind="tma_load",
                  ptx="cp.async.bulk.tensor.{1..5}d.shared::cluster.global.mbarrier::"
                      "complete_tx::bytes.L2::cache_hint [smem], [desc, {coords}], [mbar], hint",
                  src_space="gmem", dst_space="smem", arch=90)


def SM90_TMA_LOAD_MULTICAST(num_bits=None, *, box_shape=None, value_type=None) -> CopyOp:
    """The multicast TMA load (``.multicast::cluster``, a CTA mask); traits as ``SM90_TMA_LOAD``."""
    b = _tma_bits("SM90_TMA_LOAD_MULTICAST", num_bits, box_shape, value_type)
    return CopyOp(name=f"SM90_TMA_LOAD_MULTICAST<{b}b>", thr_id=Layout(1), src_layout=_vec(b),
                  dst_layout=_vec(b), ref_layout=_vec(b), kind="tma_load",
                  ptx="cp.async.bulk.tensor.{1..5}d.shared::cluster.global.mbarrier::"
                      "complete_tx::bytes.multicast::cluster [smem], [desc, {coords}], [mbar], mask",
                  src_space="gmem", dst_space="smem", arch=90)


def SM90_TMA_STORE(num_bits=None, *, box_shape=None, value_type=None) -> CopyOp:
    """``cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group``: one thread stores a whole box
    (then ``cp.async.bulk.commit_group`` / ``cp.async.bulk.wait_group.read``)."""
    b = _tma_bits("SM90_TMA_STORE", num_bits, box_shape, value_type)
    return CopyOp(name=f"SM90_TMA_STORE<{b}b>", thr_id=Layout(1), src_layout=_vec(b),
                  dst_layout=_vec(b), ref_layout=_vec(b), kind="tma_store",
                  ptx="cp.async.bulk.tensor.{1..5}d.global.shared::cta.bulk_group [desc, {coords}], [smem]",
                  src_space="smem", dst_space="gmem", arch=90)
