"""Which Hopper GEMM to run for a problem: tile, schedule, split-K count and A/B swap.

:func:`choose_sm90` maps ``(M, N, K, L, dtype, majors, alignment, SM count)`` to a frozen,
printable :class:`Sm90Choice` that carries the ``Sm90GemmConfig``, the split count, whether A
and B are swapped and the reason.  The rules (docs/hopper_gemm.md, "Choosing a kernel", has
them as a table; thresholds marked there as to-be-measured are first guesses):

1. **Swap A and B** when ``M <= SWAP_MAX_M`` (32) and ``N >= 2 * M``: the kernel computes
   ``D^T = B^T A^T`` (kernel problem ``N x M``) so the small extent becomes wgmma's N, and
   stores D transposed (``transpose_d``).  The kernel's B is then the user's A, which must be
   K-major for a 16 / 32-wide tile (an MN-major A takes 64).  Not where the swapped tiles
   would split K while unswapped one-wave tiles (rule 2's ``64 x tn``, loading only A's M
   rows) fit and B is at most :data:`FILL_OVER_SPLIT_MAX_B_BYTES` (:func:`fill_beats_split`).
2. **Tile**: swapped: ``128 x n`` with n = 16 / 32 / 64 (the smallest of them >= M), 8 stages;
   ``64 x n`` (one consumer warpgroup) when n is 16 / 32 and the 64-row tiles fit one wave;
   otherwise the existing default when 128x256 tiles fill the SMs (``default_path``: the
   ping-pong 64x256 or cooperative 128x256 kernel of ``default_evt_config``), else the tile of
   ``gemm_sm90.TILES`` with the fewest waves x tile work: 128x128 (the default path's skinny
   tile), the ping-pong 64x128 kernel with the built-in epilogue (never split), 128x64 or
   64x64.
   Unswapped ``M <= FILL_MAX_M`` (64, one 64-row tile along M), one problem: ``64 x tn``
   tiles, ``tn`` the narrowest width B's smem atom allows (8 for a K-major B, 32 for an
   N-contiguous one, then with a SW64 B tile) whose tiles fit one wave -- every SM reads an
   equal slice of B -- when that width is at least ``FILL_MIN_TN`` (32); a K-major A of
   fewer than 64 rows loads only its rows (``a_rows``: M rounded up to 8).
3. **Split-K** when the tiles leave more than half the SMs idle (``tiles <= SMs / 2``): ``S =
   min(SMs // tiles, k_blocks // MIN_KB_PER_SPLIT, MAX_SPLITS)`` when that is >= 2 — units
   ``tiles * S`` <= SMs (one wave), every split at least ``MIN_KB_PER_SPLIT`` k-blocks of 64.
   Deterministic (``split_mode``, default :data:`DEFAULT_SPLIT_MODE` = "fixup": the
   fixed-order sum done by the tile's last unit inside the GEMM, one launch; "workspace": the
   fixed-order reduce kernel after the GEMM) unless the caller allows atomics (``deterministic=False``:
   ``split_k="atomic"``, one workspace slice, then the reduce kernel).
4. **Stream-K** only when asked (``stream_k=True``; to be measured against the default
   kernels): problems that would run the default path or 128x128 tiles without a split run
   the 128x128 cooperative stream-K kernel (``gemm_sm90_streamk``: data-parallel waves, then
   the tail tiles shared evenly in k-blocks, deterministic fix-up).
5. Everything split or swapped runs the cooperative schedule with the built-in predicated
   epilogue (the EVT / TMA-store epilogues need the tile's rows in smem in D's order).
"""

from __future__ import annotations

from dataclasses import dataclass

from cute_py.errors import LaunchError

from .gemm_sm90 import SMALL_TILE_N, Sm90GemmConfig, _pick_tile, b_swizzle

__all__ = ["Sm90Choice", "choose_sm90", "SWAP_MAX_M", "MIN_KB_PER_SPLIT", "MAX_SPLITS",
           "DEFAULT_SPLIT_MODE", "FILL_MAX_M", "FILL_MIN_TN", "FILL_OVER_SPLIT_MAX_B_BYTES",
           "fill_tile_n", "fill_beats_split", "forced_choice"]

