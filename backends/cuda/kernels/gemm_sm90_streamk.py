"""Stream-K scheduling of the Hopper GEMM (``Sm90GemmConfig(stream_k=True)``).

The persistent grid's ``G`` CTAs share the work of the last ``sk_tiles`` output tiles (a launch
argument) evenly, in k-blocks: of the ``T = sk_tiles * KB`` (tile, k-block) iterations CTA
``c`` takes ``[c * base + min(c, rem), ... + base + (c < rem))`` (``base, rem = divmod(T,
G)``).  The other ``tiles - sk_tiles`` tiles are data-parallel, first: CTA ``c`` takes tiles
``c, c + G, ...`` whole (the host makes their count a multiple of G, so every CTA does the same
number; ``sk_tiles = tiles`` is pure stream-K).  CUTLASS's ``PersistentTileSchedulerSm90
StreamK`` in its "DP + SK" form, with a deterministic fix-up.

A CTA's stream-K range cuts its tiles into *pieces* ``(tile, [kb_lo, kb_hi))``:

- whole (``kb_lo == 0``, ``kb_hi == KB``): the tile's epilogue (the built-in stores, the
  EVT epilogue, or the FP8 kernel's scaled epilogue on its promoted sums);
- a head (``kb_hi < KB``: the CTA's range ends inside the tile; only ever its last tile): the
  fp32 partial goes to the CTA's workspace slot ``ws[c][v][t]`` (value ``v`` of consumer thread
  ``t``: coalesced), then fence, named barrier 1, and thread 0 sets ``sk_flags[c] = 1``
  (``st.release.gpu``);
- a tail (``kb_lo > 0``, ``kb_hi == KB``): consumer thread 0 waits for the flags of the CTAs
  that hold the tile's earlier pieces (``cta_of(first iteration)`` .. ``cta_of(kb_lo - 1)``,
  ``ld.acquire.gpu``) and clears them; after barrier 1 every thread adds the partials to its own
  accumulators in k order (``((own + p_c0) + p_c0+1) + ...``: the same order every run for a
  given grid, and no registers beyond the accumulators), and runs the tile's epilogue.
  The epilogue's load producer and store warp walk the same pieces and skip the heads
  (:func:`emit_skip_heads`).

A CTA runs its stream-K pieces from its *last* tile backwards, so its head piece (the one a
later CTA waits for) is computed first and its tail piece (the one that waits) last: no chain
of waits (a CTA only waits on lower CTAs' first stream-K pieces; all CTAs are resident, one per
SM).  The producer warp walks the same pieces, so the mainloop pipeline is unchanged.

Device code: the schedule (:func:`schedule_program`), the piece -> ``(tile, kb_lo, kb_hi)``
map (:func:`piece_program`) and the CTA owning an iteration (:func:`cta_of_node`) are IR,
emitted through a KernelBuilder (:func:`emit_schedule`, :func:`emit_coords`,
:func:`emit_tail_ctas`; on the kernel's names :func:`emit_kernel_schedule`,
:func:`emit_kernel_coords`, and the head / tail pieces :func:`emit_fixup`); the workspace is
a layout (:func:`workspace_layout`) lowered to the epilogue's addresses.
``schedule_code`` / ``coord_code`` render the first two as text for the host-side scheduler
tests.

Kernel parameters appended (at the end, stream-K configurations only)::

    float* ws, int* sk_flags, int sk_tiles

``ws``: ``G * values * threads`` floats (:func:`streamk_layout`), ``sk_flags``: ``G`` int32
zeroed once (the kernel leaves them zero).  The grid must be the ``G`` the layout was made for
and at most the number of co-resident CTAs (one per SM).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from cute_py.errors import LaunchError

from .. import ir

__all__ = ["StreamKLayout", "streamk_layout", "streamk_extra_args", "streamk_pieces",
           "StreamKVars", "schedule_program", "piece_program", "cta_of_node", "emit_schedule",
           "emit_coords", "emit_tail_ctas", "emit_fixup", "emit_skip_heads",
           "workspace_layout", "workspace_offset", "STREAMK_PARAMS"]

#: names of the kernel parameters a stream-K configuration appends, in order
STREAMK_PARAMS = ("ws", "sk_flags", "sk_tiles")


# ------------------------------------------------------------------------------ device code
#
# The schedule and the piece -> (tile, k-block range) map are IR (``backends.cuda.ir``): a short
# program of named bindings (:class:`Bind`, each a bounded IR expression, later ones reading
# earlier names as bounded IR variables) that :func:`emit_schedule` / :func:`emit_coords`
# declare through a KernelBuilder and :func:`run` evaluates (NumPy) for the tests.  Bounds that
# the expressions cannot show are the host contract (``streamk_layout``): ``K >= 1``, ``0 <=
# sk_tiles <= tiles < 2**31``; they are stated where they are bound.

_I32 = (1 << 31) - 1



@dataclass(frozen=True)
class Bind:
    """``name = node`` declared ``const`` (``int`` when ``[lo, hi]`` fits 32 bits, else ``long
    long``), or assigned to a variable the kernel declared (``out``)."""

    name: str
    node: object
    lo: int
    hi: int
    out: bool = False

    @property
    def ctype(self) -> str:
        return "int" if -(1 << 31) <= self.lo and self.hi <= _I32 else "long long"


@dataclass(frozen=True)
class StreamKVars:
    """The schedule's values as bounded IR variables (the names :func:`emit_schedule`
    declares): ``k_blocks`` (``sk_kb_``), ``dp_tiles``, ``n_dp`` (this CTA's data-parallel
    tiles), ``base`` / ``rem`` (``divmod(sk_tiles * KB, grid)``), ``begin`` / ``end`` (this
    CTA's stream-K iterations), ``last`` (its last stream-K tile), ``num_tiles`` (its pieces),
    ``bid`` / ``grid`` (the CTA index and grid size it was built on)."""

    k_blocks: object
    dp_tiles: object
    n_dp: object
    base: object
    rem: object
    begin: object
    end: object
    first: object
    last: object
    n_sk: object
    num_tiles: object
    bid: object
    grid: object


def _binder(steps: list):
    def bind(name, node, lo=None, hi=None, out=False):
        node = ir.as_node(node)
        lo = node.lo if lo is None else lo
        hi = node.hi if hi is None else hi
        steps.append(Bind(name, node, lo, hi, out))
        return ir.var(name, lo, hi)
    return bind


def schedule_program(tile_k: int, K, num_m, num_n, L, sk_tiles, bid, grid):
    """``(binds, StreamKVars)``: this CTA's share of the stream-K split (module docstring) from
    the kernel's IR values ``K``, ``num_m``, ``num_n``, ``L``, ``sk_tiles``, ``bid`` (the CTA
    index, an int) and ``grid`` (CTAs, ``>= 1``).

    Law (``tests/backend/test_gemm_sm90_streamk_ir.py``): evaluated for every CTA, the pieces
    :func:`piece_program` gives are :func:`streamk_pieces`'s."""
    steps: list = []
    bind = _binder(steps)
    kb_ = bind("sk_kb_", ir.floordiv(K + (tile_k - 1), tile_k), 1, -(-_I32 // tile_k))  # K >= 1
    tiles = bind("sk_all_", num_m * num_n * L, 1, _I32)           # the host keeps tiles < 2**31
    dp = bind("dp_tiles_", tiles - sk_tiles, 0, _I32)              # 0 <= sk_tiles <= tiles
    n_dp = bind("n_dp_", ir.select(ir.lt(bid, dp), ir.floordiv(dp - 1 - bid, grid) + 1, 0),
                0, _I32)
    total = bind("sk_total_", sk_tiles * kb_)
    base = bind("sk_base_", ir.floordiv(total, grid))
    # the remainder without a second (64-bit) division: total - base * grid, in [0, grid)
    rem = bind("sk_rem_", total - base * grid, 0, grid.hi - 1)
    begin = bind("sk_begin_", bid * base + ir.select(ir.lt(bid, rem), bid, rem), 0, total.hi)
    end = bind("sk_end_", begin + base + ir.lt(bid, rem), 0, total.hi)
    has = ir.lt(begin, end)                          # any stream-K work (then KB >= 1 divides)
    # stream-K tile indices: < sk_tiles < 2**31
    first = bind("sk_first_", ir.select(has, ir.floordiv(begin, kb_), 0), 0, _I32 - 1)
    last = bind("sk_last_", ir.select(has, ir.floordiv(end - 1, kb_), 0), 0, _I32 - 1)
    n_sk = bind("n_sk_", ir.select(has, last - first + 1, 0), 0, _I32)
    num = bind("num_tiles", n_dp + n_sk, 0, _I32)  # this CTA's pieces
    bind("first_tile", 0)
    bind("tile_step", 1)
    return steps, StreamKVars(kb_, dp, n_dp, base, rem, begin, end, first, last, n_sk, num,
                              bid, grid)


def piece_program(sv: StreamKVars, tile):
    """Piece ``tile`` of this CTA -> ``(is_dp, dp, sk)``: ``is_dp`` the IR condition ``tile <
    n_dp``; ``dp`` the bindings of a data-parallel piece, ``sk`` those of a stream-K piece
    (tiles last first), each assigning ``ktile_`` (the output tile in raster order), ``kb_lo_``,
    ``kb_hi_``."""
    dp = [Bind("ktile_", sv.bid + tile * sv.grid, 0, _I32, True),
          Bind("kb_lo_", ir.const(0), 0, 0, True),
          Bind("kb_hi_", sv.k_blocks, sv.k_blocks.lo, sv.k_blocks.hi, True)]
    sk: list = []
    bind = _binder(sk)
    s = bind("s_", sv.last - (tile - sv.n_dp), 0, _I32)         # stream-K tiles, last first
    t0 = bind("t0_", s * sv.k_blocks)
    # [max(begin, t0), min(end, t0 + KB)) - t0
    bind("kb_lo_", ir.select(ir.lt(t0, sv.begin), sv.begin - t0, 0), 0, sv.k_blocks.hi,
         out=True)
    bind("kb_hi_", ir.select(ir.lt(sv.end, t0 + sv.k_blocks), sv.end - t0, sv.k_blocks), 1,
         sv.k_blocks.hi, out=True)
    bind("ktile_", sv.dp_tiles + s, 0, _I32, out=True)
    return ir.lt(tile, sv.n_dp), dp, sk


def cta_of_node(sv: StreamKVars, i, div):
    """The CTA owning stream-K iteration ``i`` (IR): the first ``rem`` CTAs hold ``base + 1``
    iterations, the others ``base``; ``div`` is ``max(base, 1)`` as a bounded variable
    (``>= 1``; the second branch only happens when ``base >= 1``)."""
    b = sv.rem * (sv.base + 1)
    return ir.select(ir.lt(i, b), ir.floordiv(i, sv.base + 1),
                     sv.rem + ir.floordiv(i - b, div))


def run(steps, env: dict) -> dict:
    """Evaluate bindings (ints or NumPy arrays in ``env``); returns ``env`` with every name
    bound."""
    env = dict(env)
    for s in steps:
        env[s.name] = ir.evaluate(s.node, env)
    return env


def _emit(kb, steps) -> None:
    for s in steps:
        if s.out:
            kb.assign(s.name, s.node)
        else:
            kb.decl(f"const {s.ctype}", s.name, s.node, hint=False)


def emit_schedule(kb, cfg, *, K, num_m, num_n, L, sk_tiles, bid, grid) -> StreamKVars:
    """Declare the schedule (replaces the persistent scheduler's ``num_tiles`` / ``first_tile``
    / ``tile_step``: the loop index becomes this CTA's piece counter, data-parallel tiles then
    stream-K pieces) in the builder ``kb``; returns its IR variables."""
    steps, sv = schedule_program(cfg.tile_k, K, num_m, num_n, L, sk_tiles, bid, grid)
    _emit(kb, steps)
    return sv


def emit_coords(kb, sv: StreamKVars, tile, split: str | None = "split_") -> None:
    """Piece ``tile`` (IR) -> ``ktile_``, ``kb_lo_``, ``kb_hi_`` (and ``split`` = 0), variables
    the kernel declared; the raster (tile scheduler) follows, on ``ktile_``."""
    is_dp, dp, sk = piece_program(sv, tile)
    if split:
        kb.assign(split, 0)
    with kb.if_(is_dp):
        _emit(kb, dp)
    with kb.else_():
        _emit(kb, sk)


def emit_tail_ctas(kb, sv: StreamKVars, ktile, kb_lo):
    """A tail piece of tile ``ktile`` from k-block ``kb_lo``: declare ``c0_`` / ``c1_``, the
    CTAs holding its head pieces (iterations ``t0 .. t0 + kb_lo - 1`` of the tile's first
    ``t0``); returns them as IR variables."""
    t0 = kb.var("const long long", "t0_", (ktile - sv.dp_tiles) * sv.k_blocks, 0,
                _I32 * sv.k_blocks.hi)
    div = kb.var("const long long", "sk_div_", ir.select(ir.lt(0, sv.base), sv.base, 1), 1,
                 max(sv.base.hi, 1))
    kb.let(sv.rem * (sv.base + 1), "sk_b_")       # the iterations of the first rem CTAs
    c0 = kb.var("const int", "c0_", cta_of_node(sv, t0, div), 0, sv.grid.hi - 1)
    c1 = kb.var("const int", "c1_", cta_of_node(sv, t0 + kb_lo - 1, div), 0, sv.grid.hi - 1)
    return c0, c1


# -- the kernel's text today (gemm_sm90.generate_source): the emitters above rendered on the
#    kernel's names

def _kernel_vars(cfg):
    I = _I32
    # K >= 1 and K + tile_k - 1 < 2**31: streamk_layout refuses the others
    return dict(K=ir.var("K", 1, I - cfg.tile_k + 1), num_m=ir.var("num_m", 1, -(-I // cfg.tile_m)),
                num_n=ir.var("num_n", 1, -(-I // cfg.tile_n)), L=ir.var("L", 1, I),
                sk_tiles=ir.var("sk_tiles", 0, I), bid=ir.var("sk_bid_", 0, I - 1),
                grid=ir.var("sk_grid_", 1, I))


def _text(emit, level: int) -> str:
    from ..builder import KernelBuilder
    kb = KernelBuilder("streamk", threads=1)
    kb.level = level
    emit(kb)
    return "\n".join(kb.lines)


def kernel_schedule(cfg) -> StreamKVars:
    """The :class:`StreamKVars` of the kernel's declared names (what :func:`schedule_code`
    declares)."""
    return schedule_program(cfg.tile_k, **_kernel_vars(cfg))[1]


def emit_kernel_schedule(kb, cfg) -> StreamKVars:
    """:func:`emit_schedule` on the kernel's names (``K``, ``num_m``, ``num_n``, ``L``,
    ``sk_tiles``), with ``sk_bid_`` / ``sk_grid_`` declared from ``blockIdx.x`` /
    ``gridDim.x``."""
    kb.decl("const int", "sk_bid_", "(int)blockIdx.x", hint=False)
    kb.decl("const int", "sk_grid_", "(int)gridDim.x", hint=False)
    return emit_schedule(kb, cfg, **_kernel_vars(cfg))


def emit_kernel_coords(kb, cfg) -> None:
    """:func:`emit_coords` of the kernel's piece counter ``tile`` on the kernel's names."""
    emit_coords(kb, kernel_schedule(cfg), ir.var("tile", 0, _I32))


def schedule_code(tile_m: int, tile_n: int, tile_k: int) -> str:
    """C text of :func:`emit_kernel_schedule` (for the host-side scheduler tests)."""
    from types import SimpleNamespace
    cfg = SimpleNamespace(tile_m=tile_m, tile_n=tile_n, tile_k=tile_k)
    return _text(lambda kb: emit_kernel_schedule(kb, cfg), 1).lstrip()


def coord_code(cfg=None) -> str:
    """C text of :func:`emit_kernel_coords` (piece ``tile`` -> ``ktile_``, ``kb_lo_``,
    ``kb_hi_``); ``cfg`` (any with ``tile_m`` / ``tile_n`` / ``tile_k``) sets the names'
    bounds, the text does not depend on it."""
    from types import SimpleNamespace
    cfg = cfg or SimpleNamespace(tile_m=64, tile_n=8, tile_k=64)
    return "\n" + _text(lambda kb: emit_kernel_coords(kb, cfg), 1)


def workspace_layout(cfg, grid=None):
    """The stream-K workspace as a layout ``(thread, value, cta) -> float offset``: ``(T, V, G)
    : (1, T, V*T)`` with ``T`` the consumer threads and ``V`` the accumulator values of one
    thread (value ``v`` of all threads contiguous: coalesced), one slot of ``V*T`` floats per
    CTA; ``grid`` (default a symbol ``G``) the CTAs.  ``streamk_layout``'s ``ws_elements`` is
    its cosize."""
    import cute_py as cute
    nthr = 128 * cfg.consumer_wgs
    nv = cfg.tile_m // cfg.mma_wgs // 64 * cfg.tile_n // 2
    G = cute.symbols("G") if grid is None else grid
    return cute.make_layout((nthr, nv, G), (1, nthr, nv * nthr))


def workspace_offset(cfg, t, v, c, grid=None):
    """IR of :func:`workspace_layout` at ``(t, v, c)`` (thread, value, CTA; ints or IR);
    ``grid``: the grid-size IR variable (default the kernel's ``sk_grid_``)."""
    from .. import lower
    g = grid if grid is not None else ir.var("sk_grid_", 1, _I32)
    return lower.layout_apply(workspace_layout(cfg), (t, v, c), symbols={"G": g})


def emit_skip_heads(kb) -> None:
    """In a loop over this CTA's pieces that only serves finished tiles (the epilogue's load
    producer, its store warp): go on to the next piece when this one is a head (another CTA
    finishes its tile and runs the epilogue).  The consumers' head pieces ``continue`` in
    :func:`emit_fixup` after their partials, so both loops see the same tiles in the same
    order."""
    with kb.if_("kb_hi_ < k_blocks"):
        kb.stmt("continue")


def emit_fixup(kb, cfg, maps, src: str = "acc") -> None:
    """Head pieces: the partial to the CTA's workspace slot, flag, ``continue``; tail pieces:
    wait for the flags of the heads' CTAs and add their partials into the own accumulators in
    a fixed order, ``((own + p_c0) + p_c0+1) + ...`` (``src``: the accumulator array, ``acc``
    or an FP8 kernel's promoted ``tot_``; the caller's epilogue then runs on the sum, as on a
    whole tile).  Workspace addresses:
    :func:`workspace_layout` lowered (the thread's base in the slot of CTA ``c``, plus the
    value's constant offset)."""
    from ..render import render_expr
    nv = maps.frag.num_values
    nthr = 128 * cfg.consumer_wgs
    nacc = nv // maps.slabs
    tid = ir.var("tid", 0, nthr - 1)
    voff = [render_expr(workspace_offset(cfg, 0, v, 0)) for v in range(nv)]
    acc = [f"{src}[{v // nacc}][{v % nacc}]" for v in range(nv)]
    with kb.if_("kb_hi_ < k_blocks"):
        kb.comment("stream-K head piece: another CTA finishes this tile")
        kb.decl("float*", "wp_", f"ws + {kb.expr(workspace_offset(cfg, tid, 0, ir.var('sk_bid_', 0, _I32 - 1)))}", hint=False)
        for o, a in zip(voff, acc):
            kb.assign(f"wp_[{o}]", a)
        kb.stmt("__threadfence()")
        kb.call("named_barrier_sync", "1u", f"{nthr}u")
        with kb.if_("tid == 0"):
            kb.call("st_release_gpu_b32", "sk_flags + blockIdx.x", 1)
        kb.stmt("continue")
    with kb.if_("kb_lo_ > 0"):
        kb.comment("stream-K tail piece: add the heads, in k order")
        sv = kernel_schedule(cfg)
        c0, c1 = emit_tail_ctas(kb, sv, ir.var("ktile_", 0, _I32),
                                ir.var("kb_lo_", 1, sv.k_blocks.hi))
        with kb.if_("tid == 0"):
            with kb.for_("c", c0, c1 + 1, hint=False):
                kb.stmt(f"while ({kb.call_expr('ld_acquire_gpu_b32', 'sk_flags + c')} == 0) {{ }}")
                kb.comment("ready for the next launch")
                kb.assign("sk_flags[c]", 0)
        kb.call("named_barrier_sync", "1u", f"{nthr}u")
        kb.stmt("__threadfence()")
        kb.comment("own + head c0 + head c0+1 + ...: a fixed order, no registers beyond acc")
        with kb.for_("c", c0, c1 + 1, hint=False) as c:
            kb.decl("const float*", "pp_", f"ws + {kb.expr(workspace_offset(cfg, tid, 0, c))}",
                    hint=False)
            for o, a in zip(voff, acc):
                kb.assign(a, f"__ldcg(pp_ + {o})", "+=")


# ------------------------------------------------------------------------------ host side

@dataclass(frozen=True)
class StreamKLayout:
    """``grid`` CTAs; ``sk_tiles`` stream-K tiles (the last ones), ``dp_tiles`` data-parallel;
    ``ws_elements`` fp32 workspace elements; ``flags`` int32 flags (zeroed once)."""

    grid: int
    tiles: int
    sk_tiles: int
    dp_tiles: int
    k_blocks: int
    ws_elements: int
    flags: int


def _tiles(cfg, M, N, L):
    return -(-M // cfg.tile_m) * -(-N // cfg.tile_n) * L


def streamk_layout(cfg, M: int, N: int, K: int, L: int, grid: int,
                   sk_tiles: int | None = None) -> StreamKLayout:
    """The stream-K split of a kernel problem ``M x N x K`` x ``L`` over ``grid`` CTAs.
    ``sk_tiles`` defaults to the tiles past the last whole wave but one (CUTLASS's
    "DP + 2 SK waves" hybrid; all tiles when there are fewer than two waves); the data-parallel
    tiles are then a multiple of ``grid``."""
    op = "streamk_layout"
    if not getattr(cfg, "stream_k", False):
        raise LaunchError(op, "cfg", "is not a stream-K configuration", actual=cfg)
    if min(M, N, K, L, grid) < 1:
        raise LaunchError(op, "K", "needs a non-empty problem and grid",
                          actual=(M, N, K, L, grid))
    if K > (1 << 31) - cfg.tile_k:
        raise LaunchError(op, "K", "K + tile_k - 1 must fit in an int (the kernel's k-block "
                          "count)", expected=f"<= {(1 << 31) - cfg.tile_k}", actual=K)
    tiles = _tiles(cfg, M, N, L)
    kb = -(-K // cfg.tile_k)
    if sk_tiles is None:
        waves = tiles // grid
        sk_tiles = tiles - max(0, waves - 1) * grid
    if not 0 <= sk_tiles <= tiles or (tiles - sk_tiles) % grid:
        raise LaunchError(op, "sk_tiles", "must leave a multiple of grid data-parallel tiles",
                          expected=f"tiles - k * {grid}", actual=sk_tiles)
    import cute_py as cute
    return StreamKLayout(grid, tiles, sk_tiles, tiles - sk_tiles, kb,
                         cute.cosize(workspace_layout(cfg, grid)), grid)


def streamk_extra_args(cfg, layout: StreamKLayout, ws, sk_flags) -> list:
    """``[(name, ctypes value), ...]`` appended after ``beta`` (:data:`STREAMK_PARAMS`); launch
    with exactly ``layout.grid`` CTAs."""
    from .gemm_sm90_splitk import _array_facts
    op = "streamk_extra_args"
    wptr, wbytes, wdt = _array_facts(ws)
    if wdt != "float32" or wbytes < 4 * layout.ws_elements:
        raise LaunchError(op, "ws", "must be a float32 array of layout.ws_elements",
                          expected=layout.ws_elements, actual=(wdt, wbytes // 4))
    fptr, fbytes, fdt = _array_facts(sk_flags)
    if fdt != "int32" or fbytes < 4 * layout.flags:
        raise LaunchError(op, "sk_flags", "must be an int32 array of one flag per CTA",
                          expected=layout.flags, actual=(fdt, fbytes // 4))
    return [("ws", ctypes.c_uint64(wptr)), ("sk_flags", ctypes.c_uint64(fptr)),
            ("sk_tiles", ctypes.c_int(layout.sk_tiles))]


def streamk_pieces(layout: StreamKLayout, cta: int) -> list[tuple[int, int, int]]:
    """``[(tile, kb_lo, kb_hi), ...]``: the pieces CTA ``cta`` runs, in order (the kernel's
    arithmetic, for tests and the model)."""
    G, kb = layout.grid, layout.k_blocks
    out = [(cta + i * G, 0, kb) for i in range(len(range(cta, layout.dp_tiles, G)))]
    total = layout.sk_tiles * kb
    base, rem = divmod(total, G)
    begin = cta * base + min(cta, rem)
    end = begin + base + (1 if cta < rem else 0)
    if end > begin:
        for s in range((end - 1) // kb, begin // kb - 1, -1):
            t0 = s * kb
            out.append((layout.dp_tiles + s, max(begin, t0) - t0, min(end, t0 + kb) - t0))
    return out


def cta_of(layout: StreamKLayout, i: int) -> int:
    """The CTA owning stream-K iteration ``i`` (the kernel's ``cute_sk_cta_of``)."""
    base, rem = divmod(layout.sk_tiles * layout.k_blocks, layout.grid)
    b = rem * (base + 1)
    return i // (base + 1) if i < b else rem + (i - b) // max(base, 1)
