"""SM90 ``wgmma`` atoms (CuTe ``include/cute/atom/mma_traits_sm90_gmma.hpp``).

One warpgroup (``ThrID = 128:1``) computes a ``64 x N x 16`` product. ``_SS`` atoms read A and B
through shared-memory descriptors: their A/B layouts are ``ABLayout<M,K> = (128,(M,K)):(0,(1,M))``
(every thread "sees" the whole tile). ``_RS`` atoms take A from registers
(``ALayout_64x16 = ((4,8,4),(2,2,2)):((128,1,16),(64,8,512))``) and then A must be K-major.
The accumulator is ``CLayout_64xN = ((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))``.

``N`` is any multiple of 8 in ``[8, 256]`` (the core header has 8,16,32,64,96,128,192,256; the
``_ext`` header the rest). Majors are ``"K"`` or ``"MN"`` (or ``cute_py.GMMA.Major.K`` / ``.MN``).

FP8 (``SM90_64xNx32_{F32,F16}{E4M3,E5M2}{E4M3,E5M2}_{SS,RS}_TN``): a ``64 x N x 32`` product of
8-bit e4m3 / e5m2 inputs into F32 (or packed F16) accumulators.  wgmma reads 8-bit operands
K-major only (``_TN``: there are no transpose bits), so these atoms take no majors.  The A/B
layouts are ``ABLayout<64,32>`` / ``ABLayout<N,32>`` (SS) and, A from registers (RS),
``ALayout_64x32 = ((4,8,4),(4,2,2)):((256,1,16),(64,8,1024))``; C is ``CLayout_64xN``.
"""

from __future__ import annotations

from ..errors import AtomError
from ..numeric import CUTE_NAME, PTX
from ..layout import Layout
from .mma_atom import MMA_Atom

__all__ = [
    "CLayout_64xN", "ALayout_64x16", "ABLayout",
    "SM90_64xNx16_F32F16F16_SS", "SM90_64xNx16_F32F16F16_RS",
    "SM90_64xNx16_F32BF16BF16_SS", "SM90_64xNx16_F32BF16BF16_RS",
    "SM90_N_VALUES", "ALayout_64x32", "SM90_64xNx32_FP8",
]

#: The N of the core header's wgmma atoms (every multiple of 8 up to 256 is accepted).
SM90_N_VALUES = (8, 16, 32, 64, 96, 128, 192, 256)


class _GMMA:
    """Majors accepted by the wgmma atoms: ``"K"``/``"MN"`` or ``cute_py.GMMA.Major.K``/``.MN``."""

    class Major:
        K = "K"
        MN = "MN"


