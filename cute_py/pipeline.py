"""The SM90 producer/consumer pipeline (CUTLASS ``sm90_pipeline.hpp``) as pure Python values.

Three things live here, none of them touching a GPU:

- :class:`PipelineState` ``(index, phase, count)`` with CuTe's increment rule (``index`` wraps
  at ``stages`` and ``phase`` flips when it does) and :func:`make_producer_start_state`
  (``phase = 1``: the buffers start empty, so the producer's first wait on every empty barrier
  passes at once);
- :class:`PipelineTmaAsync`: the *description* of a TMA-load / MMA-consume pipeline (stages,
  consumer arrivals per stage, transaction bytes, barrier counts).  The CUDA backend lowers this
  very object to ``mbarrier`` PTX (``cute_py.backends.cuda.arch.sm90.pipeline``), so the kernel
  and the model below share one description;
- :class:`OrderedSequenceBarrier`: CUTLASS's ``OrderedSequenceBarrier<1, groups>``, the turn
  order of the ping-pong schedule's consumer warpgroups (each runs its mainloop only after the
  previous group finished issuing its own);
- :class:`PipelineModel`: an executable model of the protocol with the ``mbarrier`` semantics
  the seed gives (arrival count + pending transaction bytes; a phase completes when both reach
  0, and the phase bit flips).  Producer and consumer *programs* are generators of steps that
  block on ``try_wait.parity``; :meth:`PipelineModel.run` interleaves them under any schedule and
  records every read of a stage that was not full and every overwrite of a stage a consumer had
  not released.  ``tests/test_pipeline_model.py`` runs it over random schedules (hypothesis);
- :class:`BlockScaleModel`: the same pipeline with block-scaled FP8's scale warps (extra
  producers that wait on the empty barriers themselves; :func:`scale_owner` says which warp
  takes which k-block, and when that keeps their parity waits exact);
- :class:`StoreStaging` / :class:`StoreStagingModel`: the epilogue's D staging handed to a
  store thread through full / empty mbarriers (the emitter lowers the same description), and
  its model over any schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import CuteError

__all__ = ["PipelineState", "make_producer_start_state", "make_pipeline_state",
           "PipelineTmaAsync", "OrderedSequenceBarrier", "MBarrier", "PipelineModel",
           "PingpongModel", "PipelineError", "StoreStaging", "StoreStagingModel",
           "BlockScaleModel", "scale_owner", "KSplitModel"]


class PipelineError(CuteError):
    """A pipeline description or model run that cannot work (bad arguments, deadlock)."""


def _check_pos_int(op, name, v, minimum=1):
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise PipelineError(f"{op}: {name} must be an int >= {minimum}, got {v!r}")


@dataclass(frozen=True)
class PipelineState:
    """``cutlass::PipelineState<Stages>``: the stage ``index`` in ``[0, stages)``, the barrier
    ``phase`` (0/1) to wait for, and the number of increments ``count``.

    Law: ``advance(n)`` equals ``n`` calls of ``next()``; after ``k`` increments from
    ``(0, p, 0)``: ``index == k % stages``, ``phase == p ^ ((k // stages) & 1)``, ``count == k``.
    """

    stages: int
    index: int = 0
    phase: int = 0
    count: int = 0

    def __post_init__(self):
        _check_pos_int("PipelineState", "stages", self.stages)
        if not (0 <= self.index < self.stages):
            raise PipelineError(f"PipelineState: index must be in [0, {self.stages}), "
                                f"got {self.index}")
        if self.phase not in (0, 1):
            raise PipelineError(f"PipelineState: phase must be 0 or 1, got {self.phase!r}")

    def next(self) -> "PipelineState":
        """``++state``: index+1 and count+1; on wrap to 0 the phase flips."""
        i = self.index + 1
        ph = self.phase
        if i == self.stages:
            i, ph = 0, ph ^ 1
        return PipelineState(self.stages, i, ph, self.count + 1)

    def advance(self, n: int) -> "PipelineState":
        """``state += n`` (``n >= 0``)."""
        _check_pos_int("PipelineState.advance", "n", n, 0)
        wraps, i = divmod(self.index + n, self.stages)
        return PipelineState(self.stages, i, self.phase ^ (wraps & 1), self.count + n)


def make_pipeline_state(stages: int, index: int = 0, phase: int = 0, count: int = 0):
    """``make_pipeline_state``: a state at the given position."""
    return PipelineState(stages, index, phase, count)


def make_producer_start_state(stages: int) -> PipelineState:
    """``make_producer_start_state<Pipeline>()`` = ``{0, phase=1, 0}``: a producer waits on the
    empty barriers with the opposite phase, so its first ``stages`` acquires pass at once."""
    return PipelineState(stages, 0, 1, 0)


@dataclass(frozen=True)
class PipelineTmaAsync:
    """``PipelineTmaAsync<Stages>``: a full (transaction) and an empty barrier per stage.

    ``consumer_arrivals``: arrivals that release one stage (CUTLASS counts consumer threads; the
    generated kernels arrive once per consumer warp, so this is the number of consumer warps).
    ``transaction_bytes``: bytes the producer's TMA copies deliver per stage.
    ``num_producers``: arrivals on a full barrier (the leader's ``arrive.expect_tx``).
    ``cluster_size``: CTAs whose consumers release a stage (multicast): empty count =
    ``consumer_arrivals * cluster_size``, every CTA's consumers arriving on every CTA of the
    cluster (in a 2-D cluster also on the CTAs that share no operand tile with them: that
    only orders their stages, CUTLASS skips those arrivals).
    """

    stages: int
    consumer_arrivals: int
    transaction_bytes: int
    num_producers: int = 1
    cluster_size: int = 1

    def __post_init__(self):
        op = "PipelineTmaAsync"
        _check_pos_int(op, "stages", self.stages)
        _check_pos_int(op, "consumer_arrivals", self.consumer_arrivals)
        _check_pos_int(op, "transaction_bytes", self.transaction_bytes, 0)
        _check_pos_int(op, "num_producers", self.num_producers)
        _check_pos_int(op, "cluster_size", self.cluster_size)
        if self.transaction_bytes >= 1 << 20:
            raise PipelineError(f"{op}: transaction_bytes {self.transaction_bytes} exceeds the "
                                "mbarrier tx-count range (2^20 - 1)")

    @property
    def full_arrive_count(self) -> int:
        """Arrival count the full barriers are initialised with (``num_producers``)."""
        return self.num_producers

    @property
    def empty_arrive_count(self) -> int:
        """Arrival count the empty barriers are initialised with."""
        return self.consumer_arrivals * self.cluster_size

    def producer_start_state(self) -> PipelineState:
        return make_producer_start_state(self.stages)

    def consumer_start_state(self) -> PipelineState:
        return PipelineState(self.stages)


@dataclass(frozen=True)
class OrderedSequenceBarrier:
    """``OrderedSequenceBarrier<1, groups>``: ``groups`` consumers take turns at one phase of
    their work (the ping-pong schedule's mainloop), in the order 0, 1, ..., groups-1, 0, ...

    Group ``g`` waits on barrier ``predecessor(g)`` before its turn (not before the very first
    turn of the sequence) and, when a later turn exists, signals its own barrier ``g`` after it.
    Law: every signal is consumed by exactly one wait, and a barrier is never signalled twice
    before that wait (so a hardware named barrier with count ``2 * group_threads`` implements
    it).  Why the ping-pong kernel needs it: consumers of one pipeline that skip each other's
    k-blocks run ahead of the producer by a whole tile, and ``try_wait.parity`` cannot tell a
    phase from the one two fills earlier; with the turn order a consumer waits on a stage at
    most one fill ahead of the last completed one (``PingpongModel`` shows both).
    """

    groups: int = 2

    def __post_init__(self):
        _check_pos_int("OrderedSequenceBarrier", "groups", self.groups)

    def predecessor(self, g: int) -> int:
        return (g - 1) % self.groups


# ---------------------------------------------------------------------------------------------
# executable model


class MBarrier:
    """A 64-bit mbarrier as the seed describes it: phase bit, pending arrivals, pending tx bytes.

    Law: a phase completes when the pending arrival count and the pending transaction count are
    both 0; then the phase bit flips and the arrival count is re-armed.
    ``try_wait_parity(p)`` is true iff the phase with parity ``p`` has completed, i.e. the
    current phase bit differs from ``p``.
    """

    def __init__(self, count: int):
        _check_pos_int("MBarrier", "count", count)
        self.count = count
        self.phase = 0
        self.pending = count
        self.tx = 0

    def _maybe_complete(self):
        if self.pending == 0 and self.tx == 0:
            self.phase ^= 1
            self.pending = self.count

    def arrive(self):
        if self.pending == 0:
            raise PipelineError("mbarrier: arrive on a barrier with no pending arrivals")
        self.pending -= 1
        self._maybe_complete()

    def arrive_expect_tx(self, nbytes: int):
        self.tx += nbytes
        self.arrive()

    def complete_tx(self, nbytes: int):
        self.tx -= nbytes
        if self.tx < 0:
            raise PipelineError("mbarrier: complete_tx beyond the expected bytes")
        self._maybe_complete()

    def try_wait_parity(self, phase: int) -> bool:
        return self.phase != phase


@dataclass
class _Stage:
    data: object = None          # tag of the k-block the producer wrote
    readers_left: int = 0        # consumers that have not released the current contents


def _interleave(agents: dict, schedule, async_name: str, pending, land, errors) -> bool:
    """Run generator ``agents`` (steps yield None, or "blocked") and one asynchronous engine
    (``land()`` completes its oldest operation while ``pending()``; named ``async_name``)
    under ``schedule`` (ints picking, modulo the choices, who moves next; exhausted: the first
    that can).  True when every agent finished; a barrier misuse (``PipelineError``) or a state
    where every agent is blocked and nothing is pending is recorded in ``errors``."""
    done = set()
    sched = iter(schedule)
    while len(done) < len(agents):
        live = [a for a in agents if a not in done]
        choices = live + ([async_name] if pending() else [])
        pick = next(sched, None)
        order = choices if pick is None else choices[pick % len(choices):] + \
            choices[:pick % len(choices)]
        progressed = False
        for who in order:
            if who == async_name:
                if not land():
                    return False
                progressed = True
                break
            try:
                r = next(agents[who])
            except StopIteration:
                done.add(who)
                progressed = True
                break
            except PipelineError as e:     # a barrier misuse is a protocol violation
                errors.append(f"{who}: {e}")
                return False
            if r != "blocked":
                progressed = True
                break
        if not progressed:
            errors.append(f"deadlock: every agent blocked, no {async_name} in flight")
            return False
    return True


@dataclass
class PipelineModel:
    """Runs producer and consumer programs of one :class:`PipelineTmaAsync` on modelled barriers.

    ``num_consumers`` consumer agents each read every k-block; ``num_blocks`` k-blocks flow.
    The producer agent does, per block: ``producer_acquire`` (wait empty, ``arrive.expect_tx``),
    then issues a TMA whose completion (a separate agent step, ``tma``) writes the data and
    does ``complete_tx``.  Each consumer does ``consumer_wait`` (wait full), reads, then
    ``consumer_release`` (arrive on empty, ``consumer_arrivals // num_consumers`` times — one
    per warp).  The producer ends with ``producer_tail``.  Violations are recorded in
    ``errors``; :meth:`run` returns True when every agent finished.
    """

    desc: PipelineTmaAsync
    num_consumers: int
    num_blocks: int
    release_lag: int = 0          # consumers release stage k after reading k + release_lag
    errors: list = field(default_factory=list)

    def __post_init__(self):
        _check_pos_int("PipelineModel", "num_consumers", self.num_consumers)
        _check_pos_int("PipelineModel", "num_blocks", self.num_blocks, 0)
        self._check_arrivals()
        S = self.desc.stages
        self.full = [MBarrier(self.desc.full_arrive_count) for _ in range(S)]
        self.empty = [MBarrier(self.desc.empty_arrive_count) for _ in range(S)]
        self.stages = [_Stage() for _ in range(S)]
        self.inflight = []            # TMA copies issued, not yet landed: (stage, block)
        self.reads = [[] for _ in range(self.num_consumers)]

    def _check_arrivals(self):
        """Every consumer reads every stage: the arrivals are split evenly among them."""
        if self.desc.consumer_arrivals % self.num_consumers:
            raise PipelineError("PipelineModel: consumer_arrivals must be a multiple of "
                                "num_consumers")

    # programs: generators yielding None (made progress) or "blocked"
    def _producer(self):
        d = self.desc
        st = d.producer_start_state()
        for k in range(self.num_blocks):
            while not self.empty[st.index].try_wait_parity(st.phase):
                yield "blocked"
            s = self.stages[st.index]
            if s.readers_left:
                self.errors.append(f"producer overwrites stage {st.index} (block {k}) before "
                                   f"{s.readers_left} consumer(s) released it")
            self.full[st.index].arrive_expect_tx(d.transaction_bytes)
            self.inflight.append((st.index, k))
            st = st.next()
            yield None
        for _ in range(d.stages):         # producer_tail
            while not self.empty[st.index].try_wait_parity(st.phase):
                yield "blocked"
            st = st.next()
            yield None

    def _land_tma(self):
        idx, k = self.inflight.pop(0)
        s = self.stages[idx]
        s.data, s.readers_left = k, self.num_consumers
        self.full[idx].complete_tx(self.desc.transaction_bytes)

    def _wait_and_read(self, c, st, k):
        """Consumer ``c``: ``consumer_wait`` at state ``st`` (spin on the full barrier), then
        read the stage, recording an error unless it holds block ``k``."""
        while not self.full[st.index].try_wait_parity(st.phase):
            yield "blocked"
        s = self.stages[st.index]
        if s.data != k:
            self.errors.append(f"consumer {c} reads stage {st.index} for block {k} but it "
                               f"holds {s.data!r}")
        self.reads[c].append(s.data)

    def _consumer(self, c):
        d = self.desc
        per = d.consumer_arrivals // self.num_consumers
        st = d.consumer_start_state()
        held = []
        for k in range(self.num_blocks):
            yield from self._wait_and_read(c, st, k)
            held.append((st.index, k))
            while len(held) > self.release_lag:
                self._release(c, *held.pop(0), per)
            st = st.next()
            yield None
        for idx, k in held:
            self._release(c, idx, k, per)
        yield None

    def _agents(self) -> dict:
        """The programs :meth:`run` interleaves, by name."""
        agents = {"producer": self._producer()}
        for c in range(self.num_consumers):
            agents[f"consumer{c}"] = self._consumer(c)
        return agents

    def _release(self, c, idx, k, per):
        """Consumer ``c`` releases stage ``idx`` (holding block ``k``): ``per`` arrivals."""
        self.stages[idx].readers_left -= 1
        for _ in range(per):
            self.empty[idx].arrive()

    def run(self, schedule) -> bool:
        """Interleave the agents: ``schedule`` is an iterable of ints; each picks (modulo the
        number of live agents) who moves next.  Returns True when all programs finished; a
        state where every live agent is blocked and no TMA is in flight is a deadlock
        (recorded in ``errors``, returns False)."""
        agents = self._agents()

        def land():
            try:
                self._land_tma()
            except PipelineError as e:
                self.errors.append(f"tma: {e}")
                return False
            return True
        return _interleave(agents, schedule, "tma", lambda: bool(self.inflight), land,
                           self.errors)


@dataclass
class _SoleReaderModel(PipelineModel):
    """A schedule in which each block is read by one consumer alone, who releases its stage
    with all ``consumer_arrivals`` arrivals (ping-pong, ksplit): any arrival count works, and a
    landed block has one reader."""

    def _check_arrivals(self):
        pass

    def _land_tma(self):
        idx, k = self.inflight.pop(0)
        s = self.stages[idx]
        s.data, s.readers_left = k, 1
        self.full[idx].complete_tx(self.desc.transaction_bytes)


@dataclass
class PingpongModel(_SoleReaderModel):
    """The ping-pong schedule on one pipeline: the producer fills ``num_blocks`` k-blocks, tile
    after tile (``blocks_per_tile`` each); consumer ``c`` (a warpgroup) reads the blocks of tiles
    ``c, c + G, c + 2G, ...`` (``G = num_consumers``), releases each stage alone (all
    ``consumer_arrivals`` arrivals), and skips the other groups' blocks by advancing its state
    (``state.advance((G - 1) * blocks_per_tile)``).  With ``ordered`` the consumers take turns
    through an :class:`OrderedSequenceBarrier` (wait before the first full-barrier wait of a
    tile, signal after the last one); without it a consumer can wait on a phase two fills ahead
    and read the wrong block, which :meth:`run` records."""

    blocks_per_tile: int = 1
    ordered: bool = True

    def __post_init__(self):
        _check_pos_int("PingpongModel", "blocks_per_tile", self.blocks_per_tile)
        if self.num_blocks % self.blocks_per_tile:
            raise PipelineError("PingpongModel: num_blocks must be a multiple of "
                                "blocks_per_tile")
        super().__post_init__()   # each consumer releases a stage alone: any count works
        self.order = OrderedSequenceBarrier(self.num_consumers)
        self.signalled = [False] * self.num_consumers

    def _consumer(self, c):
        d, G, kb = self.desc, self.num_consumers, self.blocks_per_tile
        tiles = self.num_blocks // kb
        st = d.consumer_start_state().advance(c * kb)

        def release(idx):
            self.stages[idx].readers_left -= 1
            for _ in range(d.consumer_arrivals):
                self.empty[idx].arrive()
        for t in range(c, tiles, G):
            if self.ordered and t > 0:
                prev = self.order.predecessor(c)
                while not self.signalled[prev]:
                    yield "blocked"
                self.signalled[prev] = False
            held = []
            for k in range(t * kb, (t + 1) * kb):
                yield from self._wait_and_read(c, st, k)
                held.append(st.index)
                while len(held) > self.release_lag:
                    release(held.pop(0))
                st = st.next()
                yield None
            if self.ordered and t + 1 < tiles:
                if self.signalled[c]:
                    self.errors.append(f"consumer {c} signals its order barrier twice")
                self.signalled[c] = True
            for idx in held:
                release(idx)
            st = st.advance((G - 1) * kb)
            yield None


@dataclass
class KSplitModel(_SoleReaderModel):
    """The "ksplit" schedule on one pipeline: ``num_consumers`` (G) warpgroups share every
    tile; consumer ``c`` reads exactly the blocks whose stage index ``idx`` has ``idx % G ==
    c`` and steps its state over the others without waiting (``state.next()``), releasing each
    of its stages alone (all ``consumer_arrivals`` arrivals, ``release_lag`` of its own blocks
    later).  A stage always has the same owner, so a consumer waits only on stages whose
    earlier fills it read and released itself: its wait can never see a phase two fills old.
    Law (test): every block is read once, by the owner of its stage, in order; no overwrite
    of an unreleased stage; no deadlock."""

    def _consumer(self, c):
        d = self.desc
        st = d.consumer_start_state()
        held = []
        for k in range(self.num_blocks):
            if st.index % self.num_consumers == c:
                yield from self._wait_and_read(c, st, k)
                held.append((st.index, k))
                while len(held) > self.release_lag:
                    self._release(c, *held.pop(0), d.consumer_arrivals)
            st = st.next()
            yield None
        for idx, k in held:
            self._release(c, idx, k, d.consumer_arrivals)
        yield None


def scale_owner(g: int, warps: int, blocks_per_tile: int, rotation: str = "running") -> int:
    """The scale warp (``0 .. warps - 1``) that copies k-block ``g``'s block scales, ``g``
    counted over the CTA's whole k-block sequence (``blocks_per_tile`` per tile).

    ``"running"`` (the kernels' rule): ``g % warps`` -- a warp's consecutive k-blocks are
    exactly ``warps`` apart.  ``"per_tile"``: ``(g % blocks_per_tile) % warps``, the count
    restarting every tile -- across a tile boundary a warp's next k-block can be up to
    ``2 * warps - 1`` away.

    Law: a scale warp's wait for the empty barrier before k-block ``g`` (the release of
    ``g - stages``) is exact if its previous k-block ``g - d`` satisfies ``d <= stages``:
    then every release up to ``g - d - stages >= g - 2 * stages`` has completed and the
    barrier's phase bit cannot still show the release of ``g - 2 * stages`` (which has the
    parity of the awaited one); with ``d > stages`` a schedule exists where it does.  So the
    running rotation is safe iff ``warps <= stages``."""
    if rotation == "running":
        return g % warps
    if rotation == "per_tile":
        return (g % blocks_per_tile) % warps
    raise PipelineError(f"scale_owner: rotation must be 'running' or 'per_tile', got "
                        f"{rotation!r}")


@dataclass
class BlockScaleModel(PipelineModel):
    """Block-scaled FP8's pipeline: besides the TMA leader, ``scale_warps`` producer warps copy
    each k-block's scales into its stage.  A scale warp walks every k-block in the leader's
    loop; for the ones it owns (:func:`scale_owner` with ``rotation``) it waits for the stage
    to be empty itself, writes the stage's scale slot and arrives on the full barrier
    ``num_producers - 1`` times (its lanes; the leader's ``arrive.expect_tx`` is the other
    arrival).  Consumers check the operands and the scales they read are the k-block's.

    Law: with ``rotation="running"`` and ``scale_warps <= stages`` every run is safe and
    live; with ``"per_tile"``, ``stages < 2 * scale_warps - 1`` and a tile length that is
    not a multiple of ``scale_warps``, a schedule exists where a warp passes its empty wait on
    the parity of an older release and overwrites a slot the consumers still read (what the
    kernels did with 3 scale warps and 3-4 stages: launch failures on the H100)."""

    scale_warps: int = 1
    blocks_per_tile: int = 1
    rotation: str = "running"

    def __post_init__(self):
        _check_pos_int("BlockScaleModel", "scale_warps", self.scale_warps)
        _check_pos_int("BlockScaleModel", "blocks_per_tile", self.blocks_per_tile)
        if self.desc.num_producers < 2:
            raise PipelineError("BlockScaleModel: num_producers must count the leader and at "
                                "least one scale lane")
        scale_owner(0, 1, 1, self.rotation)         # checks the rotation's name
        super().__post_init__()
        self.scales = [None] * self.desc.stages
        self.released = {}            # block -> consumers that released its stage

    def _scale_warp(self, w):
        d = self.desc
        lanes = d.num_producers - 1
        st = d.producer_start_state()
        for g in range(self.num_blocks):
            if scale_owner(g, self.scale_warps, self.blocks_per_tile, self.rotation) == w:
                while not self.empty[st.index].try_wait_parity(st.phase):
                    yield "blocked"
                prev = g - d.stages         # the slot's previous contents
                if prev >= 0 and self.released.get(prev, 0) < self.num_consumers:
                    self.errors.append(f"scale warp {w} overwrites stage {st.index}'s scales "
                                       f"(block {g}) before the consumers released block "
                                       f"{prev}")
                self.scales[st.index] = g
                for _ in range(lanes):
                    self.full[st.index].arrive()
                yield None
            st = st.next()
        for _ in range(d.stages):         # producer_tail, as the leader's
            while not self.empty[st.index].try_wait_parity(st.phase):
                yield "blocked"
            st = st.next()
            yield None

    def _release(self, c, idx, k, per):
        super()._release(c, idx, k, per)
        self.released[k] = self.released.get(k, 0) + 1

    def _wait_and_read(self, c, st, k):
        yield from super()._wait_and_read(c, st, k)
        if self.scales[st.index] != k:
            self.errors.append(f"consumer {c} reads stage {st.index}'s scales for block {k} "
                               f"but they are block {self.scales[st.index]!r}'s")

    def _agents(self) -> dict:
        agents = {"producer": self._producer()}
        for w in range(self.scale_warps):
            agents[f"scale{w}"] = self._scale_warp(w)
        for c in range(self.num_consumers):
            agents[f"consumer{c}"] = self._consumer(c)
        return agents


# ---------------------------------------------------------------------------------------------
# the epilogue's store staging (a store warp)


@dataclass(frozen=True)
class StoreStaging:
    """The D staging of an epilogue whose TMA stores one store thread issues: ``buffers``
    smem buffers of one subtile each, written by ``writers`` consumer threads, ``subtiles``
    per tile.  ``whole`` (``buffers == subtiles``): the tile is handed over as one unit (one
    full / empty mbarrier pair, one bulk group, released after ``wait_group.read<0>``);
    else each buffer has its own pair and the store thread releases buffer ``j - 1`` after
    issuing ``j`` (``wait_group.read<1>``; ``<0>`` with one buffer).

    Law (checked by :class:`StoreStagingModel` under any schedule): no thread writes a buffer
    whose previous stores have not read it, no store reads a buffer before every writer wrote
    it, and neither side waits forever."""

    buffers: int
    writers: int
    subtiles: int

    def __post_init__(self):
        for n in ("buffers", "writers", "subtiles"):
            _check_pos_int("StoreStaging", n, getattr(self, n))

    @property
    def whole(self) -> bool:
        return self.buffers == self.subtiles

    @property
    def barriers(self) -> int:
        """Full / empty mbarrier pairs."""
        return 1 if self.whole else self.buffers

    @property
    def full_arrive_count(self) -> int:
        return self.writers

    @property
    def empty_arrive_count(self) -> int:
        return 1

    @property
    def read_lag(self) -> int:
        """``N`` of the store thread's ``wait_group.read<N>`` before it releases a buffer."""
        return 0 if self.whole or self.buffers == 1 else 1


@dataclass
class StoreStagingModel:
    """Runs :class:`StoreStaging`'s programs on modelled barriers: every writer (one per
    ``writers``) writes each subtile of ``tiles`` tiles; the store thread waits for full,
    issues the stores (their reads of smem land later, the ``read`` step, in order), waits
    for ``read_lag`` groups to remain, releases.  :meth:`run` as :meth:`PipelineModel.run`."""

    desc: StoreStaging
    tiles: int
    errors: list = field(default_factory=list)

    def __post_init__(self):
        _check_pos_int("StoreStagingModel", "tiles", self.tiles, 0)
        d = self.desc
        self.full = [MBarrier(d.full_arrive_count) for _ in range(d.barriers)]
        self.empty = [MBarrier(d.empty_arrive_count) for _ in range(d.barriers)]
        self.content = [None] * d.buffers       # the subtile each buffer holds
        self.writes = [0] * d.buffers           # writers done with the current content
        self.reading = [0] * d.buffers          # stores issued, not yet read
        self.groups = []                        # bulk groups in flight: list of buffers
        self.stored = []

    def _units(self):
        """(barrier, buffers, first subtile) of each handover, in order."""
        d = self.desc
        n = self.tiles * d.subtiles
        if d.whole:
            return [(0, list(range(d.buffers)), t * d.subtiles) for t in range(self.tiles)]
        return [(j % d.buffers, [j % d.buffers], j) for j in range(n)]

    def _writer(self, w):
        d = self.desc
        phase = 1
        for bar, bufs, j0 in self._units():
            while not self.empty[bar].try_wait_parity(phase):
                yield "blocked"
            for i, b in enumerate(bufs):
                if self.reading[b]:
                    self.errors.append(f"writer {w} overwrites buffer {b} before its store "
                                       "read it")
                if self.content[b] != j0 + i:
                    self.content[b], self.writes[b] = j0 + i, 0
                self.writes[b] += 1
                yield None
            self.full[bar].arrive()
            if bar == d.barriers - 1:
                phase ^= 1
            yield None

    def _store(self):
        d = self.desc
        phase, prev = 0, None
        for bar, bufs, j0 in self._units():
            while not self.full[bar].try_wait_parity(phase):
                yield "blocked"
            for i, b in enumerate(bufs):
                if self.content[b] != j0 + i or self.writes[b] != d.writers:
                    self.errors.append(f"store of subtile {j0 + i} reads buffer {b} before "
                                       "every writer wrote it")
                self.reading[b] += 1
            self.groups.append((list(bufs), [j0 + i for i in range(len(bufs))]))
            yield None
            while len(self.groups) > d.read_lag:
                yield "blocked"
            if d.read_lag == 0:
                self.empty[bar].arrive()
            else:
                if prev is not None:
                    self.empty[prev].arrive()
                prev = bar
            if bar == d.barriers - 1:
                phase ^= 1
            yield None

    def _read(self):
        bufs, subs = self.groups.pop(0)
        for b in bufs:
            self.reading[b] -= 1
        self.stored += subs

    def run(self, schedule) -> bool:
        agents = {"store": self._store()}
        for w in range(self.desc.writers):
            agents[f"writer{w}"] = self._writer(w)
        if not _interleave(agents, schedule, "read", lambda: bool(self.groups),
                           lambda: self._read() or True, self.errors):
            return False
        while self.groups:
            self._read()
        return True
