"""The epilogue collective protocol: what a GEMM kernel asks of its epilogue.

A GEMM kernel (SM80 or SM90) is a scheduler, a mainloop and an epilogue collective.  The
kernel calls the collective at fixed points, each call emitting into the kernel's
:class:`~backends.cuda.builder.KernelBuilder`:

=========================  ====================================================================
``emit_helpers(kb)``       device code before the kernel (``kb.helper``), once
``emit_params(kb)``        the collective's kernel parameters, after the kernel's own
``emit_init(kb, base)``    shared-memory regions at ``base`` and barrier init (all threads,
                           before the kernel's first CTA-wide sync)
``emit_region(kb, base)``  the region pointers of one consumer (per warpgroup in ping-pong)
``emit_producer(kb)``      state, then per tile: loads of C / aux tensors (a producer warp;
                           the tile origin ``cute_epi_m0``, ``cute_epi_n0`` is in scope)
``emit_consumer_state``    consumer state, once before the tile loop
``emit_prefetch(kb)``      loads issued before a tile's mainloop (in flight during it)
``emit_consumer(kb, ...)`` the tile's epilogue on the accumulators ``acc``
``emit_consumer_tail``     after the tile loop (drain outstanding stores)
=========================  ====================================================================

The host side of the contract is ``params()`` (the :class:`ParamSpec` list, in the order
``emit_params`` declares them), ``key()`` (a stable identity for caches and kernel names) and
``has_producer``.

Names the kernel provides (C variables in scope where it calls the collective): ``tid`` (the
consumer thread index, ``0 <= tid < fragment.num_threads``; the collective's index maps are
lowered with these bounds), ``cute_epi_m0`` / ``cute_epi_n0`` (tile origin), ``M`` / ``N``
(problem size).  ``emit_consumer``'s ``bar_id`` is an int or C text (``"(1 + cw)"``).

Both epilogues (``epilogue/sm80.py``, ``epilogue/sm90.py``) implement the ``emit_*`` methods,
statement by statement into the kernel's builder.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["EpilogueCollective"]


@runtime_checkable
class EpilogueCollective(Protocol):
    has_producer: bool

    def key(self) -> str: ...
    def params(self) -> list: ...
    def emit_helpers(self, kb) -> None: ...
    def emit_params(self, kb) -> None: ...
    def emit_init(self, kb, base: str) -> None: ...
    def emit_region(self, kb, base: str) -> None: ...
    def emit_producer_state(self, kb) -> None: ...
    def emit_producer(self, kb) -> None: ...
    def emit_consumer_state(self, kb) -> None: ...
    def emit_prefetch(self, kb) -> None: ...
    def emit_consumer(self, kb, acc, bar_id, prefetched: bool = False) -> None: ...
    def emit_consumer_tail(self, kb) -> None: ...
