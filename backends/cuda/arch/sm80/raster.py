"""The SM80 GEMM's CTA -> tile map: the shared tile scheduler, grid-based.

One CTA per output tile (the launch grid is ``tiles_m * tiles_n`` along x, the batch along z):
``blockIdx.x`` is the scheduler's work unit (:class:`~..common.scheduler.TileScheduler`,
grouped raster along M, ``raster`` tile-rows per group, not batched), so the CTAs resident at
once share A rows and B columns in L2 (CUTLASS' threadblock swizzle).

Law (the scheduler's, tested there and on the emitted program here): for every ``tiles_m,
tiles_n >= 1``, ``bid -> (tile_m, tile_n)`` over ``bid < tiles_m * tiles_n`` is a bijection onto
the tiles.
"""

from __future__ import annotations

from ... import ir, lower
from ..common.scheduler import Outputs, TileScheduler

__all__ = ["scheduler", "program", "emit"]

_OUT = Outputs(m="tile_m", n="tile_n")


def scheduler(raster: int) -> TileScheduler:
    return TileScheduler(group=raster, raster="m", batched=False)


def program(M, N, BM: int, BN: int, raster: int):
    """``(tiles_m, tiles_n, steps)``: the tile counts as IR and the scheduler's program of
    ``bid`` (the IR variable of ``blockIdx.x``)."""
    tiles_m = ir.floordiv(M + (BM - 1), BM)
    tiles_n = ir.floordiv(N + (BN - 1), BN)
    tm = ir.var("tiles_m", tiles_m.lo, tiles_m.hi)
    tn = ir.var("tiles_n", tiles_n.lo, tiles_n.hi)
    steps = scheduler(raster).program(ir.block_idx(), tm, tn, out=_OUT)
    return tiles_m, tiles_n, steps


def emit(b, M, N, BM: int, BN: int, raster: int) -> None:
    """Emit ``tiles_m``, ``tiles_n``, ``bid``, ``tile_m``, ``tile_n``, ``m0``, ``n0`` into a
    KernelBuilder (``M``, ``N``: the kernel's parameters as IR variables)."""
    b.comment(f"CTA rasterization (the tile scheduler): groups of {raster} tile-rows walk N "
              "together (L2 reuse)")
    tiles_m, tiles_n, steps = program(M, N, BM, BN, raster)
    b.decl("const int", "tiles_m", tiles_m, hint=False)
    b.decl("const int", "tiles_n", tiles_n, hint=False)
    b.stmt("const int bid = blockIdx.x")
    b.stmt("int tile_m, tile_n")
    for s in steps:
        if s.out:
            b.assign(s.name, s.node)
        else:
            b.decl("const int", s.name, s.node, hint=False)
    # the tile's origin: the CTA tiling of (M, N), (tiles_m, tiles_n):(BM, BN), at the tile
    tm = ir.var("tile_m", 0, max(tiles_m.hi - 1, 0))
    tn = ir.var("tile_n", 0, max(tiles_n.hi - 1, 0))
    m0 = lower.layout_apply((tiles_m, BM), tm)
    n0 = lower.layout_apply((tiles_n, BN), tn)
    b.stmt(f"const int m0 = {b.expr(m0)}, n0 = {b.expr(n0)}")
