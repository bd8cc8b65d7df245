"""The SM80 GEMM configurations we ship, and the heuristic that picks one.

``SHIPPED`` lists every configuration the CPU-only test compiles for sm_80 and sm_90a with zero
spills (each dtype x major combination x mainloop family).  ``default_config`` picks the tile
by problem size; the large-problem choice is the one measured fastest on the H100
(docs/performance.md, "SM80 GEMM").
"""

from __future__ import annotations

from dataclasses import replace

from .gemm_sm80 import GemmSm80Config

__all__ = ["SHIPPED", "TILES", "default_config", "shipped_configs"]

#: name -> (tile, warps, stages, mainloop) for 16-bit operands
TILES = {
    "multistage_128x256x32": ((128, 256, 32), (2, 4), 4, "multistage"),
    "multistage_128x128x32": ((128, 128, 32), (2, 2), 4, "multistage"),
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
    """Every configuration the library may launch with full alignment (plus scalar fallbacks)."""
    out = []
    for dtype, odt, tiles in (("f16", "f16", TILES), ("bf16", "bf16", TILES),
                              ("f16", "f32", {k: TILES[k] for k in ("multistage_128x128x32",)}),
                              ("tf32", "f32", TILES_TF32)):
        for am in ("K", "M"):
            for bm in ("K", "N"):
                for entry in tiles.values():
                    out.append(_make(entry, dtype, odt, am, bm))
    # residue paths: unaligned operands (scalar copies) and 1-wide epilogue
    for dtype, odt in (("f16", "f16"), ("tf32", "f32")):
        for name in ("multistage_64x64x32", "pipelined_64x64x32", "singlestage_64x64x32"):
            entry = (TILES_TF32 if dtype == "tf32" else TILES)[name]
            c = _make(entry, dtype, odt, "K", "N")
            out.append(replace(c, vec_a=1, vec_b=1, vec_c=1))
    return out


SHIPPED = None  # filled lazily by shipped_configs(); kept for discoverability


def default_config(M: int, N: int, K: int, *, dtype: str = "f16", out_dtype: str = "f16",
                   a_major: str = "K", b_major: str = "K",
                   mainloop: str | None = None) -> GemmSm80Config:
    """A good configuration for an (M, N, K) problem (alignment fields at their widest).

    Small problems (fewer than ~2 waves of 128x128 tiles on 132 SMs) take the 64x64 multistage
    tile; larger ones the measured best per mainloop.  ``mainloop`` forces the family.
    """
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
