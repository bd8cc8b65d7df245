"""Split-K and narrow-N pieces of the Hopper GEMM (``gemm_sm90``): the workspace layout, the
kernel's extra launch arguments, and the ``wgmma`` wrappers for narrow tiles.

Split-K (``Sm90GemmConfig(split_k="workspace" | "atomic")``).  The persistent kernel's loop
index becomes a *work unit* ``u = tile * S + s`` (``S`` = ``splits_k``, a launch argument);
split ``s`` covers the k-blocks ``[floor(s * KB / S), floor((s + 1) * KB / S))`` of its tile
(``KB = ceil(K / 64)``): contiguous, disjoint, covering, sizes differing by at most one.  The
unit's raw fp32 accumulators go to a workspace; ``splitk_reduce`` then sums the ``S`` partials
of each element in the fixed order ``((w_0 + w_1) + w_2) + ...``, applies ``alpha`` and
``beta * C`` and writes D with any strides (so results are bit-identical run to run).  With
``split_k="atomic"`` every unit ``atomicAdd``\\ s into one fp32 slice (zero before the GEMM; the
reduce kernel can re-zero it as it reads): less workspace, no fixed order.  With
``split_k="fixup"`` there is no second kernel: the unit that finishes a tile last (counted on an
int per tile, ``tile_count``, zeroed once at allocation and reset by the kernel) sums that
tile's partials in the same fixed order and runs the built-in epilogue (alpha, beta * C, D
with ``transpose_d`` or not) itself; its partials live in fragment order, one slot of
``values x threads`` floats per unit (``ldw``, ``ws_l``, ``ws_split`` are passed but unused).

Workspace layout (fp32, the caller allocates it: :func:`splitk_layout` gives the size):

    ws[s][l][p][q],  element (p, q) of batch l of split s at  s*ws_split + l*ws_l + p*ldw + q

with ``(p, q) = (r, c)`` (the kernel's D coordinates) or ``(c, r)`` with ``transpose_d`` (swap
A/B: the kernel computes ``D^T = B^T A^T`` and ``(p, q)`` are the user's ``(m, n)``): in both
cases the workspace is laid out like the user's row-major D, so the reduce kernel is a plain
element-wise pass.  ``ldw`` = ``Q`` rounded up to a multiple of 4 (16-byte rows: the reduce
kernel's float4 loads; the GEMM's paired 8-byte stores may write column ``Q`` of the padding).

Kernel parameters appended (at the END, only for split-K configurations), in this order::

    float* ws, int splits_k, long long ldw, long long ws_l, long long ws_split
    [, int* tile_count]                                 ("fixup" only)

Narrow tiles (``tile_n`` in ``SMALL_TILE_N`` = 16, 32) call the header's
``wgmma_m64n{16,32}k16`` wrappers (``ptx_sm90.cuh`` has one for every N wgmma takes).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from cute_py.errors import LaunchError

__all__ = ["SplitKLayout", "splitk_layout", "splitk_extra_args", "split_ranges", "EXTRA_PARAMS",
           "FIXUP_PARAMS", "emit_partials", "emit_fixup", "fixup_layout", "fixup_offset",
           "split_offset"]

#: names of the kernel parameters a split-K configuration appends, in order
EXTRA_PARAMS = ("ws", "splits_k", "ldw", "ws_l", "ws_split")
#: ... and the one "fixup" appends after them
FIXUP_PARAMS = ("tile_count",)


def split_ranges(k_blocks: int, splits: int) -> list[tuple[int, int]]:
    """The k-block range ``[lo, hi)`` of each split, exactly as the kernel computes it."""
    return [((k_blocks * s) // splits, (k_blocks * (s + 1)) // splits) for s in range(splits)]


@dataclass(frozen=True)
class SplitKLayout:
    """Where the partials of a split-K GEMM go (elements of fp32).

    ``P x Q`` per batch and split (the user's ``M x N`` with or without the swap), row pitch
    ``ldw``, batch stride ``ws_l``, split stride ``ws_split`` (0 in atomic mode: one slice),
    ``elements`` the workspace size, ``units`` the kernel's work units ((tile, split) pairs: the
    grid is ``min(units, SMs)``), ``counters`` the int32 tile counters "fixup" needs (zeroed
    once; 0 for the other modes)."""

    P: int
    Q: int
    L: int
    splits: int
    ldw: int
    ws_l: int
    ws_split: int
    elements: int
    units: int
    counters: int = 0


def splitk_layout(cfg, M: int, N: int, L: int, splits: int) -> SplitKLayout:
    """The workspace layout of configuration ``cfg`` for a kernel problem ``M x N`` (kernel
    coordinates: after a swap, ``M`` is the user's N), ``L`` batches and ``splits`` splits."""
    op = "splitk_layout"
    if not cfg.splits:
        raise LaunchError(op, "cfg", "is not a split-K configuration (split_k='none')",
                          actual=cfg.split_k)
    if not isinstance(splits, int) or splits < 1:
        raise LaunchError(op, "splits", "must be a positive int", actual=splits)
    if min(M, N, L) < 1:
        raise LaunchError(op, "M", "empty problem", actual=(M, N, L))
    P, Q = (N, M) if cfg.transpose_d else (M, N)
    ldw = -(-Q // 4) * 4
    ws_l = P * ldw
    atomic = cfg.split_k == "atomic"
    ws_split = 0 if atomic else L * ws_l
    elements = L * ws_l * (1 if atomic else splits)
    tiles = cfg.units(M, N, L)
    if cfg.split_k == "fixup":   # one fragment-ordered slot per unit (values x threads)
        nv = cfg.tile_m // cfg.mma_wgs // 64 * cfg.tile_n // 2
        elements = tiles * splits * nv * 128 * cfg.consumer_wgs
    return SplitKLayout(P, Q, L, splits, ldw, ws_l, ws_split, elements, tiles * splits,
                        tiles if cfg.split_k == "fixup" else 0)


def splitk_extra_args(cfg, ws, splits: int, M: int, N: int, L: int = 1,
                      tile_count=None) -> list:
    """``[(name, ctypes value), ...]``: the kernel arguments a split-K configuration appends
    after ``beta`` (see :data:`EXTRA_PARAMS`, :data:`FIXUP_PARAMS`), for a kernel problem
    ``M x N`` x ``L`` (kernel coordinates) and workspace ``ws`` (a float32 device array, CuPy
    or torch, of at least ``splitk_layout(cfg, M, N, L, splits).elements`` elements, 16-byte
    aligned); "fixup" also takes ``tile_count`` (an int32 array of at least ``.counters``
    elements, all zero before the first launch; the kernel leaves them zero).  Empty for a
    configuration without split-K."""
    if not cfg.splits:
        return []
    op = "splitk_extra_args"
    lay = splitk_layout(cfg, M, N, L, splits)
    ptr, nbytes, dtype = _array_facts(ws)
    if dtype != "float32":
        raise LaunchError(op, "ws", "must be a float32 array", expected="float32", actual=dtype)
    if nbytes < 4 * lay.elements:
        raise LaunchError(op, "ws", "is smaller than the workspace layout needs",
                          expected=lay.elements, actual=nbytes // 4)
    if ptr % 16:
        raise LaunchError(op, "ws", "must be 16-byte aligned", actual=hex(ptr))
    out = [("ws", ctypes.c_uint64(ptr)), ("splits_k", ctypes.c_int(splits)),
           ("ldw", ctypes.c_longlong(lay.ldw)), ("ws_l", ctypes.c_longlong(lay.ws_l)),
           ("ws_split", ctypes.c_longlong(lay.ws_split))]
    if cfg.split_k == "fixup":
        if tile_count is None:
            raise LaunchError(op, "tile_count", "is required by split_k='fixup' (int32, "
                              "zeroed once)", expected=lay.counters)
        cptr, cbytes, cdt = _array_facts(tile_count)
        if cdt != "int32" or cbytes < 4 * lay.counters:
            raise LaunchError(op, "tile_count", "must be an int32 array of one counter per "
                              "tile", expected=lay.counters, actual=(cdt, cbytes // 4))
        out.append(("tile_count", ctypes.c_uint64(cptr)))
    return out


def _array_facts(X):
    """(device pointer, size in bytes, dtype name) of a CuPy or torch array."""
    if hasattr(X, "data_ptr"):       # torch
        return int(X.data_ptr()), X.numel() * X.element_size(), str(X.dtype).split(".")[-1]
    return int(X.data.ptr), int(X.nbytes), str(X.dtype)


# ------------------------------------------------------------------------------ device code
# (the kernel's epilogue for split-K units, as builder statements; ``gemm_sm90`` calls them)

_I32 = (1 << 31) - 1


def fixup_layout(nv: int, nthr: int):
    """The fix-up workspace: unit ``u``'s slot holds value ``v`` of consumer thread ``t`` at
    ``(u, v, t) : (nv * nthr, nthr, 1)`` (coalesced: consecutive threads, consecutive floats);
    the unit count ``U`` is symbolic."""
    import cute_py as cute
    return cute.make_layout((cute.symbols("U"), nv, nthr), (nv * nthr, nthr, 1))


def fixup_offset(nv: int, nthr: int, unit, value: int = 0, thread=None):
    """IR of the fix-up workspace offset of ``(unit, value, thread)`` (``unit``: an IR node or
    an int; ``thread`` "tid" for the consumer thread, else 0), lowered from
    :func:`fixup_layout`."""
    from .. import ir, lower
    t = ir.var("tid", 0, nthr - 1) if thread == "tid" else 0
    return lower.layout_apply(fixup_layout(nv, nthr), (unit, value, t),
                              symbols={"U": ir.var("U", 1, _I32)})


def split_offset():
    """IR of the split-K workspace offset of split ``split_`` of batch ``l_``: the layout
    ``(S, L) : (ws_split, ws_l)`` (strides kernel parameters) lowered through IR."""
    import cute_py as cute
    from .. import ir, lower
    S, L, a, b = cute.symbols("S L ws_split ws_l")
    syms = {"S": ir.var("S", 1, _I32), "L": ir.var("L", 1, _I32),
            "ws_split": ir.var("ws_split", 0, 1 << 62), "ws_l": ir.var("ws_l", 0, 1 << 62)}
    return lower.layout_apply(cute.make_layout((S, L), (a, b)),
                              (ir.var("split_", 0, _I32), ir.var("l_", 0, _I32)), symbols=syms)


def emit_partials(kb, cfg, maps) -> None:
    """"workspace" / "atomic": the unit's raw fp32 accumulators into the workspace, element
    ``(r, c)`` of unit ``(tile, split_)`` of batch ``l_`` at ``ws + split_ * ws_split + l_ *
    ws_l + r * ldw + c`` (``c * ldw + r`` with ``transpose_d``); "workspace" stores (paired
    8-byte stores, ``ldw`` even), "atomic" adds (``atomicAdd``, the host passes ``ws_split``
    0)."""
    from .gemm_sm90_store import elem_offset, emit_origin, frag_pairs
    atomic = cfg.split_k == "atomic"
    emit_origin(kb, cfg)
    kb.decl("float*", "Wl_", f"ws + {kb.expr(split_offset())}", hint=False)
    w_off = kb.expr(elem_offset("ldw", cfg.transpose_d))
    for a0, a1, mo, no in frag_pairs(maps):
        with kb.scope():
            kb.decl("const int", "r", f"row0_ + {mo}", hint=False)
            kb.decl("const int", "c", f"col0_ + {no}", hint=False)
            with kb.if_("r < M && c < N"):
                kb.decl("float*", "wp", f"Wl_ + {w_off}", hint=False)
                step = "ldw" if cfg.transpose_d else "1"
                if atomic:
                    kb.stmt(f"atomicAdd(wp, {a0})")
                    with kb.if_("c + 1 < N"):
                        kb.stmt(f"atomicAdd(wp + {step}, {a1})")
                elif cfg.transpose_d:
                    kb.assign("wp[0]", a0)
                    with kb.if_("c + 1 < N"):
                        kb.assign("wp[ldw]", a1)
                else:   # ldw even: column c + 1 < ldw is inside the row (padding at c + 1 == N)
                    kb.assign("*reinterpret_cast<float2*>(wp)", f"make_float2({a0}, {a1})")


def emit_fixup(kb, cfg, maps, src: str = "acc") -> None:
    """"fixup": the unit's partials in fragment order, and the tile's last unit sums them.

    Unit ``u`` (= the loop index ``tile``) owns the slot ``ws[u][v][t]`` (value ``v`` of
    consumer thread ``t``: coalesced, no predicates).  After storing, every consumer thread
    fences, the consumer warpgroups meet at named barrier 1, consumer thread 0 counts the unit
    on ``tile_count[tile]`` (``atomicAdd``; the last unit resets it to 0 for the next launch)
    and ``bar.red.or`` hands "this unit is the tile's last" to every consumer thread; the other
    units go on to their next unit (``continue``).  The last unit's threads add the slots of the
    tile's splits 0, 1, ..., S-1 in that order (``__ldcg``: L2, past the SM's non-coherent L1;
    their own slot too, so the sum does not depend on which unit came last) into ``src`` (the
    accumulators: ``acc``, or an FP8 kernel's promoted ``tot_``); the caller then runs its
    epilogue on the sums (the 16-bit built-in stores, or the FP8 built-in epilogue: the scales
    apply to the sum, as without a split).  With ``splits_k == 1`` the workspace is not
    touched."""
    from .. import ir
    nv = maps.frag.num_values
    nacc = nv // maps.slabs
    nthr = 128 * cfg.consumer_wgs
    acc = [f"{src}[{v // nacc}][{v % nacc}]" for v in range(nv)]
    tile, split = ir.var("tile", 0, _I32), ir.var("split_", 0, _I32)

    def off(unit, v=0, t=None):
        return kb.expr(fixup_offset(nv, nthr, unit, v, t))
    with kb.if_("splits_k > 1"):
        kb.decl("float*", "wp_", f"ws + {off(tile, 0, 'tid')}", hint=False)
        for v, a in enumerate(acc):
            kb.assign(f"wp_[{off(0, v)}]", a)
        kb.stmt("__threadfence()")
        kb.call("named_barrier_sync", "1u", f"{nthr}u")
        kb.decl("int", "last_", 0, hint=False)
        with kb.if_("tid == 0"):
            kb.decl("const int", "tix_", "tile / splits_k", hint=False)
            kb.assign("last_", "atomicAdd(tile_count + tix_, 1) == splits_k - 1")
            kb.comment("the last unit leaves the counter ready for the next launch")
            with kb.if_("last_"):
                kb.assign("tile_count[tix_]", 0)
            kb.stmt("__threadfence()")
        kb.comment("every consumer thread learns thread 0's answer (bar.red.or, barrier 1)")
        kb.assign("last_", kb.call_expr("named_barrier_red_or", "1u", f"{nthr}u", "last_"))
        with kb.if_("!last_"):
            kb.stmt("continue")
        kb.stmt("__threadfence()")
        kb.decl("const float*", "b_", f"ws + {off(ir.sub(tile, split), 0, 'tid')}", hint=False)
        kb.decl("float", f"fx_[{nv}]", hint=False)
        kb.comment("the fixed order: split 0, 1, ...")
        with kb.for_("s", 0, "splits_k", hint=False):
            kb.decl("const float*", "q_", f"b_ + {off(ir.var('s', 0, _I32))}", hint=False)
            with kb.if_("s == 0"):
                for v in range(nv):
                    kb.assign(f"fx_[{v}]", f"__ldcg(q_ + {off(0, v)})")
            with kb.else_():
                for v in range(nv):
                    kb.assign(f"fx_[{v}]", f"__ldcg(q_ + {off(0, v)})", "+=")
        for v, a in enumerate(acc):
            kb.assign(a, f"fx_[{v}]")
