"""Compose a Hopper GEMM from the library's objects, and read a configuration back as objects.

``make_gemm_sm90(tiled_mma, tile_mnk, ...)`` takes a :class:`cute_py.atom.TiledMMA` of an SM90
``wgmma`` atom with A and B from shared memory (``SM90_64xNx16_F32{F16F16,BF16BF16}_SS``, or
the FP8 ``SM90_64xNx32_F32{E4M3,E5M2}{E4M3,E5M2}_SS_TN`` with ``BK`` = 128) over
1 or 2 consumer warpgroups along M, the CTA tile ``(BM, BN, BK)``, and optionally the GMMA
shared-memory layouts (``tile_to_shape(GMMA.Layout_{K,MN}_{SW128,SW64,SW32,INTER}_Atom(T),
(rows, BK))``; default: the widest swizzle whose atom tiles the stage), the TMA copy atoms (:class:`~backends.cuda.tma.TmaAtom`), the stage count, the
schedule, a cluster (``cluster_m x cluster_n`` CTAs: B's tile multicast along M, A's along N)
and an epilogue, checks them against what the hardware allows and
what the generator derives, and returns the frozen :class:`Sm90GemmConfig` the kernel source
is generated from (``generate_source(cfg)``).

``describe(cfg)`` is the inverse view: the TiledMMA, the GMMA smem layouts and the TMA atoms of
a configuration, as algebra objects (:class:`Sm90Objects`).

``BK``: any multiple of the wgmma K (16 elements of a 16-bit type) up to 256 that each
operand's smem atom tiles (``gemm_sm90_maps.tile_k_rule``): a K-major atom is one swizzle row
wide along K (SW128 / SW64 / SW32: 128 / 64 / 32 bytes, interleaved: 16), so a narrower
stage needs a narrower swizzle (16-bit BK 32: SW64 or narrower; BK 16: SW32 or interleaved)
and a wider one repeats the atom along K (a TMA box per repeat, the k-steps past the first
atom start at the layout's offset of their k); an MN-major atom is 8 k-rows deep.

Refused with :class:`~cute_py.errors.AtomError` (naming the argument): an MMA atom that is not
an SS wgmma; ``BK`` not a multiple of the wgmma K or over 256 (``tile_mnk``); an smem operand
layout that is not a canonical GMMA layout for ``BK`` (the message names the swizzles that
are, and the rule the others break); a TMA box dimension
over 256; ``BM`` not a multiple of 64 per warpgroup; ``BN`` not the atom's N (a multiple of 8,
at most 256); a shared-memory footprint over 227 KB; an output type other than the inputs'.

Law: ``describe(make_gemm_sm90(mma, tile, smem_layout_A=LA, ...))`` gives back objects equal
(as functions) to the ones passed in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from cute_py.errors import AtomError, LaunchError

from .gemm_sm90 import SCHEDULES, Sm90GemmConfig
from .gemm_sm90_maps import (SWIZZLES, TMA_BOX_MAX, derive_maps, smem_tile, tile_k_rule,
                             wgmma_k, widest_swizzle)

__all__ = ["make_gemm_sm90", "describe", "Sm90Objects"]

_OP = "make_gemm_sm90"
_DT = {"float16": "f16", "bfloat16": "bf16", "float8_e4m3": "e4m3", "float8_e5m2": "e5m2"}
#: 8-bit formats: the smem atoms / TMA boxes are those of 1-byte elements
_FP8 = ("e4m3", "e5m2")
_OUT = {"bfloat16": "bf16", "bf16": "bf16", "float16": "f16", "f16": "f16"}
_SMEM_LIMIT = 227 * 1024


@dataclass(frozen=True)
class Sm90Objects:
    """The algebra objects of a configuration (see :func:`describe`)."""

    tiled_mma: object
    smem_layout_A: object
    smem_layout_B: object
    copy_A: object
    copy_B: object


def _same_function(a, b, rows: int, cols: int) -> bool:
    import cute_py as cute
    try:
        if cute.size(a) != cute.size(b):
            return False
        return all(a((r, k)) == b((r, k)) for r in range(rows) for k in range(cols))
    except Exception:
        return False


def _swizzle_of(layout, dt, rows, cols, major, arg, eb=2) -> int:
    """The swizzle bits of the canonical GMMA layout ``layout`` is (as a function), else
    AtomError naming the swizzles a ``cols``-wide stage allows and why the others are not
    canonical.  ``None``: the widest swizzle whose atom tiles the stage."""
    if layout is None:
        return widest_swizzle(cols, eb, major)
    allowed = [B for B in (3, 2, 1, 0) if tile_k_rule(cols, eb, major, B) is None]
    for B in allowed:
        try:
            canon = smem_tile(dt, rows, cols, major, B)
        except Exception:
            continue
        if _same_function(layout, canon, rows, cols):
            return B
    refused = "; ".join(f"{SWIZZLES[B]}: {tile_k_rule(cols, eb, major, B)}"
                        for B in (3, 2, 1, 0) if B not in allowed)
    raise AtomError(_OP, arg, "is not a canonical GMMA shared-memory layout for this operand "
                    f"and BK = {cols}" + (f" ({refused})" if refused else ""),
                    expected=f"tile_to_shape(GMMA.Layout_{major}_"
                             f"{{{','.join(SWIZZLES[B] for B in allowed)}}}_Atom,"
                             f" ({rows}, {cols}))", actual=str(layout))


def _atom_facts(tiled_mma):
    atom = getattr(tiled_mma, "atom", None)
    name = getattr(atom, "name", None)
    if atom is None or not str(name).startswith("SM90_64x") or getattr(atom, "a_source",
                                                                        None) != "smem":
        raise AtomError(_OP, "tiled_mma", "needs an SM90 wgmma atom with A and B from shared "
                        "memory", expected="SM90_64xNx16_F32{F16F16,BF16BF16}_SS or "
                        "SM90_64xNx32_F32{E4M3,E5M2}{E4M3,E5M2}_SS_TN", actual=name)
    if atom.a_type not in _DT or atom.b_type not in _DT or (
            _DT[atom.a_type] in _FP8 and getattr(atom, "c_type", "float32") != "float32"):
        raise AtomError(_OP, "tiled_mma", "has an input type the generator does not emit",
                        expected=sorted(_DT), actual=atom.a_type)
    import cute_py as cute
    shape = cute.shape(tiled_mma.atom_layout_mnk)
    shape = shape if isinstance(shape, tuple) else (shape,)
    wgs = shape[0]
    if tuple(shape[1:]) not in ((), (1,), (1, 1)) or wgs not in (1, 2):
        raise AtomError(_OP, "tiled_mma", "must lay 1 or 2 consumer warpgroups out along M",
                        expected="(1,1,1) or (2,1,1)", actual=shape)
    return atom, _DT[atom.a_type], wgs


def make_gemm_sm90(tiled_mma, tile_mnk, *, smem_layout_A=None, smem_layout_B=None, copy_A=None,
                   copy_B=None, stages=None, schedule="cooperative", cluster_m=1, epilogue=None,
                   a_major="K", b_major="K", out_dtype=None, scaling=None,
                   promote=False, cluster_n=1) -> Sm90GemmConfig:
    """A :class:`Sm90GemmConfig` built from algebra objects (see the module docstring).

    FP8 (an ``SM90_64xNx32_F32{A}{B}_SS_TN`` atom): ``BK`` = 128, ``out_dtype`` "bfloat16" or
    "float16", ``scaling`` "tensor" / "row" / "block" (``gemm_sm90_fp8``), ``promote``."""
    atom, dt, wgs = _atom_facts(tiled_mma)
    fp8 = dt in _FP8
    dt_b = _DT[atom.b_type]
    if atom.a_major != a_major or atom.b_major != b_major:
        raise AtomError(_OP, "a_major" if atom.a_major != a_major else "b_major",
                        "differs from the wgmma atom's", expected=(atom.a_major, atom.b_major),
                        actual=(a_major, b_major))
    try:
        tm, tn, tk = (int(x) for x in tile_mnk)
    except (TypeError, ValueError):
        raise AtomError(_OP, "tile_mnk", "must be (BM, BN, BK)", actual=tile_mnk) from None
    N = atom.shape_mnk[1]
    if tn != N:
        raise AtomError(_OP, "tile_mnk", "BN must be the wgmma atom's N (a multiple of 8, at "
                        "most 256)", expected=N, actual=tn)
    if fp8 and tk != 128:
        raise AtomError(_OP, "tile_mnk", "BK must be 128 for 8-bit operands (the FP8 scaling "
                        "and promotion work on 128-wide k-blocks)", expected=128, actual=tk)
    why = tile_k_rule(tk, 1 if fp8 else 2, "MN", 3)     # the rules of every operand layout
    if why is not None:
        raise AtomError(_OP, "tile_mnk", f"BK {why}",
                        expected=f"a multiple of {wgmma_k(1 if fp8 else 2)} up to "
                                 f"{TMA_BOX_MAX}", actual=tk)
    if schedule not in SCHEDULES:
        raise AtomError(_OP, "schedule", "is not a kernel schedule", expected=SCHEDULES,
                        actual=schedule)
    mma_wgs = wgs
    consumer_wgs = 2 if schedule == "pingpong" else wgs
    if schedule == "pingpong" and wgs != 1:
        raise AtomError(_OP, "tiled_mma", "ping-pong: each consumer warpgroup owns a whole tile "
                        "(one warpgroup per TiledMMA)", expected="(1,1,1)", actual=wgs)
    if tm % (64 * mma_wgs) or tm // mma_wgs > 128:
        raise AtomError(_OP, "tile_mnk", "BM must give each warpgroup 64 or 128 rows (a "
                        "multiple of 64 per warpgroup)", expected=f"64*k*{mma_wgs}", actual=tm)
    for nm, v in (("cluster_m", cluster_m), ("cluster_n", cluster_n)):
        if v not in (1, 2) or isinstance(v, bool):
            raise AtomError(_OP, nm, "must be 1 or 2", actual=v)
    for dim, rows in (("BM / cluster_n", tm // cluster_n), ("BN / cluster_m", tn // cluster_m)):
        if rows > 256:
            raise AtomError(_OP, "tile_mnk", f"a TMA box dimension ({dim}) exceeds 256",
                            expected="<= 256", actual=rows)
    fp8_kw = {}
    if fp8:
        if out_dtype not in _OUT:
            raise AtomError(_OP, "out_dtype", "an FP8 GEMM stores bf16 or f16",
                            expected=("bfloat16", "float16"), actual=out_dtype)
        fp8_kw = dict(dtype_b="" if dt_b == dt else dt_b, out_dtype=_OUT[out_dtype],
                      scaling=scaling or "tensor", promote=promote)
    elif out_dtype is not None and _DT.get(out_dtype, out_dtype) != dt:
        raise AtomError(_OP, "out_dtype", "must be the input type (D is stored in it)",
                        expected=atom.a_type, actual=out_dtype)
    elif scaling is not None or promote:
        raise AtomError(_OP, "scaling", "scaling / promote belong to FP8 atoms",
                        actual=(scaling, promote))
    sdt = "uint8" if fp8 else dt
    eb = 1 if fp8 else 2
    swa = _swizzle_of(smem_layout_A, sdt, tm, tk, a_major, "smem_layout_A", eb)
    swb = _swizzle_of(smem_layout_B, sdt, tn, tk, b_major, "smem_layout_B", eb)
    cfg = Sm90GemmConfig(tile_m=tm, tile_n=tn, tile_k=tk, stages=stages or 2,
                         consumer_wgs=consumer_wgs, dtype=dt, cluster_m=cluster_m,
                         cluster_n=cluster_n, epi=epilogue,
                         a_major=a_major, b_major=b_major, schedule=schedule,
                         smem_swizzle=(swa, swb), **fp8_kw)
    if cfg.smem_bytes() > _SMEM_LIMIT:
        raise AtomError(_OP, "stages", "shared memory exceeds 227 KB", expected=_SMEM_LIMIT,
                        actual=cfg.smem_bytes())
    if stages is None:
        cfg = cfg.fit_stages()
    try:
        cfg.check()
        maps = derive_maps(cfg)
        cfg = _registers_for_loads(cfg, maps)
    except LaunchError as e:
        raise AtomError(_OP, e.arg or "tile_mnk", e.detail if hasattr(e, "detail") else str(e),
                        actual=getattr(e, "actual", None)) from None
    for arg, given, derived in (("copy_A", copy_A, maps.atom_a), ("copy_B", copy_B,
                                                                   maps.atom_b)):
        if given is not None and (given.box, given.g_modes, given.swizzle_bits) != (
                derived.box, derived.g_modes, derived.swizzle_bits):
            raise AtomError(_OP, arg, "is not the TMA box of the smem layout",
                            expected=(derived.box, derived.g_modes, derived.swizzle_bits),
                            actual=(given.box, given.g_modes, given.swizzle_bits))
    return cfg


def _registers_for_loads(cfg: Sm90GemmConfig, maps) -> Sm90GemmConfig:
    """More producer registers when a stage takes many TMA boxes (narrow swizzles: SW32 /
    interleaved K-major tiles load one box per 16 or 32 bytes of K): 40 registers spill there,
    56 do not (and leave the consumers 224 with two consumer warpgroups).
    The consumers keep the rest of the CTA's register pool (``Sm90GemmConfig.register_pool``:
    with more, ``setmaxnreg.inc`` waits forever), in multiples of 8."""
    from ..arch.sm90.tma import TmaLoad
    boxes = sum(len(TmaLoad(a, maps.operand(w), r).boxes(cfg.tile_k))
                for w, a, r in (("A", maps.atom_a, maps.a_slice_rows),
                                ("B", maps.atom_b, maps.b_slice_rows)))
    if boxes <= 6:
        return cfg
    producer = 56
    consumer = min(cfg.consumer_regs,
                   (cfg.register_pool - producer * 128) // (128 * cfg.consumer_wgs) // 8 * 8)
    return dataclasses.replace(cfg, producer_regs=producer, consumer_regs=consumer).check()


def describe(cfg: Sm90GemmConfig) -> Sm90Objects:
    """The TiledMMA (the wgmma atom over the warpgroups sharing a tile), the GMMA smem layouts
    and the TMA atoms of ``cfg``."""
    from cute_py.atom import make_tiled_mma
    from cute_py.atom import mma_traits_sm90 as T
    if cfg.dtype in _FP8:
        atom = T.SM90_64xNx32_FP8(cfg.tile_n, "F32", cfg.dtype.upper(),
                                  (cfg.dtype_b or cfg.dtype).upper(), "SS")
    else:
        fn = T.SM90_64xNx16_F32F16F16_SS if cfg.dtype in ("f16", "float16") else \
            T.SM90_64xNx16_F32BF16BF16_SS
        atom = fn(cfg.tile_n, cfg.a_major, cfg.b_major)
    mma = make_tiled_mma(atom, (cfg.mma_wgs, 1, 1))
    maps = derive_maps(cfg)
    return Sm90Objects(mma, maps.smem_a, maps.smem_b, maps.atom_a, maps.atom_b)


def swizzle_name(bits: int) -> str:
    """``SW128`` / ``SW64`` / ``SW32`` / ``INTER`` for the swizzle bits of a GMMA atom."""
    return SWIZZLES[bits]
