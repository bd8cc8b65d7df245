"""The Hopper GEMM: TMA + mbarrier pipeline + warp specialization + wgmma (sm_90a).

``D[l] = alpha * A[l] @ B[l] + beta * C[l]`` with A ``(M, K)`` K-major (row-major), B given as
``(N, K)`` K-major (the BLAS "TN" case; ``B.T`` of a row-major ``(K, N)`` is *not* this), D and C
``(M, N)`` row-major, 16-bit (fp16 or bf16) operands, fp32 accumulation.

Kernel structure (CUTLASS's ``KernelTmaWarpSpecializedCooperative`` + persistent scheduler):

- CTA = 1 producer warpgroup + ``W`` consumer warpgroups, ``__launch_bounds__(128*(W+1), 1)``;
  the producer warpgroup gives registers away (``setmaxnreg.dec``), consumers take them
  (``setmaxnreg.inc``);
- one elected thread of warp 0 runs the mainloop producer: for every tile of this CTA and
  every k-block, ``producer_acquire`` (wait empty, ``arrive.expect_tx``) then two TMA loads (A
  and B boxes, 128-byte swizzle) completing on the stage's full barrier;
- the consumer warpgroups split the tile along M (``tile_m / W`` rows each) and issue
  ``wgmma.mma_async.m64n{tile_n}k16`` from smem descriptors, keeping one wgmma group in
  flight: after ``wait_group<1>`` the previous k-block's stage is released (one arrival per
  consumer warp);
- persistent grid (one CTA per SM), tiles visited in grouped ("swizzled") order, batch mode L
  outermost;
- residues: TMA zero-fills out-of-bounds boxes, the epilogue is predicated.

FP8 (``dtype`` "e4m3" / "e5m2", ``dtype_b``, ``out_dtype``, ``scaling``, ``promote``) is a
configuration of this same kernel: 1-byte smem atoms / TMA boxes / descriptors, the k32 wgmma
atom, ``tile_k`` 128, K-major operands only, and the scaled built-in epilogue and per-k-block
promotion of :mod:`gemm_sm90_fp8` (``cute_py.scaled_mm`` calls it).

The kernel is emitted through one :class:`~backends.cuda.builder.KernelBuilder` (typed
parameters, helpers, cluster dims, arch guard) from per-architecture components:

- ``arch.common.scheduler.TileScheduler``: unit count, persistent loop bounds, tile coordinates
  (grouped raster, cluster rank, batch, split-K ranges) as IR;
- ``arch.sm90.pipeline``: the barriers, counts and state updates of :class:`cute_py.pipeline
  .PipelineTmaAsync` / ``OrderedSequenceBarrier`` (the objects the Python models run);
- ``arch.sm90.tma``: the stage's TMA loads (boxes from the TmaAtom, offsets from the smem
  layout, coordinates as IR; multicast in a cluster);
- ``arch.sm90.wgmma``: the wgmma atom, descriptor LBO / SBO / layout type and per-slab /
  per-k-step offsets read off the GMMA smem layouts (``gemm_sm90_maps``), the accumulator
  origin lowered from ``CLayout_64xN``;
- the fused epilogue only through the collective protocol (``arch.common.epilogue``).

The statement skeleton between the components (warp-role branches, the producer and consumer
loops, the mainloop's k-block, the epilogue dispatch) is emitted into the same builder by
``gemm_sm90_body.Sm90Body``, one method per piece; the built-in epilogue's stores by
``gemm_sm90_store``, split-K's partials and fix-up by ``gemm_sm90_splitk``, FP8's promotion
and epilogue by ``gemm_sm90_fp8``, stream-K's schedule, piece map and head / tail by
``gemm_sm90_streamk``.
"""

from __future__ import annotations

import hashlib
import numbers
from dataclasses import dataclass
from functools import lru_cache

from cute_py.errors import LaunchError
from cute_py.numeric import canonical_type
from cute_py.pipeline import OrderedSequenceBarrier, PipelineTmaAsync

from ..gemm_common import empty
from ..kernel import LaunchPlan, make_plan
from ..tensors import TensorMeta, is_array, meta_of
from .gemm_sm90_maps import derive_maps

__all__ = ["Sm90GemmConfig", "generate_source", "Sm90Gemm", "SHIPPED_CONFIGS", "with_store_warp",
           "half_tile_store_warp", "whole_tile_staged", "coop_tile_n", "COOP_WIDTHS", "fewest_rounds_width",
           "fewest_rounds_tile",
           "make_epilogue_config", "shipped_epilogue_configs", "shipped_fp8_configs"]

_DT = {"f16": "f16", "float16": "f16", "bf16": "bf16", "bfloat16": "bf16"}

#: kernel schedules: CUTLASS's ``KernelTmaWarpSpecializedCooperative`` / ``...Pingpong``, and
#: "ksplit": two consumer warpgroups share each tile, each computing the whole tile over half
#: of its k-blocks (warpgroup ``w`` takes the stages ``idx`` with ``idx % 2 == w``); warpgroup
#: 1 hands its fp32 sums to warpgroup 0 through shared memory, which adds them and runs the
#: built-in epilogue.  For tiles whose mainloop waits on every k-block (FP8 promotion): two
#: k-blocks' wgmmas are in flight where one warpgroup has one
SCHEDULES = ("cooperative", "pingpong", "ksplit")


#: narrow tile_n values (wgmma's N is any multiple of 8 for 16-bit inputs) the mainloop takes
#: with the built-in epilogue and a K-major B: decode shapes (M <= 32 after swapping A and B).
#: Not 8: an 8-row B tile has no second core-matrix group to read the descriptor's SBO off.
SMALL_TILE_N = (16, 32)

#: split-K modes: "none"; "workspace" (each (tile, split) unit stores its fp32 partial tile into
#: its own workspace slice, ``splitk_reduce`` sums the slices in a fixed order: bit-identical
#: results run to run); "atomic" (every unit adds into one zeroed fp32 slice with
#: ``atomicAdd``: no split-count-sized workspace, but the summation order is not fixed);
#: "fixup" (as "workspace", then the unit that finishes a tile last -- a per-tile counter --
#: sums the tile's slices in the fixed order and runs the built-in epilogue: one launch,
#: bit-identical results)
SPLIT_K_MODES = ("none", "workspace", "atomic", "fixup")


def _check_tile(op, tile_m, tile_n, wgs, schedule, small_n=False) -> int:
    """The tile rule shared by the GEMM and its epilogue: each of the ``wgs`` warpgroups of a
    tile gets 64 or 128 rows, ``tile_n`` is a multiple of 64 in [64, 256] (with ``small_n``,
    the built-in epilogue's rule, any wgmma N: a multiple of 8 in [8, 256]).  Returns the rows
    per warpgroup."""
    rows = tile_m // wgs
    if tile_m % (64 * wgs) or rows > 128:
        raise LaunchError(op, "tile_m", f"must give each warpgroup of a tile 64 or 128 rows "
                          f"({wgs} warpgroup(s) per tile, {schedule})",
                          expected="64 or 128" if wgs == 1 else "64*W or 128*W", actual=tile_m)
    if small_n and (tile_n in SMALL_TILE_N or (tile_n % 8 == 0 and 8 <= tile_n <= 256)):
        return rows     # the built-in epilogue takes any wgmma N
    if tile_n % 32 or not 64 <= tile_n <= 256:
        raise LaunchError(op, "tile_n", "must be a multiple of 32 in [64, 256]" + (
            " (or, with the built-in epilogue, any multiple of 8 up to 256)" if small_n
            else ""), actual=tile_n)
    return rows


def _check_ksplit(op, cfg) -> None:
    """The "ksplit" schedule's rule: two consumer warpgroups; an even number of stages, at
    least 4 (stage ``idx`` always belongs to warpgroup ``idx % 2``, so a warpgroup waits only
    on stages whose earlier fills it released itself; an odd count would give one warpgroup
    more k-blocks, and with two stages the 16-bit mainloop, which holds its last stage while
    waiting for the next, would wait on the stage it holds: ``cute_py.pipeline.KSplitModel``);
    the built-in epilogue (run by warpgroup 0 alone); no split-K, stream-K or cluster."""
    if cfg.consumer_wgs != 2:
        raise LaunchError(op, "consumer_wgs", "must be 2 for the ksplit schedule (two "
                          "warpgroups sharing each tile's k-blocks)", expected=2,
                          actual=cfg.consumer_wgs)
    if not isinstance(cfg.stages, int) or cfg.stages % 2 or cfg.stages < 4:
        raise LaunchError(op, "stages", "must be even and at least 4 for the ksplit schedule "
                          "(stage idx belongs to warpgroup idx % 2: an even count splits the "
                          "k-blocks evenly, and a warpgroup holding one stage while it waits "
                          "for its next needs two of its own)", expected="4, 6 or 8",
                          actual=cfg.stages)
    if cfg.epi is not None:
        raise LaunchError(op, "epi", "the ksplit schedule runs the built-in epilogue only "
                          "(epi=None)", actual=cfg.epi)
    if cfg.splits or cfg.stream_k or cfg.cluster_size != 1:
        raise LaunchError(op, "schedule", "ksplit takes no split_k, stream_k or cluster",
                          actual=(cfg.split_k, cfg.stream_k, cfg.cluster_m, cfg.cluster_n))


@lru_cache(maxsize=64)
def _wgmma_frag(wgs, tile_n, rows):
    """The accumulator fragment of ``wgs`` warpgroups sharing a ``(wgs*rows) x tile_n`` tile
    (cached: it enumerates every thread and value, ~20 ms)."""
    from ..epilogue.fragment import wgmma_fragment
    return wgmma_fragment(wgs, tile_n, rows)


