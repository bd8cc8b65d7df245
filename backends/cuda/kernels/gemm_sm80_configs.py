"""The SM80 GEMM configurations we ship, and the heuristic that picks one.

``SHIPPED`` lists every configuration the CPU-only test compiles for sm_80 and sm_90a with zero
spills (each dtype x major combination x mainloop family).  ``default_config`` picks the tile
by problem size; the large-problem choice is the one measured fastest on the H100
(docs/performance.md, "SM80 GEMM").
"""

from __future__ import annotations

from dataclasses import replace

from .gemm_sm80_config import GemmSm80Config

__all__ = ["SHIPPED", "TILES", "default_config", "shipped_configs"]

#: name -> (tile, warps, stages, mainloop) for 16-bit operands
TILES = {
    # measured fastest on the H100 (docs/performance.md, "SM80 GEMM"): 387 TFLOP/s at 8192^3
    "multistage_128x256x32": ((128, 256, 32), (2, 4), 3, "multistage"),
    "multistage_128x128x32": ((128, 128, 32), (2, 4), 4, "multistage"),
    "multistage_64x64x32": ((64, 64, 32), (2, 2), 3, "multistage"),
    "pipelined_128x128x32": ((128, 128, 32), (2, 4), 2, "pipelined"),
    "pipelined_64x64x32": ((64, 64, 32), (2, 2), 2, "pipelined"),
    "singlestage_128x128x32": ((128, 128, 32), (2, 2), 1, "singlestage"),
    "singlestage_64x64x32": ((64, 64, 32), (2, 2), 1, "singlestage"),
}

#: the same for tf32 (fp32 storage: BK = 32 floats = 128-byte rows)
TILES_TF32 = {
    "multistage_128x128x32": ((128, 128, 32), (2, 4), 3, "multistage"),
    "multistage_64x64x32": ((64, 64, 32), (2, 2), 3, "multistage"),
    "pipelined_128x128x32": ((128, 128, 32), (2, 4), 2, "pipelined"),
    "pipelined_64x64x32": ((64, 64, 32), (2, 2), 2, "pipelined"),
    "singlestage_128x128x32": ((128, 128, 32), (2, 4), 1, "singlestage"),
    "singlestage_64x64x32": ((64, 64, 32), (2, 2), 1, "singlestage"),
}

#: the large-problem default per mainloop (set from the H100 measurements)
BEST = {"multistage": "multistage_128x256x32", "pipelined": "pipelined_128x128x32",
        "singlestage": "singlestage_128x128x32"}
BEST_TF32 = {"multistage": "multistage_128x128x32", "pipelined": "pipelined_128x128x32",
             "singlestage": "singlestage_128x128x32"}


