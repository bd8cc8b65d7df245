"""Stream-K scheduling of the Hopper GEMM (``Sm90GemmConfig(stream_k=True)``).

The persistent grid's ``G`` CTAs share the work of the last ``sk_tiles`` output tiles (a launch
argument) evenly, in k-blocks: of the ``T = sk_tiles * KB`` (tile, k-block) iterations CTA
``c`` takes ``[c * base + min(c, rem), ... + base + (c < rem))`` (``base, rem = divmod(T,
G)``).  The other ``tiles - sk_tiles`` tiles are data-parallel, first: CTA ``c`` takes tiles
``c, c + G, ...`` whole (the host makes their count a multiple of G, so every CTA does the same
number; ``sk_tiles = tiles`` is pure stream-K).  CUTLASS's ``PersistentTileSchedulerSm90
StreamK`` in its "DP + SK" form, with a deterministic fix-up.

A CTA's stream-K range cuts its tiles into *pieces* ``(tile, [kb_lo, kb_hi))``:

- whole (``kb_lo == 0``, ``kb_hi == KB``): the built-in epilogue;
- a head (``kb_hi < KB``: the CTA's range ends inside the tile; only ever its last tile): the
  fp32 partial goes to the CTA's workspace slot ``ws[c][v][t]`` (value ``v`` of consumer thread
  ``t``: coalesced), then fence, named barrier 1, and thread 0 sets ``sk_flags[c] = 1``
  (``st.release.gpu``);
- a tail (``kb_lo > 0``, ``kb_hi == KB``): consumer thread 0 waits for the flags of the CTAs
  that hold the tile's earlier pieces (``cta_of(first iteration)`` .. ``cta_of(kb_lo - 1)``,
  ``ld.acquire.gpu``) and clears them; after barrier 1 every thread adds their partials in k
  order, then its own accumulators (``((p_c0 + p_c0+1) + ...) + own``: the same order every run
  for a given grid), and runs the built-in epilogue.

A CTA runs its stream-K pieces from its *last* tile backwards, so its head piece (the one a
later CTA waits for) is computed first and its tail piece (the one that waits) last: no chain
of waits (a CTA only waits on lower CTAs' first stream-K pieces; all CTAs are resident, one per
SM).  The producer warp walks the same pieces, so the mainloop pipeline is unchanged.

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

__all__ = ["StreamKLayout", "streamk_layout", "streamk_extra_args", "streamk_pieces",
           "STREAMK_PARAMS"]

#: names of the kernel parameters a stream-K configuration appends, in order
STREAMK_PARAMS = ("ws", "sk_flags", "sk_tiles")


# ------------------------------------------------------------------------------ device code

HELPERS = """// stream-K: the CTA that owns iteration i of the stream-K range
__device__ __forceinline__ int cute_sk_cta_of(long long i, long long base, long long rem) {
  const long long b = rem * (base + 1);
  return (int)(i < b ? i / (base + 1) : rem + (i - b) / (base > 0 ? base : 1));
}
"""

PARAMS = ",\n    float* __restrict__ ws, int* __restrict__ sk_flags, int sk_tiles"


def schedule_code(tile_m: int, tile_n: int, tile_k: int) -> str:
    """Replaces the persistent scheduler's ``num_tiles`` / ``first_tile`` / ``tile_step``: the
    loop index becomes this CTA's piece counter (data-parallel tiles, then stream-K pieces)."""
    return f"""const int sk_kb_ = (K + {tile_k - 1}) / {tile_k};
  const int sk_all_ = num_m * num_n * L;
  const int dp_tiles_ = sk_all_ - sk_tiles;
  const int n_dp_ = dp_tiles_ > (int)blockIdx.x ? (dp_tiles_ - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
  const long long sk_total_ = (long long)sk_tiles * sk_kb_;
  const long long sk_base_ = sk_total_ / gridDim.x, sk_rem_ = sk_total_ % gridDim.x;
  const long long sk_begin_ = (long long)blockIdx.x * sk_base_ + min((long long)blockIdx.x, sk_rem_);
  const long long sk_end_ = sk_begin_ + sk_base_ + ((long long)blockIdx.x < sk_rem_ ? 1 : 0);
  const int sk_first_ = sk_kb_ > 0 ? (int)(sk_begin_ / sk_kb_) : 0;
  const int sk_last_ = sk_end_ > sk_begin_ ? (int)((sk_end_ - 1) / sk_kb_) : 0;
  const int n_sk_ = sk_end_ > sk_begin_ ? sk_last_ - sk_first_ + 1 : 0;
  const int num_tiles = n_dp_ + n_sk_;   // this CTA's pieces
  const int first_tile = 0, tile_step = 1;"""


