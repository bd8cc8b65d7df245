"""The SM80 GEMM's tile rasterizer: ``blockIdx.x`` -> the output tile ``(tile_m, tile_n)``.

Grouped raster (CUTLASS' threadblock swizzle): groups of ``raster`` tile-rows walk N together,
column by column, so the CTAs resident at once share A rows and B columns in L2.  One CTA per
tile (the launch grid is ``tiles_m * tiles_n``).

(The shared scheduler component ``arch/common/scheduler.py`` lives on the SM90 branch and is
not merged here; this component keeps the SM80 kernel's own raster.)

Law (tested by evaluating the emitted statements): for every ``tiles_m, tiles_n >= 1``, the
map ``bid -> (tile_m, tile_n)`` over ``bid < tiles_m * tiles_n`` is a bijection onto the tiles.
"""

from __future__ import annotations

__all__ = ["statements", "emit"]


def statements(BM: int, BN: int, raster: int) -> list[str]:
    """The C statements (in ``M``, ``N``, ``blockIdx.x``) declaring ``tile_m``, ``tile_n``,
    ``m0`` and ``n0``."""
    return [f"const int tiles_m = (M + {BM - 1}) / {BM}, tiles_n = (N + {BN - 1}) / {BN};",
            f"const int group_sz = {raster} * tiles_n, bid = blockIdx.x;",
            f"const int first_m = (bid / group_sz) * {raster};",
            f"const int rows_in_group = min(tiles_m - first_m, {raster});",
            "const int tile_m = first_m + (bid % group_sz) % rows_in_group;",
            "const int tile_n = (bid % group_sz) / rows_in_group;",
            f"const int m0 = tile_m * {BM}, n0 = tile_n * {BN};"]


def emit(b, BM: int, BN: int, raster: int) -> None:
    """Emit the raster into a KernelBuilder."""
    b.comment(f"CTA rasterization: groups of {raster} tile-rows walk N together (L2 reuse)")
    for st in statements(BM, BN, raster):
        b.stmt(st)
