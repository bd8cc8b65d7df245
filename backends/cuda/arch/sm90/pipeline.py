"""The SM90 pipelines as builder statements.

:class:`PipelineEmitter` lowers a :class:`cute_py.pipeline.PipelineTmaAsync` (the same object
the Python model :class:`cute_py.pipeline.PipelineModel` runs) to ``mbarrier`` calls of the PTX
library (``init``, ``producer_acquire``, ``full_barrier``, ``producer_tail``, ``consumer_wait``,
``consumer_release``, state ``++`` / ``+= n``).  :class:`OrderedEmitter` lowers an
:class:`cute_py.pipeline.OrderedSequenceBarrier` to named barriers.

Barrier ``i`` of an array lives at ``base + 8 * i`` (``base``: an IR variable holding the u32
shared address of barrier 0); the stage index is an IR expression, so barrier addresses are
index maps like any other.  Law: the counts the kernel initialises are the description's
``full_arrive_count`` / ``empty_arrive_count``, the bytes it expects its ``transaction_bytes``
(``tests/backend/test_arch_sm90.py`` checks the emitted text against the description).
"""

from __future__ import annotations

from dataclasses import dataclass

from cute_py.pipeline import OrderedSequenceBarrier, PipelineTmaAsync

from ... import ir
from ...ir import Node

__all__ = ["PipelineEmitter", "OrderedEmitter", "smem_address"]

_U32 = (1 << 32) - 1


def smem_address(name: str) -> Node:
    """A u32 shared-memory address held in the C variable ``name``, as an IR variable."""
    return ir.var(name, 0, _U32)


@dataclass(frozen=True)
class PipelineEmitter:
    """Statements of one :class:`PipelineTmaAsync`; ``full`` / ``empty``: IR variables of the
    barrier arrays' first addresses."""

    desc: PipelineTmaAsync
    full: Node
    empty: Node

    def barrier(self, arr: Node, idx) -> Node:
        return arr + ir.as_node(idx) * 8 if not isinstance(idx, str) else arr + ir.var(
            idx, 0, self.desc.stages - 1) * 8

    def full_barrier(self, idx) -> Node:
        """``producer_get_barrier``: the full barrier of stage ``idx``."""
        return self.barrier(self.full, idx)

    def init(self, kb) -> None:
        d = self.desc
        with kb.for_("s_", 0, d.stages, hint=False) as s:
            kb.call("mbarrier_init", self.barrier(self.full, s), f"{d.full_arrive_count}u")
            kb.call("mbarrier_init", self.barrier(self.empty, s), f"{d.empty_arrive_count}u")
        kb.call("fence_mbarrier_init")

    def increment(self, kb, idx: str, phase: str) -> None:
        """``state++``: the next stage; past the last one, stage 0 with the phase flipped."""
        with kb.if_(f"++{idx} == {self.desc.stages}"):
            kb.assign(idx, 0)
            kb.assign(phase, "1u", "^=")

    def advance(self, kb, idx: str, phase: str, n: str, scoped: bool = True) -> None:
        """``state += n`` (``n``: a non-negative C expression); ``scoped``: in a block of its
        own (its temporary ``a_`` ends with it; False inside a block that is already one)."""
        S = self.desc.stages

        def body():
            kb.decl("const int", "a_", f"{idx} + ({n})", hint=False)
            kb.assign(phase, f"(u32)((a_ / {S}) & 1)", "^=")
            kb.assign(idx, f"a_ % {S}")
        if scoped:
            with kb.scope():
                body()
        else:
            body()

    def producer_acquire(self, kb, idx: str, phase: str) -> None:
        """``producer_acquire``: :meth:`producer_wait`, then :meth:`producer_expect`."""
        self.producer_wait(kb, idx, phase)
        self.producer_expect(kb, idx)

    def producer_wait(self, kb, idx: str, phase: str) -> None:
        """Wait for stage ``idx`` to be empty."""
        kb.call("mbarrier_wait_parity", self.barrier(self.empty, idx), phase)

    def producer_expect(self, kb, idx: str) -> None:
        """The leader's arrival on stage ``idx``'s full barrier, expecting the stage's
        transaction bytes."""
        kb.call("mbarrier_arrive_expect_tx", self.barrier(self.full, idx),
                f"{self.desc.transaction_bytes}u")

    def producer_tail(self, kb, idx: str, phase: str) -> None:
        with kb.for_("t_", 0, self.desc.stages, hint=False):
            kb.call("mbarrier_wait_parity", self.barrier(self.empty, idx), phase)
            self.increment(kb, idx, phase)

    def consumer_wait(self, kb, idx: str, phase: str) -> None:
        kb.call("mbarrier_wait_parity", self.barrier(self.full, idx), phase)

    def consumer_release(self, kb, idx: str, signaling: str | None) -> None:
        """Arrive on stage ``idx``'s empty barrier: one arrival per consumer warp (the thread
        ``signaling``), or with ``signaling`` None one per consumer thread (a stage the
        threads read with generic loads: each thread's reads are ordered before its own
        arrival); with a cluster, on the barrier of every CTA multicasting into it."""
        c = self.desc.cluster_size

        def arrive():
            if c == 1:
                kb.call("mbarrier_arrive", self.barrier(self.empty, idx))
            else:
                with kb.for_("c_", 0, c, ctype="u32", hint=False) as cc:
                    kb.call("mbarrier_arrive_cluster", self.barrier(self.empty, idx), cc)
        if signaling is None:
            arrive()
        else:
            with kb.if_(signaling):
                arrive()


@dataclass(frozen=True)
class OrderedEmitter:
    """Named-barrier statements of an :class:`OrderedSequenceBarrier` whose groups have
    ``threads`` threads, barrier ids ``base .. base + groups - 1``: group ``g`` signals with
    ``bar.arrive(base + g)``, its successor waits with ``bar.sync`` on it."""

    desc: OrderedSequenceBarrier
    base: int
    threads: int = 128

    def wait(self, kb, g: Node) -> None:
        G = self.desc.groups
        kb.call("named_barrier_sync", f"{self.base}u + (u32)({kb.expr((g + (G - 1)) % G)})",
                f"{2 * self.threads}u")

    def signal(self, kb, g: Node) -> None:
        kb.call("named_barrier_arrive", f"{self.base}u + (u32)({kb.expr(g)})",
                f"{2 * self.threads}u")
