"""TMA descriptors from layouts (CuTe's ``make_tma_copy``, host side).

:func:`make_tma_atom` takes the global tensor's layout (shape and element strides, sizes may be
runtime ints) and the shared-memory layout of one CTA tile (a swizzled GMMA layout atom tiled to
the tile: ``tile_to_shape(GMMA.Layout_K_SW128_Atom(T), (BM, BK))``) and derives the TMA box the
way CuTe does: invert the non-swizzle part of the smem layout (``right_inverse``: smem offset ->
tile coordinate), compose the gmem tile layout with it (``composition``: smem offset -> gmem
offset) and ``coalesce``.  Each mode of the result is one box dimension, ordered as smem is
filled; the first must be contiguous in global memory (stride 1), and each must run along one
mode of the global tensor (its global extent and byte stride become the descriptor's dimension
and stride).  The smem swizzle ``Sw<B,4,3>`` (on byte addresses) gives the TMA swizzle mode
(``B`` = 1, 2, 3 -> 32, 64, 128 bytes).  Modes of the global tensor that the tile does not
cover (a batch mode L) become box dimensions of size 1.

:meth:`TmaAtom.encode` then asks the driver (``cuTensorMapEncodeTiled``, :func:`encode_tiled`:
the backend's one encoder) for the 128-byte ``CUtensorMap``; nothing is hand-packed.  Every requirement
the driver has is checked first and raises :class:`~cute_py.errors.LaunchError` naming the
argument (16-byte aligned base and strides, box <= 256 per dimension, inner box within the
swizzle span ...).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import cute_py as cute
from cute_py.composed import get_nonswizzle_portion, get_swizzle_portion, is_composed_layout
from cute_py.errors import LaunchError, LayoutError

__all__ = ["TmaAtom", "make_tma_atom", "default_l2_promotion", "encode_tiled",
           "address_word_patchable", "TMA_DTYPES", "SWIZZLE_BYTES"]

#: element type name -> (CUtensorMapDataType value, bytes)
TMA_DTYPES = {"f16": (6, 2), "float16": (6, 2), "bf16": (9, 2), "bfloat16": (9, 2),
              "f32": (7, 4), "float32": (7, 4), "u16": (1, 2), "uint16": (1, 2),
              "u8": (0, 1), "uint8": (0, 1), "float8_e4m3": (0, 1), "float8_e5m2": (0, 1)}
#: swizzle bits B of Sw<B,4,3> -> (CUtensorMapSwizzle value, span in bytes)
SWIZZLE_BYTES = {0: (0, 0), 1: (1, 32), 2: (2, 64), 3: (3, 128)}


def default_l2_promotion(ptr: int, strides) -> int:
    """``CUtensorMapL2promotion`` for a TMA tensor at ``ptr`` with byte ``strides`` (the modes
    after the contiguous one): 3 (256 B) when every row starts on a 128-byte boundary, else 2
    (128 B) — measured 16-19% faster than 256 B for GEMM operands with rows off those
    boundaries, the same within noise for aligned ones (docs/performance.md, "Epilogue", v3)."""
    return 3 if ptr % 128 == 0 and all(int(s) % 128 == 0 for s in strides) else 2


@dataclass(frozen=True)
class TmaAtom:
    """A derived TMA copy: ``box`` (innermost first), the global ``dims`` / byte ``strides``
    (``strides[i]`` for dimension ``i + 1``; dimension 0 is contiguous), the swizzle, and
    ``g_modes``: for each TMA dimension, the mode of the global tensor it walks (so kernel
    coordinates are ``(coord[g_modes[0]], coord[g_modes[1]], ...)``)."""

    dtype: str
    dims: tuple
    strides: tuple
    box: tuple
    g_modes: tuple
    swizzle_bits: int
    smem_bytes: int

    @property
    def rank(self) -> int:
        return len(self.dims)

    def bind(self, g_shape, g_stride, *, op: str = "TmaAtom.bind") -> "TmaAtom":
        """The same box on a global tensor with other (runtime) extents and strides, e.g. a
        box derived once with symbolic strides (CuTe's basis strides) and bound per launch.
        ``g_stride[g_modes[0]]`` must be 1; other byte strides 16-byte multiples."""
        _, eb = TMA_DTYPES[self.dtype]
        if int(g_stride[self.g_modes[0]]) != 1:
            raise LaunchError(op, "g_stride", "the box's inner mode must be contiguous",
                              expected=1, actual=g_stride[self.g_modes[0]])
        dims = tuple(int(g_shape[i]) for i in self.g_modes)
        strides = tuple(int(g_stride[i]) * eb for i in self.g_modes[1:])
        _check_dims_strides(dims, strides, self.g_modes, op)
        return TmaAtom(self.dtype, dims, strides, self.box, self.g_modes, self.swizzle_bits,
                       self.smem_bytes)

    def encode(self, ptr: int, l2_promotion: int | None = None) -> bytes:
        """The 128-byte ``CUtensorMap`` for a tensor at device address ``ptr``.

        ``l2_promotion``: ``CUtensorMapL2promotion`` (0 none, 1 64 B, 2 128 B, 3 256 B);
        default :func:`default_l2_promotion` of ``ptr`` and the byte strides."""
        if l2_promotion is None:
            l2_promotion = default_l2_promotion(ptr, self.strides)
        if l2_promotion not in (0, 1, 2, 3):
            raise LaunchError("TmaAtom.encode", "l2_promotion", "is not a CUtensorMapL2promotion",
                              expected=(0, 1, 2, 3), actual=l2_promotion)
        if ptr % 16:
            raise LaunchError("TmaAtom.encode", "ptr", "must be 16-byte aligned for TMA",
                              expected="ptr % 16 == 0", actual=ptr)
        return encode_tiled(self.dtype, self.dims, self.strides, self.box, self.swizzle_bits,
                            ptr, l2_promotion)


def encode_tiled(dtype: str, dims, strides, box, swizzle_bits: int, ptr: int,
                 l2_promotion: int = 2) -> bytes:
    """The backend's one TMA descriptor encoder: ``cuTensorMapEncodeTiled`` for a tensor of
    ``dtype`` at ``ptr`` with extents ``dims`` (innermost first), byte ``strides`` of
    dimensions 1.., a ``box``, swizzle ``Sw<swizzle_bits,4,3>`` and an L2 promotion; returns
    the 128-byte ``CUtensorMap``."""
    import ctypes
    from . import driver
    dt, _ = TMA_DTYPES[dtype]
    sw, _ = SWIZZLE_BYTES[swizzle_bits]
    buf = ctypes.create_string_buffer(128 + 64)
    addr = ctypes.addressof(buf) + (-ctypes.addressof(buf)) % 64
    res = driver.tensor_map_encode_tiled(addr, dt, dims, strides, box, ptr, sw, l2_promotion)
    if res:
        raise LaunchError("TmaAtom.encode", "cuTensorMapEncodeTiled",
                          f"driver refused the descriptor (CUresult {res})",
                          actual=(dtype, dims, strides, box, swizzle_bits, hex(ptr)))
    return ctypes.string_at(addr, 128)


_ADDRESS_WORD: list = []


def address_word_patchable() -> bool:
    """Whether this driver stores a ``CUtensorMap``'s global address verbatim in its first
    64-bit word, and nothing else in the descriptor depends on the address (same alignment
    class).  Checked once per process by encoding one descriptor at two addresses and comparing
    the bytes; launch plans then patch that word for a new tensor instead of encoding again.
    When the check fails, plans encode every descriptor per call."""
    if not _ADDRESS_WORD:
        ok = True
        try:
            p1, p2 = 0x7F0000000000, 0x7F0123456000   # same 4 KiB alignment class
            args = ("float16", (4096, 1000, 3), (8192, 8192 * 1000), (64, 128, 1), 3)
            d1, d2 = encode_tiled(*args, p1, 3), encode_tiled(*args, p2, 3)
            w1, w2 = struct.unpack("<16Q", d1), struct.unpack("<16Q", d2)
            ok = w1[0] == p1 and w2[0] == p2 and w1[1:] == w2[1:]
        except Exception:
            ok = False
        _ADDRESS_WORD.append(ok)
    return _ADDRESS_WORD[0]


def _swizzle_bits(sw, op) -> int:
    if sw is None:
        return 0
    B, M, S = sw.B, sw.M, sw.S
    if B == 0:
        return 0
    if M != 4 or S != 3 or B not in (1, 2, 3):
        raise LayoutError(op, "smem_layout", "has a swizzle TMA cannot produce; TMA swizzles "
                          "are Sw<1,4,3>, Sw<2,4,3>, Sw<3,4,3> on byte addresses",
                          expected="Sw<B,4,3>", actual=str(sw))
    return B


def make_tma_atom(dtype: str, g_shape, g_stride, smem_layout, *, op: str = "make_tma_atom"
                  ) -> TmaAtom:
    """Derive the TMA box for copying a CTA tile between a global tensor and shared memory.

    ``g_shape`` / ``g_stride``: the global tensor, element strides, rank >= rank of the tile;
    the first ``rank(smem_layout)`` modes are tiled, the rest (e.g. a batch mode) get box 1.
    ``smem_layout``: a ``Layout`` or swizzled ``ComposedLayout`` over the tile shape mapping a
    tile coordinate to an smem element offset; it must be compact.

    Law: for every smem offset ``i``, the TMA box element ``i`` (box coordinates innermost
    first) is the global element ``composition(g_tile, right_inverse(smem))(i)``.
    """
    if dtype not in TMA_DTYPES:
        raise LaunchError(op, "dtype", "is not a TMA element type", expected=sorted(TMA_DTYPES),
                          actual=dtype)
    _, eb = TMA_DTYPES[dtype]
    g_shape, g_stride = tuple(g_shape), tuple(g_stride)
    if len(g_shape) != len(g_stride):
        raise LaunchError(op, "g_stride", "must have one stride per mode of g_shape",
                          expected=len(g_shape), actual=len(g_stride))
    if is_composed_layout(smem_layout):
        sw = get_swizzle_portion(smem_layout)
        inner = get_nonswizzle_portion(smem_layout)
    else:
        sw, inner = None, smem_layout
    B = _swizzle_bits(sw, op)
    tile = cute.shape(inner)
    tile = tile if isinstance(tile, tuple) else (tile,)
    r = len(tile)
    if len(g_shape) < r:
        raise LaunchError(op, "g_shape", "has fewer modes than the smem tile",
                          expected=f">= {r}", actual=g_shape)
    tile_sizes = tuple(cute.size(t) for t in tile)
    if cute.cosize(inner) != cute.size(inner):
        raise LayoutError(op, "smem_layout", "is not compact (cosize != size)",
                          actual=str(inner))
    inv = cute.right_inverse(inner)
    g_tile = cute.make_layout(tile_sizes, stride=tuple(g_stride[:r]))
    tma = cute.coalesce(cute.composition(g_tile, inv))
    sh = cute.shape(tma) if isinstance(cute.shape(tma), tuple) else (cute.shape(tma),)
    st = cute.stride(tma) if isinstance(cute.stride(tma), tuple) else (cute.stride(tma),)
    if st[0] != 1:
        raise LayoutError(op, "g_stride", "the smem tile's contiguous direction is not "
                          "contiguous in global memory (TMA needs stride 1 innermost); use the "
                          "transposed smem layout atom", expected=1, actual=st[0])
    box, modes = [], []
    for s, d in zip(sh, st):
        cand = [i for i in range(r) if g_stride[i] == d and tile_sizes[i] == s]
        if len(cand) != 1:
            raise LayoutError(op, "smem_layout", "a TMA box dimension must run along exactly "
                              "one whole mode of the tile", expected=f"modes of {tile_sizes} "
                              f"with strides {g_stride[:r]}", actual=f"{s}:{d}")
        box.append(s)
        modes.append(cand[0])
    for i in range(r, len(g_shape)):
        box.append(1)
        modes.append(i)
    dims = tuple(_static_or_symbol(g_shape[i]) for i in modes)
    strides = tuple(_static_or_symbol(g_stride[i]) * eb for i in modes[1:])
    _check_dims_strides(dims, strides, modes, op)
    for i, b in enumerate(box):
        if b > 256:
            raise LaunchError(op, "smem_layout", f"TMA box dimension {i} exceeds 256",
                              expected="<= 256", actual=b)
    span = SWIZZLE_BYTES[B][1]
    if B and box[0] * eb > span:
        raise LayoutError(op, "smem_layout", "inner box dimension exceeds the swizzle span",
                          expected=f"<= {span} bytes", actual=box[0] * eb)
    if (box[0] * eb) % 16:
        raise LayoutError(op, "smem_layout", "inner box dimension must be a multiple of 16 "
                          "bytes", actual=box[0] * eb)
    nbytes = eb
    for b in box:
        nbytes *= b
    return TmaAtom(dtype, dims, strides, tuple(box), tuple(modes), B, nbytes)


def _static_or_symbol(x):
    """An int, or a sympy expression kept as it is (a runtime extent or stride: the atom is
    bound to the real tensor with :meth:`TmaAtom.bind`)."""
    from cute_py.symbolic import is_symbolic
    return x if is_symbolic(x) else int(x)


def _check_dims_strides(dims, strides, modes, op):
    from cute_py.symbolic import is_symbolic
    dims = [d for d in dims if not is_symbolic(d)]
    strides = [s if not is_symbolic(s) else 16 for s in strides]   # checked when bound
    for i, s in enumerate(strides):
        if s % 16 or s <= 0:
            raise LaunchError(op, "g_stride", f"mode {modes[i + 1]} has a byte stride that is not "
                              "a positive multiple of 16 (TMA requirement)",
                              expected="stride * sizeof(T) % 16 == 0", actual=s)
        if s >= 1 << 40:
            raise LaunchError(op, "g_stride", "byte stride too large for TMA", actual=s)
    for i, d in enumerate(dims):
        if not 1 <= d <= 1 << 32:
            raise LaunchError(op, "g_shape", f"extent {d} of dimension {i} outside [1, 2^32]",
                              actual=d)
