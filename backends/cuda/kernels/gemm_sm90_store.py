"""The Hopper GEMM's built-in epilogue: ``alpha * acc (+ beta * C)``, predicated register ->
global stores, as builder statements.

Every value's row and column come from the accumulator fragment: ``row0_`` / ``col0_`` (the
consumer thread's first accumulator, lowered from the wgmma C layout ``CLayout_64xN``,
:func:`emit_origin`) plus the fragment's per-value offsets (``maps.frag``).  D's (and C's)
element offsets are lowered from the output layout ``(M, N[, L]) : (ld, 1[, batch])``
(``(1, ld)`` with ``transpose_d``: ``D^T`` stored row-major) through IR (:func:`elem_offset`).

Pairs of values ``(v, v + 1)`` share a row and have adjacent columns: with ``vec2`` they go out
as one 4-byte store when both columns are inside N.  Split-K partials and the fix-up
(``gemm_sm90_splitk``), stream-K (``gemm_sm90_streamk``) and FP8 (``gemm_sm90_fp8``) call these
emitters for their final stores.
"""

from __future__ import annotations

from functools import lru_cache

from .. import ir

__all__ = ["DT", "origin", "emit_origin", "elem_offset", "frag_pairs", "emit_prelude",
           "emit_store"]

#: 16-bit element types of the kernel's D / C
DT = {"f16": "f16", "float16": "f16", "bf16": "bf16", "bfloat16": "bf16"}

_I32 = (1 << 31) - 1


