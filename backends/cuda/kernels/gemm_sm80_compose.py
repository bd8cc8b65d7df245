"""Compose an SM80 GEMM from the library's objects, and read a configuration back as objects.

``make_gemm_sm80(tiled_mma, tile, ...)`` takes a :class:`cute_py.atom.TiledMMA` (an SM80
``mma.sync`` atom laid out over warps), the threadblock tile, and optionally the shared-memory
layouts (``Swizzle o tile_to_shape(SM80 atom, (R, BK))`` with any swizzle, or none) and the
gmem->smem tiled copies (any thread arrangement of a ``cp.async`` / universal copy atom),
checks every hardware rule, and returns the :class:`GemmSm80Config` the kernel is generated
from.  What the hardware (or the generator) forbids raises
:class:`~cute_py.errors.AtomError` naming the argument and the rule:

* ``tiled_mma``: an atom other than the SM80 ``mma.sync`` ones; an atom layout that is not
  ``(WARPS_M, WARPS_N, 1)``; a permutation that does not give each warp a contiguous block
  (without a permutation the generator uses that one: ``(16, WARPS_M, MI):(1, WM, 16)``);
* ``tile``: not divisible by the tiled MMA's tile (warp tiles of multiples of 16 x 16);
* ``smem_layout_A/B``: not a swizzle of the SM80 atom tiling; an ``ldmatrix`` row that is not
  16 contiguous, 16-byte aligned bytes;
* ``copy_A/B``: a ``cp.async`` vector that is not 4, 8 or 16 bytes, not contiguous (in gmem
  along the contiguous mode, or in smem), or not aligned to its size in smem; a copy that does
  not cover the tile once; a non-``cp.async`` atom for the multistage mainloop;
* ``stages``: more shared memory than the target has (163 KB on sm_80, 227 KB on sm_90).

The configuration stores what regenerates them (``swizzle_a/b``, ``copy_a/b``: the TV layout
and tiler); ``describe(cfg)`` gives the objects back.  Law: ``describe(make_gemm_sm80(mma,
tile, smem_layout_A=LA, ..., copy_A=CA, ...))`` has ``smem_layout_A`` equal to ``LA`` and
``copy_A`` equal to ``CA`` as functions, and ``tiled_mma`` with ``mma``'s atom and warp
layout.  :func:`report` adds the bank-conflict analysis (``cute_py.bank_conflicts``).
"""

from __future__ import annotations

from dataclasses import replace

from cute_py.errors import AtomError

from ..arch.sm80 import mma as sm80_mma
from ..arch.sm80 import smem as sm80_smem
from .gemm_sm80_config import GemmSm80Config

__all__ = ["make_gemm_sm80", "describe", "report", "SMEM_LIMITS"]

#: target -> bytes of shared memory one block may use
SMEM_LIMITS = {"sm_80": 163 * 1024, "sm_86": 99 * 1024, "sm_90": 227 * 1024,
               "sm_90a": 227 * 1024}
_OP = "make_gemm_sm80"


def _atom_dtype(tiled_mma) -> str:
    return sm80_mma.atom_dtype(tiled_mma)


def _same_function(L, want, R: int, BK: int) -> bool:
    try:
        return all(L((r, k)) == want((r, k)) for r in range(R) for k in range(BK))
    except Exception:
        return False


def _warps(tiled_mma):
    al = tiled_mma.atom_layout_mnk
    shape = al.shape if isinstance(al.shape, tuple) else (al.shape,)
    shape = tuple(shape) + (1,) * (3 - len(shape))
    if any(isinstance(s, tuple) for s in shape) or shape[2] != 1:
        raise AtomError(_OP, "tiled_mma", "atom layout must be (WARPS_M, WARPS_N, 1)",
                        actual=str(al))
    return shape[0], shape[1]


def _has_permutation(tiled_mma) -> bool:
    return any(p is not None and not (isinstance(p, str) or type(p).__name__ == "Underscore")
               and str(p) != "_" for p in (tiled_mma.permutation_mnk or ()))