#: swap A and B for M at most this.  Measured on the H100 (x @ W.T fp16, wall per call, the
#: heuristic with and without the swap in the same rounds): M = 32 swapped 12.2 us against 18.5
#: unswapped (4096x4096); M = 64 unswapped 12.7 / 49.0 us against 14.3 / 52.2 swapped (4096 x
#: 4096 / 4096 x 14336), 39.6 against 39.1 at 11008 x 4096
SWAP_MAX_M = 32
#: unswapped problems with M at most this (one 64-row tile along M) take tiles as wide as
#: fill one wave (:func:`fill_tile_n`).  Measured on the H100 (M = 64, fp16, x @ W.T / A @ B,
#: time ratio to torch.mm, the rule before -> one-wave tiles): 4096x4096 1.53 -> 1.71 / 1.35
#: -> 1.56; 11008x4096 0.91 -> 0.96 / 0.89 -> 0.92; 28672x8192 0.97 -> 0.99 / 0.92 -> 0.98;
#: 14336x4096 0.95 -> 0.97 / 0.96 -> 0.96; never slower.  At M = 128 (two tile rows) and
#: swapped (M <= 32) they were slower than the rule (docs/performance.md, "Hopper GEMM", v11)
FILL_MAX_M = 64
#: ... when that width is at least this (narrower: the rule's split-K tiles)
FILL_MIN_TN = 32
#: a swapped problem (M <= SWAP_MAX_M) whose tiles would split K runs unswapped one-wave tiles
#: instead when B has at most this many bytes.  Measured on the H100 (fp16, CUPTI us, swapped
#: split-K -> unswapped 64x32 tiles loading M rows of A, docs/performance.md "Hopper GEMM",
#: v17): M = 1 / 8 / 16 / 32 at 4096x4096 `x @ W.T` 11.10 -> 8.61, 9.64 -> 8.50, 9.17 ->
#: 8.91, 10.09 -> 9.23 (`A @ B` alike; `torch.mm` 10.4 / 7.8 / 8.7 / 7.9); 8x2048x2048 `A @ B`
#: 6.11 -> 5.25; where B streams from DRAM the split stays ahead (16x4096x14336 44.8 against
#: 45.7)
FILL_OVER_SPLIT_MAX_B_BYTES = 32 << 20
#: each split covers at least this many 64-deep k-blocks (512^3 split in two ran slower than
#: unsplit 64x64 tiles on the H100; decode with K = 4096 keeps 4 splits)
MIN_KB_PER_SPLIT = 8
#: at most this many splits (workspace traffic grows with S)
MAX_SPLITS = 16
#: the deterministic split-K mode picked by default: "fixup" (the tile's last unit sums the
#: splits in fixed order inside the GEMM: one launch).  Measured on the H100 (decode_modes.py,
#: x @ W.T fp16): 1x / 16x / 64x / 128x4096x4096 ran 21.4 / 21.1 / 20.9 / 21.9 us per call
#: against 30.9 / 31.5 / 30.8 / 31.7 us with "workspace" (GEMM + reduce kernel: two launches)
DEFAULT_SPLIT_MODE = "fixup"


@dataclass(frozen=True)
class Sm90Choice:
    """What :func:`choose_sm90` picked.  ``cfg`` is the kernel configuration (``None`` with
    ``default_path``: the caller's existing default kernel, 128x256 tiles fill the SMs);
    ``swap``: the kernel runs ``D^T = B^T A^T`` (kernel M, N = the user's N, M); ``splits``:
    the split-K count (1: none); ``tiles`` / ``units``: output tiles and work units of the
    kernel problem; ``reason``: why, in words."""

    cfg: Sm90GemmConfig | None
    swap: bool
    splits: int
    tiles: int
    units: int
    num_sms: int
    reason: str
    default_path: bool = False

    def workspace_elements(self, M: int, N: int, L: int = 1) -> int:
        """fp32 elements of split-K workspace this choice needs for the user's ``M x N`` x L
        (0 without split-K)."""
        if self.cfg is None or not self.cfg.splits:
            return 0
        from .gemm_sm90_splitk import splitk_layout
        km, kn = (N, M) if self.swap else (M, N)
        return splitk_layout(self.cfg, km, kn, L, self.splits).elements

    def __str__(self):
        if self.default_path:
            k = "sm90 default kernel"
        else:
            c = self.cfg
            k = (f"sm90 {c.schedule} {c.tile_m}x{c.tile_n} s{c.stages} {c.dtype}"
                 f"{' swapAB' if self.swap else ''}{' stream-K' if c.stream_k else ''}"
                 + (f" split-K x{self.splits} ({c.split_k})" if self.splits > 1 or c.splits
                    else ""))
        return (f"{k}: {self.tiles} tiles, {self.units} units on {self.num_sms} SMs "
                f"({self.units / self.num_sms:.2f} waves) -- {self.reason}")


