"""Block scales carried by the mainloop pipeline: each stage holds its k-block's scales.

Block-scaled FP8 (``scale_a`` one per row of A and 128-element k-block, ``scale_b`` one per
128 x 128 block of B) multiplies each k-block's partial product by ``scale_a[r, kb] *
scale_b[nb, kb]`` before adding it into the fp32 total.  The scales travel with the operands:

- stage ``idx`` has a slot at ``sS + L(idx)``, ``L = (stages) : (slot_bytes)``; inside it the
  tile's A scales ``(tile_m) : (4)`` at byte 0 and its B scales ``(b_entries) : (4)`` at byte
  ``4 * tile_m`` (:meth:`BlockScaleStages.slot_layout`), the slot rounded to 16 bytes.  B
  entry ``j`` is the scale of the tile's columns ``[j * chunk, (j + 1) * chunk)``, ``chunk =
  gcd(tile_n, 128)``: tiles start at multiples of ``tile_n``, so each chunk lies inside one
  128-column block of B (a 128x192 tile takes 3 entries of 64 columns; 128x128 one entry);
- the producer warpgroup's scale warps (the warps beside the TMA warp that no other role uses,
  at most one per stage) walk the stages in the TMA warp's loop and take the CTA's k-blocks in
  turn, counted across tiles (``idx % n`` or a counter ``own_``;
  :func:`cute_py.pipeline.scale_owner`, "running": a count restarting every tile left gaps of up
  to ``2n - 1`` k-blocks between a warp's turns, and with fewer stages than that a warp's empty
  wait passed on the parity of an older release -- launch failures at 3 and 4 stages,
  :class:`cute_py.pipeline.BlockScaleModel` reproduces them): each lane loads its rows' (and a B
  entry's) scales into registers *before* waiting for the stage to be empty, stores them into
  the slot after the wait (rows past M and blocks past N store zero) and arrives on the stage's
  full barrier (the arrival's release orders the stores before the consumers' acquiring wait):
  the full barrier expects :data:`LANES` such arrivals beside the TMA leader's
  ``arrive.expect_tx`` (``PipelineTmaAsync.num_producers`` = 1 + 32);
- the consumers read their rows' scales and the tile's B scales out of the stage after the
  full barrier's wait, before the stage is released.

A scale's global latency is so hidden twice: behind the stage's wait (the loads are issued
first) and behind the other scale warps' k-blocks (``n`` k-blocks' loads in flight).  With
fewer than three scale warps (a store warp or the epilogue's load producer took one:
``Sm90GemmConfig.scale_prefetch``) each warp also loads one turn ahead
(:meth:`BlockScaleStages.emit_producer_turn`): on its turn it stores the scales its previous
turn loaded and issues the loads of its next k-block (``kb + n`` of the same tile), so each
load has ``2n`` k-blocks to land; two warps loading ahead ran as fast as three without, and
the store warp they make room for gained 5-10% (``docs/performance.md``, FP8 v18).  Measured
(``docs/performance.md``, FP8 v11), block-scaled time over the per-tensor kernel's: the TMA
warp's lanes copying with 4-byte ``cp.async`` and ``cp.async.mbarrier.arrive.noinc`` (the
previous protocol) 1.17-1.36x; one warp of plain loads 1.32-1.49x; three warps of plain loads
1.08-1.15x.  (The same three warps in a loop of their own, apart from the TMA warp's, ran
1.17-1.29x; loading the scales into the consumers' registers one k-block ahead was not enough
either: nvcc moved the register copy of the next k-block's scales to the loop's bottom, where
it waited for loads issued in the same k-block.)

Law (``tests/backend/test_arch_sm90_block_scales.py``): the slots of the stages are disjoint
and inside ``bytes``; a scale warp's lanes write every A scale of the tile exactly once and
the B scales of the tile's blocks; every k-block has exactly one scale warp; a consumer thread
reads the slot entries of its own rows (those of the wgmma C fragment) and of the blocks of its
columns.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import ir
from .pipeline import smem_address

__all__ = ["BlockScaleStages", "LANES", "BLOCK", "PRODUCER_REGS", "producer_regs",
           "scale_warps"]

#: lanes of a scale warp (each one arrival on the full barrier of the stages it fills)
LANES = 32
#: the producer warpgroup's warps besides the TMA warp (warp 0)
SPARE_WARPS = (1, 2, 3)
#: elements of a scale block along K (A and B) and along N (B)
BLOCK = 128
#: the fewest registers of a block-scaled kernel's producer warpgroup: a scale warp holds
#: its turn's scales and its next turn's (:meth:`BlockScaleStages.emit_producer_turn`); at
#: 40 registers ptxas spills 12-60 bytes there (128x128 and 128x192 tiles), at 56 none
PRODUCER_REGS = 56


def producer_regs(tile_m: int) -> int:
    """The fewest registers of a block-scaled kernel's producer warpgroup for ``tile_m``-row
    tiles: :data:`PRODUCER_REGS` while a lane copies at most 4 rows, 72 beyond (a 256-row
    tile's lane holds 8 rows' scales twice: at 56 its scale warps spill 40 bytes, at 64 8-12
    bytes in clusters with a store warp; the consumers keep 216, which their 192
    accumulators need no more of).

    Law: never fewer than :data:`PRODUCER_REGS`, a multiple of 8, non-decreasing in
    ``tile_m``."""
    return PRODUCER_REGS if tile_m <= 4 * LANES else 72

_I32 = (1 << 31) - 1


def scale_warps(taken=(), stages: int | None = None) -> tuple:
    """The producer warpgroup's warps that copy block scales: :data:`SPARE_WARPS` less those
    ``taken`` by another role (the fused epilogue's load producer), at most ``stages`` of them.

    Law: never warp 0 (the TMA warp), never a taken warp, at least one warp (else
    ``LaunchError``), no more warps than pipeline stages: the warps take the CTA's k-blocks in
    turn (:func:`cute_py.pipeline.scale_owner`, "running"), so a warp's consecutive k-blocks
    are ``len(warps)`` apart, and its parity wait on a stage's empty barrier is exact only
    while that is at most ``stages``."""
    from cute_py.errors import LaunchError
    free = tuple(w for w in SPARE_WARPS if w not in set(taken))
    if not free:
        raise LaunchError("BlockScaleStages", "taken", "no producer warp is left to copy the "
                          "block scales", expected=SPARE_WARPS, actual=tuple(taken))
    return free if stages is None else free[:max(1, stages)]


@dataclass(frozen=True)
class BlockScaleStages:
    """The scale slots of ``stages`` pipeline stages for ``tile_m x tile_n`` tiles."""

    stages: int
    tile_m: int
    tile_n: int

    def __post_init__(self):
        from cute_py.errors import LaunchError
        if self.tile_m % LANES:
            raise LaunchError("BlockScaleStages", "tile_m", f"must be a multiple of {LANES} "
                              "(the producer lanes' rows)", actual=self.tile_m)
        if self.tile_n % 8 or not 8 <= self.tile_n <= 256:
            raise LaunchError("BlockScaleStages", "tile_n", "must be a wgmma N (a multiple of "
                              "8 in [8, 256])", actual=self.tile_n)

    @property
    def chunk(self) -> int:
        """Columns of one B entry: ``gcd(tile_n, 128)`` (inside one 128-column block)."""
        import math
        return math.gcd(self.tile_n, BLOCK)

    @property
    def b_entries(self) -> int:
        """B scales per stage: one per ``chunk`` columns of the tile."""
        return self.tile_n // self.chunk

    @property
    def slot_bytes(self) -> int:
        return -(-4 * (self.tile_m + self.b_entries) // 16) * 16

    @property
    def bytes(self) -> int:
        """Shared memory of all the slots."""
        return self.stages * self.slot_bytes

    def stage_layout(self):
        """``(stages) : (slot_bytes)``: byte offset of stage ``idx``'s slot from ``sS``."""
        import cute_py as cute
        return cute.make_layout(self.stages, self.slot_bytes)

    def slot_layout(self):
        """``(A, B)``: byte offsets inside a slot of A scale ``r`` (``(tile_m) : (4)``) and of
        B entry ``j`` (``(b_entries) : (4)``, after the A scales)."""
        import cute_py as cute
        return cute.make_layout(self.tile_m, 4), cute.make_layout(self.b_entries, 4)

    def address(self, idx, which: str, i):
        """IR of the u32 shared address of A scale ``i`` (``which`` "A") or B scale ``i``
        ("B") in stage ``idx``'s slot (``idx``, ``i``: IR nodes or ints)."""
        from ...lower import layout_apply
        A, B = self.slot_layout()
        base = smem_address("sS") + layout_apply(self.stage_layout(), idx)
        if which == "A":
            return base + layout_apply(A, i)
        return base + 4 * self.tile_m + layout_apply(B, i)

    # ------------------------------------------------------------------ producer

    def producer_copies(self, idx):
        """A scale warp's lane ``lane_``'s copies of one k-block: ``[(which, dst, coord)]``
        with ``which`` "A" / "B", ``dst`` the u32 shared address (IR) and ``coord`` the global
        row of A (``m_blk * tile_m + lane_ + 32 t``) or column of B (``n_blk * tile_n + lane_ *
        chunk``, only for ``lane_ < b_entries``) whose scale it copies (IR)."""
        lane = ir.var("lane_", 0, LANES - 1)
        m0 = ir.var("m_blk", 0, _I32 // self.tile_m) * self.tile_m
        n0 = ir.var("n_blk", 0, _I32 // self.tile_n) * self.tile_n
        out = [("A", self.address(idx, "A", lane + LANES * t), m0 + lane + LANES * t)
               for t in range(self.tile_m // LANES)]
        return out + [("B", self.address(idx, "B", lane), n0 + lane * self.chunk)]

    def _guard(self, which: str):
        return None if which == "A" else f"lane_ < {self.b_entries}"

    def registers(self, prefix: str = "sv") -> list:
        """A scale warp's registers of one k-block's scales: ``sv0_``, ``sv1_``, ... (one per
        :meth:`producer_copies` entry); ``prefix`` "pv": those of its next turn."""
        return [f"{prefix}{t}_" for t in range(len(self.producer_copies(0)))]

    def emit_producer_loads(self, kb, SA, SB, k0, prefix: str = "sv",
                            declare: bool = True) -> None:
        """A scale warp's loads of one k-block's scales into :meth:`registers` (``prefix``;
        zero for rows past M and columns past N; declared here unless ``declare`` is False).
        ``SA`` / ``SB``: the scale tensors as layouts over A's ``(m, k)`` / B's ``(n, k)`` (IR
        offsets through ``lower.crd2idx``); ``k0``: the k-block's first K index (IR).  They
        touch no slot: issued before the stage's empty wait."""
        import cute_py as cute
        from ...lower import crd2idx
        regs = self.registers(prefix)
        for t, (which, _dst, coord) in enumerate(self.producer_copies(0)):
            nm, ext, L, ptr = (("r", "M", SA, "scale_a") if which == "A" else
                               ("n", "N", SB, "scale_b"))
            c = ir.var(nm, 0, _I32)
            off = crd2idx((c, k0), cute.shape(L), cute.stride(L))
            if declare:
                kb.decl("float", regs[t], "0.0f", hint=False)
            else:
                kb.assign(regs[t], "0.0f")
            guard = self._guard(which)
            with (kb.scope() if guard is None else kb.if_(guard)):
                kb.decl("const int", nm, coord, hint=False)
                with kb.if_(f"{nm} < {ext}"):
                    kb.assign(regs[t], f"__ldg({ptr} + {kb.expr(off)})")

    def emit_producer_turn(self, kb, SA, SB, k0, ahead, k_end) -> None:
        """A scale warp's loads on its turn, one turn ahead: this k-block's scales come from
        the registers its previous turn loaded (``pv*``, valid while ``pf_``; else they are
        loaded now), and its next turn's -- k-block ``k0 / BLOCK + ahead`` of the same tile
        (``ahead`` = the scale warps: the turns run in rotation), when it is before ``k_end``
        (IR, the tile's k-block end) -- are loaded into ``pv*`` before the stage's wait.  So a
        load has two turns (``2 * ahead`` k-blocks) to land instead of one.  The caller
        declares ``pv*`` and ``pf_`` (False at each tile's start: the first turn of a tile
        loads its own)."""
        cur, nxt = self.registers("sv"), self.registers("pv")
        kb.stmt(f"float {', '.join(cur)}")
        with kb.if_("pf_"):
            for a, b in zip(cur, nxt):
                kb.assign(a, b)
        with kb.else_():
            self.emit_producer_loads(kb, SA, SB, k0, "sv", declare=False)
        k = ir.var("kb", 0, _I32 // BLOCK)
        kb.assign("pf_", ir.lt(k + ahead, k_end))
        with kb.if_("pf_"):
            self.emit_producer_loads(kb, SA, SB, k0 + ahead * BLOCK, "pv", declare=False)

    def emit_producer_stores(self, kb, idx, fb) -> None:
        """After the stage's empty wait: the registers of :meth:`emit_producer_loads` into
        stage ``idx``'s slot, then the lane's arrival on the full barrier ``fb`` (IR)."""
        for t, (which, dst, _coord) in enumerate(self.producer_copies(idx)):
            guard = self._guard(which)
            if guard is None:
                kb.call("st_shared_f32", dst, f"sv{t}_")
            else:
                with kb.if_(guard):
                    kb.call("st_shared_f32", dst, f"sv{t}_")
        kb.call("mbarrier_arrive", fb)

    # ------------------------------------------------------------------ consumer

    def emit_consumer_loads(self, kb, idx, row_of, rows, blocks) -> None:
        """Read the stage's scales into ``sa_[i]`` (row ``row_of + rows[i]`` of the tile; IR)
        and ``sb_[j]`` (B entry ``blocks[j]`` of the tile)."""
        for i, m in enumerate(rows):
            kb.assign(f"sa_[{i}]", kb.call_expr("ld_shared_f32",
                                                self.address(idx, "A", row_of + m)))
        for j, nb in enumerate(blocks):
            kb.assign(f"sb_[{j}]", kb.call_expr("ld_shared_f32", self.address(idx, "B", nb)))