def origin(cfg):
    """``(row0, col0)``: IR expressions of the global row and column of the consumer thread's
    first accumulator (``arch.sm90.wgmma.accumulator_origin`` of tile ``(m_blk, n_blk)``)."""
    from ..arch.sm90.wgmma import accumulator_origin
    tid = ir.var("tid", 0, 128 * cfg.mma_wgs - 1)
    m, n = accumulator_origin(cfg.tile_n, cfg.mma_wgs, cfg.tile_m // cfg.mma_wgs, tid)
    row0 = ir.var("m_blk", 0, _I32 // cfg.tile_m) * cfg.tile_m + m
    col0 = ir.var("n_blk", 0, _I32 // cfg.tile_n) * cfg.tile_n + n
    return row0, col0


def emit_origin(kb, cfg) -> None:
    """Declare ``row0_`` / ``col0_`` (see :func:`origin`)."""
    row0, col0 = origin(cfg)
    kb.decl("const int", "row0_", row0, hint=False)
    kb.decl("const int", "col0_", col0, hint=False)


@lru_cache(maxsize=None)
def elem_offset(ld: str, transposed: bool, batch: str | None = None):
    """IR of the element offset of ``(r, c)`` (and batch ``l_`` with ``batch``) in the output
    tensor's layout ``(M, N[, L]) : (ld, 1[, batch])`` (``(1, ld)`` transposed), lowered from
    the layout (``lower.layout_apply``; ``r``, ``c``, ``l_`` are the kernel's int variables,
    ``ld`` / ``batch`` its long long parameters)."""
    import cute_py as cute
    from .. import lower
    M, N, L, lds = cute.symbols(f"M N L {ld}")
    stride = (1, lds) if transposed else (lds, 1)
    syms = {"M": ir.var("M", 1, _I32), "N": ir.var("N", 1, _I32), "L": ir.var("L", 1, _I32),
            ld: ir.var(ld, 0, 1 << 62)}
    if batch is None:
        layout, coord = cute.make_layout((M, N), stride), (ir.var("r", 0, _I32),
                                                           ir.var("c", 0, _I32))
    else:   # only the batch mode: the tile's batch pointer
        bs = cute.symbols(batch)
        syms[batch] = ir.var(batch, 0, 1 << 62)
        layout, coord = cute.make_layout((M, N, L), stride + (bs,)), (0, 0, ir.var("l_", 0,
                                                                                   _I32))
    return lower.layout_apply(layout, coord, symbols=syms)


def frag_pairs(maps):
    """``(a0, a1, m_off, n_off)`` for each accumulator pair (v, v+1): same row, columns
    ``n_off`` and ``n_off + 1``."""
    fr = maps.frag
    slab_vals = fr.num_values // maps.slabs
    for v in range(0, fr.num_values, 2):
        j, vv = divmod(v, slab_vals)
        assert fr.m_val[v] == fr.m_val[v + 1] and fr.n_val[v + 1] == fr.n_val[v] + 1
        yield f"acc[{j}][{vv}]", f"acc[{j}][{vv + 1}]", fr.m_val[v], fr.n_val[v]


def _conv(cfg):
    """``(pack1, pack2, unpack)``: the conversions of the kernel's 16-bit type."""
    if DT[cfg.dtype] == "f16":
        return "f32_to_f16_bits", "pack_f16x2", "f16_bits_to_f32"
    return "f32_to_bf16_bits", "pack_bf16x2", "bf16_bits_to_f32"


def emit_prelude(kb, cfg) -> None:
    """The thread's row / column origin and D's (C's) batch pointers ``Dl_`` (``Cl_``)."""
    emit_origin(kb, cfg)
    kb.decl("u16*", "Dl_", f"D + {kb.expr(elem_offset('ldd', cfg.transpose_d, 'ldl_d'))}",
            hint=False)
    if cfg.has_c:
        kb.decl("const u16*", "Cl_",
                f"C + {kb.expr(elem_offset('ldc', cfg.transpose_d, 'ldl_c'))}", hint=False)


def _pair_coords(kb, mo: int, no: int) -> None:
    kb.decl("const int", "r", f"row0_ + {mo}", hint=False)
    kb.decl("const int", "c", f"col0_ + {no}", hint=False)


def emit_store(kb, cfg, maps) -> None:
    """The built-in epilogue of the accumulators ``acc`` (``row0_`` ... declared by
    :func:`emit_prelude` first)."""
    if cfg.transpose_d:
        return _emit_store_transposed(kb, cfg, maps)
    pack1, pack2, unpack = _conv(cfg)
    d_off, c_off = kb.expr(elem_offset("ldd", False)), kb.expr(elem_offset("ldc", False))
    for a0, a1, mo, no in frag_pairs(maps):
        with kb.scope():
            _pair_coords(kb, mo, no)
            with kb.if_("r < M"):
                kb.decl("float", "x0", f"alpha * {a0}", hint=False)
                kb.decl("float", "x1", f"alpha * {a1}", hint=False)
                kb.decl("u16*", "dp", f"Dl_ + {d_off}", hint=False)
                if cfg.has_c:
                    kb.decl("const u16*", "cp", f"Cl_ + {c_off}", hint=False)
                if cfg.vec2:
                    with kb.if_("c + 1 < N"):
                        if cfg.has_c:
                            kb.decl("const u32", "cc", "*reinterpret_cast<const u32*>(cp)",
                                    hint=False)
                            kb.assign("x0", f"beta * {unpack}((u16)(cc & 0xffffu))", "+=")
                            kb.assign("x1", f"beta * {unpack}((u16)(cc >> 16))", "+=")
                        kb.assign("*reinterpret_cast<u32*>(dp)", f"{pack2}(x0, x1)")
                    with kb.else_("c < N"):
                        if cfg.has_c:
                            kb.assign("x0", f"beta * {unpack}(cp[0])", "+=")
                        kb.assign("dp[0]", f"{pack1}(x0)")
                else:
                    for i, x in ((0, "x0"), (1, "x1")):
                        with kb.if_(f"c + {i} < N"):
                            if cfg.has_c:
                                kb.assign(x, f"beta * {unpack}(cp[{i}])", "+=")
                            kb.assign(f"dp[{i}]", f"{pack1}({x})")


def _emit_store_transposed(kb, cfg, maps) -> None:
    """D(r, c) stored at ``c * ldd + r`` (C read the same way)."""
    pack1, _, unpack = _conv(cfg)
    d_off, c_off = kb.expr(elem_offset("ldd", True)), kb.expr(elem_offset("ldc", True))
    for a0, a1, mo, no in frag_pairs(maps):
        with kb.scope():
            _pair_coords(kb, mo, no)
            with kb.if_("r < M"):
                kb.decl("u16*", "dp", f"Dl_ + {d_off}", hint=False)
                if cfg.has_c:
                    kb.decl("const u16*", "cp", f"Cl_ + {c_off}", hint=False)
                for i, a in ((0, a0), (1, a1)):
                    with kb.if_(f"c + {i} < N"):
                        kb.decl("float", "x", f"alpha * {a}", hint=False)
                        if cfg.has_c:
                            kb.assign("x", f"beta * {unpack}(cp[{'ldc' if i else '0'}])", "+=")
                        kb.assign(f"dp[{'ldd' if i else '0'}]", f"{pack1}(x)")