def _tiles(M, N, L, tm, tn):
    return -(-M // tm) * -(-N // tn) * L


def fill_tile_n(N: int, b_major: str, num_sms: int = 132) -> int:
    """The narrowest tile width whose ``N``-wide row of tiles fits ``num_sms`` CTAs: a
    multiple of 8 for a K-major B (wgmma's N step), of 32 for an N-contiguous B (a SW64 smem
    atom's row; 64-multiples keep SW128).  Law: ``ceil(N / fill_tile_n(N)) <= num_sms`` and
    the next narrower step does not fit (for widths up to 256)."""
    for nm, v in (("N", N), ("num_sms", num_sms)):
        if not isinstance(v, int) or v < 1:
            raise LaunchError("fill_tile_n", nm, "must be a positive int", actual=v)
    if b_major not in ("K", "MN"):
        raise LaunchError("fill_tile_n", "b_major", "must be 'K' or 'MN'", actual=b_major)
    step = 8 if b_major == "K" else 32
    tn = -(-N // num_sms)
    return -(-tn // step) * step


def _swapped_tile(M, N, L, a_major, num_sms):
    """The swapped kernel's ``(tile_m, tile_n)`` (rule 2, swapped) for the user's M and N: n
    the smallest of 16 / 32 / 64 >= M (64 for an M-contiguous A), 64 rows where those tiles
    fit one wave (n 16 / 32), else 128."""
    tn = next(t for t in (*SMALL_TILE_N, 64) if t >= M)
    if tn in SMALL_TILE_N and a_major != "K":
        tn = 64
    tm = 64 if tn in SMALL_TILE_N and _tiles(N, M, L, 64, tn) <= num_sms else 128
    return tm, tn


def _split_count(tiles, k_blocks, num_sms) -> int:
    """Rule 3's split count for ``tiles`` tiles of ``k_blocks`` k-blocks (1: no split)."""
    if tiles * 2 > num_sms:
        return 1
    s = min(num_sms // tiles, k_blocks // MIN_KB_PER_SPLIT, MAX_SPLITS)
    return s if s >= 2 else 1


def fill_beats_split(M: int, N: int, K: int, L: int = 1, a_major: str = "K",
                     b_major: str = "K", num_sms: int = 132, elem_bytes: int = 2) -> bool:
    """Whether a problem rule 1 would swap runs unswapped instead: the swapped tiles would
    split K, rule 2's one-wave ``64 x fill_tile_n(N)`` tiles fit (one problem, a width in
    ``[FILL_MIN_TN, 256]``, a K-major A so that only its M rows are loaded) and B has at most
    :data:`FILL_OVER_SPLIT_MAX_B_BYTES` bytes."""
    tm, tn = _swapped_tile(M, N, L, a_major, num_sms)
    if _split_count(_tiles(N, M, L, tm, tn), -(-K // 64), num_sms) == 1:
        return False
    fill = fill_tile_n(N, b_major, num_sms)
    return L == 1 and a_major == "K" and FILL_MIN_TN <= fill <= 256 and \
        N * K * elem_bytes <= FILL_OVER_SPLIT_MAX_B_BYTES


def choose_sm90(M: int, N: int, K: int, L: int = 1, dtype: str = "f16", a_major: str = "K",
                b_major: str = "K", num_sms: int = 132, deterministic: bool = True,
                allow_swap: bool = True, allow_split: bool = True,
                d_vec2: bool = True, split_mode: str | None = None,
                stream_k: bool = False) -> Sm90Choice:
    """The kernel for ``D (L, M, N) = A (L, M, K) @ B`` with B given as ``(N, K)`` (``b_major``
    "K") or N-contiguous (``"MN"``: a row-major ``(K, N)`` B); see the module docstring for the
    rules.  ``d_vec2``: D's (and C's) leading dimension is even and its base 4-byte aligned
    (paired stores in the non-swapped built-in epilogue).  ``split_mode``: "workspace" or
    "fixup" (the deterministic modes; default :data:`DEFAULT_SPLIT_MODE`).  ``stream_k``: run
    the stream-K kernel instead of the default / unsplit 128x128 one (the caller sizes
    ``sk_tiles`` with ``gemm_sm90_streamk.streamk_layout``).  Pure: the same arguments give the
    same choice."""
    op = "choose_sm90"
    for nm, v in (("M", M), ("N", N), ("K", K), ("L", L), ("num_sms", num_sms)):
        if not isinstance(v, int) or v < 1:
            raise LaunchError(op, nm, "must be a positive int", actual=v)
    if dtype not in ("f16", "bf16"):
        raise LaunchError(op, "dtype", "must be f16 or bf16", actual=dtype)
    for nm, v in (("a_major", a_major), ("b_major", b_major)):
        if v not in ("K", "MN"):
            raise LaunchError(op, nm, "must be 'K' or 'MN'", actual=v)
    split_mode = DEFAULT_SPLIT_MODE if split_mode is None else split_mode
    if split_mode not in ("workspace", "fixup"):
        raise LaunchError(op, "split_mode", "must be 'workspace' or 'fixup' (atomics: "
                          "deterministic=False)", actual=split_mode)
    kb = -(-K // 64)
    why = []
    swap = allow_swap and M <= SWAP_MAX_M and N >= 2 * M
    unswapped = swap and allow_split and not stream_k and \
        fill_beats_split(M, N, K, L, a_major, b_major, num_sms)
    swap = swap and not unswapped
    if swap:
        km, kn = N, M                          # kernel problem
        ka, kbm = b_major, a_major             # kernel A = user B, kernel B = user A
        tm, tn = _swapped_tile(M, N, L, a_major, num_sms)
        if tn == 64 and M <= SMALL_TILE_N[-1]:
            why.append("A is M-contiguous: 64-wide tile (16/32 need a K-major operand)")
        stages = 8
        why.insert(0, f"M={M} <= {SWAP_MAX_M}: swap A/B (D^T = B^T A^T), wgmma N={tn}")
        # 64-row tiles when they fit one wave.  Measured on the H100 (fp16, x @ W.T / A @ B,
        # M = 1 / 8 / 16 / 32, time ratio to torch.mm, 128-row -> 64-row tiles): 6144x4096
        # 0.85-0.88 -> 0.99-1.05 (96 tiles, no split, against 48 split x2); 4096x4096
        # 1.07-1.54 -> 1.12-1.65 (M = 1 x @ W.T: 1.42 -> 1.38); 4096x14336 0.94-0.97 ->
        # 0.97-0.99.  At 11008, 14336 and 28672 wide (172-448 64-row tiles, more than a wave)
        # the 128-row tiles were as fast or faster (docs/performance.md, "Hopper GEMM", v12)
        if tm == 64:
            why.append(f"{_tiles(km, kn, L, 64, tn)} 64x{tn} tiles fit one wave: 64-row tiles "
                       "(one consumer warpgroup)")
    else:
        km, kn, ka, kbm = M, N, a_major, b_major
        tm = 128
        t256 = _tiles(M, N, L, 128, 256)
        if stream_k:
            t = _tiles(M, N, L, 128, 128)
            cfg = Sm90GemmConfig(128, 128, 64, 6, 2, dtype, a_major=a_major, b_major=b_major,
                                 vec2=d_vec2, stream_k=True).check()
            return Sm90Choice(cfg, False, 1, t, t, num_sms, f"stream-K asked for: {t} 128x128 "
                              f"tiles ({t / num_sms:.2f} waves) shared in k-blocks by the grid")
        tn = fill_tile_n(N, b_major, num_sms)
        if M <= FILL_MAX_M and L == 1 and FILL_MIN_TN <= tn <= 256:
            sw = b_swizzle(b_major, tn)
            # fewer rows than the tile: TMA loads only A's M rows (rounded up to 8), boxes
            # past M cost time to fill (48x4096x4096: 13.1 us of GPU time against 10.6 at
            # M = 64, docs/performance.md "Hopper GEMM", v17)
            a_rows = -(-M // 8) * 8
            a_rows = a_rows if a_rows < 64 and a_major == "K" else 0
            cfg = Sm90GemmConfig(64, tn, 64, 8, 1, dtype, a_major=a_major, b_major=b_major,
                                 vec2=d_vec2, smem_swizzle=sw,
                                 a_rows=a_rows).fit_stages(8).check()
            t = _tiles(M, N, L, 64, tn)
            return Sm90Choice(cfg, False, 1, t, t, num_sms,
                              f"M={M} <= {FILL_MAX_M}: {t} 64x{tn} tiles, one wave (each SM "
                              "reads an equal slice of B)"
                              + (f", {a_rows} of A's rows loaded" if a_rows else "")
                              + ("; not swapped: the swapped tiles would split K"
                                 if unswapped else ""))
        tm, tn, wgs, stages, sched = _pick_tile(M, N, L, num_sms)
        if sched == "pingpong":
            t = _tiles(M, N, L, tm, tn)
            cfg = Sm90GemmConfig(tm, tn, 64, stages, wgs, dtype, a_major=a_major,
                                 b_major=b_major, vec2=d_vec2, schedule="pingpong").check()
            return Sm90Choice(cfg, False, 1, t, t, num_sms,
                              f"{t} {tm}x{tn} ping-pong tiles: fewest waves x tile work (one "
                              "warpgroup's epilogue under the other's mainloop)")
        if tn >= 128:
            t = _tiles(M, N, L, tm, tn)
            why_tile = (f"{t256} 128x256 tiles >= {num_sms} SMs" if t256 >= num_sms else
                        f"{tm}x{tn} tiles: fewest waves x tile work")
            return Sm90Choice(None, False, 1, t, t, num_sms,
                              f"{why_tile}: default kernel", default_path=True)
        why.append(f"{_tiles(M, N, L, tm, tn)} {tm}x{tn} tiles ({wgs} consumer warpgroup"
                   f"{'s' if wgs > 1 else ''}): fewest waves x tile work")
    tiles = _tiles(km, kn, L, tm, tn)
    splits = 1
    wgs = tm // 64 if swap else wgs
    if allow_split and tiles * 2 <= num_sms:
        s = _split_count(tiles, kb, num_sms)
        if s >= 2:
            splits = s
            why.append(f"{tiles} tiles <= SMs/2 and {kb} k-blocks: split-K x{s} "
                       f"(>= {MIN_KB_PER_SPLIT} k-blocks per split)")
        else:
            why.append(f"{tiles} tiles but only {kb} k-blocks: no split")
    if splits == 1 and not swap and tn >= 128:
        return Sm90Choice(None, False, 1, tiles, tiles, num_sms,
                          "; ".join(why) + " (the default path's skinny tile)",
                          default_path=True)
    mode = "none" if splits == 1 else (split_mode if deterministic else "atomic")
    if splits > 1:
        why.append({"workspace": "deterministic: fixed-order reduce kernel",
                    "fixup": "deterministic: fixed-order sum by the tile's last unit",
                    "atomic": "atomic adds (not deterministic)"}[mode])
    cfg = Sm90GemmConfig(tm, tn, 64, stages, wgs, dtype, a_major=ka, b_major=kbm,
                         split_k=mode, transpose_d=swap, vec2=d_vec2 and not swap).check()
    return Sm90Choice(cfg, swap, splits, tiles, tiles * splits, num_sms, "; ".join(why))


def forced_choice(cfg: Sm90GemmConfig, M: int, N: int, K: int, L: int = 1,
                  num_sms: int = 132) -> Sm90Choice:
    """How a configuration the caller gives (``cute_py.gemm(..., config=cfg)``) runs ``D (L, M,
    N) = A @ B`` when it splits K, runs stream-K or stores D transposed: swapped (kernel problem
    ``N x M``, kernel A = the user's B) when ``cfg.transpose_d``; a splitting configuration
    takes the split count of rule 3 (``min(SMs // tiles, k_blocks // MIN_KB_PER_SPLIT,
    MAX_SPLITS)``), at least 2 where K has two k-blocks (the configuration asked for a split);
    stream-K shares the tail tiles over the grid (one unit per tile here).  Law (test):
    ``swap == cfg.transpose_d``; ``1 <= splits <= k_blocks`` and ``splits == 1`` unless
    ``cfg.split_k`` splits; ``units == tiles * splits``."""
    op = "forced_choice"
    for nm, v in (("M", M), ("N", N), ("K", K), ("L", L), ("num_sms", num_sms)):
        if not isinstance(v, int) or v < 1:
            raise LaunchError(op, nm, "must be a positive int", actual=v)
    swap = bool(cfg.transpose_d)
    km, kn = (N, M) if swap else (M, N)
    tiles = _tiles(km, kn, L, cfg.tile_m, cfg.tile_n)
    kb = -(-K // cfg.tile_k)
    splits, why = 1, ["the configuration given"]
    if swap:
        why.append("D^T = B^T A^T (transpose_d)")
    if cfg.splits:
        splits = max(2, min(num_sms // tiles, kb // MIN_KB_PER_SPLIT, MAX_SPLITS))
        splits = max(1, min(splits, kb))
        why.append(f"split-K x{splits} ({cfg.split_k}): {tiles} tiles, {kb} k-blocks")
    if cfg.stream_k:
        why.append("stream-K: the tail tiles shared in k-blocks by the grid")
    return Sm90Choice(cfg, swap, splits, tiles, tiles * splits, num_sms, "; ".join(why))
