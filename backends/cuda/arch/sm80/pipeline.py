"""The ``cp.async`` multistage pipeline of the SM80 mainloop (CUTLASS ``MmaMultistage``).

Stage ``s`` of ``S`` is one commit group; the mainloop keeps ``S - 1`` groups in flight:

* prologue: issue k-tiles ``0 .. S-2`` (one :func:`commit` each, empty groups past ``K``);
* each iteration: :func:`wait` until at most ``S - 2`` groups are pending (``cp.async.wait_group
  S-2``), ``__syncthreads()``, issue k-tile ``kt + S - 1`` into the stage freed last, commit.

Law: when the stage of k-tile ``kt`` is read, ``S - 2`` later groups may still be in flight but
k-tile ``kt``'s group has completed (wait_group counts the most recent groups).
"""

from __future__ import annotations

from cute_py.errors import AtomError

__all__ = ["Pipeline", "commit_text", "wait_text"]


def commit_text() -> str:
    return "cp_async_commit();"


def wait_text(pending: int) -> str:
    return f"cp_async_wait<{pending}>();" if pending > 0 else "cp_async_wait<0>();"


class Pipeline:
    """``stages`` cp.async groups; emits into a KernelBuilder (``call``) or an emitter (text)."""

    def __init__(self, stages: int):
        if not 2 <= stages <= 8:
            raise AtomError("Pipeline", "stages", "a cp.async pipeline has 2..8 stages",
                            actual=stages)
        self.stages = stages

    @property
    def in_flight(self) -> int:
        """Groups that may stay pending when a stage is consumed."""
        return self.stages - 2

    def emit_commit(self, b) -> None:
        b.call("cp_async_commit")

    def emit_wait(self, b, pending: int | None = None) -> None:
        n = self.in_flight if pending is None else pending
        b.call("cp_async_wait", template=str(n))

    def emit_drain(self, b) -> None:
        b.call("cp_async_wait", template="0")