def coord_code() -> str:
    """Piece ``tile`` of this CTA -> ``ktile_`` (the output tile in raster order), ``kb_lo_``,
    ``kb_hi_`` (declared by the caller); the raster code follows, on ``ktile_``."""
    return """
  split_ = 0;
  if (tile < n_dp_) {
    ktile_ = (int)blockIdx.x + tile * (int)gridDim.x;
    kb_lo_ = 0; kb_hi_ = k_blocks;
  } else {
    const int s_ = sk_last_ - (tile - n_dp_);          // stream-K tiles, last first
    const long long t0_ = (long long)s_ * k_blocks;
    kb_lo_ = (int)(max(sk_begin_, t0_) - t0_);
    kb_hi_ = (int)(min(sk_end_, t0_ + k_blocks) - t0_);
    ktile_ = dp_tiles_ + s_;
  }"""


def epilogue_code(cfg, maps, store: str) -> str:
    """Head pieces: partial to the CTA's slot, flag; tail pieces: wait, add the heads in k
    order, own accumulators last; then ``store`` (the built-in epilogue) for tails and whole
    tiles."""
    nv = maps.frag.num_values
    nthr = 128 * cfg.consumer_wgs
    nacc = nv // maps.slabs
    slot = nv * nthr
    acc = [f"acc[{v // nacc}][{v % nacc}]" for v in range(nv)]
    head = "\n".join(f"        wp_[{v * nthr}] = {a};" for v, a in enumerate(acc))
    first = "\n".join(f"            sk_sum_[{v}] = __ldcg(pp_ + {v * nthr});" for v in range(nv))
    more = "\n".join(f"            sk_sum_[{v}] += __ldcg(pp_ + {v * nthr});" for v in range(nv))
    own = "\n".join(f"        {a} = sk_sum_[{v}] + {a};" for v, a in enumerate(acc))
    return f"""      if (kb_hi_ < k_blocks) {{   // stream-K head piece: another CTA finishes this tile
        float* wp_ = ws + (long long)blockIdx.x * {slot} + tid;
{head}
        __threadfence();
        named_barrier_sync(1u, {nthr}u);
        if (tid == 0) st_release_gpu_b32(sk_flags + blockIdx.x, 1);
        continue;
      }}
      if (kb_lo_ > 0) {{          // stream-K tail piece: add the heads, in k order
        const long long t0_ = (long long)(ktile_ - dp_tiles_) * k_blocks;
        const int c0_ = cute_sk_cta_of(t0_, sk_base_, sk_rem_);
        const int c1_ = cute_sk_cta_of(t0_ + kb_lo_ - 1, sk_base_, sk_rem_);
        if (tid == 0) {{
          for (int c = c0_; c <= c1_; ++c) {{
            while (ld_acquire_gpu_b32(sk_flags + c) == 0) {{ }}
            sk_flags[c] = 0;                  // ready for the next launch
          }}
        }}
        named_barrier_sync(1u, {nthr}u);
        __threadfence();
        float sk_sum_[{nv}];
        for (int c = c0_; c <= c1_; ++c) {{
          const float* pp_ = ws + (long long)c * {slot} + tid;
          if (c == c0_) {{
{first}
          }} else {{
{more}
          }}
        }}
{own}
      }}
      {{
{store}
      }}"""


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
    tiles = _tiles(cfg, M, N, L)
    kb = -(-K // cfg.tile_k)
    if sk_tiles is None:
        waves = tiles // grid
        sk_tiles = tiles - max(0, waves - 1) * grid
    if not 0 <= sk_tiles <= tiles or (tiles - sk_tiles) % grid:
        raise LaunchError(op, "sk_tiles", "must leave a multiple of grid data-parallel tiles",
                          expected=f"tiles - k * {grid}", actual=sk_tiles)
    nv = cfg.tile_m // cfg.mma_wgs // 64 * cfg.tile_n // 2
    return StreamKLayout(grid, tiles, sk_tiles, tiles - sk_tiles, kb,
                         grid * nv * 128 * cfg.consumer_wgs, grid)


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