@dataclass(frozen=True)
class Sm90GemmConfig:
    """One kernel: tile, pipeline depth, consumer warpgroups, element type, raster, registers,
    epilogue.  Hashable (the kernel-cache key)."""

    tile_m: int = 128
    tile_n: int = 256
    tile_k: int = 64
    stages: int = 4
    consumer_wgs: int = 2
    dtype: str = "f16"
    group_m: int = 8
    producer_regs: int = 40
    consumer_regs: int = 232
    has_c: bool = False          # beta * C term in the built-in epilogue
    vec2: bool = True            # D/C leading dimensions even: paired 4-byte stores
    raster_n: bool = False       # group along N instead of M
    cluster_m: int = 1           # CTAs per cluster along M (2: B tile multicast)
    epi: object = None           # an epilogue.sm90.EpilogueConfig: TMA-store / EVT epilogue
    a_major: str = "K"           # "K": A (M, K) K-contiguous; "MN": M-contiguous (A.T row-major)
    b_major: str = "K"           # "K": B (N, K) K-contiguous; "MN": N-contiguous ((K, N) row-major)
    schedule: str = "cooperative"  # "cooperative": the W warpgroups split one tile along M;
    #                                "pingpong": each warpgroup owns a whole tile, alternately
    # -- fields below are left out of repr (and so of the kernel name / source) at their
    #    defaults: configurations without them generate the same text as before they existed
    split_k: str = "none"        # SPLIT_K_MODES: work unit = (tile, split), each split a
    #                              contiguous k-block range; fp32 partials -> workspace
    transpose_d: bool = False    # store the kernel's D(r, c) (or workspace partial) at
    #                              c * ld + r: D^T = B^T A^T written into a row-major D (swap AB)
    stream_k: bool = False       # stream-K: the last sk_tiles tiles shared evenly in k-blocks
    #                              by the grid, deterministic fix-up (gemm_sm90_streamk)
    smem_swizzle: tuple = (3, 3)  # swizzle bits of A's / B's GMMA smem atoms: 3 SW128, 2 SW64,
    #                              1 SW32, 0 interleaved (gemm_sm90_maps.smem_atom)
    # -- FP8 (dtype "e4m3" / "e5m2"; gemm_sm90_fp8): B's format when it differs from A's, the
    #    output type (bf16 / f16) and the scaling mode ("tensor", "row", "block")
    dtype_b: str = ""
    out_dtype: str = ""
    scaling: str = "none"
    promote: bool = False        # FP8 "tensor" / "row": sum each k-block in a fresh accumulator
    #                              set and add it into a second one (as "block" does, unscaled)
    a_rows: int = 0              # rows of A's tile each stage loads (0: all tile_m; K-major A,
    #                              a multiple of 8): a problem with M < tile_m loads only its
    #                              rows (TMA boxes past M cost time to fill); the wgmma reads the
    #                              stage's stale rows beyond, which feed only accumulator rows
    #                              >= M, never stored nor reduced
    cluster_n: int = 1           # CTAs per cluster along N (2: A tile multicast); the cluster
    #                              is cluster_m x cluster_n CTAs, rank r at (r % cluster_m,
    #                              r // cluster_m)

    def __post_init__(self):
        """Block-scaled FP8 (``scaling`` "block") with a TMA-store epilogue (``epi``, whose
        store warp or load producer can leave the scales two warps that load one turn ahead:
        :meth:`scale_prefetch`) or with 256-row tiles runs its producer warpgroup at no fewer
        than :func:`~backends.cuda.arch.sm90.block_scales.producer_regs` registers (56; 72 for
        256-row tiles: fewer spill in the scale warps): a smaller ``producer_regs`` is raised
        to it and ``consumer_regs`` lowered to what the CTA's pool leaves (multiples of 8).
        Law: every other configuration keeps its fields as given."""
        if self.scaling == "block" and self.dtype in ("e4m3", "e5m2") and \
                (self.epi is not None or self.tile_m > 128):
            from ..arch.sm90.block_scales import producer_regs
            least = producer_regs(self.tile_m)
            if isinstance(self.producer_regs, int) and self.producer_regs < least:
                object.__setattr__(self, "producer_regs", least)
                wgs = self.consumer_wgs if self.consumer_wgs in (1, 2) else 2
                left = (self.register_pool - least * 128) // (128 * wgs) // 8 * 8
                if isinstance(self.consumer_regs, int) and self.consumer_regs > left:
                    object.__setattr__(self, "consumer_regs", left)

    def __repr__(self):
        """The dataclass repr, without the fields added after the first shipped kernels when
        they hold their defaults (so existing configurations keep their names and sources)."""
        import dataclasses
        parts = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in _LATE_FIELDS and v == f.default:
                continue
            parts.append(f"{f.name}={v!r}")
        return f"{type(self).__qualname__}({', '.join(parts)})"

    @property
    def cluster_size(self) -> int:
        """CTAs of one cluster: ``cluster_m * cluster_n``."""
        return self.cluster_m * self.cluster_n

    def units(self, M: int, N: int, L: int = 1) -> int:
        """Work units (clusters' worth of tiles) of an ``M x N`` problem of ``L`` batches,
        before split-K: the kernel's own count (:func:`tile_scheduler`'s ``num_units``) at
        these sizes, ``ceil(ceil(M / tile_m) / cluster_m) * ceil(ceil(N / tile_n) /
        cluster_n) * L``."""
        from .. import ir
        return int(ir.evaluate(_units_node(self), {"num_m": -(-M // self.tile_m),
                                                   "num_n": -(-N // self.tile_n), "L": L,
                                                   "splits_k": 1}))

    @property
    def splits(self) -> bool:
        """True when the kernel runs split-K units (``split_k`` != "none")."""
        return self.split_k != "none"

    def check(self):
        op = "Sm90GemmConfig"
        if self.fp8:
            from . import gemm_sm90_fp8
            gemm_sm90_fp8.check(self, op)
        elif _DT.get(self.dtype) is None:
            raise LaunchError(op, "dtype", "must be f16, bf16, e4m3 or e5m2", actual=self.dtype)
        elif self.dtype_b or self.out_dtype or self.scaling != "none" or self.promote:
            raise LaunchError(op, "dtype", "dtype_b / out_dtype / scaling belong to 8-bit "
                              "(e4m3 / e5m2) configurations", actual=self.dtype)
        if self.consumer_wgs not in (1, 2):
            raise LaunchError(op, "consumer_wgs", "must be 1 or 2", actual=self.consumer_wgs)
        if self.schedule not in SCHEDULES:
            raise LaunchError(op, "schedule", "is not a kernel schedule", expected=SCHEDULES,
                              actual=self.schedule)
        if self.schedule == "pingpong" and self.consumer_wgs != 2:
            raise LaunchError(op, "consumer_wgs", "must be 2 for the ping-pong schedule (two "
                              "warpgroups taking turns)", expected=2, actual=self.consumer_wgs)
        if self.schedule == "ksplit":
            _check_ksplit(op, self)
        if self.split_k not in SPLIT_K_MODES:
            raise LaunchError(op, "split_k", "is not a split-K mode", expected=SPLIT_K_MODES,
                              actual=self.split_k)
        rows = _check_tile(op, self.tile_m, self.tile_n, self.mma_wgs, self.schedule,
                           small_n=self.epi is None)
        sw = self.smem_swizzle
        if not (isinstance(sw, tuple) and len(sw) == 2 and all(b in (0, 1, 2, 3) for b in sw)):
            raise LaunchError(op, "smem_swizzle", "must be two swizzle bits (3 SW128, 2 SW64, "
                              "1 SW32, 0 interleaved)", actual=sw)
        # tile_k: whole wgmma k-steps, a tiling of both operands' GMMA smem atoms
        from .gemm_sm90_maps import check_tile_k, swizzle_width
        check_tile_k(self, op)
        b_width = swizzle_width(sw[1], self.elem_bytes) if self.b_major == "MN" else 8
        if self.tile_n % 64:
            if self.tile_n % b_width:
                raise LaunchError(op, "b_major", f"a tile_n of {self.tile_n} needs a K-major "
                                  f"B, or an MN-major B whose smem atom rows divide it (its "
                                  f"smem_swizzle {sw[1]} gives {b_width}-element rows; SW64 "
                                  "takes multiples of 32, SW32 of 16)", expected="K",
                                  actual=self.b_major)
        if self.stream_k:
            if self.splits or self.schedule != "cooperative" or self.cluster_size != 1:
                raise LaunchError(op, "stream_k", "needs the cooperative schedule, no cluster "
                                  "and no split_k", actual=(self.schedule, self.cluster_m,
                                                            self.cluster_n, self.split_k))
        if self.splits or self.transpose_d:
            what = "split_k" if self.splits else "transpose_d"
            if self.epi is not None:
                raise LaunchError(op, what, "works with the built-in epilogue only (epi=None)",
                                  actual=self.epi)
        if self.split_k == "fixup" and (rows // 64) * self.tile_n // 2 > 64:
            raise LaunchError(op, "split_k", "'fixup' needs at most 64 accumulators per thread "
                              "(the sums of 128 spill)", actual=(self.tile_m, self.tile_n))
        if self.split_k == "fixup" and self.cluster_size > 1:
            raise LaunchError(op, "split_k", "'fixup' keeps one workspace slot and counter per "
                              "work unit, which a cluster's CTAs would share: no cluster",
                              expected=(1, 1), actual=(self.cluster_m, self.cluster_n))
        if self.split_k == "fixup" and self.smem_bytes() + 16 > 227 * 1024:
            raise LaunchError(op, "stages", "shared memory (with the fix-up flag) exceeds "
                              "227 KB", expected="<= 232432", actual=self.smem_bytes())
        if self.splits:
            if self.schedule != "cooperative":
                raise LaunchError(op, "split_k", "needs the cooperative schedule",
                                  expected="cooperative", actual=self.schedule)
            if self.has_c and self.split_k != "fixup":
                raise LaunchError(op, "has_c", "with split-K, beta * C is applied by the reduce "
                                  "kernel (splitk_reduce), not the GEMM", expected=False,
                                  actual=True)
        if self.tile_m > 256:
            raise LaunchError(op, "tile_m", "exceeds the TMA box limit 256", actual=self.tile_m)
        if self.a_rows:
            if not isinstance(self.a_rows, int) or self.a_rows % 8 or \
                    not 8 <= self.a_rows < self.tile_m:
                raise LaunchError(op, "a_rows", "must be 0 (the whole tile) or a multiple of 8 "
                                  "below tile_m", expected=f"8, 16, ... < {self.tile_m}",
                                  actual=self.a_rows)
            if self.a_major != "K":
                raise LaunchError(op, "a_rows", "loads part of a K-major A only (an MN-major "
                                  "A's smem atoms span 64 rows)", expected="K",
                                  actual=self.a_major)
        if (rows // 64) * self.tile_n // 2 > MAX_ACCUMULATORS:
            raise LaunchError(op, "tile", f"needs more than {MAX_ACCUMULATORS} accumulators "
                              "per thread", actual=(self.tile_m, self.tile_n,
                                                    self.consumer_wgs))
        if self.smem_bytes() > 227 * 1024:
            raise LaunchError(op, "stages", "shared memory exceeds 227 KB",
                              expected="<= 232448", actual=self.smem_bytes())
        if self.epi is not None and self.epi.store_warp and (
                self.schedule != "cooperative" or self.splits):
            raise LaunchError(op, "epi", "a store warp serves one cooperative tile loop (no "
                              "ping-pong or split-K)", actual=self.schedule)
        if self.epi is not None:
            e = self.epilogue()
            if (e.cfg.tile_m, e.cfg.tile_n) != (self.tile_m, self.tile_n) or \
                    e.cfg.fragment != _wgmma_frag(self.mma_wgs, self.tile_n, rows):
                raise LaunchError(op, "epi", "epilogue tile / fragment differ from the GEMM's "
                                  "(build it with make_epilogue_config(tree, tile_m, tile_n, "
                                  "consumer_wgs, schedule=...))",
                                  expected=(self.tile_m, self.tile_n, self.mma_wgs),
                                  actual=(e.cfg.tile_m, e.cfg.tile_n,
                                          e.cfg.fragment.num_threads // 128))
        for nm in ("cluster_m", "cluster_n"):
            if getattr(self, nm) not in (1, 2) or isinstance(getattr(self, nm), bool):
                raise LaunchError(op, nm, "must be 1 or 2", actual=getattr(self, nm))
        for nm in ("a_major", "b_major"):
            if getattr(self, nm) not in ("K", "MN"):
                raise LaunchError(op, nm, "must be 'K' or 'MN'", actual=getattr(self, nm))
        if self.tile_n % self.cluster_m or (self.tile_n // self.cluster_m) % b_width:
            raise LaunchError(op, "cluster_m", f"each CTA of a cluster multicasts a slice of "
                              f"the B tile: the slice needs {b_width}-row multiples (its smem "
                              "atom's " + ("width)" if self.b_major == "MN" else "height)"),
                              actual=(self.tile_n, self.cluster_m))
        if self.cluster_n > 1:
            a_width = swizzle_width(sw[0], self.elem_bytes) if self.a_major == "MN" else 8
            if self.a_rows:
                raise LaunchError(op, "cluster_n", "multicasts slices of A's whole tile: no "
                                  "a_rows", expected=1, actual=(self.cluster_n, self.a_rows))
            if self.tile_m % self.cluster_n or (self.tile_m // self.cluster_n) % a_width:
                raise LaunchError(op, "cluster_n", f"each CTA of a cluster multicasts a slice "
                                  f"of the A tile: the slice needs {a_width}-row multiples (its "
                                  "smem atom's " + ("width)" if self.a_major == "MN"
                                                    else "height)"),
                                  actual=(self.tile_m, self.cluster_n))
        if not 2 <= self.stages <= 8:
            raise LaunchError(op, "stages", "must be in [2, 8]", actual=self.stages)
        for nm in ("producer_regs", "consumer_regs"):
            v = getattr(self, nm)
            if not 24 <= v <= 256 or v % 8:
                raise LaunchError(op, nm, "setmaxnreg takes a multiple of 8 in [24, 256]",
                                  actual=v)
        if self.producer_regs * 128 + self.consumer_regs * 128 * self.consumer_wgs > \
                self.register_pool:
            raise LaunchError(op, "consumer_regs", "the warpgroups' registers after setmaxnreg "
                              "exceed what the CTA holds at launch (setmaxnreg.inc would wait "
                              "forever)", expected=f"<= {self.register_pool} in all",
                              actual=(self.producer_regs, self.consumer_regs))
        return self

    @property
    def register_pool(self) -> int:
        """Registers the CTA holds at launch: ``threads`` x the per-thread count ptxas gives a
        kernel of ``__launch_bounds__(threads, 1)`` (64K / threads, at most 255, rounded down
        to the allocation unit of 8).  ``setmaxnreg`` only moves registers between the
        warpgroups of this pool: 168 x 384 = 64,512 for two consumer warpgroups, not 65,536."""
        t = self.threads
        return t * (min(255, 65536 // t) // 8 * 8)

    @property
    def fp8(self) -> bool:
        """8-bit (e4m3 / e5m2) operands: the scaled FP8 GEMM (``gemm_sm90_fp8``)."""
        return self.dtype in ("e4m3", "e5m2")

    @property
    def elem_bytes(self) -> int:
        return 1 if self.fp8 else 2

    @property
    def threads(self) -> int:
        return 128 * (self.consumer_wgs + 1)

    @property
    def mma_wgs(self) -> int:
        """Consumer warpgroups whose wgmmas split one tile's rows: all of them (cooperative) or
        one (pingpong: a tile per warpgroup; ksplit: each computes the whole tile)."""
        return self.consumer_wgs if self.schedule == "cooperative" else 1

    @property
    def epi_regions(self) -> int:
        """Epilogue smem regions: one per warpgroup that runs an epilogue of its own."""
        return 1 if self.schedule == "ksplit" else self.consumer_wgs // self.mma_wgs

    @property
    def exchange_bytes(self) -> int:
        """"ksplit": the shared memory through which warpgroup 1 hands its fp32 sums of a
        tile to warpgroup 0 (4 bytes per accumulator of one warpgroup); else 0."""
        return self.tile_m * self.tile_n * 4 if self.schedule == "ksplit" else 0

    @property
    def col_scale_bytes(self) -> int:
        """Row-wise FP8 scaling through the TMA-store epilogue: the tile's ``tile_n`` column
        scales per epilogue region, staged by the consumers
        (``gemm_sm90_fp8.emit_col_scale_stage``); else 0."""
        if not (self.fp8 and self.scaling == "row" and self.epi is not None):
            return 0
        return self.epi_regions * self.tile_n * 4

    @property
    def stage_bytes(self) -> int:
        """Shared memory of one mainloop stage (A's and B's tiles)."""
        return (self.tile_m + self.tile_n) * self.tile_k * self.elem_bytes

    @property
    def load_rows_a(self) -> int:
        """Rows of A's tile a stage's TMA loads write (``a_rows``, or all of ``tile_m``)."""
        return self.a_rows or self.tile_m

    @property
    def tx_bytes(self) -> int:
        """Bytes the TMA loads of one stage write (the full barrier's transaction count):
        :attr:`load_rows_a` rows of A and B's whole tile."""
        return (self.load_rows_a + self.tile_n) * self.tile_k * self.elem_bytes

    def epilogue(self):
        """The :class:`~cute_py.backends.cuda.epilogue.sm90.Sm90Epilogue` of ``epi`` (cached)."""
        if self.epi is None:
            return None
        return _epilogue_of(self.epi)

    def epilogue_region_bytes(self) -> int:
        """Bytes of one epilogue region (1024-aligned when there are several: swizzled
        buffers)."""
        e = self.epilogue()
        if e is None:
            return 0
        a = 16 if self.epi_regions == 1 else 1024
        return -(-e.smem_bytes // a) * a

    def epilogue_smem_bytes(self) -> int:
        return self.epi_regions * self.epilogue_region_bytes()

    def block_scales(self):
        """FP8 block scaling: the scale slots the pipeline's stages carry
        (:class:`~backends.cuda.arch.sm90.block_scales.BlockScaleStages`); else None."""
        if not (self.fp8 and self.scaling == "block"):
            return None
        from ..arch.sm90.block_scales import BlockScaleStages
        return BlockScaleStages(self.stages, self.tile_m, self.tile_n)

    def epilogue_producer_warps(self) -> tuple:
        """The producer warpgroup's warps of the fused epilogue's load producer (C / aux TMA
        loads: warp 1, ping-pong warps 1 and 2); none without one."""
        e = self.epilogue()
        if e is None or not e.has_producer:
            return ()
        return (1, 2) if self.schedule == "pingpong" else (1,)

    def store_warp_id(self):
        """The producer warp that issues the epilogue's TMA stores (``EpilogueConfig.
        store_warp``): the last spare one the epilogue's load producer does not take (the
        block scales' warps are chosen after it); else None."""
        if self.epi is None or not self.epi.store_warp:
            return None
        from ..arch.sm90.block_scales import SPARE_WARPS
        return [w for w in SPARE_WARPS if w not in self.epilogue_producer_warps()][-1]

    def scale_warps(self) -> tuple:
        """FP8 block scaling: the producer warps that copy the scales -- the spare ones the
        epilogue's load producer and store warp leave, at most one per stage
        (``arch.sm90.block_scales.scale_warps``); else none."""
        if self.block_scales() is None:
            return ()
        from ..arch.sm90.block_scales import scale_warps
        sw = self.store_warp_id()
        return scale_warps(self.epilogue_producer_warps() + (() if sw is None else (sw,)),
                           self.stages)

    def scale_prefetch(self) -> bool:
        """Block scaling with fewer than three scale warps: each loads its next turn's scales
        ahead (``BlockScaleStages.emit_producer_turn``).  Three warps' turns already cover a
        scale load's latency (loading ahead there ran ~1% slower); two loading ahead ran as
        fast as three (docs/performance.md, "FP8 GEMM", v18)."""
        return 0 < len(self.scale_warps()) < 3

    def scale_smem_bytes(self) -> int:
        """Bytes of the block scales' slots; rounded up to 1024 when the epilogue's regions
        follow them (its TMA-store buffers are 1024-byte aligned swizzled tiles)."""
        bs = self.block_scales()
        if bs is None:
            return 0
        return -(-bs.bytes // 1024) * 1024 if self.epi is not None else bs.bytes

    def smem_bytes(self) -> int:
        """[A stages][B stages][scale slots][epilogue region][ksplit exchange][column scales]
        [mbarriers] + 1024 bytes to align the base."""
        return self.stages * self.stage_bytes + self.scale_smem_bytes() \
            + self.epilogue_smem_bytes() + self.exchange_bytes + self.col_scale_bytes \
            + 16 * self.stages + 1024

    def fit_stages(self, limit: int = 8) -> "Sm90GemmConfig":
        """This configuration with the most mainloop stages (at most ``limit``) whose shared
        memory (stages + epilogue regions) fits in 227 KB (an even count, at least 4, for
        "ksplit")."""
        import dataclasses
        for s in range(min(limit, 8), 1, -1):
            if self.schedule == "ksplit" and (s % 2 or s < 4):
                continue
            c = dataclasses.replace(self, stages=s)
            if c.smem_bytes() <= 227 * 1024:
                return c
        raise LaunchError("Sm90GemmConfig", "stages", "not even 2 stages fit in 227 KB with "
                          "this tile and epilogue", actual=self.smem_bytes())

    @property
    def name(self) -> str:
        h = hashlib.sha256(repr(self).encode()).hexdigest()[:8]
        pp = {"pingpong": "_pp", "ksplit": "_ks"}.get(self.schedule, "")
        if self.splits:
            pp += "_sk" + self.split_k[0]
        if self.transpose_d:
            pp += "_dt"
        if self.stream_k:
            pp += "_stk"
        if self.a_rows:
            pp += f"_a{self.a_rows}"
        if self.epi is not None and self.epi.batched:     # (not in the repr: a name part)
            pp += "_bl"
        if self.epi is not None and self.epi.store_warp:  # (not in the repr: a name part)
            pp += "_sw"
        if self.fp8:
            from .gemm_sm90_fp8 import name_part
            dt = name_part(self)
        else:
            dt = _DT[self.dtype]
        return (f"cute_sm90_gemm_{dt}_{self.tile_m}x{self.tile_n}x{self.tile_k}"
                f"_s{self.stages}_w{self.consumer_wgs}{pp}_c{self.cluster_m}"
                f"{'x%d' % self.cluster_n if self.cluster_n > 1 else ''}_{h}")

    def pipeline(self) -> PipelineTmaAsync:
        """The mainloop pipeline: a stage is released by the warps of the warpgroups that
        read it (all of them, or the one owning the tile in ping-pong); a stage is full when
        the leader's TMA bytes (and, with block scales, the producer lanes' scale copies)
        have landed."""
        from ..arch.sm90.block_scales import LANES
        # block scaling: the producer warp's lanes arrive too, when their scale copies land,
        # and every consumer thread releases a stage (it read the stage's scales itself)
        per_warp = LANES if self.block_scales() else 1
        return PipelineTmaAsync(stages=self.stages,
                                consumer_arrivals=4 * self.mma_wgs * per_warp,
                                transaction_bytes=self.tx_bytes,
                                cluster_size=self.cluster_size,
                                num_producers=1 + (LANES if self.block_scales() else 0))

    def order(self) -> OrderedSequenceBarrier | None:
        """Ping-pong: the turn order of the consumer warpgroups' mainloops."""
        return OrderedSequenceBarrier(self.consumer_wgs) if self.schedule == "pingpong" else None


@lru_cache(maxsize=256)
def _units_node(cfg: "Sm90GemmConfig"):
    """The kernel's unit count as IR over ``num_m``, ``num_n``, ``L`` (``splits_k`` bound to
    1): built once per configuration (~13 us), evaluated per plan (~2 us)."""
    from .. import ir
    from .gemm_sm90_body import sched_vars
    num_m, num_n, L = sched_vars(cfg)
    return tile_scheduler(cfg).num_units(num_m, num_n, L, ir.var("splits_k", 1, 1))


#: Sm90GemmConfig fields left out of its repr at their defaults (see ``__repr__``)
_LATE_FIELDS = ("split_k", "transpose_d", "stream_k", "smem_swizzle", "dtype_b", "out_dtype",
                "scaling", "promote", "a_rows", "cluster_n")


@lru_cache(maxsize=None)
def _epilogue_of(epi_cfg):
    from ..epilogue.sm90 import Sm90Epilogue
    return Sm90Epilogue(epi_cfg)


@lru_cache(maxsize=256)
def make_epilogue_config(tree=None, tile_m=128, tile_n=256, consumer_wgs=2, element_d="float16",
                         schedule="cooperative", **kw):
    """An ``EpilogueConfig`` whose fragment is this kernel's accumulator (``wgmma_fragment``);
    ``tree`` defaults to ``D = acc`` (``evt.AccFetch()``).  With ``schedule="pingpong"`` the
    fragment is one warpgroup's (each warpgroup runs the epilogue of its own tile), and a tree
    that reads C or aux tensors gets ``load_path="direct"`` unless ``load_path`` or a TMA-path
    option (``stages_c``, ``reuse_smem_c``, ``prefetch_l2``) is given: it needs no C smem, so
    the ping-pong kernel keeps its 5 mainloop stages, and measured +2.3-2.8% over the plain GEMM
    at 4096^3 against +4-5% (``reuse_smem_c``) and +11% (4 stages) for the TMA path
    (docs/performance.md, "Epilogue", v3).  Cached: building the fragment enumerates every
    (thread, value) once."""
    from cute_py.epilogue import evt
    from ..epilogue.sm90 import EpilogueConfig
    if schedule not in SCHEDULES:
        raise LaunchError("make_epilogue_config", "schedule", "is not a kernel schedule",
                          expected=SCHEDULES, actual=schedule)
    if tree is None:
        tree = evt.AccFetch()
    if consumer_wgs not in (1, 2):
        raise LaunchError("make_epilogue_config", "consumer_wgs", "must be 1 or 2",
                          actual=consumer_wgs)
    wgs = consumer_wgs if schedule == "cooperative" else 1
    rows = _check_tile("make_epilogue_config", tile_m, tile_n, wgs, schedule)
    if schedule == "pingpong" and "load_path" not in kw and \
            not any(k in kw for k in ("stages_c", "reuse_smem_c", "prefetch_l2")) and \
            any(r.split(":")[0] in ("src", "aux_load") for r, _ in tree.signature.values()):
        kw["load_path"] = "direct"
    frag = _wgmma_frag(wgs, tile_n, rows)
    return EpilogueConfig(tree=tree, fragment=frag, tile_m=tile_m, tile_n=tile_n,
                          element_d=element_d, **kw)


#: configurations the benchmark and the CPU compile test cover
SHIPPED_CONFIGS = (
    Sm90GemmConfig(128, 256, 64, 4, 2, "f16"),
    Sm90GemmConfig(128, 256, 64, 4, 2, "bf16"),
    Sm90GemmConfig(256, 128, 64, 4, 2, "f16"),
    Sm90GemmConfig(128, 128, 64, 6, 2, "f16"),
    Sm90GemmConfig(128, 128, 64, 6, 1, "f16"),
    Sm90GemmConfig(128, 256, 64, 4, 2, "f16", has_c=True),
    Sm90GemmConfig(128, 256, 64, 4, 2, "f16", vec2=False),
    Sm90GemmConfig(128, 256, 64, 4, 2, "f16", cluster_m=2),
    Sm90GemmConfig(64, 256, 64, 4, 2, "f16", group_m=16, schedule="pingpong"),
    Sm90GemmConfig(128, 128, 64, 5, 2, "bf16", schedule="pingpong", cluster_m=2),
    # decode (M <= 64): one-wave tiles, a K-major B / a row-major B in SW64 atoms
    Sm90GemmConfig(64, 88, 64, 8, 1, "f16"),
    Sm90GemmConfig(64, 96, 64, 8, 1, "bf16", b_major="MN", smem_swizzle=(3, 2)),
)


def shipped_epilogue_configs():
    """The EVT / TMA-store configurations the default path and the benchmark use (built lazily:
    the epilogue emitter is imported only here)."""
    from cute_py.epilogue import evt
    out = []
    for dt, ed in (("f16", "float16"), ("bf16", "bfloat16")):
        out.append(Sm90GemmConfig(dtype=dt, epi=make_epilogue_config(None, element_d=ed)))
        out.append(Sm90GemmConfig(dtype=dt, epi=make_epilogue_config(
            evt.linear_combination(element_c=ed), element_d=ed)))
    out.append(Sm90GemmConfig(dtype="f16", cluster_m=2, epi=make_epilogue_config()))
    out.append(Sm90GemmConfig(tile_n=128, stages=5, dtype="f16",
                              epi=make_epilogue_config(evt.linear_combination(), tile_n=128)))
    out.append(Sm90GemmConfig(tile_n=128, stages=5, dtype="bf16", epi=make_epilogue_config(
        None, tile_n=128, element_d="bfloat16")))
    out.append(Sm90GemmConfig(dtype="f16", cluster_m=2, epi=make_epilogue_config(
        evt.lin_comb_bias_elt_act("relu", bias="col"))))
    # ping-pong: each warpgroup runs the epilogue of its own tile while the other computes
    out.append(Sm90GemmConfig(64, 256, 64, 4, 2, "f16", group_m=16, schedule="pingpong",
                              epi=make_epilogue_config(None, 64, 256, schedule="pingpong")))
    out.append(Sm90GemmConfig(64, 256, 64, 4, 2, "f16", group_m=16, schedule="pingpong",
                              epi=make_epilogue_config(evt.lin_comb_bias_elt_act(
                                  "relu", bias="col"), 64, 256, schedule="pingpong")))
    out.append(Sm90GemmConfig(128, 128, 64, 5, 2, "bf16", schedule="pingpong", cluster_m=2,
                              epi=make_epilogue_config(None, 128, 128, element_d="bfloat16",
                                                       schedule="pingpong")))
    # cooperative 256x128: two 64-row slabs per warpgroup
    out.append(Sm90GemmConfig(256, 128, 64, 3, 2, "f16", cluster_m=2, epi=make_epilogue_config(
        evt.linear_combination(), 256, 128)))
    # C loaded by the consumer threads (load_path="direct"): ping-pong and cooperative
    out.append(Sm90GemmConfig(64, 256, 64, 5, 2, "f16", group_m=16, schedule="pingpong",
                              epi=make_epilogue_config(evt.lin_comb_bias_elt_act(
                                  "relu", bias="col"), 64, 256, schedule="pingpong",
                                  load_path="direct")))
    out.append(Sm90GemmConfig(dtype="bf16", epi=make_epilogue_config(
        evt.linear_combination(element_c="bfloat16"), element_d="bfloat16", load_path="direct",
        l2_evict_first=True)))
    # the one-call defaults for alpha * A @ B + beta * C (ping-pong, C loaded directly)
    out += [default_evt_config(dt, 256, True) for dt in ("f16", "bf16")]
    # ... and with a row-major B whose rows are off 128 bytes (cooperative, clusters of 2)
    out += [default_evt_config(dt, 256, c, "K", "MN", False, 2)
            for dt, c in (("f16", False), ("bf16", True))]
    # batched D = A @ B: D stored by 3-D TMA stores (ping-pong; cooperative for rows off 128 B)
    out += [default_evt_config("f16", 256, False, "K", "MN", batched=True),
            default_evt_config("bf16", 256, False, "K", "K", False, batched=True)]
    # 256-row tiles, one staging buffer: the default for rows off 128 bytes where
    # wide_tile_n picks them, and configurations a user passes
    out += [wide_evt_config("f16", 160), wide_evt_config("bf16", 192, "K", "MN"),
            wide_evt_config("f16", 128, "K", "MN")]
    # ... and the fused gemm(A, B, bias=b, activation="gelu") of a large problem on them
    from cute_py.epilogue.fused import fused_epilogue
    gelu, _ = fused_epilogue(8192, 8192, D_dtype="float16", bias_shape=(8192,),
                             bias_dtype="float16", activation="gelu")
    out.append(wide_evt_config("f16", 160, tree=gelu))
    # ping-pong 128x192 tiles: the default for large problems where pingpong_tile picks them
    # (plain, batched with an N-contiguous B, and the fused bias + GELU at 24 / 240 registers)
    out += [pingpong_evt_config(None, "f16", 128, 192),
            pingpong_evt_config(None, "bf16", 128, 192, "K", "MN", batched=True),
            pingpong_evt_config(gelu, "f16", 128, 192, registers=(24, 240))]
    return tuple(out)


#: the int range of the kernel's sizes and unit counters
_I32 = (1 << 31) - 1

#: the most fp32 accumulators one consumer thread holds: a 256x192 cooperative tile (two
#: 64-row slabs of 96 per warpgroup) compiles without spills under ``setmaxnreg`` 232 and is
#: the fastest tile measured at 6144^3 and 8192x6144x4096 (docs/performance.md, "Hopper
#: GEMM", v18)
MAX_ACCUMULATORS = 192


def with_store_warp(cfg: "Sm90GemmConfig", limit: int = 8,
                    buffers: int | None = None) -> "Sm90GemmConfig":
    """``cfg`` (cooperative, with a TMA-store epilogue) whose D / aux stores a store warp
    issues (``EpilogueConfig.store_warp``) from ``buffers`` staging buffers (``stages_d``;
    None: one per subtile, the whole tile handed over at once), with the most mainloop
    stages (at most ``limit``) that then fit.  The consumers' epilogue then has no named
    barrier and never waits for a store: at 8192x6144x4096 FP8 the per-tile barriers and
    store waits cost 6% (docs/performance.md, "FP8 GEMM", v14).  Law: same tile, tree and
    fragment; only the staging and stages change."""
    import dataclasses
    if cfg.epi is None or cfg.schedule != "cooperative":
        raise LaunchError("with_store_warp", "cfg", "needs a cooperative kernel with a "
                          "TMA-store epilogue (epi)", actual=(cfg.schedule, cfg.epi))
    n = len(cfg.epilogue().subtiles)
    if buffers is not None and (not isinstance(buffers, int) or isinstance(buffers, bool)
                                or not 1 <= buffers <= n):
        raise LaunchError("with_store_warp", "buffers", "must be an int from 1 to the "
                          "epilogue's subtile count (None: one per subtile)",
                          expected=f"1..{n}", actual=buffers)
    epi = dataclasses.replace(cfg.epi, store_warp=True, stages_d=n if buffers is None
                              else buffers)
    return dataclasses.replace(cfg, epi=epi).fit_stages(limit)


def half_tile_store_warp(cfg: "Sm90GemmConfig") -> "Sm90GemmConfig":
    """The 16-bit cooperative kernels' staging: ``cfg`` with a store warp and half a tile of
    staging buffers (``subtiles // 2``, at least 2) when that keeps at least ``cfg``'s
    mainloop stages (the most that fit, up to 8), else ``cfg`` unchanged (also for
    epilogues a store warp does not serve: C staged in D's buffers, delayed stores).
    Measured on the H100 (fp16, ``torch.mm`` time / ours, two runs): 128x256 tiles with 4
    buffers 3000x5000x2000 0.896 / 0.915 against 0.878 / 0.887 (the whole tile: 3 stages,
    0.874 / 0.885), 2048x8192x2000 1.011 / 1.011 against 0.993 / 0.991; 128x128 tiles with 2
    buffers and 6 stages (was 5) 512x4096x4096 1.030 against 1.018, 1024x2048x4096 1.034
    against 1.020 (docs/performance.md, "Hopper GEMM", v15).  Law: tile, tree, fragment and
    cluster unchanged; stages never fewer."""
    e = cfg.epi
    if e is None or cfg.schedule != "cooperative" or e.store_warp or e.reuse_smem_c or \
            e.delay_tma_store:
        return cfg
    n = len(cfg.epilogue().subtiles)
    if n < 2:
        return cfg
    sw = with_store_warp(cfg, buffers=max(2, n // 2))
    return sw if sw.stages >= cfg.stages else cfg


def whole_tile_staged(cfg: "Sm90GemmConfig", min_stages: int = 3) -> "Sm90GemmConfig":
    """``cfg`` with one D staging buffer per epilogue subtile (``stages_d`` = the subtile
    count; no store warp: the consumers still issue the stores, but no subtile waits for an
    earlier subtile's store) and the most mainloop stages that then fit, when at least
    ``min_stages`` fit; else ``cfg`` unchanged (also without a TMA-store epilogue).  FP8's
    256-row tiles: block scaling 1-2% faster at 8192x4096x14336 and 4096^3 than with two
    buffers (docs/performance.md, "FP8 GEMM", v33).  Law: tile, tree, fragment and cluster
    unchanged; the result has ``min_stages`` stages at least or is ``cfg``."""
    import dataclasses
    if cfg.epi is None:
        return cfg
    whole = dataclasses.replace(cfg.epi, stages_d=len(cfg.epilogue().subtiles))
    try:
        staged = dataclasses.replace(cfg, epi=whole).fit_stages()
    except LaunchError:         # e.g. an f32 D's whole 256-row tile: not even 2 stages fit
        return cfg
    return staged if staged.stages >= min_stages else cfg


def shipped_fp8_configs() -> tuple:
    """FP8 configurations with golden sources: per-tensor e4m3 -> bf16 (128x256, one
    accumulator), row-wise mixed e4m3 x e5m2 -> f16 (128x128, promoted every k-block),
    block-scaled e4m3 -> bf16 (128x128); and the defaults of ``scaled_mm`` for a 16-byte
    aligned D without bias on large problems: promoted per-tensor, row-wise and block-scaled
    (128x192; block-scaled also 128x128, its choice when 192-wide tiles leave the last wave
    emptier), clusters of two in rasters of 16 tile-rows, through the TMA-store EVT
    epilogue, and block-scaled and promoted per-tensor 256x128 in clusters of two along N
    (the whole tile staged); the decode tiles (64x64 on
    one consumer warpgroup, M <= 64; 64x32 with the built-in epilogue and 16 rows of A, split
    in K or not, or on the "ksplit" schedule); and an e4m3 D with bias, amax and scale_result
    (the FP8 output for the next layer)."""
    from .gemm_sm90_fp8 import epilogue_tree

    def tma_store(mode, tn, promote):     # as scaled_mm's choose_fp8_config picks them
        c = Sm90GemmConfig(tile_n=tn, tile_k=128, dtype="e4m3", out_dtype="bf16",
                           scaling=mode, promote=promote, cluster_m=2, group_m=16,
                           epi=make_epilogue_config(None, tile_n=tn,
                                                    element_d="bfloat16")).fit_stages()
        return with_store_warp(c)
    return (
        Sm90GemmConfig(tile_n=256, tile_k=128, dtype="e4m3", out_dtype="bf16",
                       scaling="tensor").fit_stages(),
        Sm90GemmConfig(tile_n=128, tile_k=128, dtype="e4m3", dtype_b="e5m2", out_dtype="f16",
                       scaling="row", promote=True).fit_stages(),
        Sm90GemmConfig(tile_n=128, tile_k=128, dtype="e4m3", out_dtype="bf16",
                       scaling="block").fit_stages(),
        tma_store("tensor", 192, True),
        tma_store("row", 192, True),
        tma_store("block", 128, False),
        tma_store("block", 192, False),
        # 256-row tiles (each warpgroup's two slabs promoted in turn), clusters of two along
        # N (A multicast), groups of 8, the whole tile staged in four D buffers: scaled_mm's
        # choice for block scaling at 4096^3 and, promoted per tensor, at 8192x4096x14336
        *(whole_tile_staged(Sm90GemmConfig(
            tile_m=256, tile_n=128, tile_k=128, dtype="e4m3", out_dtype="bf16", scaling=mode,
            promote=mode != "block", cluster_n=2, group_m=8,
            epi=make_epilogue_config(None, tile_m=256, tile_n=128, element_d="bfloat16")))
          for mode in ("block", "tensor")),
        # decode (M <= 64): 64x64 promoted tiles on one consumer warpgroup
        with_store_warp(Sm90GemmConfig(
            tile_m=64, tile_n=64, consumer_wgs=1, tile_k=128, dtype="e4m3", out_dtype="bf16",
            scaling="tensor", promote=True,
            epi=make_epilogue_config(None, tile_m=64, tile_n=64, consumer_wgs=1,
                                     element_d="bfloat16")).fit_stages()),
        # decode with the built-in epilogue: 64x32 tiles loading 16 of A's 64 rows (M = 16),
        # and split K in four ('fixup', row-wise)
        Sm90GemmConfig(tile_m=64, tile_n=32, consumer_wgs=1, tile_k=128, dtype="e4m3",
                       out_dtype="bf16", scaling="tensor", promote=True,
                       a_rows=16).fit_stages(),
        Sm90GemmConfig(tile_m=64, tile_n=32, consumer_wgs=1, tile_k=128, dtype="e4m3",
                       out_dtype="bf16", scaling="row", promote=True, split_k="fixup",
                       a_rows=16).fit_stages(),
        # ... and on two warpgroups sharing each tile's k-blocks ("ksplit": the weight in L2)
        Sm90GemmConfig(tile_m=64, tile_n=32, consumer_wgs=2, tile_k=128, dtype="e4m3",
                       out_dtype="bf16", scaling="tensor", promote=True, schedule="ksplit",
                       a_rows=16).fit_stages(),
        # an e4m3 D for the next layer: bias, amax and scale_result in the epilogue
        with_store_warp(Sm90GemmConfig(
            tile_n=192, tile_k=128, dtype="e4m3", out_dtype="e4m3", scaling="tensor",
            promote=True, cluster_m=2, group_m=16,
            epi=make_epilogue_config(epilogue_tree("bfloat16", True, True), tile_n=192,
                                     element_d="float8_e4m3")).fit_stages()),
    )


def tile_scheduler(cfg: Sm90GemmConfig):
    """The kernel's :class:`~backends.cuda.arch.common.scheduler.TileScheduler` (see
    :func:`gemm_sm90_body.tile_scheduler`)."""
    from .gemm_sm90_body import tile_scheduler as ts
    return ts(cfg)


def _render(emit, level: int = 1) -> str:
    """C text of the statements ``emit(kb)`` puts into a scratch builder (each line on its own
    line, ``level`` indentation steps).  Only for the host-C++ tests of the scheduler text
    (:func:`_sched_code`, :func:`_tile_coord_code`); the kernel is emitted into one builder."""
    from ..builder import KernelBuilder
    kb = KernelBuilder("scheduler", threads=1)
    kb.level = level
    emit(kb)
    return "".join("\n" + ln for ln in kb.lines)


def _sched_code(cfg: Sm90GemmConfig) -> str:
    """C text of ``num_tiles`` (work units), ``first_tile`` and ``tile_step`` of the persistent
    loop, as the kernel declares them (host-C++ tests)."""
    from .gemm_sm90_body import emit_schedule
    return _render(lambda kb: emit_schedule(kb, cfg)).lstrip("\n").lstrip()


def _tile_coord_code(cfg: Sm90GemmConfig) -> str:
    """C text of the work unit -> tile map the kernel emits (``gemm_sm90_body
    .emit_tile_coords``; host-C++ tests)."""
    from .gemm_sm90_body import emit_tile_coords
    return _render(lambda kb: emit_tile_coords(kb, cfg))


def generate_source(cfg: Sm90GemmConfig) -> str:
    """CUDA C for one configuration (deterministic: the same config gives the same text).

    One kernel builder: typed parameters in the host plans' order (the kernel's own, the
    epilogue collective's, then FP8's, split-K's or stream-K's), helpers, cluster dims, arch
    guard; the body emitted statement by statement (:class:`gemm_sm90_body.Sm90Body`)."""
    cfg.check()
    maps = derive_maps(cfg)
    from ..builder import KernelBuilder
    from .gemm_sm90_body import Sm90Body
    kb = KernelBuilder(cfg.name, threads=cfg.threads, min_blocks=1,
                       cluster=(cfg.cluster_size,) if cfg.cluster_size > 1 else None,
                       arch="sm90a",
                       origin="cute_py.backends.cuda.kernels.gemm_sm90", description=repr(cfg))
    for ctype, name in _KERNEL_PARAMS:
        kb.param(ctype, name)
    epi = cfg.epilogue()
    if epi is not None:
        epi.emit_params(kb)
    if cfg.fp8:          # the FP8 built-in epilogue's scales, bias and scale strides
        from .gemm_sm90_fp8 import PARAMS as _FP8_PARAMS
        for ctype, name in _FP8_PARAMS:
            kb.param(ctype, name)
    for ctype, name in _extra_params(cfg):
        kb.param(ctype, name)
    if epi is not None:
        epi.emit_helpers(kb)
    Sm90Body(cfg, maps).emit(kb)
    return kb.source()


#: the Hopper GEMM's own parameters, in the order the host plans pack them
_KERNEL_PARAMS = (
    ("const __grid_constant__ TmaDescriptor", "tmA"), ("const __grid_constant__ TmaDescriptor",
                                                      "tmB"),
    ("u16* __restrict__", "D"), ("const u16* __restrict__", "C"), ("int", "M"), ("int", "N"),
    ("int", "K"), ("int", "L"), ("long long", "ldd"), ("long long", "ldc"),
    ("long long", "ldl_d"), ("long long", "ldl_c"), ("float", "alpha"), ("float", "beta"))


def _extra_params(cfg: Sm90GemmConfig) -> tuple:
    """Parameters appended after the epilogue's: split-K's (``gemm_sm90_splitk.EXTRA_PARAMS``
    [+ ``FIXUP_PARAMS``]) or stream-K's (``gemm_sm90_streamk.STREAMK_PARAMS``)."""
    if cfg.splits:
        out = (("float* __restrict__", "ws"), ("int", "splits_k"), ("long long", "ldw"),
               ("long long", "ws_l"), ("long long", "ws_split"))
        return out + ((("int* __restrict__", "tile_count"),) if cfg.split_k == "fixup" else ())
    if cfg.stream_k:
        return (("float* __restrict__", "ws"), ("int* __restrict__", "sk_flags"),
                ("int", "sk_tiles"))
    return ()


# ---------------------------------------------------------------------------------------------
# host side


_WANT = {"f16": ("float16",), "bf16": ("bfloat16", "uint16"),
         "e4m3": ("float8_e4m3fn", "uint8"), "e5m2": ("float8_e5m2", "uint8")}


#: The Hopper GEMM's launch plan is the backend's one plan type.
Sm90Plan = LaunchPlan


def _check_operand(op, nm, m: TensorMeta, dt):
    if m.dtype not in _WANT[dt]:
        raise LaunchError(op, nm, "has the wrong dtype", expected=_WANT[dt][0], actual=m.dtype)
    if len(m.shape) not in (2, 3):
        raise LaunchError(op, nm, "must be 2-D or 3-D (batched)", actual=m.shape)


class Sm90Gemm:
    """A compiled configuration: ``g(A, B, D=None, C=None, alpha=1, beta=0)``.

    ``A``: ``(M, K)`` or ``(L, M, K)``; ``B``: ``(N, K)`` or ``(L, N, K)`` (``D = A @ B.T``);
    ``D``/``C``: ``(M, N)`` / ``(L, M, N)`` row-major.  CuPy arrays (bf16 as uint16 bit
    patterns) or torch tensors.  With ``a_major="K"`` A is K-contiguous (row-major ``(M, K)``),
    with ``"MN"`` M-contiguous (``At.T`` for a row-major ``(K, M)`` array ``At``); likewise B
    (``"MN"``: pass ``B_kn.T`` for the usual row-major ``(K, N)`` B).  Leading dimensions may be
    padded (strided views) if 16-byte aligned.

    :meth:`plan` builds an :class:`Sm90Plan` from array metadata alone (no pointers), so one
    plan serves every call with the same shapes, strides, dtypes and alignment classes.
    """

    def __init__(self, cfg: Sm90GemmConfig = Sm90GemmConfig(), arch: str = "sm_90a"):
        from ..compiler import build_kernel
        from ..kernel import KernelSpec
        self.cfg = cfg.check()
        self.maps = derive_maps(cfg)
        self.source = generate_source(cfg)
        self.spec = KernelSpec(self.source, cfg.name, None, (cfg.threads, 1, 1),
                               (cfg.cluster_size, 1, 1), cfg.smem_bytes(), arch)
        self.kernel = build_kernel(self.spec)
        self.module = self.kernel.module
        self._max_ctas: dict = {}

    @property
    def resources(self):
        return self.module.resources_for(self.cfg.name)

    def max_ctas(self, device: int | None = None) -> int:
        """CTAs that can be resident at once: the SM count, or for clusters the driver's
        ``cuOccupancyMaxActiveClusters`` times the cluster size (a GPC with an odd number of
        free SMs cannot hold a whole 2-CTA cluster on its last SM)."""
        from .. import driver
        dev = driver.ensure_context() if device is None else device
        n = self._max_ctas.get(dev)
        if n is None:
            sms = driver.sm_count(dev)
            c = self.cfg.cluster_size
            n = sms
            if c > 1:
                n = (sms // c) * c
                func = self._function(dev)
                clusters = driver.max_active_clusters(func, (n, 1, 1), (self.cfg.threads, 1, 1),
                                                      self.cfg.smem_bytes(), (c, 1, 1))
                if clusters > 0:
                    n = min(n, clusters * c)
            self._max_ctas[dev] = n
        return n

    def _function(self, device: int) -> int:
        self.kernel.ensure_smem(self.cfg.smem_bytes(), device)
        return self.kernel.handle(device)

    def _epilogue_slots(self, D3: TensorMeta, M, N, L, tensors, add, ptrs0):
        """Kernel parameters of the EVT epilogue (TMA descriptors of D / C / aux, vectors,
        scalars) as plan slots; ``add(kind, value, role)``."""
        from cute_py.epilogue import evt
        from ..epilogue.runtime import check_tma_store_extent
        from ..epilogue.sm90 import dtype_bytes
        from ..tma import encode_tiled
        op, epi = "Sm90Gemm", self.cfg.epilogue()
        if L != 1 and not epi.cfg.batched:
            raise LaunchError(op, "A", "this EVT epilogue supports L = 1 only (a batched D "
                              "needs EpilogueConfig(batched=True))", actual=L)
        D = D3._replace(shape=D3.shape[1:], strides=D3.strides[1:])
        tensors = evt.bind_arguments(epi.cfg.tree, M, N, dict(tensors or {}), op=op,
                                     need_outputs=True)
        sig = epi.cfg.tree.signature
        em, en = epi.epi_m, epi.epi_n
        stored = {"D"} | {name for name, _ in epi.lt.stores}
        resets = []
        for p in epi.params():
            a = D if p.tensor == "D" else tensors.get(p.tensor)
            if p.kind in ("tmap", "mat"):
                if not isinstance(a, TensorMeta) or tuple(a.shape) != (M, N) or a.strides[1] != 1:
                    raise LaunchError(op, p.tensor, "must be a row-major M x N matrix",
                                      expected=(M, N), actual=getattr(a, "shape", a))
            if p.kind == "tmap":
                if p.tensor in stored:
                    check_tma_store_extent(op, p.tensor, N, a.itemsize)
                eb = dtype_bytes(p.dtype)
                if a.ptr % 16 or (a.strides[0] * eb) % 16:
                    raise LaunchError(op, p.tensor, "TMA needs a 16-byte aligned base and row "
                                      "pitch", actual=(hex(a.ptr), a.strides[0]))
                dims, strides, box = (N, M), (a.strides[0] * eb,), (en, em)
                if epi.cfg.batched:       # D (L, M, N): the batch is the third mode
                    if (D3.strides[0] * eb) % 16:
                        raise LaunchError(op, "D", "TMA needs a 16-byte aligned batch stride",
                                          actual=D3.strides[0])
                    dims, strides, box = (N, M, L), (a.strides[0] * eb, D3.strides[0] * eb), \
                        (en, em, 1)
                sw = {0: 0, 32: 1, 64: 2, 128: 3}[en * eb]

                def enc(ptr, l2, _d=p.dtype, _a=(dims, strides, box, sw)):
                    return encode_tiled(_d, *_a, ptr, l2)
                add("tmap", (enc, 2, ptrs0[p.tensor]), p.tensor)
            elif p.kind == "mat":
                if a.ptr % (2 * a.itemsize) or a.strides[0] % 2:
                    raise LaunchError(op, p.tensor, "needs a pointer aligned to 2 elements and "
                                      "an even row stride for load_path='direct'",
                                      expected="even row stride", actual=(hex(a.ptr),
                                                                          a.strides[0]))
                add("u64", None, p.tensor)
            elif p.kind == "ld":
                add("i32", tensors[p.tensor].strides[0], None)
            elif p.kind == "ptr":
                role = sig[p.tensor][0]
                if role.split(":")[0] in ("row_reduce", "col_reduce", "scalar_reduce"):
                    resets.append((p.tensor, evt.reduction_identity(role.split(":")[1])))
                add("u64", None, p.tensor)
            elif p.kind == "float":
                add("f32", None, "$" + p.tensor)
            else:
                add("i32", None, "$" + p.tensor)
        return resets

    def plan(self, A: TensorMeta, B: TensorMeta, D: TensorMeta, C: TensorMeta | None = None,
             *, tensors=None, max_ctas=None, device: int | None = None,
             splits: int = 1, sk_tiles: int | None = None, scale_a: TensorMeta | None = None,
             scale_b: TensorMeta | None = None, bias: TensorMeta | None = None) -> Sm90Plan:
        """The launch plan for arrays like these (metadata only: shapes, strides, dtypes,
        alignment classes).  ``roles`` of the plan: ``A``, ``B``, ``D``, ``C`` (D when no C)
        then the epilogue's named tensors, ``WS`` (split-K workspace) and ``CNT`` (the
        "fixup" tile counters; their sizes: the plan's ``workspace``); ``scalar_roles``:
        ``alpha``, ``beta`` then the epilogue's
        scalars.  With ``transpose_d`` D and C are given in the user's orientation ``(L, N,
        M)`` of the kernel problem (row-major): the kernel stores ``D^T``.  ``splits``: the
        split-K count of a split-K configuration; ``sk_tiles``: a stream-K configuration's
        stream-K tiles (default ``streamk_layout``'s; its grid is that layout's, ``WS`` /
        ``CNT`` its workspace and per-CTA flags).  FP8 configurations (``cfg.fp8``) take
        ``scale_a`` / ``scale_b`` (float32, shapes by ``cfg.scaling``: see
        :func:`gemm_sm90_fp8.check_scales`) and an optional ``bias`` (N elements of D's type):
        roles ``SA``, ``SB``, ``BIAS`` (pointer 0: no bias) after the epilogue's tensors and
        before ``WS`` / ``CNT`` (an FP8 split-K configuration), the kernel's parameter order."""
        from .. import driver
        op, cfg = "Sm90Gemm", self.cfg
        _check_operand(op, "A", A, cfg.dtype)
        _check_operand(op, "B", B, (cfg.dtype_b or cfg.dtype) if cfg.fp8 else cfg.dtype)
        if A.dtype != B.dtype and not cfg.fp8:
            raise LaunchError(op, "B", "dtype must equal A's", expected=A.dtype, actual=B.dtype)
        if cfg.fp8:
            from .gemm_sm90_fp8 import OUT_ARRAY_DTYPES
            d_dtypes = OUT_ARRAY_DTYPES[cfg.out_dtype]
        else:
            d_dtypes = (A.dtype,)
        batched = len(A.shape) == 3
        A3, B3 = A.batched(), B.batched()
        L, M, K = A3.shape
        if B3.shape[0] != L or B3.shape[2] != K:
            raise LaunchError(op, "B", "must be (N, K) [or (L, N, K)] matching A",
                              expected=(L, "N", K), actual=B3.shape)
        N = B3.shape[1]
        if min(M, N) < 1:
            raise LaunchError(op, "A", "empty problem", actual=(M, N, K))
        D3 = D.batched()
        dshape = (L, N, M) if cfg.transpose_d else (L, M, N)
        if D3.shape != dshape or D.dtype not in d_dtypes:
            raise LaunchError(op, "D", "has the wrong shape or dtype", expected=(dshape,
                              d_dtypes[0]), actual=(D3.shape, D.dtype))
        if cfg.splits and (not isinstance(splits, int) or splits < 1):
            raise LaunchError(op, "splits", "must be a positive int", actual=splits)
        if cfg.has_c:
            if C is None:
                raise LaunchError(op, "C", "is required by this configuration (has_c)")
            C3 = C.batched()
            if C3.shape != dshape or C.dtype != A.dtype:
                raise LaunchError(op, "C", "has the wrong shape or dtype", expected=dshape,
                                  actual=(C3.shape, C.dtype))
        else:
            C3 = D3
        for nm, X in (("D", D3), ("C", C3)):
            if X.strides[2] != 1:
                raise LaunchError(op, nm, "must be row-major (unit stride in the last mode)",
                                  actual=X.strides)
        es = cfg.elem_bytes
        lds = {}
        for nm, X, major in (("A", A3, cfg.a_major), ("B", B3, cfg.b_major)):
            unit = 2 if major == "K" else 1       # the mode that must be contiguous
            if X.strides[unit] != 1:
                want_txt = ("K-major: unit stride along K (a row-major (rows, K) array)"
                            if major == "K" else "MN-major: unit stride along its rows (the "
                            "transpose view of a row-major (K, rows) array)")
                raise LaunchError(op, nm, f"does not match the configuration's {nm.lower()}_major"
                                  f"={major!r} ({want_txt})", actual=X.strides)
            lds[nm] = X.strides[3 - unit]
        pair = 8 if cfg.fp8 and cfg.out_dtype == "f32" else 4     # bytes of a paired store
        if cfg.vec2 and (D3.strides[1] % 2 or C3.strides[1] % 2 or D3.ptr % pair or
                         C3.ptr % pair):
            raise LaunchError(op, "D", "this configuration (vec2) needs even leading "
                              "dimensions and 4-byte aligned D and C",
                              actual=(D3.strides, C3.strides))
        ta = self.maps.tma_atom("A", M, K, L, lds["A"], A3.strides[0] if batched else 0)
        tb = self.maps.tma_atom("B", N, K, L, lds["B"], B3.strides[0] if len(B.shape) == 3
                                else 0)
        dev = driver.ensure_context(A.device if A.device >= 0 else None) \
            if device is None else device
        self._function(dev)
        c = cfg.cluster_size
        units = cfg.units(M, N, L) * max(1, splits)
        grid = c * max(1, min(units, (max_ctas or self.max_ctas(dev)) // c))

        params = []          # (kind, value, role): see kernel.make_plan
        from ..tma import default_l2_promotion

        def add(kind, value, role):
            params.append((kind, value, role))

        for which, atom, X in (("A", ta, A3), ("B", tb, B3)):
            l2 = default_l2_promotion(X.ptr, [x * es for x in X.strides[1:] if x])
            add("tmap", (atom.encode, l2, X.ptr), which)
        add("u64", None, "D")
        add("u64", None, "C")
        for v in (M, N, K, L):
            add("i32", v, None)
        for v in (D3.strides[1], C3.strides[1], D3.strides[0], C3.strides[0]):
            add("i64", v, None)
        add("f32", None, "$alpha")
        add("f32", None, "$beta")
        resets = []
        if cfg.epi is not None:
            ptrs0 = {"D": D3.ptr, **{k: v.ptr for k, v in (tensors or {}).items()
                                     if isinstance(v, TensorMeta)}}
            resets = self._epilogue_slots(D3, M, N, L, tensors, add, ptrs0)
        if cfg.fp8:
            from .gemm_sm90_fp8 import check_scales
            if L != 1:
                raise LaunchError(op, "A", "the FP8 GEMM takes 2-D operands", actual=A.shape)
            strides = check_scales(op, cfg, M, N, K, scale_a, scale_b, bias)
            add("u64", None, "SA")
            add("u64", None, "SB")
            add("u64", None, "BIAS")
            for v in strides:
                add("i64", v, None)
        workspace = (0, 0)      # the split-K / stream-K scratch (LaunchPlan.workspace)
        if cfg.splits:
            from .gemm_sm90_splitk import splitk_layout
            lay = splitk_layout(cfg, M, N, L, splits)
            add("u64", None, "WS")
            add("i32", splits, None)
            for v in (lay.ldw, lay.ws_l, lay.ws_split):
                add("i64", v, None)
            if cfg.split_k == "fixup":
                add("u64", None, "CNT")
            workspace = (lay.elements, lay.counters)
        if cfg.stream_k:
            from .gemm_sm90_streamk import streamk_layout
            lay = streamk_layout(cfg, M, N, K, L, max_ctas or self.max_ctas(dev), sk_tiles)
            grid = lay.grid
            add("u64", None, "WS")
            add("u64", None, "CNT")
            add("i32", lay.sk_tiles, None)
            workspace = (lay.ws_elements, lay.flags)
        plan = make_plan(self.kernel, dev, (grid, 1, 1), (cfg.threads, 1, 1), cfg.smem_bytes(),
                         params, ("A", "B", "D", "C"), ("alpha", "beta"))
        plan.resets, plan.workspace = tuple(resets), workspace
        return plan

    def prepare(self, A, B, D=None, C=None, alpha=1.0, beta=0.0, max_ctas=None, tensors=None,
                scale_a=None, scale_b=None, bias=None):
        """Check everything and build the launch; returns a callable ``run(stream=None)`` that
        runs the GEMM on ``stream`` (default: the stream current at call time for the arrays'
        framework — torch's or CuPy's).  ``tensors``: the EVT epilogue's named inputs /
        outputs (configurations with ``epi``).  FP8 configurations: ``scale_a``, ``scale_b``
        (float32 device tensors, shapes by ``cfg.scaling``) and an optional ``bias``; B is
        ``(N, K)`` K-major, D (allocated when None) of ``cfg.out_dtype``."""
        from ..stream import stream_handle
        op = "Sm90Gemm"
        if self.cfg.splits or self.cfg.stream_k or self.cfg.transpose_d:
            raise LaunchError(op, "cfg", "a split-K, stream-K or transposed-D configuration "
                              "needs a workspace, a reduce or swapped operands: run it through "
                              "cute_py.gemm(A, B, config=cfg) (8-bit: cute_py.scaled_mm)",
                              actual=self.cfg.name)
        if not isinstance(alpha, numbers.Real) or not isinstance(beta, numbers.Real):
            raise LaunchError(op, "alpha", "alpha and beta must be real numbers",
                              actual=(type(alpha).__name__, type(beta).__name__))
        Am, Bm = meta_of(A, "A", op), meta_of(B, "B", op)
        _check_operand(op, "A", Am, self.cfg.dtype)
        if D is None:
            odt = None
            if self.cfg.fp8:
                import torch
                from .gemm_sm90_fp8 import OUT_ARRAY_DTYPES
                odt = getattr(torch, OUT_ARRAY_DTYPES[self.cfg.out_dtype][0])
            D = empty(A, (*Am.shape[:-1], Bm.shape[-2]), Am.framework, dtype=odt)
        Dm = meta_of(D, "D", op)
        fp8_metas = {}
        if self.cfg.fp8:
            for role, nm, X in (("SA", "scale_a", scale_a), ("SB", "scale_b", scale_b),
                                ("BIAS", "bias", bias)):
                if X is None and role != "BIAS":
                    raise LaunchError(op, nm, "is required by an FP8 configuration")
                if X is not None:
                    fp8_metas[role] = meta_of(X, nm, op)
        Cm = meta_of(C, "C", op) if C is not None else None
        tm, user_scal = {}, {}
        for k, v in (tensors or {}).items():
            if is_array(v):
                tm[k] = meta_of(v, k, op)
            elif isinstance(v, numbers.Real) and not isinstance(v, bool):
                user_scal[k] = float(v)
            else:
                user_scal[k] = v        # bind_arguments names what is wrong with it
        # per-call scalars: the kernel's alpha / beta, then the tree's (a tree scalar named
        # alpha / beta shares the kernel's slot)
        scal = {"alpha": float(alpha), "beta": float(beta), **user_scal}
        plan = self.plan(Am, Bm, Dm, Cm, tensors={**tm, **user_scal} if tensors is not None
                         else None, max_ctas=max_ctas, scale_a=fp8_metas.get("SA"),
                         scale_b=fp8_metas.get("SB"), bias=fp8_metas.get("BIAS"))
        metas = {"A": Am, "B": Bm, "D": Dm, "C": Cm if Cm is not None else Dm, **tm,
                 **fp8_metas}
        ptrs = tuple(metas[r].ptr if r in metas else 0 for r in plan.roles)   # BIAS: none
        scalars = tuple(scal[r] for r in plan.scalar_roles)
        keep = (A, B, C, D, tensors)

        def run(stream=None):
            h = stream_handle(stream, A, op)
            for name, value in plan.resets:
                _fill(tensors[name], value, h)
            plan.run(ptrs, scalars, h)
        run._keep = keep
        run.D = D
        run.plan = plan
        return run

    def __call__(self, A, B, D=None, C=None, alpha=1.0, beta=0.0, tensors=None, stream=None,
                 scale_a=None, scale_b=None, bias=None):
        run = self.prepare(A, B, D, C, alpha, beta, tensors=tensors, scale_a=scale_a,
                           scale_b=scale_b, bias=bias)
        run(stream)
        return run.D


_MEMSET = {"float32": (4, "<f", "<I"), "float16": (2, "<e", "<H")}


def _fill_bits(dtype: str, value: float) -> tuple:
    """``(bits, width)``: the bit pattern of ``value`` as one ``dtype`` element ("float32",
    "float16", "bfloat16": float32's upper half rounded to nearest even) and its bytes.  Law:
    reinterpreted as ``dtype`` the bits are ``value`` rounded to ``dtype``."""
    import struct
    if dtype == "bfloat16":
        b = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        if value != value or value in (float("inf"), float("-inf")):
            return b >> 16, 2
        return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF, 2
    width, vf, bf = _MEMSET[dtype]
    return struct.unpack(bf, struct.pack(vf, float(value)))[0], width


def _fill(X, value, stream: int) -> None:
    """X[...] = value, queued on ``stream`` (the launch's stream): a driver memset of the
    value's bit pattern for a contiguous float32 / float16 / bfloat16 array, else the array
    library's fill under that stream.  Measured on the H100 (``scaled_mm`` with amax at
    256^3): the memset adds ~12 µs of host time per call, torch's stream switch and
    ``fill_`` ~50 µs (docs/performance.md, "FP8 GEMM", v18)."""
    import math
    from ..driver import memset_async
    from ..tensors import meta_of
    m = meta_of(X, "tensor", "fill")
    contiguous = all(st == math.prod(m.shape[i + 1:])
                     for i, st in enumerate(m.strides) if m.shape[i] > 1)
    if contiguous and m.dtype in ("float32", "float16", "bfloat16"):
        n = math.prod(m.shape)
        if n:
            memset_async(m.ptr, *_fill_bits(m.dtype, value), n, stream)
        return
    if type(X).__module__.startswith("torch"):
        import torch
        from ..stream import torch_external_stream
        with torch.cuda.stream(torch_external_stream(stream, X.device)):
            X.fill_(value)
        return
    from ..stream import cupy_external_stream
    with cupy_external_stream(stream):
        X.fill(value)


_CACHE: dict = {}


def get_kernel(cfg: Sm90GemmConfig) -> Sm90Gemm:
    """The compiled kernel of ``cfg`` (one per configuration and process)."""
    g = _CACHE.get(cfg)
    if g is None:
        g = _CACHE[cfg] = Sm90Gemm(cfg)
    return g


def _tma_aligned(m: TensorMeta, unit: int) -> bool:
    """TMA can read operand ``m`` with matrix mode ``unit`` (-1: K, -2: rows) contiguous: a
    16-byte aligned base, the other matrix mode's and (with L > 1) the batch mode's byte
    strides multiples of 16."""
    if m.strides[unit] != 1 or m.ptr % 16:
        return False
    other = m.strides[-2 if unit == -1 else -1]
    if (other * m.itemsize) % 16:
        return False
    return len(m.shape) == 2 or m.shape[0] == 1 or (m.strides[0] * m.itemsize) % 16 == 0


def vec2_ok(*metas) -> bool:
    """The built-in epilogue's paired 4-byte stores (``vec2``) fit D / C (``metas``, None:
    absent): even leading dimensions and 4-byte aligned bases."""
    return all(X is None or (X.strides[-2] % 2 == 0 and X.ptr % 4 == 0) for X in metas)


def tma_major(m: TensorMeta) -> str | None:
    """``"K"`` when operand ``m`` (``(rows, K)`` / ``(L, rows, K)``) is K-contiguous and TMA can
    read it in place, ``"MN"`` when rows-contiguous (the transpose view of a row-major
    ``(K, rows)`` array), None when it must be copied first (row pitch not a multiple of 16
    bytes, e.g. odd K, or no contiguous mode)."""
    if _tma_aligned(m, -1):
        return "K"
    if m.shape[-1] > 1 and _tma_aligned(m, -2):
        return "MN"
    return None


def rows_on(m: TensorMeta, nbytes: int) -> bool:
    """Every row of operand ``m`` (along its contiguous mode) starts on an ``nbytes`` boundary
    (its base, row pitch and batch stride are multiples of ``nbytes``)."""
    pitch = m.strides[-2] if m.strides[-1] == 1 else m.strides[-1]
    return m.ptr % nbytes == 0 and (pitch * m.itemsize) % nbytes == 0 and \
        (len(m.shape) == 2 or (m.strides[0] * m.itemsize) % nbytes == 0)


def rows_128(m: TensorMeta) -> bool:
    """Every row of operand ``m`` (along its contiguous mode) starts on a 128-byte boundary."""
    return rows_on(m, 128)


def cluster_for(B: TensorMeta, tile_n: int) -> int:
    """``cluster_m`` of the default kernels for operand B ``(N, K)``: 2 (B's tile multicast
    to both CTAs of a cluster) when B is N-contiguous (a row-major ``(K, N)`` B, torch's
    ``A @ B``) with rows off 128-byte boundaries and the tile is 256 wide; otherwise 1.
    Measured on the H100 (fp16, ``A @ B``, wall per call, ``torch.mm`` in the same rounds):
    3000x5000x2000 0.81-0.86x -> 0.97x of ``torch.mm``, 4096x5000x4096 0.90 -> 0.99,
    4096x4040x4096 0.82 -> 1.00, 8192x5000x4096 0.88 -> 0.99, 2048x3000x2000 0.68 -> 0.78;
    with B's rows on 128 bytes (4096x4096x2000 / 2040, 8192x8192x2040) the cluster lost 2-4%
    (docs/performance.md, "Hopper GEMM", v9)."""
    return 2 if tile_n == 256 and tma_major(B) == "MN" and not rows_128(B) else 1


def tma_store_ok(m: TensorMeta | None) -> bool:
    """TMA can store ``m`` in place: 2-D, 16-byte aligned base and row pitch, and rows a whole
    number of 16-byte chunks (TMA stores write whole chunks: a shorter last chunk would
    overwrite the row's padding past column N)."""
    return m is not None and len(m.shape) == 2 and m.strides[1] == 1 and m.ptr % 16 == 0 and \
        (m.strides[0] * m.itemsize) % 16 == 0 and (m.shape[1] * m.itemsize) % 16 == 0


def batched_tma_store_ok(m: TensorMeta | None) -> bool:
    """TMA can store the batched ``(L, M, N)`` D ``m`` in place: each matrix as
    :func:`tma_store_ok` asks, and a 16-byte aligned batch stride."""
    return m is not None and len(m.shape) == 3 and (m.strides[0] * m.itemsize) % 16 == 0 and \
        tma_store_ok(m._replace(shape=m.shape[1:], strides=m.strides[1:]))


def default_evt_config(dt: str, tile_n: int, use_c: bool, a_major: str = "K",
                       b_major: str = "K", rows_128: bool = True,
                       cluster_m: int = 1, batched: bool = False) -> Sm90GemmConfig:
    """The TMA-store EVT kernel ``gemm_sm90`` runs for ``D = A @ B`` (``use_c`` False) or
    ``D = alpha * A @ B + beta * C`` on a 2-D problem with 16-byte aligned D / C rows.

    ``tile_n`` 256 with A / B rows on 128-byte boundaries (``rows_128``): the ping-pong kernel,
    64x256 tiles, 5 stages, C (if any) loaded by the consumer threads (``load_path="direct"``,
    16-byte quad loads).  Measured over the cooperative 128x256 kernel: +1-8% for ``A @ B``,
    +3-23% with C (docs/performance.md, "Hopper GEMM").  Otherwise the cooperative kernel:
    with operand rows off 128-byte boundaries (e.g. K = 2040 halves) every TMA row read
    straddles L2 lines and the ping-pong kernel, which reads 1.67x the operand bytes per FLOP,
    ran 0.62-0.82x the cooperative one's speed; ``tile_n`` 128 is the choice for skinny
    problems."""
    from cute_py.epilogue import evt
    ed = canonical_type(dt)
    tree = evt.linear_combination(element_c=ed) if use_c else None
    return evt_config(tree, dt, tile_n, a_major, b_major, rows_128, cluster_m, batched)


def evt_config(tree, dt: str, tile_n: int = 256, a_major: str = "K", b_major: str = "K",
               rows_128: bool = True, cluster_m: int = 1,
               batched: bool = False) -> Sm90GemmConfig:
    """The TMA-store EVT kernel of ``tree`` (None: D = acc): ping-pong 64x256, 5 stages, when
    ``tile_n`` is 256 and A / B rows start on 128-byte boundaries; otherwise cooperative
    ``128 x tile_n`` (4 stages at 256, 5 at 128) in clusters of ``cluster_m`` CTAs along M
    (:func:`cluster_for`), its stores issued by a store warp from half a tile of staging
    (:func:`half_tile_store_warp`).  Stages are reduced when the tree's epilogue buffers do
    not leave room (``fit_stages``).  ``batched``: D is ``(L, M, N)`` (the epilogue's TMA
    stores take the batch coordinate)."""
    ed = canonical_type(dt)
    bkw = {"batched": True} if batched else {}
    if tile_n == 256 and rows_128:
        return pingpong_evt_config(tree, dt, 64, 256, a_major, b_major, batched)
    cfg = Sm90GemmConfig(tile_n=tile_n, stages=4 if tile_n == 256 else 5, dtype=dt,
                         a_major=a_major, b_major=b_major, cluster_m=cluster_m,
                         epi=make_epilogue_config(tree, tile_n=tile_n, element_d=ed, **bkw))
    return half_tile_store_warp(cfg.fit_stages(cfg.stages))


def b_swizzle(b_major: str, tile_n: int) -> tuple:
    """``smem_swizzle`` for a B tile ``tile_n`` wide: SW128 atoms for both operands, except an
    N-contiguous B whose width is not a multiple of SW128's 64 elements, which takes SW64
    atoms (32 wide)."""
    return (3, 2) if b_major == "MN" and tile_n % 64 else (3, 3)


def pingpong_evt_config(tree, dt: str, tile_m: int = 64, tile_n: int = 256, a_major: str = "K",
                        b_major: str = "K", batched: bool = False,
                        registers: tuple = (40, 232)) -> Sm90GemmConfig:
    """The ping-pong TMA-store EVT kernel of ``tree`` (None: ``D = acc``) with ``tile_m x
    tile_n`` tiles per warpgroup (:data:`PINGPONG_TILES`): 64x256 in 5 stages and a raster of
    16 tile-rows (8 with an N-contiguous B); 128x192 (two 64-row slabs, 192 accumulators per
    thread) in 4 stages, a raster of 8 tile-rows (the same 1024 rows of A) and ``registers``,
    the (producer, consumer) ``setmaxnreg`` split: at 40 / 232 the plain kernel and SiLU /
    sigmoid epilogues compile without spills, a GELU epilogue spills 212 bytes and needs 24 /
    240 (where the plain kernel's producer spills 56).  ``batched``: D is ``(L, M, N)``."""
    ed = canonical_type(dt)
    bkw = {"batched": True} if batched else {}
    epi = make_epilogue_config(tree, tile_m, tile_n, element_d=ed, schedule="pingpong", **bkw)
    if (tile_m, tile_n) == (64, 256):
        # an N-contiguous B: a raster of 8 tile-rows; with 16, A @ B at N = 11008 fell into a
        # slow state in 5 of 12 fresh runs (8192x11008x4096: 1134-1451 us against 1100-1138
        # with 8; docs/performance.md, "Hopper GEMM", v19)
        cfg = Sm90GemmConfig(64, 256, 64, 5, 2, dt, group_m=8 if b_major == "MN" else 16,
                             schedule="pingpong", a_major=a_major, b_major=b_major, epi=epi)
        return cfg.fit_stages(cfg.stages)
    sw = b_swizzle(b_major, tile_n)
    cfg = Sm90GemmConfig(tile_m, tile_n, 64, 8, 2, dt, group_m=8, producer_regs=registers[0],
                         consumer_regs=registers[1], schedule="pingpong", a_major=a_major,
                         b_major=b_major, smem_swizzle=sw, epi=epi)
    return cfg.fit_stages(8).check()


#: the ping-pong tiles (per warpgroup) for operand rows on 128 bytes and their throughput per
#: unit of tile work relative to 64x256's, fitted to the H100 (fp16, CUPTI time of 4-10 calls,
#: 1560-1980 MHz): 128x192 reads a third fewer operand bytes per FLOP and ran 1.052-1.061x
#: 64x256's rate at 4096^3, 8192^3 and 4096x11008x4096 `A @ B` (docs/performance.md, "Hopper
#: GEMM", v19)
PINGPONG_TILES = ((64, 256, 1.0), (128, 192, 1.055))
#: the least predicted gain for a tile other than 64x256: under sustained, power-capped load
#: the gains shrink (8192x4096x14336: +3.8% in bursts, -5% sustained at a predicted 2.3%)
PINGPONG_MARGIN = 0.04


def pingpong_time(tile_m: int, tile_n: int, rate: float, M: int, N: int, L: int = 1,
                  num_sms: int = 132) -> float:
    """The ping-pong wave model's time (arbitrary units): ``ceil(tiles / num_sms) * tile_m *
    tile_n / rate``.  A CTA's two warpgroups take turns on the tensor cores (one's epilogue
    under the other's mainloop), so a CTA's time is the sum of its tiles' mainloops: the
    granularity is a tile per SM, not a tile per warpgroup."""
    tiles = -(-M // tile_m) * -(-N // tile_n) * L
    return -(-tiles // num_sms) * tile_m * tile_n / rate


def pingpong_tile(M: int, N: int, L: int = 1, num_sms: int = 132) -> tuple:
    """``(tile_m, tile_n)`` of the ping-pong kernel for an ``L x M x N`` output: the tile of
    :data:`PINGPONG_TILES` with the least :func:`pingpong_time`, where it beats 64x256's by at
    least :data:`PINGPONG_MARGIN`; else 64x256.  Picks 128x192 at 8192^3, 6144^3,
    8192x6144x4096 and 8192x14336x4096; keeps 64x256 at 4096^3 (5.3 tiles of 128x192 per SM
    take 6 turns), 16384x4096x4096 and 8192x4096x14336 (a 192-wide tile wastes 3% of N =
    4096).  Law: the returned tile's time is at most ``(1 - PINGPONG_MARGIN)`` times 64x256's
    (or it is 64x256) and no candidate's time is lower."""
    base = pingpong_time(*PINGPONG_TILES[0], M, N, L, num_sms)
    best, pick = base * (1 - PINGPONG_MARGIN), PINGPONG_TILES[0][:2]
    for tm, tn, rate in PINGPONG_TILES[1:]:
        t = pingpong_time(tm, tn, rate, M, N, L, num_sms)
        if t <= best:
            best, pick = t, (tm, tn)
    return pick


#: candidate tiles of the unswapped kernel: (tile_m, tile_n, consumer warpgroups, stages,
#: relative efficiency of one tile's MMA work, schedule).  Efficiencies fitted to the H100
#: measurements of benchmarks/small_tiles.py (docs/performance.md, "Hopper GEMM", v5 and v7):
#: the smaller the tile, the more of its time goes to loads, barriers and the epilogue; the
#: ping-pong 64x128 tile (each consumer warpgroup its own tile, one's epilogue under the
#: other's mainloop) ran 1024^3 in 8.5 us against 12.7 for cooperative 128x64.
TILES = ((128, 256, 2, 4, 1.0, "cooperative"), (128, 128, 2, 6, 0.85, "cooperative"),
         (64, 128, 2, 8, 1.0, "pingpong"), (128, 64, 2, 8, 0.7, "cooperative"),
         (64, 64, 1, 8, 0.55, "cooperative"))


def _pick_tile(M, N, L, num_sms):
    """``(tile_m, tile_n, warpgroups, stages, schedule)``: the candidate tile with the least
    ``waves * tile work / efficiency`` (ties: the earlier, larger tile) when 128x256 tiles do
    not fill one wave: one persistent wave of small tiles beats a fraction of a wave of big
    ones.  Problems with a full wave of 128x256 tiles keep them (the ping-pong / cooperative
    default kernels, measured faster than 128x128 there).  The ping-pong candidate only where
    its tiles make one wave filling more than half the SMs (below that split-K, a cooperative
    kernel, runs; above it 128x11008x4096's 1.3 waves ran 0.81x of cuBLAS against the
    128x128 default path)."""
    if (-(-M // 128) * -(-N // 256) * L) >= num_sms:
        return TILES[0][:4] + TILES[0][5:]
    best = None
    for tm, tn, wgs, stages, eff, sched in TILES:
        tiles = -(-M // tm) * -(-N // tn) * L
        if sched == "pingpong" and not num_sms < 2 * tiles <= 2 * num_sms:
            continue
        cost = -(-tiles // num_sms) * tm * tn / eff
        if best is None or cost < best[0] - 1e-9:
            best = (cost, (tm, tn, wgs, stages, sched))
    return best[1]


#: widths of the cooperative TMA-store kernel for operand rows off 128 bytes with a K-major
#: B, and their throughput per tile relative to 256 (fitted to the H100: 128x192 ran 0.96x
#: of 128x256's speed per tile; docs/performance.md, "Hopper GEMM", v15)
COOP_WIDTHS = ((256, 1.0), (192, 0.96))


def fewest_rounds_tile(M: int, N: int, tiles, L: int = 1, num_sms: int = 132) -> tuple:
    """The tile of ``tiles`` (``((tile_m, tile_n), relative throughput per element)`` pairs)
    whose tiles of the ``L x M x N`` output take the least time as rounds of ``num_sms``
    tiles: ``ceil(tiles / num_sms) * tile_m * tile_n / throughput``; ties to the earlier
    pair.  The wave model of :func:`fewest_rounds_width` and of FP8's ``block_tile``."""
    best = None
    for (tm, tn), eff in tiles:
        count = -(-M // tm) * -(-N // tn) * L
        cost = -(-count // num_sms) * tm * tn / eff
        if best is None or cost < best[0] - 1e-9:
            best = (cost, (tm, tn))
    return best[1]


def fewest_rounds_width(M: int, N: int, widths, L: int = 1, num_sms: int = 132,
                        tile_m: int = 128) -> int:
    """The tile width of ``widths`` (``(width, relative throughput per tile)`` pairs) whose
    ``tile_m x width`` tiles of the ``L x M x N`` output take the least time as rounds of
    ``num_sms`` tiles: ``ceil(tiles / num_sms) * width / throughput``; ties to the earlier
    pair (:func:`fewest_rounds_tile` at one ``tile_m``).  The wave model of
    :func:`coop_tile_n` and of FP8's ``promoted_tile_n``."""
    return fewest_rounds_tile(M, N, (((tile_m, tn), eff) for tn, eff in widths), L,
                              num_sms)[1]


def coop_tile_n(M: int, N: int, L: int = 1, num_sms: int = 132) -> int:
    """The cooperative kernel's tile width for a problem whose operand rows are off 128-byte
    boundaries (K-major B): :func:`fewest_rounds_width` over :data:`COOP_WIDTHS` (ties to
    the wider).  Measured (fp16, ``x @ W.T``, ``torch.mm`` time / ours, three runs):
    3000x5000x2000 (256: 480 tiles, 3.6 waves; 192: 648 tiles, 4.9 waves) 0.896 / 0.960 /
    0.922 at 192 against 0.896 / 0.915 / 0.905; 4096x4096x2000 0.887 at 192 against 1.011
    (3.9 against 5.3 waves), as the rule predicts.  Law: ``-(-tiles(w) // num_sms) * w /
    eff(w)`` is minimal at the returned width."""
    return fewest_rounds_width(M, N, COOP_WIDTHS, L, num_sms)


#: the 256-row cooperative tiles of :func:`wide_evt_config` (width, rate) and the tiles of
#: :func:`default_evt_config` they compete with ((schedule, tile_m, tile_n), rate): rate is
#: the throughput of full waves of the tile (TFLOP/s, fp16, H100 at 1980 MHz), ``*_K0`` the
#: per-tile cost of the epilogue and the pipeline's fill in k elements.  Fitted to 15 shapes
#: from 2048^3 to 16384x4096x4096 and 3000x3000x2000 (docs/performance.md, "Hopper GEMM",
#: v18): the model picks the fastest measured tile or one within 2% of it at every shape.
WIDE_TILES = ((128, 785.0), (160, 805.0), (192, 825.0))
WIDE_K0 = 200
DEFAULT_TILE_RATES = {("pingpong", 64, 256): (770.0, 50), ("cooperative", 128, 256): (760.0, 100),
                      ("cooperative", 128, 192): (730.0, 100)}


def wave_time(tile_m: int, tile_n: int, M: int, N: int, K: int, rate: float, k0: int,
              slots: int) -> float:
    """The wave model's time (arbitrary units) of an ``M x N x K`` problem in ``tile_m x
    tile_n`` tiles on ``slots`` concurrent tile slots (SMs; twice that for ping-pong, whose
    two warpgroups run a tile each, at half the SM's rate): ``ceil(tiles / slots) * tile_m *
    tile_n * (K + k0) * slots / rate``."""
    tiles = -(-M // tile_m) * -(-N // tile_n)
    return -(-tiles // slots) * tile_m * tile_n * (K + k0) * slots / rate


def wide_tile_n(M: int, N: int, K: int, b_major: str, default: tuple,
                num_sms: int = 132, max_width: int = 256) -> int:
    """The width of the 256-row tile (:data:`WIDE_TILES`) the wave model finds faster than the
    ``default`` tile ``(schedule, tile_m, tile_n)`` of :func:`default_evt_config`, or 0 (keep
    it).  A 160-wide tile needs a K-major B (an N-contiguous B's SW128 atoms are 64 wide; in
    SW64 atoms it ran 20% slower); widths above ``max_width`` are not candidates (a fused
    tree's registers: 256x192 with a GELU spills).  Law: the returned width's
    :func:`wave_time` is below the default's and every other candidate's (ties to the
    default, then the narrower)."""
    rate, k0 = DEFAULT_TILE_RATES[default]
    slots = num_sms * (2 if default[0] == "pingpong" else 1)
    best, pick = wave_time(default[1], default[2], M, N, K, rate, k0, slots), 0
    for tn, r in WIDE_TILES:
        if (tn % 64 and b_major != "K") or tn > max_width:
            continue
        t = wave_time(256, tn, M, N, K, r, WIDE_K0, num_sms)
        if t < best * (1 - 1e-9):
            best, pick = t, tn
    return pick


def wide_evt_config(dt: str, tile_n: int, a_major: str = "K", b_major: str = "K",
                    tree=None) -> Sm90GemmConfig:
    """The 256-row cooperative TMA-store kernel of ``tree`` (None: ``D = A @ B``; a fused
    tree that reads no matrix, e.g. bias + activation): two 64-row slabs per
    consumer warpgroup (``tile_n`` / 2 * 2 accumulators per thread, at most
    :data:`MAX_ACCUMULATORS`), stores issued by a store warp from one staging buffer so that
    four mainloop stages fit (three at 192).  Its operand bytes per FLOP are the fewest of the
    16-bit tiles (256x160: 0.0102 per element against 0.0117 for 128x256 and 0.0195 for a
    ping-pong warpgroup's 64x256)."""
    ed = canonical_type(dt)
    sw = b_swizzle(b_major, tile_n)
    cfg = Sm90GemmConfig(256, tile_n, 64, 4, 2, dt, a_major=a_major, b_major=b_major,
                         smem_swizzle=sw,
                         epi=make_epilogue_config(tree, 256, tile_n, element_d=ed))
    return with_store_warp(cfg.fit_stages(8), buffers=1).check()


def choose_config(A: TensorMeta, B: TensorMeta, D: TensorMeta, C: TensorMeta | None,
                  alpha_one: bool, sms: int) -> Sm90GemmConfig:
    """The configuration ``gemm_sm90`` runs for operands A ``(M, K)`` and B ``(N, K)`` already
    readable by TMA (see :func:`tma_major`), D and C (None: no C term).

    For a single 2-D problem whose D (and C) rows are 16-byte aligned: the smem-staged
    TMA-store EVT epilogue of :func:`default_evt_config` (for operand rows off 128 bytes with
    a K-major B, 128 x :func:`coop_tile_n` tiles); otherwise (batched, unaligned D) the
    cooperative kernel with the built-in predicated register->global epilogue.  128x128 tiles
    where the heuristic's wave model prefers them to 128x256 (``gemm_sm90_heuristic``);
    batched ``D = A @ B`` whose D TMA can store: the same kernels with 3-D D stores
    (``EpilogueConfig.batched``); other batched problems with full waves run the ping-pong
    128x128 kernel."""
    dt = "f16" if A.dtype == "float16" else "bf16"
    a_major, b_major = tma_major(A), tma_major(B)
    M, N = A.shape[-2], B.shape[-2]
    L = A.shape[0] if len(A.shape) == 3 else 1
    tn, stages = (256, 4) if _pick_tile(M, N, L, sms)[1] >= 256 else (128, 5)
    use_c = C is not None
    if len(A.shape) == 2 and tma_store_ok(D) and (not use_c or tma_store_ok(C)) and \
            (use_c or alpha_one):
        r128 = rows_128(A) and rows_128(B)
        if tn == 256 and not r128 and b_major == "K":
            tn = coop_tile_n(M, N, 1, sms)      # the cooperative kernel's width
        cluster = cluster_for(B, tn)
        if tn == 256 and r128 and not use_c and cluster == 1:
            # operand rows on 128 bytes: the ping-pong tile of the wave model
            return pingpong_evt_config(None, dt, *pingpong_tile(M, N, 1, sms), a_major, b_major)
        if tn >= 192 and not r128 and not use_c and a_major == "K" and cluster == 1:
            # operand rows off 128 bytes: 256-row tiles where the wave model finds them faster
            # than the cooperative default (never against ping-pong: under the power cap
            # ping-pong ran 2-8% faster than the 256-row tiles the model picks; "Hopper GEMM"
            # v18)
            wide = wide_tile_n(M, N, A.shape[-1], b_major, ("cooperative", 128, tn), sms)
            if wide:
                return wide_evt_config(dt, wide, a_major, b_major)
        return default_evt_config(dt, tn, use_c, a_major, b_major, r128, cluster)
    if L > 1 and not use_c and alpha_one and batched_tma_store_ok(D):
        # batched D = A @ B: the same TMA-store kernels with 3-D D stores; 8x1024^3 measured
        # 27.3-27.6 us as the stacked 8192x1024x1024 problem against 35.5-36.1 for the
        # ping-pong 128x128 kernel's register epilogue (docs/performance.md, "Hopper GEMM",
        # v10)
        r128, cluster = rows_128(A) and rows_128(B), cluster_for(B, tn)
        if tn == 256 and r128 and cluster == 1:
            return pingpong_evt_config(None, dt, *pingpong_tile(M, N, L, sms), a_major, b_major,
                                       batched=True)
        return default_evt_config(dt, tn, False, a_major, b_major, r128, cluster, batched=True)
    vec2 = vec2_ok(D, C)
    if L > 1 and tn == 256:
        # batched with full waves: ping-pong 128x128 (the predicated epilogue of one consumer
        # warpgroup under the other's mainloop); measured 1.15-1.21x the cooperative 128x256
        # kernel at 8x1024^3 and 4x2048^3 (docs/performance.md, "Hopper GEMM", v7)
        return Sm90GemmConfig(128, 128, 64, 6, 2, dt, has_c=use_c, vec2=vec2,
                              a_major=a_major, b_major=b_major, schedule="pingpong").check()
    return Sm90GemmConfig(tile_n=tn, stages=stages, dtype=dt, has_c=use_c, vec2=vec2,
                          a_major=a_major, b_major=b_major)