def CLayout_64xN(N: int) -> Layout:
    """``((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))``: ``(thr, val) -> m + 64*n``."""
    if not isinstance(N, int) or isinstance(N, bool) or N < 8 or N % 8:
        raise AtomError("CLayout_64xN", "N", "must be a positive multiple of 8", actual=repr(N))
    return Layout(((4, 8, 4), (2, 2, N // 8)), ((128, 1, 16), (64, 8, 512)))


#: Register-sourced A for 16-bit types: ``(thr, val) -> m + 64*k``.
ALayout_64x16 = Layout(((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512)))


#: Register-sourced A for 8-bit types: ``(thr, val) -> m + 64*k``.
ALayout_64x32 = Layout(((4, 8, 4), (4, 2, 2)), ((256, 1, 16), (64, 8, 1024)))


def ABLayout(M: int, K: int) -> Layout:
    """``(128,(M,K)):(0,(1,M))``: all 128 threads see the whole shared-memory tile."""
    return Layout((128, (M, K)), (0, (1, M)))


def _major(x, arg, op):
    x = getattr(x, "name", x)   # GMMA.Major.K of cute_py.smem_atoms, or a string
    if x in ("K", 0, "k"):
        return "K"
    if x in ("MN", 1, "mn", "M", "N"):
        return "MN"
    raise AtomError(op, arg, "must be GMMA.Major.K or GMMA.Major.MN", expected="'K' or 'MN'",
                    actual=repr(x))


def _gmma(ab: str, src: str, N, a_major, b_major) -> MMA_Atom:
    tname = CUTE_NAME[ab] * 2
    generic = f"SM90_64xNx16_F32{tname}_{src}"
    if not isinstance(N, int) or isinstance(N, bool) or N % 8 != 0 or not 8 <= N <= 256:
        raise AtomError(generic, "N", "is not a wgmma N for 16-bit inputs",
                        expected="a multiple of 8 in [8, 256] (core: 8,16,32,64,96,128,192,256)",
                        actual=N)
    name = f"SM90_64x{N}x16_F32{tname}_{src}"
    am = _major(a_major, "a_major", name)
    bm = _major(b_major, "b_major", name)
    if src == "RS" and am != "K":
        raise AtomError(name, "a_major", "must be K: wgmma with A from registers requires a "
                        "K-major A (CuTe static_assert tnspA == GMMA::Major::K)",
                        expected="'K'", actual=repr(a_major))
    p = PTX[ab]
    if src == "SS":
        layout_a = ABLayout(64, 16)
        regs = (("void", 0), ("uint64", 1), ("uint64", 1), ("float32", N // 2))
        operands = "{d...}, desc_a, desc_b, scale_d, imm_scale_a, imm_scale_b, tnsp_a, tnsp_b"
    else:
        layout_a = ALayout_64x16
        regs = (("void", 0), ("uint32", 4), ("uint64", 1), ("float32", N // 2))
        operands = "{d...}, {a0,a1,a2,a3}, desc_b, scale_d, imm_scale_a, imm_scale_b, tnsp_b"
    ptx = f"wgmma.mma_async.sync.aligned.m64n{N}k16.f32.{p}.{p} {operands}"
    return MMA_Atom(name=name, thr_id=Layout(128), shape_mnk=(64, N, 16),
                    layout_A=layout_a, layout_B=ABLayout(N, 16), layout_C=CLayout_64xN(N),
                    d_type="float32", a_type=ab, b_type=ab, c_type="float32", ptx=ptx, arch=90,
                    a_source="smem" if src == "SS" else "rmem", b_source="smem",
                    a_major=am, b_major=bm, registers=regs)


def SM90_64xNx16_F32F16F16_SS(N: int, a_major="K", b_major="K") -> MMA_Atom:
    """``wgmma.mma_async.sync.aligned.m64n{N}k16.f32.f16.f16`` with A and B from shared memory
    descriptors (CuTe ``SM90_64x{N}x16_F32F16F16_SS<tnspA, tnspB>``); either major."""
    return _gmma("float16", "SS", N, a_major, b_major)


def SM90_64xNx16_F32F16F16_RS(N: int, a_major="K", b_major="K") -> MMA_Atom:
    """``wgmma...m64n{N}k16.f32.f16.f16`` with A from registers (K-major only) and B from smem."""
    return _gmma("float16", "RS", N, a_major, b_major)


def SM90_64xNx16_F32BF16BF16_SS(N: int, a_major="K", b_major="K") -> MMA_Atom:
    """``wgmma...m64n{N}k16.f32.bf16.bf16``, A and B from shared-memory descriptors."""
    return _gmma("bfloat16", "SS", N, a_major, b_major)


def SM90_64xNx16_F32BF16BF16_RS(N: int, a_major="K", b_major="K") -> MMA_Atom:
    """``wgmma...m64n{N}k16.f32.bf16.bf16``, A from registers (K-major only), B from smem."""
    return _gmma("bfloat16", "RS", N, a_major, b_major)


_FP8 = {"E4M3": "float8_e4m3", "E5M2": "float8_e5m2"}
_ACC = {"F32": "float32", "F16": "float16"}


def SM90_64xNx32_FP8(N: int, d: str = "F32", a: str = "E4M3", b: str = "E4M3",
                     src: str = "SS") -> MMA_Atom:
    """The FP8 wgmma atom ``SM90_64x{N}x32_{d}{a}{b}_{src}_TN``: ``d`` the accumulator
    (``"F32"`` or ``"F16"``), ``a`` / ``b`` the input formats (``"E4M3"`` or ``"E5M2"``), ``src``
    ``"SS"`` (A and B from shared-memory descriptors) or ``"RS"`` (A from registers).  Both
    operands K-major (``_TN``).  ``wgmma.mma_async.sync.aligned.m64n{N}k32.{d}.{a}.{b}``."""
    generic = f"SM90_64xNx32_{d}{a}{b}_{src}_TN"
    for arg, val, allowed in (("d", d, _ACC), ("a", a, _FP8), ("b", b, _FP8),
                              ("src", src, ("SS", "RS"))):
        if not isinstance(val, str) or val not in allowed:
            raise AtomError("SM90_64xNx32_FP8", arg, "is not an FP8 wgmma choice",
                            expected=sorted(allowed), actual=repr(val))
    if not isinstance(N, int) or isinstance(N, bool) or N % 8 != 0 or not 8 <= N <= 256:
        raise AtomError(generic, "N", "is not a wgmma N for 8-bit inputs",
                        expected="a multiple of 8 in [8, 256]", actual=N)
    name = f"SM90_64x{N}x32_{d}{a}{b}_{src}_TN"
    ab, bb, dt = _FP8[a], _FP8[b], _ACC[d]
    d_regs = ("float32", N // 2) if d == "F32" else ("uint32", N // 4)
    if src == "SS":
        layout_a = ABLayout(64, 32)
        regs = (("void", 0), ("uint64", 1), ("uint64", 1), d_regs)
        operands = "{d...}, desc_a, desc_b, scale_d, imm_scale_a, imm_scale_b"
    else:
        layout_a = ALayout_64x32
        regs = (("void", 0), ("uint32", 4), ("uint64", 1), d_regs)
        operands = "{d...}, {a0,a1,a2,a3}, desc_b, scale_d, imm_scale_a, imm_scale_b"
    ptx = (f"wgmma.mma_async.sync.aligned.m64n{N}k32.{PTX[dt]}.{PTX[ab]}.{PTX[bb]} "
           f"{operands}")
    return MMA_Atom(name=name, thr_id=Layout(128), shape_mnk=(64, N, 32),
                    layout_A=layout_a, layout_B=ABLayout(N, 32), layout_C=CLayout_64xN(N),
                    d_type=dt, a_type=ab, b_type=bb, c_type=dt, ptx=ptx, arch=90,
                    a_source="smem" if src == "SS" else "rmem", b_source="smem",
                    a_major="K", b_major="K", registers=regs)


def _named_fp8(N, d, a, b, src):
    def make():
        return SM90_64xNx32_FP8(N, d, a, b, src)
    make.__name__ = make.__qualname__ = f"SM90_64x{N}x32_{d}{a}{b}_{src}_TN"
    make.__doc__ = (f"CuTe's ``{make.__name__}``: ``SM90_64xNx32_FP8({N}, {d!r}, {a!r}, {b!r}, "
                    f"{src!r})`` (both operands K-major).")
    return make


def _named(ab, src, N):
    fn = {("float16", "SS"): SM90_64xNx16_F32F16F16_SS, ("float16", "RS"): SM90_64xNx16_F32F16F16_RS,
          ("bfloat16", "SS"): SM90_64xNx16_F32BF16BF16_SS,
          ("bfloat16", "RS"): SM90_64xNx16_F32BF16BF16_RS}[(ab, src)]

    def make(a_major="K", b_major="K"):
        return fn(N, a_major, b_major)
    tname = CUTE_NAME[ab] * 2
    make.__name__ = make.__qualname__ = f"SM90_64x{N}x16_F32{tname}_{src}"
    make.__doc__ = f"CuTe's ``{make.__name__}<tnspA, tnspB>``: ``{fn.__name__}({N}, a_major, b_major)``."
    return make


# CuTe's concrete names: SM90_64x128x16_F32F16F16_SS(a_major="K", b_major="K") ...
for _N in SM90_N_VALUES:
    for _ab in ("float16", "bfloat16"):
        for _src in ("SS", "RS"):
            _f = _named(_ab, _src, _N)
            globals()[_f.__name__] = _f
            __all__.append(_f.__name__)
    for _d in _ACC:
        for _a in _FP8:
            for _b in _FP8:
                for _src in ("SS", "RS"):
                    _f = _named_fp8(_N, _d, _a, _b, _src)
                    globals()[_f.__name__] = _f
                    __all__.append(_f.__name__)
del _N, _ab, _src, _f, _d, _a, _b