def _swizzle_arg(name, given, cfg, operand):
    """The config's swizzle field for a given smem layout (AtomError if it is not one)."""
    R, BK, major, eb = cfg.rows(operand), cfg.tile[2], cfg.major(operand), cfg.elem_bytes
    try:
        sw = sm80_smem.swizzle_of(given)
    except Exception:
        raise AtomError(_OP, name, "must be a Layout or a swizzled ComposedLayout",
                        actual=repr(given)) from None
    sw = None if sw[0] == 0 else sw
    try:
        want = sm80_smem.smem_layout(R, BK, major, eb, sw)
    except (ValueError, AtomError):
        want = None
    if want is None or not _same_function(given, want, R, BK):
        raise AtomError(_OP, name, "must be a swizzle of the SM80 atom tiling "
                        "tile_to_shape((8,W):(W,1) or (W,8):(1,W), (R, BK))",
                        expected=str(cfg.smem_layout(operand)), actual=str(given))
    return "default" if sw == sm80_smem.default_swizzle(R, BK, major, eb) else sw


def make_gemm_sm80(tiled_mma, tile, *, stages: int = 3, mainloop: str = "multistage",
                   a_major: str = "K", b_major: str = "K", out_dtype: str | None = None,
                   smem_layout_A=None, smem_layout_B=None, copy_A=None, copy_B=None,
                   raster: int = 8, arch: str = "sm_80") -> GemmSm80Config:
    """A :class:`GemmSm80Config` built from algebra objects (see the module docstring)."""
    dtype = _atom_dtype(tiled_mma)
    warps = _warps(tiled_mma)
    if not isinstance(tile, tuple) or len(tile) != 3:
        raise AtomError(_OP, "tile", "must be (BM, BN, BK)", actual=tile)
    BM, BN, BK = tile
    mk = 8 if dtype == "tf32" else 16
    if BM % (16 * warps[0]) or BN % (16 * warps[1]) or BK % mk:
        raise AtomError(_OP, "tile", "is not divisible by the tiled MMA's tile (warp tiles of "
                        "multiples of 16 x 16, BK a multiple of the atom's k)",
                        expected=f"multiples of ({16 * warps[0]}, {16 * warps[1]}, {mk})",
                        actual=tile)
    eb = 4 if dtype == "tf32" else 2
    cfg = GemmSm80Config(dtype=dtype, out_dtype=out_dtype or ("f32" if dtype == "tf32" else dtype),
                         a_major=a_major, b_major=b_major, tile=tuple(tile),
                         warps=warps, stages=stages, mainloop=mainloop,
                         vec_a=16 // eb, vec_b=16 // eb, vec_c=2, raster=raster)
    if _has_permutation(tiled_mma):
        ours = cfg.tiled_mma
        if any(getattr(tiled_mma, f)() != getattr(ours, f)()
               for f in ("get_layoutA_TV", "get_layoutB_TV", "get_layoutC_TV")):
            raise AtomError(_OP, "tiled_mma", "its permutation must give each warp a contiguous "
                            "block of the tile", expected=str(ours.permutation_mnk),
                            actual=str(tiled_mma.permutation_mnk))
    for name, given, operand in (("smem_layout_A", smem_layout_A, "A"),
                                 ("smem_layout_B", smem_layout_B, "B")):
        if given is not None:
            cfg = replace(cfg, **{f"swizzle_{operand.lower()}":
                                  _swizzle_arg(name, given, cfg, operand)})
    for name, given, operand in (("copy_A", copy_A, "A"), ("copy_B", copy_B, "B")):
        if given is None:
            continue
        if not hasattr(given, "layout_tv"):
            raise AtomError(_OP, name, "must be a TiledCopy", actual=repr(given))
        kind = given.atom.op.kind
        if mainloop == "multistage" and kind != "cp.async":
            raise AtomError(_OP, name, "must use a cp.async atom for the multistage mainloop",
                            actual=given.atom.op.name)
        if mainloop != "multistage" and kind not in ("universal", "cp.async"):
            raise AtomError(_OP, name, "must be a gmem->register copy", actual=given.atom.op.name)
        if given.num_threads != cfg.threads:
            raise AtomError(_OP, name, "must have one thread per thread of the tiled MMA",
                            expected=cfg.threads, actual=given.num_threads)
        vec = given.num_values
        if vec * eb > 16 or vec & (vec - 1):
            raise AtomError(_OP, name, "must move one vector of at most 16 bytes per thread",
                            actual=str(given.layout_tv))
        key = (given.layout_tv.shape, given.layout_tv.stride, tuple(given.tile_shape))
        cfg = replace(cfg, **{f"vec_{operand.lower()}": vec})
        default = replace(cfg, **{f"copy_{operand.lower()}": None})
        if not (default.copy_ok(operand) and _same_copy(default.gmem_copy(operand), given)):
            cfg = replace(cfg, **{f"copy_{operand.lower()}": key})
    limit = SMEM_LIMITS.get(arch)
    if limit is None:
        raise AtomError(_OP, "arch", "is not a known target", expected=sorted(SMEM_LIMITS),
                        actual=arch)
    if cfg.smem_bytes > limit:
        raise AtomError(_OP, "stages", f"need more shared memory than {arch} gives a block",
                        expected=f"<= {limit} bytes", actual=cfg.smem_bytes)
    cfg = cfg.check()
    from .gemm_sm80 import _CopyPlan, _copy_steps
    for operand in "AB":
        if _copy_steps(_CopyPlan.of(cfg, operand)) is None:
            raise AtomError(_OP, f"copy_{operand}", "each copy of a thread must be a translation "
                            "of its first one (the generator keeps one base pointer)",
                            actual=str(cfg.gmem_copy(operand).layout_tv))
    return cfg


def _same_copy(a, b) -> bool:
    return a.layout_tv == b.layout_tv and tuple(a.tile_shape) == tuple(b.tile_shape)


def describe(cfg: GemmSm80Config) -> dict:
    """The algebra objects of ``cfg``: ``tiled_mma``, ``smem_layout_A/B``, ``copy_A/B``
    (gmem->smem), ``ldmatrix_A/B`` (``make_tiled_copy_A/B`` of the smem->register atom)."""
    out = {"tiled_mma": cfg.tiled_mma}
    for operand in "AB":
        out[f"smem_layout_{operand}"] = cfg.smem_layout(operand)
        out[f"copy_{operand}"] = cfg.gmem_copy(operand)
        out[f"ldmatrix_{operand}"] = cfg.smem_read_copy(operand)
    return out


def bank_reports(cfg: GemmSm80Config) -> dict:
    """``cute_py.bank_conflicts`` reports of the smem writes (``copy_A/B``) and the ``ldmatrix``
    reads (``ldmatrix_A/B``) over one stage."""
    from cute_py.bank_conflicts import copy_bank_conflicts
    d = describe(cfg)
    out = {}
    for op in "AB":
        out[f"copy_{op}"] = copy_bank_conflicts(d[f"copy_{op}"], d[f"smem_layout_{op}"], "D")
        rd = d[f"ldmatrix_{op}"]
        if rd.atom.op.kind == "ldmatrix":
            out[f"ldmatrix_{op}"] = copy_bank_conflicts(rd, d[f"smem_layout_{op}"], "S")
    return out


def report(cfg: GemmSm80Config) -> str:
    """A readable account of ``cfg``: its objects and their bank conflicts."""
    from .gemm_sm80 import kernel_name
    d = describe(cfg)
    lines = [f"{kernel_name(cfg)}: {cfg.mainloop}, {cfg.stages} stage(s), "
             f"{cfg.smem_bytes} smem bytes",
             f"tiled_mma: {d['tiled_mma'].atom.name} x {cfg.warps}, permutation "
             f"{d['tiled_mma'].permutation_mnk}"]
    for op in "AB":
        lines.append(f"smem_layout_{op}: {d[f'smem_layout_{op}']}")
        lines.append(f"copy_{op}: {d[f'copy_{op}'].atom.op.name}, TV {d[f'copy_{op}'].layout_tv}")
    for rep in bank_reports(cfg).values():
        lines.append(str(rep))
    return "\n".join(lines)
