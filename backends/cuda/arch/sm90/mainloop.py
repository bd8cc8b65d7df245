"""One k-block of the Hopper mainloop, producer side and consumer side, as builder statements.

:class:`Mainloop` joins the stage pipeline (:class:`~.pipeline.PipelineEmitter`), the
operands' TMA loads (:class:`~.tma.TmaLoad`: box and smem layout of A and of B) and the wgmma
atom (:class:`~.wgmma.WgmmaAtom`).  Stage ``idx`` of operand X occupies ``stage_bytes(X)``
bytes at ``sX + L(idx)``, ``L = (stages) : (stage_bytes(X))`` (:meth:`Mainloop.stage_layout`;
``sA`` / ``sB``: IR variables of the u32 shared addresses of stage 0).

- :meth:`Mainloop.emit_producer_k_block`: acquire stage ``idx`` (wait for it to be empty,
  expect its transaction bytes), the TMA loads of A's and B's boxes completing on the stage's
  full barrier ``fb_``, state ``++``;
- :meth:`Mainloop.emit_consumer_k_block`: wait for stage ``idx`` to be full, the stage's
  smem descriptors ``da_`` / ``db_`` (read off the GMMA layouts), the k-steps' wgmmas between
  ``wgmma_fence`` and ``wgmma_commit_group``, the caller's release policy (``tail``), state
  ``++``.

Law: the bytes the producer expects per stage (the pipeline's ``transaction_bytes``) are the
bytes its TMA boxes write (``tests/backend/test_arch_sm90.py``: the boxes tile the stage).
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import ir
from .pipeline import PipelineEmitter, smem_address
from .tma import TmaLoad
from .wgmma import WgmmaAtom

__all__ = ["Mainloop"]

_U32 = (1 << 32) - 1


@dataclass(frozen=True)
class Mainloop:
    """The stage pipeline, the A / B loads (``load_a`` / ``load_b``, their ``smem`` the GMMA
    operands), the wgmma atom; ``tile_k``: K of a k-block; ``slabs``: 64-row slabs of one
    warpgroup's accumulator; ``a_bytes`` / ``b_bytes``: bytes of a stage of A / B;
    ``desc_a`` / ``desc_b``: C names of the TMA descriptors."""

    pipeline: PipelineEmitter
    load_a: TmaLoad
    load_b: TmaLoad
    atom: WgmmaAtom
    tile_k: int
    slabs: int
    a_bytes: int
    b_bytes: int
    desc_a: str = "&tmA"
    desc_b: str = "&tmB"

    @property
    def stages(self) -> int:
        return self.pipeline.desc.stages

    def stage_layout(self, which: str):
        """The stages of operand ``which`` ("A" / "B") in shared memory: ``(stages) :
        (stage bytes)``, byte offsets from ``sA`` / ``sB``."""
        import cute_py as cute
        return cute.make_layout(self.stages, self.a_bytes if which == "A" else self.b_bytes)

    def stage(self, which: str, idx, offset=0):
        """IR of the u32 shared address of stage ``idx`` of operand ``which`` (its
        :meth:`stage_layout` lowered at ``idx``), plus ``offset`` bytes (an IR node or int)."""
        from ...lower import layout_apply
        base = smem_address("s" + which) + layout_apply(self.stage_layout(which), idx)
        return base + offset if not (isinstance(offset, int) and offset == 0) else base

    def emit_producer_k_block(self, kb, idx: str, phase: str, k0, a_row0, b_row0, l, *,
                              a_offset=0, a_mask: str | None = None,
                              b_offset=0, b_mask: str | None = None,
                              side_copies=None) -> None:
        """One k-block of the producer thread: ``k0`` the k-block's first K index, ``a_row0``
        / ``b_row0`` the first rows of the A / B boxes, ``l`` the batch (IR); ``a_offset`` /
        ``b_offset`` the smem byte offsets of this CTA's slices of A / B and ``a_mask`` /
        ``b_mask`` their multicast masks (a cluster sharing the tile; None: a local load).
        ``side_copies(kb, idx, fb)``: copies other producer warps make into the stage (waiting for it themselves and arriving on its full barrier ``fb``, IR); the
        producer is then warp 0 (the empty wait) and its elected lane ``leader_`` (the
        loads), with the other warps in the same loop."""
        pl = self.pipeline
        i = ir.var(idx, 0, self.stages - 1)
        fb = ir.var("fb_", 0, _U32)

        def loads():
            self.load_a.emit(kb, self.stage("A", i, a_offset), self.desc_a, fb, a_row0, k0,
                             l, mask=a_mask, tile_k=self.tile_k)
            self.load_b.emit(kb, self.stage("B", i, b_offset), self.desc_b, fb, b_row0, k0,
                             l, mask=b_mask, tile_k=self.tile_k)
        if side_copies is None:
            pl.producer_acquire(kb, idx, phase)
            kb.decl("const u32", "fb_", pl.full_barrier(i), hint=False)
            loads()
        else:
            with kb.if_(f"{kb.call_expr('warp_id')} == 0"):
                pl.producer_wait(kb, idx, phase)
            kb.decl("const u32", "fb_", pl.full_barrier(i), hint=False)
            side_copies(kb, i, fb)
            with kb.if_(f"{kb.call_expr('warp_id')} == 0 && leader_"):
                pl.producer_expect(kb, idx)
                loads()
        pl.increment(kb, idx, phase)

    def emit_consumer_k_block(self, kb, idx: str, phase: str, tail, *, a_offset=0,
                              accumulate: str | None = None, acc: str = "acc",
                              head=None, serial: bool = False) -> None:
        """One k-block of a consumer warpgroup on the accumulators ``acc``: ``a_offset`` the
        byte offset of the warpgroup's rows in A's stage (IR or 0); ``accumulate`` a C
        condition: the first k-step adds to ``acc`` when it holds (``scale_d``), else
        (None) starts from zero; ``head(kb)`` right after the stage's full-barrier wait
        (reads of the stage before the wgmmas); ``tail(kb)`` after the commit (waits and
        stage releases).  ``serial``: the slabs in turn, each its own wgmma group into
        ``acc[0]`` followed by ``tail(kb, slab)`` (promoting kernels that keep one slab's
        k-block accumulators)."""
        pl = self.pipeline
        i = ir.var(idx, 0, self.stages - 1)
        a, b = self.load_a.smem, self.load_b.smem
        pl.consumer_wait(kb, idx, phase)
        if head is not None:
            head(kb)
        kb.decl("const u64", "da_", kb.call_expr("make_gmma_desc", self.stage("A", i, a_offset),
                                                 a.desc_args()), hint=False)
        kb.decl("const u64", "db_", kb.call_expr("make_gmma_desc", self.stage("B", i),
                                                 b.desc_args()), hint=False)
        if accumulate is not None:
            kb.decl("const int", "scale_d", f"{accumulate} ? 1 : 0", hint=False)
        for j in (range(self.slabs) if serial else (None,)):
            kb.call("wgmma_fence")
            with kb.scope():
                self.atom.emit_k_block(kb, acc, "da_", "db_", a, b, self.slabs,
                                       self.tile_k // self.atom.k,
                                       "scale_d" if accumulate is not None else "0", slab=j)
            kb.call("wgmma_commit_group")
            tail(kb) if j is None else tail(kb, j)
        pl.increment(kb, idx, phase)
