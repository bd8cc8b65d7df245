"""The Hopper GEMM's kernel body, emitted statement by statement into one KernelBuilder.

:class:`Sm90Body` holds a configuration (``gemm_sm90.Sm90GemmConfig``) and its maps
(``gemm_sm90_maps.Sm90Maps``) and emits, into the kernel's
:class:`~backends.cuda.builder.KernelBuilder`, one small piece per method:

=============================  ===============================================================
``emit_smem``                  the dynamic smem carve-out: stages of A and B, epilogue
                               regions, the pipeline's barrier arrays
``emit_epilogue_init``         the fused epilogue's regions and barriers (collective protocol)
``emit_setup``                 barrier init, descriptor prefetch, CTA / cluster sync, cluster
                               rank, tile counts, the persistent loop bounds (scheduler)
``emit_producer_role``         warpgroup 0: registers given away, the mainloop producer and
                               the epilogue's load producer
``emit_producer_tile``         one tile of the mainloop producer: k-blocks of acquire + TMA
                               (+ FP8 block scales: the warp's scale copies)
``emit_consumer_role``         the consumer warpgroups: state, the tile loop, the drain
``emit_consumer_tile``         one tile: coordinates, the mainloop, the epilogue
``emit_k_block``               one k-block of the consumer mainloop: wait, descriptors,
                               wgmma, commit, release of the previous stage
``emit_epilogue``              the epilogue dispatch: fused collective, FP8, split-K, stream-K
                               or the built-in stores
=============================  ===============================================================

The components emit into the same builder at the point their statements belong: the pipeline
(``arch.sm90.pipeline``), the TMA loads (``arch.sm90.tma``), the wgmma atom
(``arch.sm90.wgmma``), the tile scheduler (``arch.common.scheduler``), the epilogue
collective's ``emit_*`` methods, the FP8 hooks (``gemm_sm90_fp8``), split-K
(``gemm_sm90_splitk``) and the built-in stores (``gemm_sm90_store``).

Stream-K's schedule, piece -> tile map and head / tail fix-up are ``gemm_sm90_streamk``'s
emitters (``emit_kernel_schedule``, ``emit_kernel_coords``, ``emit_epilogue``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .. import ir

__all__ = ["Sm90Body", "tile_scheduler", "sched_vars", "exchange_layout"]

_I32 = (1 << 31) - 1


def tile_scheduler(cfg):
    """The kernel's :class:`~backends.cuda.arch.common.scheduler.TileScheduler`: groups of
    ``group_m`` tile-rows (tile-columns with ``raster_n``; a cluster always rasters along M),
    cluster units of ``cluster_m x cluster_n`` CTAs, split-K units with ``split_k``."""
    from ..arch.common.scheduler import TileScheduler
    return TileScheduler(group=cfg.group_m, raster="n" if cfg.raster_n and cfg.cluster_size == 1
                         else "m", cluster_m=cfg.cluster_m, cluster_n=cfg.cluster_n,
                         splits=cfg.splits)


def sched_vars(cfg):
    """IR variables of the kernel's tile counts (``num_m``, ``num_n``, ``L``)."""
    return (ir.var("num_m", 1, -(-_I32 // cfg.tile_m)), ir.var("num_n", 1, -(-_I32 // cfg.tile_n)),
            ir.var("L", 1, _I32))


def emit_schedule(kb, cfg) -> None:
    """``num_tiles`` (work units), ``first_tile`` and ``tile_step`` of the persistent loop."""
    sch = tile_scheduler(cfg)
    num_m, num_n, L = sched_vars(cfg)
    units = sch.num_units(num_m, num_n, L, ir.var("splits_k", 1, _I32) if cfg.splits else None)
    blk, grid = ir.var("blockIdx.x", 0, _I32), ir.var("gridDim.x", 1, _I32)
    kb.decl("const int", "num_tiles", units, hint=False)
    kb.decl("const int", "first_tile", sch.first_unit(blk), hint=False)
    kb.decl("const int", "tile_step", sch.unit_step(grid), hint=False)


def exchange_layout(cfg):
    """The "ksplit" schedule's exchange buffer as a layout: ``(thread, slab, value)`` of one
    warpgroup's accumulators (``acc[slab][value]``, ``tid`` 0..127) -> fp32 element,
    ``(128, slabs, tile_n / 2) : (1, 128 * tile_n / 2, 128)`` -- for each register, the 128
    threads' values are consecutive (conflict-free 4-byte accesses).  Law (test): a bijection
    onto ``[0, tile_m * tile_n)``, the ``exchange_bytes / 4`` elements of the buffer."""
    import cute_py as cute
    slabs, nacc = cfg.tile_m // 64, cfg.tile_n // 2
    return cute.make_layout((128, slabs, nacc), (1, 128 * nacc, 128))


def emit_tile_coords(kb, cfg) -> None:
    """Work unit ``tile`` -> ``m_blk``, ``n_blk``, ``l_`` (declared by the caller) through the
    tile scheduler (:func:`tile_scheduler`).

    Split-K (``cfg.split_k``): the loop index ``tile`` is a work unit ``tile * splits_k +
    split_`` (the splits of one tile on consecutive CTAs); split ``s`` of ``S`` covers k-blocks
    ``[floor(s * k_blocks / S), floor((s + 1) * k_blocks / S))`` (``kb_lo_`` / ``kb_hi_``,
    declared by the caller): contiguous, disjoint, covering every k-block, sizes differing by at
    most 1.  Stream-K: the piece ``tile`` of this CTA gives the output tile ``ktile_`` first
    (``gemm_sm90_streamk.coord_code``), the scheduler maps that."""
    sch = tile_scheduler(cfg)
    num_m, num_n, _ = sched_vars(cfg)
    unit = ir.var("ktile_" if cfg.stream_k else "tile", 0, _I32)
    kw = {}
    if cfg.cluster_size > 1:
        kw["rank"] = ir.var("rank_", 0, cfg.cluster_size - 1)
    if cfg.splits:
        kw["splits_k"] = ir.var("splits_k", 1, _I32)
        kw["k_blocks"] = ir.var("k_blocks", 0, -(-_I32 // cfg.tile_k))
    if cfg.stream_k:    # stream-K: piece -> ktile_, kb_lo_, kb_hi_
        from .gemm_sm90_streamk import emit_kernel_coords
        emit_kernel_coords(kb, cfg)
    sch.emit(kb, unit, num_m, num_n, **kw)


@dataclass(frozen=True)
class Sm90Body:
    """The statement skeleton of one configuration (see the module docstring)."""

    cfg: object
    maps: object

    # ------------------------------------------------------------------ shared facts

    @cached_property
    def pl(self):
        from ..arch.sm90.pipeline import PipelineEmitter, smem_address
        return PipelineEmitter(self.cfg.pipeline(), smem_address("bar_full"),
                               smem_address("bar_empty"))

    @cached_property
    def mainloop(self):
        """The k-block's loads and MMAs (``arch.sm90.mainloop``)."""
        from ..arch.sm90.mainloop import Mainloop
        from ..arch.sm90.tma import TmaLoad
        cfg, maps = self.cfg, self.maps
        return Mainloop(self.pl, TmaLoad(maps.atom_a, maps.operand("A"), maps.a_slice_rows),
                        TmaLoad(maps.atom_b, maps.operand("B"), maps.b_slice_rows),
                        maps.wgmma_atom, cfg.tile_k, maps.slabs, self.a_bytes, self.b_bytes)

    @cached_property
    def epi(self):
        return self.cfg.epilogue()

    @property
    def pp(self) -> bool:
        return self.cfg.schedule == "pingpong"

    @property
    def ks(self) -> bool:
        """The "ksplit" schedule: two warpgroups, each the whole tile over half its k-blocks."""
        return self.cfg.schedule == "ksplit"

    @property
    def block(self) -> bool:
        """FP8 block scaling / promotion: every k-block starts from zero, then goes into
        ``tot_``."""
        from .gemm_sm90_fp8 import promotes
        return promotes(self.cfg)

    @property
    def serial(self) -> bool:
        """A promoting kernel that takes its warpgroup's 64-row slabs in turn into one k-block
        accumulator set (``gemm_sm90_fp8.serial_slabs``)."""
        from .gemm_sm90_fp8 import serial_slabs
        return serial_slabs(self.cfg)

    @property
    def acc_sets(self) -> int:
        """Slabs of the accumulator array ``acc`` (``gemm_sm90_fp8.acc_sets``: one when
        :attr:`serial`, else the warpgroup's slabs)."""
        from .gemm_sm90_fp8 import acc_sets
        return acc_sets(self.cfg, self.maps)

    @property
    def sums(self) -> str:
        """The accumulators a tile's epilogue (and a split / stream-K fix-up) reads: the
        promoted ``tot_`` (:attr:`block`), else ``acc``."""
        return "tot_" if self.block else "acc"

    @property
    def a_bytes(self) -> int:
        c = self.cfg
        return c.tile_m * c.tile_k * c.elem_bytes

    @property
    def b_bytes(self) -> int:
        c = self.cfg
        return c.tile_n * c.tile_k * c.elem_bytes

    @property
    def idx(self):
        return ir.var("idx", 0, self.cfg.stages - 1)

    @property
    def k_range(self) -> tuple:
        """``(first, end, empty)``: the unit's k-block loop bounds and its "no k-block" test."""
        if self.cfg.splits or self.cfg.stream_k:
            return "kb_lo_", "kb_hi_", "kb_hi_ == kb_lo_"
        return 0, "k_blocks", "k_blocks == 0"

    # ------------------------------------------------------------------ the kernel

    def emit(self, kb) -> None:
        """The whole kernel body."""
        self.emit_smem(kb)
        if self.epi is not None:
            self.emit_epilogue_init(kb)
        self.emit_setup(kb)
        with kb.if_("wg == 0"):
            self.emit_producer_role(kb)
        with kb.else_():
            self.emit_consumer_role(kb)

    def emit_smem(self, kb) -> None:
        """The 1024-aligned dynamic smem base and the carve-out (``Sm90GemmConfig.smem_bytes``):
        A's and B's stages, the epilogue regions, the pipeline's two barrier arrays (the empty
        barriers are barriers ``S .. 2S-1`` of the full array)."""
        from ..arch.sm90.pipeline import smem_address
        cfg, maps, S = self.cfg, self.maps, self.cfg.stages
        kb.stmt("extern __shared__ unsigned char smem_raw_[]")
        kb.decl("const u32", "smem0_",
                f"({kb.call_expr('cvta_to_shared_u32', 'smem_raw_')} + 1023u) & ~1023u",
                hint=False)
        # [A stages][B stages][epilogue regions][full barriers][empty barriers]
        kb.comment(f"A: {S} stages x {self.a_bytes} B: {maps.smem_a}")
        kb.decl("const u32", "sA", "smem0_", hint=False)
        kb.comment(f"B: {S} stages x {self.b_bytes} B: {maps.smem_b}")
        kb.decl("const u32", "sB", smem_address("sA") + S * self.a_bytes, hint=False)
        after_b = smem_address("sB") + S * self.b_bytes
        if cfg.block_scales() is not None:
            bs = cfg.block_scales()
            kb.comment(f"block scales: {S} slots x {bs.slot_bytes} B: A {bs.slot_layout()[0]}, "
                       f"B {bs.slot_layout()[1]}")
            kb.decl("const u32", "sS", after_b, hint=False)
            after_b = smem_address("sS") + cfg.scale_smem_bytes()
        if self.ks:
            kb.comment(f"ksplit exchange: {cfg.exchange_bytes} B, {exchange_layout(cfg)} fp32")
        if cfg.col_scale_bytes:
            kb.comment(f"row-wise column scales: {cfg.col_scale_bytes} B ({cfg.epi_regions} "
                       f"x {cfg.tile_n} fp32)")
        kb.decl("const u32", "bar_full",
                after_b + cfg.epilogue_smem_bytes() + cfg.exchange_bytes + cfg.col_scale_bytes,
                hint=False)
        kb.decl("const u32", "bar_empty", self.pl.barrier(self.pl.full, S), hint=False)

    @property
    def regions_offset(self) -> int:
        """Byte offset from ``smem0_`` of what follows the stages and scale slots: the
        epilogue regions, then the ksplit exchange (``emit_smem``'s carve-out)."""
        return self.cfg.stages * self.cfg.stage_bytes + self.cfg.scale_smem_bytes()

    def smem_pointer(self, kb, offset: int) -> str:
        """C text of a generic pointer to the dynamic smem byte ``offset`` past ``smem0_``."""
        return (f"smem_raw_ + (smem0_ - {kb.call_expr('cvta_to_shared_u32', 'smem_raw_')}) + "
                f"{offset}")

    def emit_epilogue_init(self, kb) -> None:
        """The fused epilogue's smem regions (one per ping-pong warpgroup, each with its own C
        barriers) after the mainloop stages."""
        cfg, epi = self.cfg, self.epi
        kb.decl("unsigned char*", "cute_epi_smem_base", self.smem_pointer(kb, self.regions_offset),
                hint=False)
        if self.pp:
            R = cfg.epilogue_region_bytes()
            for w in range(cfg.epi_regions):
                with kb.scope():
                    epi.emit_init(kb, f"cute_epi_smem_base + {w * R}")
        else:
            epi.emit_init(kb, "cute_epi_smem_base")

    def emit_setup(self, kb) -> None:
        cfg = self.cfg
        kb.decl("const int", "wg", "__shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0)",
                hint=False)
        with kb.if_("threadIdx.x == 0"):
            self.pl.init(kb)
            kb.call("prefetch_tma_descriptor", "&tmA")
            kb.call("prefetch_tma_descriptor", "&tmB")
        if cfg.cluster_size > 1:
            kb.call("cluster_arrive")
            kb.call("cluster_wait")
            kb.decl("const u32", "cta_rank", kb.call_expr("cluster_ctarank"), hint=False)
            kb.decl("const int", "rank_", "(int)cta_rank", hint=False)
        else:
            kb.sync_threads()
            kb.decl("const u32", "cta_rank", "0u", hint=False)
        kb.decl("const int", "num_m", f"(M + {cfg.tile_m - 1}) / {cfg.tile_m}", hint=False)
        kb.decl("const int", "num_n", f"(N + {cfg.tile_n - 1}) / {cfg.tile_n}", hint=False)
        if cfg.stream_k:    # stream-K: this CTA's pieces
            from .gemm_sm90_streamk import emit_kernel_schedule
            emit_kernel_schedule(kb, cfg)
        else:
            emit_schedule(kb, cfg)
        kb.decl("const int", "k_blocks", f"(K + {cfg.tile_k - 1}) / {cfg.tile_k}", hint=False)

    # ------------------------------------------------------------------ tiles

    def emit_tile_decls(self, kb, unit: bool) -> None:
        """The tile's coordinates (and, with ``unit``, the unit's k-block range / split /
        stream-K tile), then their values in a block of their own."""
        for nm in ("m_blk", "n_blk", "l_"):
            kb.decl("int", nm, hint=False)
        if (unit and self.cfg.splits) or self.cfg.stream_k:
            for nm in ("kb_lo_", "kb_hi_", "split_") + (("ktile_",) if self.cfg.stream_k
                                                         else ()):
                kb.decl("int", nm, hint=False)
        with kb.scope():
            emit_tile_coords(kb, self.cfg)
        if self.cfg.stream_k and not unit:
            # a loop that serves finished tiles only (the epilogue's load producer, its store
            # warp): the consumers' head pieces leave their tile to another CTA
            from .gemm_sm90_streamk import emit_skip_heads
            emit_skip_heads(kb)

    def tile_loop(self, kb, pingpong: bool):
        """The persistent loop over this CTA's units (ping-pong: warpgroup ``cw`` takes the
        tiles ``first_tile + (cw + 2i) * tile_step``, whole)."""
        if pingpong:
            return kb.for_("tile", "first_tile + cw * tile_step", "num_tiles",
                           "2 * tile_step", hint=False)
        return kb.for_("tile", "first_tile", "num_tiles", "tile_step", hint=False)

    def tile_origin(self, kb) -> None:
        """``cute_epi_m0`` / ``cute_epi_n0``: the fused epilogue's tile origin."""
        kb.decl("const int", "cute_epi_m0", f"m_blk * {self.cfg.tile_m}", hint=False)
        kb.decl("const int", "cute_epi_n0", f"n_blk * {self.cfg.tile_n}", hint=False)

    # ------------------------------------------------------------------ producer warpgroup

    def emit_producer_role(self, kb) -> None:
        cfg = self.cfg
        kb.comment("---------------- producer warpgroup ----------------")
        kb.call("setmaxnreg_dec", template=str(cfg.producer_regs))
        wid = kb.call_expr("warp_id")
        warps = self.scale_warps()
        if warps:
            # block scales: the TMA warp (its elected lane issues the loads) and the scale
            # warps walk the stages together; the CTA's k-blocks go to the scale warps in turn,
            # counted across tiles (cute_py.pipeline.scale_owner: "running")
            w0, n = warps[0], len(warps)
            who = " || ".join(f"{wid} == {w}" for w in (0, *warps))
        else:
            who = f"{wid} == 0 && {kb.call_expr('elect_one_sync')}"
        with kb.if_(who):
            if warps:
                turn = self.scale_turn()
                kb.comment(f"block scales: the CTA's k-blocks by warps {w0} .. {w0 + n - 1} in "
                           "turn, counted across tiles" + (
                               f" (idx % {n}: {n} divides the stages)" if turn == "idx" else
                               " (own_)" if turn == "own_" else ""))
                kb.decl("const int", "lane_", "threadIdx.x & 31", hint=False)
                kb.decl("const bool", "leader_", kb.call_expr("elect_one_sync"), hint=False)
                if turn == "own_":
                    kb.decl("int", "own_", 0, hint=False)
                if cfg.scale_prefetch():
                    # the owner's next turn's scales (BlockScaleStages.emit_producer_turn)
                    for r in cfg.block_scales().registers("pv"):
                        kb.decl("float", r, "0.0f", hint=False)
                    kb.decl("bool", "pf_", "false", hint=False)
            kb.comment("make_producer_start_state")
            kb.decl("int", "idx", 0, hint=False)
            kb.decl("u32", "phase", "1u", hint=False)
            with self.tile_loop(kb, False):
                self.emit_producer_tile(kb)
            self.pl.producer_tail(kb, "idx", "phase")
        if self.epi is not None and self.epi.has_producer:
            self.emit_epilogue_producer(kb)
        if self.store_warp is not None:
            self.emit_store_warp(kb)

    @property
    def store_warp(self):
        """The producer warp that issues the epilogue's TMA stores
        (``Sm90GemmConfig.store_warp_id``); else None."""
        return self.cfg.store_warp_id()

    def emit_store_warp(self, kb) -> None:
        """The epilogue's store warp: one thread walks this CTA's tiles and issues each
        subtile's TMA stores once the consumers filled its staging buffer."""
        epi = self.epi
        with kb.if_(f"warp_id() == {self.store_warp} && (threadIdx.x & 31) == 0"):
            kb.comment("epilogue store warp")
            epi.emit_store_warp_state(kb)
            with self.tile_loop(kb, False):
                self.emit_tile_decls(kb, unit=False)
                self.tile_origin(kb)
                epi.emit_store_warp(kb)
            epi.emit_store_warp_tail(kb)

    def epilogue_producer_warps(self) -> tuple:
        """The producer warpgroup's warps of the fused epilogue's load producer
        (``Sm90GemmConfig.epilogue_producer_warps``)."""
        return self.cfg.epilogue_producer_warps()

    def scale_warps(self) -> tuple:
        """FP8 block scaling: the producer warps that copy the scales
        (``Sm90GemmConfig.scale_warps``); else none."""
        warps = self.cfg.scale_warps()
        assert not warps or warps == tuple(range(warps[0], warps[0] + len(warps)))
        return warps

    def scale_turn(self):
        """How the scale warps' running turn is emitted (k-block ``g`` of the CTA's sequence is
        warp ``w0 + g % n``'s, :func:`cute_py.pipeline.scale_owner`): None for one warp;
        "idx" (``idx % n``: ``idx = g % stages``) when ``n`` divides the stages; else "own_",
        a counter.  (The counter where ``idx`` would do ran 6-10% slower at 128x128 / 6
        stages: docs/performance.md, "FP8 GEMM", v17.)"""
        n = len(self.scale_warps())
        return None if n <= 1 else "idx" if self.cfg.stages % n == 0 else "own_"

    def emit_producer_tile(self, kb) -> None:
        """One unit of the mainloop producer: per k-block, acquire the stage, then its TMA
        loads (A's box, B's box or its cluster slice, multicast) on the stage's full barrier;
        with block scales, the owning scale warp's copies of the k-block's scales (it loads
        them, waits for the stage to be empty, stores them and arrives on the full barrier)."""
        cfg, maps = self.cfg, self.maps
        self.emit_tile_decls(kb, unit=True)
        first, end, _ = self.k_range
        m_blk = ir.var("m_blk", 0, _I32 // cfg.tile_m)
        n_blk = ir.var("n_blk", 0, _I32 // cfg.tile_n)
        a = self.multicast_slice(kb, "A", m_blk * cfg.tile_m)
        b = self.multicast_slice(kb, "B", n_blk * cfg.tile_n)
        side = None
        warps = self.scale_warps()
        if warps:
            from .gemm_sm90_fp8 import emit_producer_scales
            k0 = ir.var("kb", 0, _I32 // cfg.tile_k) * cfg.tile_k

            k_end = end if isinstance(end, int) else ir.var(end, 0, _I32)

            def side(k, i, fb):
                n, turn = len(warps), self.scale_turn()
                own = {None: "", "idx": f" + idx % {n}", "own_": " + own_"}[turn]
                with k.if_(f"warp_id() == {warps[0]}{own}"):
                    emit_producer_scales(k, cfg, i, fb, k0,
                                         lambda k2: self.pl.producer_wait(k2, "idx", "phase"),
                                         n if cfg.scale_prefetch() else None, k_end)
                if turn == "own_":
                    with k.if_(f"++own_ == {n}"):
                        k.assign("own_", 0)
        if cfg.scale_prefetch():
            kb.assign("pf_", "false")       # a tile's first turns load their own scales
        with kb.for_("kb", first, end, hint=False):
            k = ir.var("kb", 0, _I32 // cfg.tile_k)
            self.mainloop.emit_producer_k_block(
                kb, "idx", "phase", k * cfg.tile_k, a[1], b[1], ir.var("l_", 0, _I32),
                a_offset=a[0], a_mask=a[2], b_offset=b[0], b_mask=b[2], side_copies=side)

    def multicast_slice(self, kb, which: str, row0):
        """``(smem byte offset, first global row, multicast mask)`` of the slice of operand
        ``which``'s tile this CTA loads (``row0``: the tile's first row, IR).  In a
        ``cluster_m x cluster_n`` cluster (rank ``r`` at ``(r % cluster_m, r / cluster_m)``)
        the CTAs of one cluster column share B's tile, those of one cluster row A's: B's
        ``cluster_m`` slices go to the column's CTAs (mask ``((1 << cluster_m) - 1) <<
        (cluster_m * r_n)``), A's ``cluster_n`` slices to the row's (mask ``sum_j 1 <<
        (cluster_m * j)``, shifted by ``r_m``); slice ``i`` is the one at the CTA's coordinate
        along the other mode.  Without sharing: ``(0, row0, None)``."""
        cfg, maps = self.cfg, self.maps
        cm, cn = cfg.cluster_m, cfg.cluster_n
        if (cn if which == "A" else cm) == 1:
            return 0, row0, None
        rank_m, rank_n = tile_scheduler(cfg).cluster_coord(
            ir.var("rank_", 0, cfg.cluster_size - 1))
        # the slice index is the CTA's coordinate along the mode whose CTAs share the tile;
        # the mask's shift its coordinate along the other one
        if which == "A":
            i, offset, rows = rank_n, maps.a_slice_offset(1), maps.a_slice_rows
            base, shift = sum(1 << (cm * j) for j in range(cn)), rank_m
        else:
            i, offset, rows = rank_m, maps.b_slice_offset(1), maps.b_slice_rows
            base, shift = (1 << cm) - 1, rank_n * cm
        mask = hex(base) if isinstance(shift, int) and shift == 0 else \
            f"({hex(base)}u << ({kb.expr(shift)}))"
        return i * offset, row0 + i * rows, mask

    def emit_epilogue_producer(self, kb) -> None:
        """The fused epilogue's C / aux loads: producer warp 1 (ping-pong: warp 1 + w for
        warpgroup w's tiles, into w's region)."""
        epi = self.epi
        ws = self.epilogue_producer_warps()
        who = f"warp_id() >= {ws[0]} && warp_id() <= {ws[-1]}" if len(ws) > 1 else \
            f"warp_id() == {ws[0]}"
        with kb.if_(f"{who} && (threadIdx.x & 31) == 0"):
            kb.comment("epilogue load producer")
            if self.pp:
                kb.decl("const int", "cw", "warp_id() - 1", hint=False)
                epi.emit_region(kb, self.region_base)
            epi.emit_producer_state(kb)
            with self.tile_loop(kb, self.pp):
                self.emit_tile_decls(kb, unit=False)
                self.tile_origin(kb)
                epi.emit_producer(kb)

    @property
    def region_base(self) -> str:
        return f"cute_epi_smem_base + {self.cfg.epilogue_region_bytes()} * cw"

    # ------------------------------------------------------------------ consumer warpgroups

    def emit_consumer_role(self, kb) -> None:
        cfg, maps, epi = self.cfg, self.maps, self.epi
        kb.comment("---------------- consumer warpgroups ----------------")
        kb.call("setmaxnreg_inc", template=str(cfg.consumer_regs))
        own = self.pp or self.ks       # a warpgroup's own 128-thread fragment
        kb.decl("const int", "tid", f"threadIdx.x - {'128 * wg' if own else '128'}", hint=False)
        kb.decl("const int", "cw", "wg - 1", hint=False)
        kb.decl("const bool", "release_lane", "(threadIdx.x & 31) == 0", hint=False)
        kb.decl("int", "idx", 0, hint=False)
        kb.decl("u32", "phase", "0u", hint=False)
        if self.pp:
            kb.comment("ping-pong: this warpgroup's k-blocks start after warpgroup 0's first "
                       "tile")
            with kb.if_("cw > 0"):
                self.pl.advance(kb, "idx", "phase", "cw * k_blocks", scoped=False)
        if epi is not None:
            epi.emit_consumer_state(kb)
            if self.pp:
                epi.emit_region(kb, self.region_base)
        kb.decl("float", f"acc[{self.acc_sets}][{cfg.tile_n // 2}]", hint=False)
        if cfg.fp8:
            from . import gemm_sm90_fp8 as f8
            f8.emit_consumer_setup(kb, cfg)
            if cfg.col_scale_bytes:
                off = self.regions_offset + cfg.epilogue_smem_bytes() + cfg.exchange_bytes
                f8.emit_col_scale_setup(kb, cfg, self.smem_pointer(kb, off), self.pp)
        if self.ks:
            off = self.regions_offset + cfg.epilogue_smem_bytes()
            kb.decl("float*", "xch_",
                    f"reinterpret_cast<float*>({self.smem_pointer(kb, off)})", hint=False)
        with self.tile_loop(kb, self.pp):
            self.emit_consumer_tile(kb)
        if epi is not None:
            epi.emit_consumer_tail(kb)

    def emit_consumer_tile(self, kb) -> None:
        """One unit: coordinates, the mainloop (ping-pong: in turn with the other warpgroup),
        the drain, the epilogue."""
        from ..arch.sm90.pipeline import OrderedEmitter
        cfg, maps, epi = self.cfg, self.maps, self.epi
        self.emit_tile_decls(kb, unit=True)
        if epi is not None:
            # the tile origin, and (direct C / aux path) the first subtiles' loads, before the
            # tile's mainloop: those loads are in flight while the accumulators are computed
            self.tile_origin(kb)
            epi.emit_prefetch(kb)
        cw = ir.var("cw", 0, cfg.consumer_wgs - 1)
        if self.pp:
            order = OrderedEmitter(cfg.order(), base=3, threads=128)
            kb.comment("turn order: start after the other warpgroup issued its tile's mainloop")
            with kb.if_("tile != first_tile"):
                order.wait(kb, cw)
        if cfg.col_scale_bytes:
            from . import gemm_sm90_fp8 as f8
            f8.emit_col_scale_load(kb, cfg, self.pp)
        kb.decl("int", "prev_", -1, hint=False)
        if self.block:
            from . import gemm_sm90_fp8 as f8
            from .gemm_sm90_store import emit_origin
            f8.emit_promotion_init(kb, cfg, maps, lambda k: emit_origin(k, cfg))
        first, end, empty = self.k_range
        if self.ks:
            kb.comment("ksplit: this warpgroup's k-blocks are those in stages idx % 2 == cw")
            kb.decl("int", "mine_", 0, hint=False)
            empty = "mine_ == 0"
        with kb.for_("kb", first, end, hint=False):
            if self.ks:
                with kb.if_("(idx & 1) == cw"):
                    self.emit_k_block(kb)
                    kb.assign("mine_", 1, "+=")
                with kb.else_():
                    self.pl.increment(kb, "idx", "phase")
            else:
                self.emit_k_block(kb)
        if self.pp:
            with kb.if_("tile + tile_step < num_tiles"):   # the other warpgroup's turn
                order.signal(kb, cw)
        kb.call("wgmma_wait_group", template="0")
        self.emit_release_previous(kb)
        with kb.for_("j", 0, self.acc_sets, unroll=True, hint=False) as j:
            kb.call("wgmma_fence_operands", f"acc[{kb.expr(j)}]")
        with kb.if_(empty):
            with kb.for_("j", 0, self.acc_sets, unroll=True, hint=False) as j:
                with kb.for_("i", 0, cfg.tile_n // 2, unroll=True, hint=False) as i:
                    kb.assign(f"acc[{kb.expr(j)}][{kb.expr(i)}]", "0.0f")
        kb.comment("---------------- epilogue ----------------")
        if self.ks:
            self.emit_exchange(kb)
            with kb.if_("cw == 0"):
                self.emit_epilogue(kb)
        else:
            self.emit_epilogue(kb)
        if self.pp:
            kb.comment("skip the other warpgroup's tile")
            self.pl.advance(kb, "idx", "phase", "k_blocks")

    def emit_exchange(self, kb) -> None:
        """"ksplit": warpgroup 1 stores its sums (``tot_`` when promoting, else ``acc``) into
        the exchange buffer (:func:`exchange_layout`) and arrives on named barrier 1; warpgroup
        0 waits there and adds them to its own, in the fixed order own + other (bit-identical
        run to run), then arrives on named barrier 2 -- which warpgroup 1 waits on before
        writing its next tile's sums -- except after its last tile."""
        import cute_py as cute
        from ..lower import crd2idx
        cfg, maps = self.cfg, self.maps
        src = self.sums
        lay = exchange_layout(cfg)
        tid = ir.var("tid", 0, 127)
        nthr = "256u"

        def each(body):
            with kb.for_("j", 0, maps.slabs, unroll=True) as j:
                with kb.for_("i", 0, cfg.tile_n // 2, unroll=True) as i:
                    x = crd2idx((tid, j, i), cute.shape(lay), cute.stride(lay))
                    body(f"{src}[{kb.expr(j)}][{kb.expr(i)}]", f"xch_[{kb.expr(x)}]")
        kb.comment("ksplit: warpgroup 1's sums -> warpgroup 0 (exchange buffer, named barriers "
                   "1: written, 2: read)")
        with kb.if_("cw == 1"):
            with kb.if_("tile != first_tile"):
                kb.call("named_barrier_sync", "2u", nthr)
            each(lambda r, x: kb.assign(x, r))
            kb.call("named_barrier_arrive", "1u", nthr)
        with kb.else_():
            kb.call("named_barrier_sync", "1u", nthr)
            each(lambda r, x: kb.assign(r, x, "+="))
            with kb.if_("tile + tile_step < num_tiles"):
                kb.call("named_barrier_arrive", "2u", nthr)

    def emit_release_previous(self, kb) -> None:
        """Release the stage of the previous k-block (``prev_``; none before the first)."""
        with kb.if_("prev_ >= 0"):
            self.pl.consumer_release(kb, ir.var("prev_", 0, self.cfg.stages - 1),
                                     "release_lane")

    def emit_k_block(self, kb) -> None:
        """One k-block of the consumer (:meth:`Mainloop.emit_consumer_k_block`): one wgmma
        group in flight, after ``wait_group<1>`` the previous k-block's stage is released; FP8
        promotion waits for its own group and releases its own stage instead."""
        cfg, maps = self.cfg, self.maps
        a_off = 0 if self.pp or self.ks else \
            ir.var("cw", 0, cfg.consumer_wgs - 1) * maps.wg_a_offset(1)
        if self.block:
            # FP8 block scaling / promotion (gemm_sm90_fp8): every k-block starts from zero;
            # the k-block's scale loads, wait_group<0>, release of its stage, promotion
            from . import gemm_sm90_fp8 as f8

            def tail(k, slab=None):
                # block scales are read with generic loads: every thread releases the stage
                f8.emit_k_block_tail(k, cfg, maps, lambda k2: self.pl.consumer_release(
                    k2, self.idx, None if cfg.block_scales() else "release_lane"), slab)

            def head(k):
                f8.emit_promotion_loads(k, cfg, maps)
            head = head if cfg.block_scales() else None
            accumulate = None
        else:
            def tail(k):
                k.call("wgmma_wait_group", template="1")
                self.emit_release_previous(k)
                k.assign("prev_", "idx")
            accumulate = "mine_ > 0" if self.ks else f"kb > {self.k_range[0]}"
            head = None
        self.mainloop.emit_consumer_k_block(kb, "idx", "phase", tail, a_offset=a_off,
                                            accumulate=accumulate, head=head,
                                            serial=self.serial)

    # ------------------------------------------------------------------ epilogue dispatch

    def emit_epilogue(self, kb) -> None:
        """The tile's epilogue on ``acc``: the fused collective, the FP8 epilogue, split-K's
        partials / fix-up, or the built-in stores; stream-K's head / tail pieces first (heads
        leave their partial and go on, tails add the heads' partials, then the epilogue)."""
        from . import gemm_sm90_store as st
        cfg, maps, epi = self.cfg, self.maps, self.epi
        if cfg.stream_k:
            from .gemm_sm90_streamk import emit_fixup
            emit_fixup(kb, cfg, maps, self.sums)
        if epi is not None:
            nacc = cfg.tile_n // 2
            acc = "acc[0]" if maps.slabs == 1 else (lambda v: f"acc[{v // nacc}][{v % nacc}]")
            if cfg.fp8:     # the scaled product of the promoted (or single) accumulators
                from . import gemm_sm90_fp8 as f8
                f8.emit_epi_prelude(kb, cfg, maps, self.pp)
                acc = (lambda v: f8.acc_expr(cfg, maps, v, self.sums))
            with kb.scope():
                epi.emit_consumer(kb, acc, "(1 + cw)" if self.pp else 1, prefetched=True)
        elif cfg.fp8:
            from . import gemm_sm90_fp8 as f8
            if cfg.splits:      # "fixup": the tile's last unit scales the sum of its splits
                from . import gemm_sm90_splitk as sk
                sk.emit_fixup(kb, cfg, maps, self.sums)
            f8.emit_epilogue(kb, cfg, maps, None if self.block else
                             (lambda k: st.emit_origin(k, cfg)))
        elif cfg.splits:
            from . import gemm_sm90_splitk as sk
            if cfg.split_k != "fixup":
                sk.emit_partials(kb, cfg, maps)
                return
            import dataclasses
            sk.emit_fixup(kb, cfg, maps)
            plain = dataclasses.replace(cfg, split_k="none")
            with kb.scope():
                st.emit_prelude(kb, plain)
                st.emit_store(kb, plain, maps)
        else:
            st.emit_prelude(kb, cfg)
            st.emit_store(kb, cfg, maps)