def _make(entry, dtype, out_dtype, a_major, b_major) -> GemmSm80Config:
    tile, warps, stages, mainloop = entry
    eb = 4 if dtype == "tf32" else 2
    return GemmSm80Config(dtype=dtype, out_dtype=out_dtype, a_major=a_major, b_major=b_major,
                          tile=tile, warps=warps, stages=stages, mainloop=mainloop,
                          vec_a=16 // eb, vec_b=16 // eb, vec_c=2)


def shipped_configs():
    """The configurations the CPU test compiles for sm_80 and sm_90a (zero spills required).

    Every tile family the heuristic can pick, with full alignment, for f16 in all four operand
    majors; bf16 (same code but the mma and the conversions) in the K/K major; f16 -> f32 out;
    tf32 in all majors for the multistage tiles; the 64x64 scalar-copy fallbacks.
    """
    out = []
    majors = (("K", "K"), ("M", "K"), ("K", "N"), ("M", "N"))
    for am, bm in majors:
        for name in ("multistage_128x256x32", "multistage_128x128x32", "multistage_64x64x32",
                     "pipelined_128x128x32", "singlestage_128x128x32"):
            out.append(_make(TILES[name], "f16", "f16", am, bm))
        for name in ("multistage_128x128x32", "multistage_64x64x32"):
            out.append(_make(TILES_TF32[name], "tf32", "f32", am, bm))
    for name in ("pipelined_64x64x32", "singlestage_64x64x32"):
        out.append(_make(TILES[name], "f16", "f16", "K", "K"))
    for name in ("multistage_128x256x32", "multistage_64x64x32", "pipelined_128x128x32",
                 "singlestage_128x128x32"):
        out.append(_make(TILES[name], "bf16", "bf16", "K", "K"))
    out.append(_make(TILES["multistage_128x256x32"], "f16", "f32", "K", "K"))
    for name in ("pipelined_128x128x32", "singlestage_128x128x32"):
        out.append(_make(TILES_TF32[name], "tf32", "f32", "K", "K"))
        out.append(_make(TILES_TF32[name], "tf32", "f32", "M", "N"))
    # residue paths: unaligned operands (scalar copies) and the 1-wide epilogue
    for dtype, odt in (("f16", "f16"), ("tf32", "f32")):
        for name in ("multistage_64x64x32", "pipelined_64x64x32", "singlestage_64x64x32"):
            entry = (TILES_TF32 if dtype == "tf32" else TILES)[name]
            c = _make(entry, dtype, odt, "M", "N")
            out.append(replace(c, vec_a=1, vec_b=1, vec_c=1))
    # 16-bit rows aligned only to the element (odd K, odd offsets): realigned 16-byte copies,
    # the tiles default_config picks for them, every major
    for am, bm in majors:
        for name in ("multistage_64x64x32", "multistage_128x128x32"):
            c = _make(TILES[name], "f16", "f16", am, bm)
            out.append(replace(c, realign_a=True, realign_b=True, vec_c=1))
    for name in ("pipelined_64x64x32", "singlestage_64x64x32"):
        c = _make(TILES[name], "bf16", "bf16", "K", "N")
        out.append(replace(c, realign_a=True, vec_c=1))
    return out


SHIPPED = None  # filled lazily by shipped_configs(); kept for discoverability

#: 16-bit problems (2*M*N*K flops) from this size up whose rows are aligned only to the element
#: take the 128x128x32 tile of 8 warps: measured on the H100 (realigned copies, GPU us, 64x64 /
#: 128x128 w2x4): 1000x777x333 14.8 / 19.2, 2000x1000x333 21.6 / 15.0, 1000x4096x333 30.8 / 26.1
REALIGNED_WIDE_FLOP = 10 ** 9


def default_config(M: int, N: int, K: int, *, dtype: str = "f16", out_dtype: str = "f16",
                   a_major: str = "K", b_major: str = "K",
                   mainloop: str | None = None, aligned: bool = True) -> GemmSm80Config:
    """A good configuration for an (M, N, K) problem (alignment fields at their widest).

    Small problems (fewer than one wave of 128x128 tiles on 132 SMs) take the 64x64 multistage
    tile; larger ones the measured best per mainloop.  ``mainloop`` forces the family.
    ``aligned=False`` (an operand needs narrower than 16-byte copies) takes the 64x64 tile of
    the family (the register-staged copies hold more registers per thread), except 16-bit
    multistage problems of ``REALIGNED_WIDE_FLOP`` and more, whose realigned copies run fastest
    on the 128x128 tile of 8 warps (docs/performance.md, "SM80 GEMM", realigned copies).
    """
    if not aligned:
        name = f"{mainloop or 'multistage'}_64x64x32"
        if dtype != "tf32" and (mainloop or "multistage") == "multistage" and \
                2 * M * N * K >= REALIGNED_WIDE_FLOP:
            name = "multistage_128x128x32"
        tiles = TILES_TF32 if dtype == "tf32" else TILES
        if name not in tiles:
            from cute_py.errors import AtomError
            raise AtomError("default_config", "mainloop", "is not one of the mainloops",
                            actual=mainloop)
        return _make(tiles[name], dtype, out_dtype, a_major, b_major)
    tiles = TILES_TF32 if dtype == "tf32" else TILES
    best = BEST_TF32 if dtype == "tf32" else BEST
    if mainloop is None:
        ctas128 = -(-M // 128) * -(-N // 128)
        name = "multistage_64x64x32" if ctas128 < 132 else best["multistage"]
        if name == best["multistage"] and dtype != "tf32" and (-(-M // 128) * -(-N // 256)) < 132:
            name = "multistage_128x128x32"
    else:
        if mainloop not in best:
            from cute_py.errors import AtomError
            raise AtomError("default_config", "mainloop", "is not one of the mainloops",
                            expected=sorted(best), actual=mainloop)
        name = best[mainloop]
    return _make(tiles[name], dtype, out_dtype, a_major, b_major)
