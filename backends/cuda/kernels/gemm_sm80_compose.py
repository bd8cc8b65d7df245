"""Compose an SM80 GEMM from the library's objects, and read a configuration back as objects.

``make_gemm_sm80(tiled_mma, tile, ...)`` takes a :class:`cute_py.atom.TiledMMA` (an SM80
``mma.sync`` atom laid out over warps), the threadblock tile, and optionally the swizzled
shared-memory layouts (``composition(Swizzle, tile_to_shape(atom, (R, BK)))``) and the
gmem->smem tiled copies (``make_tiled_copy(Copy_Atom(SM80_CP_ASYNC_...), thr, val)``), the
stage count and the mainloop, checks that the generator produces exactly those objects, and
returns the :class:`GemmSm80Config` that the kernel is generated from.

``describe(cfg)`` is the inverse view: the TiledMMA, smem layouts, tiled copies (gmem->smem and
the ``ldmatrix`` copies ``make_tiled_copy_A/B``) of a configuration, as algebra objects.

What the generator supports (anything else raises :class:`~cute_py.errors.AtomError` naming
the argument): atoms ``SM80_16x8x16_F32F16F16F32_TN``, ``SM80_16x8x16_F32BF16BF16F32_TN``,
``SM80_16x8x8_F32TF32TF32F32_TN``; atom layouts ``(WARPS_M, WARPS_N, 1)`` (each warp owns a
contiguous ``BM/WARPS_M x BN/WARPS_N`` block); the SM80 swizzle atoms; row-major thread layouts
for the copies with one 16-byte (or narrower) vector per thread along the contiguous mode.
"""

from __future__ import annotations

from dataclasses import replace

from cute_py.errors import AtomError

from .gemm_sm80_config import GemmSm80Config

__all__ = ["make_gemm_sm80", "describe"]

_ATOMS = {"SM80_16x8x16_F32F16F16F32_TN": "f16", "SM80_16x8x16_F32BF16BF16F32_TN": "bf16",
          "SM80_16x8x8_F32TF32TF32F32_TN": "tf32"}


def _atom_dtype(tiled_mma) -> str:
    name = getattr(getattr(tiled_mma, "atom", None), "name", None)
    for key, dt in _ATOMS.items():
        if name and key in name:
            return dt
    raise AtomError("make_gemm_sm80", "tiled_mma", "has an MMA atom the SM80 generator does "
                    "not emit", expected=sorted(_ATOMS), actual=name)


def _same_function(L, want, R: int, BK: int) -> bool:
    try:
        return all(L((r, k)) == want((r, k)) for r in range(R) for k in range(BK))
    except Exception:
        return False


def make_gemm_sm80(tiled_mma, tile, *, stages: int = 3, mainloop: str = "multistage",
                   a_major: str = "K", b_major: str = "K", out_dtype: str | None = None,
                   smem_layout_A=None, smem_layout_B=None, copy_A=None, copy_B=None,
                   raster: int = 8) -> GemmSm80Config:
    """A :class:`GemmSm80Config` built from algebra objects (see the module docstring).

    Law: ``describe(make_gemm_sm80(mma, tile, ...))`` returns objects equal (as functions) to
    the ones passed in.
    """
    op = "make_gemm_sm80"
    dtype = _atom_dtype(tiled_mma)
    al = tiled_mma.atom_layout_mnk
    shape = al.shape if isinstance(al.shape, tuple) else (al.shape,)
    shape = tuple(shape) + (1,) * (3 - len(shape))
    if any(isinstance(s, tuple) for s in shape) or shape[2] != 1:
        raise AtomError(op, "tiled_mma", "atom layout must be (WARPS_M, WARPS_N, 1)",
                        actual=str(al))
    if len(tile) != 3:
        raise AtomError(op, "tile", "must be (BM, BN, BK)", actual=tile)
    eb = 4 if dtype == "tf32" else 2
    cfg = GemmSm80Config(dtype=dtype, out_dtype=out_dtype or ("f32" if dtype == "tf32" else dtype),
                         a_major=a_major, b_major=b_major, tile=tuple(tile),
                         warps=(shape[0], shape[1]), stages=stages, mainloop=mainloop,
                         vec_a=16 // eb, vec_b=16 // eb, vec_c=2, raster=raster)
    for name, given, operand in (("smem_layout_A", smem_layout_A, "A"),
                                 ("smem_layout_B", smem_layout_B, "B")):
        if given is not None and not _same_function(given, cfg.smem_layout(operand),
                                                    cfg.rows(operand), cfg.tile[2]):
            raise AtomError(op, name, "is not the SM80 swizzled layout the generator emits",
                            expected=str(cfg.smem_layout(operand)), actual=str(given))
    for name, given, operand in (("copy_A", copy_A, "A"), ("copy_B", copy_B, "B")):
        if given is None:
            continue
        kind = given.atom.op.kind
        if mainloop == "multistage" and kind != "cp.async":
            raise AtomError(op, name, "must use a cp.async atom for the multistage mainloop",
                            actual=given.atom.op.name)
        from cute_py.layout import size
        vec = size(given.layout_tv, 1)
        if vec * eb > 16 or vec & (vec - 1):
            raise AtomError(op, name, "must move one vector of at most 16 bytes per thread",
                            actual=str(given.layout_tv))
        cfg = replace(cfg, **{f"vec_{operand.lower()}": vec})
        want = describe(cfg)[f"copy_{operand}"]
        if want.layout_tv != given.layout_tv:
            raise AtomError(op, name, "thread layout is not the generator's row-major one",
                            expected=str(want.layout_tv), actual=str(given.layout_tv))
    return cfg.check()


def describe(cfg: GemmSm80Config) -> dict:
    """The algebra objects of ``cfg``: ``tiled_mma``, ``smem_layout_A/B``, ``copy_A/B``
    (gmem->smem), ``ldmatrix_A/B`` (``make_tiled_copy_A/B`` of the ldmatrix atom, 16-bit
    K-major/MN-major operands)."""
    out = {"tiled_mma": cfg.tiled_mma}
    for operand in "AB":
        out[f"smem_layout_{operand}"] = cfg.smem_layout(operand)
        out[f"copy_{operand}"] = cfg.gmem_copy(operand)
        out[f"ldmatrix_{operand}"] = cfg.smem_read_copy(operand)
    return out
