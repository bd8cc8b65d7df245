"""Lowering of :class:`cute_py.pipeline.PipelineTmaAsync` to ``mbarrier`` PTX (through the
wrappers of ``cute_py/ptx_sm90.cuh``).

The mapping is the seed's table (``shared/seeds/003``):

=========================  ===================================================================
pipeline call              emitted code
=========================  ===================================================================
init_barriers              ``mbarrier_init(full[s], num_producers)``,
                           ``mbarrier_init(empty[s], consumer_arrivals * cluster_size)``,
                           ``fence_mbarrier_init()``
producer_acquire           ``mbarrier_wait_parity(empty[i], phase)`` (``try_wait.parity`` spin)
                           + leader ``mbarrier_arrive_expect_tx(full[i], bytes)``
producer_get_barrier       the address ``full[i]`` handed to the TMA copy
producer_commit            nothing: TMA's ``complete_tx::bytes`` completes the transaction
producer_tail              ``stages`` waits on the empty barriers, advancing the state
consumer_try_wait          ``mbarrier_try_wait_parity(full[i], phase)`` (one try)
consumer_wait              ``mbarrier_wait_parity(full[i], phase)`` (spin), skipped when a
                           token says the try succeeded
consumer_release           ``mbarrier_arrive(empty[i])`` (one arrival per consumer warp)
state ``++``               ``if (++idx == stages) { idx = 0; phase ^= 1; }``
state ``+= n``             ``t = idx + n; phase ^= (t / stages) & 1; idx = t % stages``
=========================  ===================================================================

:class:`OrderedSequenceLowering` lowers :class:`cute_py.pipeline.OrderedSequenceBarrier` to
named barriers: group ``g`` signals with ``bar.arrive(base + g, 2 * threads)`` and its successor
waits with ``bar.sync(base + g, 2 * threads)``.

:class:`PipelineLowering` holds the C names of the barrier arrays and state variables; every
method returns a C++ statement string.  The emitted barrier counts come from the same
description the Python model (``cute_py.pipeline.PipelineModel``) runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from cute_py.pipeline import OrderedSequenceBarrier, PipelineTmaAsync

__all__ = ["PipelineLowering", "OrderedSequenceLowering", "STATE_INCREMENT"]

#: C++ for ``++state`` on (idx, phase) variables of a ``stages``-deep pipeline.
STATE_INCREMENT = "if (++{idx} == {stages}) {{ {idx} = 0; {phase} ^= 1u; }}"


@dataclass(frozen=True)
class PipelineLowering:
    """C++ snippets for one :class:`PipelineTmaAsync`.

    ``full`` / ``empty``: names of ``u32`` shared addresses of the first barrier of each array
    (barrier ``i`` at ``+ 8*i``).
    """

    desc: PipelineTmaAsync
    full: str = "bar_full"
    empty: str = "bar_empty"

    def _bar(self, arr: str, idx: str) -> str:
        return f"({arr} + 8u * (u32)({idx}))"

    def full_barrier(self, idx: str) -> str:
        """``producer_get_barrier``: the full barrier of stage ``idx`` (u32 shared address)."""
        return self._bar(self.full, idx)

    def init(self) -> str:
        d = self.desc
        return (f"for (int s_ = 0; s_ < {d.stages}; ++s_) {{ "
                f"mbarrier_init({self._bar(self.full, 's_')}, {d.full_arrive_count}u); "
                f"mbarrier_init({self._bar(self.empty, 's_')}, {d.empty_arrive_count}u); }} "
                "fence_mbarrier_init();")

    def increment(self, idx: str, phase: str) -> str:
        return STATE_INCREMENT.format(idx=idx, phase=phase, stages=self.desc.stages)

    def advance(self, idx: str, phase: str, n: str) -> str:
        """``state += n`` (``n`` a non-negative C expression)."""
        return (f"{{ const int a_ = {idx} + ({n}); {phase} ^= (u32)((a_ / {self.desc.stages}) & 1);"
                f" {idx} = a_ % {self.desc.stages}; }}")

    def producer_acquire(self, idx: str, phase: str, leader: str = "true") -> str:
        return (f"mbarrier_wait_parity({self._bar(self.empty, idx)}, {phase}); "
                f"if ({leader}) mbarrier_arrive_expect_tx({self._bar(self.full, idx)}, "
                f"{self.desc.transaction_bytes}u);")

    def producer_try_acquire(self, idx: str, phase: str) -> str:
        return f"mbarrier_try_wait_parity({self._bar(self.empty, idx)}, {phase})"

    def producer_commit(self, idx: str) -> str:
        return "/* producer_commit: completed by TMA complete_tx */"

    def producer_tail(self, idx: str, phase: str) -> str:
        return (f"for (int t_ = 0; t_ < {self.desc.stages}; ++t_) {{ "
                f"mbarrier_wait_parity({self._bar(self.empty, idx)}, {phase}); "
                f"{self.increment(idx, phase)} }}")

    def consumer_try_wait(self, idx: str, phase: str) -> str:
        return f"mbarrier_try_wait_parity({self._bar(self.full, idx)}, {phase})"

    def consumer_wait(self, idx: str, phase: str, token: str | None = None) -> str:
        w = f"mbarrier_wait_parity({self._bar(self.full, idx)}, {phase});"
        return w if token is None else f"if (!({token})) {w}"

    def consumer_release(self, idx: str, signaling: str = "true") -> str:
        """Arrive on the empty barrier of stage ``idx``; with a cluster, on the barrier of every
        CTA whose producer multicasts into this CTA's stage (``mapa`` + remote arrive)."""
        c = self.desc.cluster_size
        if c == 1:
            return f"if ({signaling}) mbarrier_arrive({self._bar(self.empty, idx)});"
        return (f"if ({signaling}) {{ for (u32 c_ = 0; c_ < {c}u; ++c_) "
                f"mbarrier_arrive_cluster({self._bar(self.empty, idx)}, c_); }}")


@dataclass(frozen=True)
class OrderedSequenceLowering:
    """Named-barrier code for one :class:`OrderedSequenceBarrier` whose groups have ``threads``
    threads each, using barrier ids ``base .. base + groups - 1``."""

    desc: OrderedSequenceBarrier
    base: int
    threads: int = 128

    def wait(self, g: str) -> str:
        """Group ``g`` (a C expression) waits for its predecessor's signal."""
        G = self.desc.groups
        return (f"named_barrier_sync({self.base}u + (u32)((({g}) + {G - 1}) % {G}), "
                f"{2 * self.threads}u);")

    def signal(self, g: str) -> str:
        """Group ``g`` ends its turn: its successor may start."""
        return f"named_barrier_arrive({self.base}u + (u32)({g}), {2 * self.threads}u);"
