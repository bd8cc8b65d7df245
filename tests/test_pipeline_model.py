"""The SM90 pipeline model: PipelineState laws and the full/empty barrier protocol under random
interleavings of the producer, the TMA engine and the consumers (hypothesis)."""

import pytest
from hypothesis import given, settings, strategies as st

import random

from cute_py.pipeline import (BlockScaleModel, KSplitModel, MBarrier, OrderedSequenceBarrier, PingpongModel,
                              PipelineError, PipelineModel, PipelineState, PipelineTmaAsync,
                              make_pipeline_state, make_producer_start_state, scale_owner)


@given(st.integers(1, 9), st.integers(0, 1), st.integers(0, 60))
@settings(max_examples=100, deadline=None)
def test_state_increment_law(stages, phase, k):
    s = PipelineState(stages, 0, phase, 0)
    t = s
    for _ in range(k):
        t = t.next()
    assert t == s.advance(k)
    assert (t.index, t.phase, t.count) == (k % stages, phase ^ ((k // stages) & 1), k)


def test_state_examples_and_producer_start():
    s = make_pipeline_state(3)
    seq = []
    for _ in range(7):
        seq.append((s.index, s.phase))
        s = s.next()
    assert seq == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 0)]
    p = make_producer_start_state(4)
    assert (p.index, p.phase, p.count) == (0, 1, 0)


def test_state_errors():
    with pytest.raises(PipelineError):
        PipelineState(0)
    with pytest.raises(PipelineError):
        PipelineState(2, 2)
    with pytest.raises(PipelineError):
        PipelineState(2, 0, 2)
    with pytest.raises(PipelineError):
        PipelineState(2).advance(-1)


def test_mbarrier_phase_semantics():
    b = MBarrier(2)
    assert b.try_wait_parity(1) and not b.try_wait_parity(0)   # fresh: "phase -1" complete
    b.arrive_expect_tx(128)
    b.arrive()
    assert not b.try_wait_parity(0)                             # bytes still pending
    b.complete_tx(128)
    assert b.try_wait_parity(0) and not b.try_wait_parity(1)
    with pytest.raises(PipelineError):
        MBarrier(1).complete_tx(1)


def test_description_counts_and_errors():
    d = PipelineTmaAsync(stages=4, consumer_arrivals=8, transaction_bytes=49152)
    assert (d.full_arrive_count, d.empty_arrive_count) == (1, 8)
    assert PipelineTmaAsync(4, 8, 1024, cluster_size=2).empty_arrive_count == 16
    with pytest.raises(PipelineError):
        PipelineTmaAsync(0, 1, 1)
    with pytest.raises(PipelineError):
        PipelineTmaAsync(2, 1, 1 << 20)


@given(stages=st.integers(1, 7), consumers=st.integers(1, 3), per=st.integers(1, 4),
       blocks=st.integers(0, 20), lag=st.integers(0, 1),
       schedule=st.lists(st.integers(0, 10), max_size=400))
@settings(max_examples=150, deadline=None)
def test_protocol_safe_and_live(stages, consumers, per, blocks, lag, schedule):
    if lag >= stages:        # a consumer holding every stage would starve the producer
        lag = 0
    d = PipelineTmaAsync(stages=stages, consumer_arrivals=consumers * per, transaction_bytes=64)
    m = PipelineModel(d, num_consumers=consumers, num_blocks=blocks, release_lag=lag)
    assert m.run(schedule), m.errors
    assert m.errors == []
    for r in m.reads:
        assert r == list(range(blocks))


def test_model_detects_broken_protocol():
    # empty barriers that need fewer arrivals than consumers give: the producer can overwrite a
    # stage one consumer still holds.
    d = PipelineTmaAsync(stages=1, consumer_arrivals=2, transaction_bytes=64)
    m = PipelineModel(d, num_consumers=2, num_blocks=3)
    m.empty = [MBarrier(1)]
    m.run([1, 0, 0, 0, 0, 0, 0, 0, 0, 0] * 5)
    assert m.errors


def test_model_detects_deadlock():
    # a consumer that keeps every stage (release lag == stages) starves the producer
    d = PipelineTmaAsync(stages=2, consumer_arrivals=1, transaction_bytes=64)
    m = PipelineModel(d, num_consumers=1, num_blocks=5, release_lag=2)
    assert not m.run([])
    assert any("deadlock" in e for e in m.errors)


# -- the ping-pong schedule ------------------------------------------------------------------

@given(stages=st.integers(1, 6), consumers=st.integers(1, 3), per=st.integers(1, 4),
       kb=st.integers(1, 9), tiles=st.integers(0, 7), lag=st.integers(0, 1),
       schedule=st.lists(st.integers(0, 10), max_size=400))
@settings(max_examples=150, deadline=None)
def test_pingpong_ordered_safe_and_live(stages, consumers, per, kb, tiles, lag, schedule):
    """With the turn order, each consumer reads exactly its tiles' blocks, the producer never
    overwrites an unreleased stage, nothing deadlocks, and no order barrier is signalled twice."""
    if lag >= stages:
        lag = 0
    d = PipelineTmaAsync(stages=stages, consumer_arrivals=per, transaction_bytes=64)
    m = PingpongModel(d, num_consumers=consumers, num_blocks=tiles * kb, release_lag=lag,
                      blocks_per_tile=kb)
    assert m.run(schedule), m.errors
    assert m.errors == []
    for c, r in enumerate(m.reads):
        assert r == [k for t in range(c, tiles, consumers) for k in range(t * kb, (t + 1) * kb)]


def test_pingpong_without_turn_order_reads_a_stale_fill():
    """Why the kernel needs the OrderedSequenceBarrier: consumer 1 skips tile 0's 4 blocks and
    waits on stage 0 at the parity of the *first* fill (4 blocks = 2 wraps of 2 stages), so it
    takes block 0 for block 4."""
    d = PipelineTmaAsync(stages=2, consumer_arrivals=1, transaction_bytes=64)
    m = PingpongModel(d, num_consumers=2, num_blocks=8, blocks_per_tile=4, ordered=False)
    # producer issues block 0, the TMA lands it, then consumer 1 moves first
    m.run([0, 0, 3] + [2] * 50)
    assert any("consumer 1 reads stage 0 for block 4 but it holds 0" in e for e in m.errors), \
        m.errors
    ok = PingpongModel(d, num_consumers=2, num_blocks=8, blocks_per_tile=4)
    assert ok.run([0, 0, 3] + [2] * 50) and ok.errors == []


@given(stages=st.integers(1, 8), consumers=st.integers(2, 3), per=st.integers(1, 4),
       blocks=st.integers(0, 40), lag=st.integers(0, 1),
       schedule=st.lists(st.integers(0, 10), max_size=500))
@settings(max_examples=150, deadline=None)
def test_ksplit_safe_and_live(stages, consumers, per, blocks, lag, schedule):
    """The ksplit schedule: consumer c reads exactly the blocks of the stages idx % G == c, in
    order, the producer never overwrites an unreleased stage, nothing deadlocks (a consumer
    that holds one stage while it waits for the next needs two stages of its own:
    :func:`test_ksplit_one_own_stage_with_lag_deadlocks`)."""
    if stages < 2 * consumers:
        lag = 0
    d = PipelineTmaAsync(stages=stages, consumer_arrivals=per, transaction_bytes=64)
    m = KSplitModel(d, num_consumers=consumers, num_blocks=blocks, release_lag=lag)
    assert m.run(schedule), m.errors
    assert m.errors == []
    for c, r in enumerate(m.reads):
        assert r == [k for k in range(blocks) if (k % stages) % consumers == c]
    assert sorted(x for r in m.reads for x in r) == list(range(blocks))


def test_ksplit_one_own_stage_with_lag_deadlocks():
    """Why the kernel's ksplit schedule needs at least 4 stages: with 2 stages each warpgroup
    owns one; holding it (the 16-bit mainloop releases a stage one k-block late) while
    waiting for that same stage's next fill never ends."""
    d = PipelineTmaAsync(stages=2, consumer_arrivals=1, transaction_bytes=64)
    m = KSplitModel(d, num_consumers=2, num_blocks=6, release_lag=1)
    assert not m.run([0] * 200) and any("deadlock" in e for e in m.errors)
    ok = KSplitModel(PipelineTmaAsync(stages=4, consumer_arrivals=1, transaction_bytes=64),
                     num_consumers=2, num_blocks=6, release_lag=1)
    assert ok.run([0] * 200) and ok.errors == []


def test_ordered_sequence_barrier():
    o = OrderedSequenceBarrier(3)
    assert [o.predecessor(g) for g in range(3)] == [2, 0, 1]
    with pytest.raises(PipelineError):
        OrderedSequenceBarrier(0)
    with pytest.raises(PipelineError):
        PingpongModel(PipelineTmaAsync(2, 1, 64), num_consumers=2, num_blocks=5,
                      blocks_per_tile=2)


# -- the epilogue's store staging (a store warp) -----------------------------------------------

@given(buffers=st.integers(1, 6), writers=st.integers(1, 3), subtiles=st.integers(1, 6),
       tiles=st.integers(0, 4), schedule=st.lists(st.integers(0, 10), max_size=400))
@settings(max_examples=150, deadline=None)
def test_store_staging_safe_and_live(buffers, writers, subtiles, tiles, schedule):
    """StoreStaging's law: no writer overwrites a buffer its stores have not read, no store
    reads a buffer before every writer wrote it, no deadlock; every subtile stored, in order."""
    from cute_py.pipeline import StoreStaging, StoreStagingModel
    d = StoreStaging(buffers, writers, subtiles)
    m = StoreStagingModel(d, tiles)
    assert m.run(schedule), m.errors
    assert m.errors == []
    assert m.stored == list(range(tiles * subtiles))
    assert d.barriers == (1 if buffers == subtiles else buffers)
    assert d.read_lag == (0 if buffers in (1, subtiles) else 1)


def test_store_staging_model_detects_early_release():
    """Releasing a buffer before its stores read it (a read lag of 2 with two buffers) lets a
    writer overwrite it: the model records it."""
    from cute_py.pipeline import StoreStaging, StoreStagingModel

    class Early(StoreStaging):
        @property
        def read_lag(self):
            return 2
    m = StoreStagingModel(Early(2, 2, 6), tiles=2)
    m.run([])
    assert any("overwrites" in e for e in m.errors), m.errors
    with pytest.raises(PipelineError):
        StoreStaging(0, 1, 1)


# -- block-scaled FP8: scale warps as extra producers -----------------------------------------

def test_scale_owner_gaps():
    """Running rotation: a warp's consecutive k-blocks are exactly ``warps`` apart; restarting
    the count every tile leaves gaps up to ``2 * warps - 1`` (5 k-blocks per tile, 3 warps)."""
    def gaps(rotation, warps, kb, blocks=40):
        last, out = {}, set()
        for g in range(blocks):
            w = scale_owner(g, warps, kb, rotation)
            if w in last:
                out.add(g - last[w])
            last[w] = g
        return out
    assert gaps("running", 3, 5) == {3}
    assert max(gaps("per_tile", 3, 5)) == 5 and max(gaps("per_tile", 2, 5)) == 3
    assert gaps("per_tile", 3, 6) == {3}          # whole rounds per tile: no longer gap
    with pytest.raises(PipelineError):
        scale_owner(0, 1, 1, "tile")


def _random_schedules(n, seed=0, length=1500, spread=20):
    r = random.Random(seed)
    return [[r.randrange(spread) for _ in range(length)] for _ in range(n)]


@given(stages=st.integers(1, 6), warps=st.integers(1, 3), lanes=st.integers(1, 3),
       consumers=st.integers(1, 2), kb=st.integers(1, 7), tiles=st.integers(0, 4),
       lag=st.integers(0, 1), schedule=st.lists(st.integers(0, 12), max_size=600))
@settings(max_examples=150, deadline=None)
def test_block_scales_running_rotation_safe_and_live(stages, warps, lanes, consumers, kb,
                                                     tiles, lag, schedule):
    """The kernels' rule (running rotation, at most ``stages`` scale warps): every consumer
    reads each block's operands and scales, no slot is overwritten early, nothing deadlocks."""
    warps = min(warps, stages)
    if lag >= stages:
        lag = 0
    d = PipelineTmaAsync(stages=stages, consumer_arrivals=consumers, transaction_bytes=64,
                         num_producers=1 + lanes)
    m = BlockScaleModel(d, num_consumers=consumers, num_blocks=tiles * kb, release_lag=lag,
                        scale_warps=warps, blocks_per_tile=kb)
    assert m.run(schedule), m.errors
    assert m.errors == []
    for r in m.reads:
        assert r == list(range(tiles * kb))


@pytest.mark.parametrize("stages,safe", [(3, False), (4, False), (5, True), (6, True)])
def test_block_scales_per_tile_rotation_aliases_a_parity(stages, safe):
    """What the kernels did before: 3 scale warps, the owner ``kb % 3`` restarting every tile
    (5 k-blocks per tile here).  With 3 or 4 stages a warp's wait passes on the parity of a
    release two fills back and it overwrites scales the consumers still read (the H100 ran
    into launch failures at 3 and 4 stages, never at 5 or 6); the running rotation is safe
    under the same schedules."""
    d = PipelineTmaAsync(stages=stages, consumer_arrivals=2, transaction_bytes=64,
                         num_producers=3)
    bad = 0
    for sched in _random_schedules(20):
        m = BlockScaleModel(d, num_consumers=2, num_blocks=20, scale_warps=3,
                            blocks_per_tile=5, rotation="per_tile")
        bad += (not m.run(sched)) or bool(m.errors)
        ok = BlockScaleModel(d, num_consumers=2, num_blocks=20, scale_warps=3,
                             blocks_per_tile=5)
        assert ok.run(sched) and ok.errors == [], ok.errors
    assert (bad == 0) == safe, bad


def test_block_scales_more_warps_than_stages_is_unsafe():
    d = PipelineTmaAsync(stages=2, consumer_arrivals=1, transaction_bytes=64, num_producers=2)
    bad = 0
    for sched in _random_schedules(10):
        m = BlockScaleModel(d, num_consumers=1, num_blocks=12, scale_warps=3,
                            blocks_per_tile=4)
        bad += (not m.run(sched)) or bool(m.errors)
    assert bad


def test_block_scale_model_errors():
    d = PipelineTmaAsync(stages=2, consumer_arrivals=1, transaction_bytes=64)
    with pytest.raises(PipelineError):
        BlockScaleModel(d, num_consumers=1, num_blocks=2, scale_warps=1)   # no scale lanes
    d2 = PipelineTmaAsync(stages=2, consumer_arrivals=1, transaction_bytes=64, num_producers=2)
    with pytest.raises(PipelineError):
        BlockScaleModel(d2, num_consumers=1, num_blocks=2, scale_warps=0)
    with pytest.raises(PipelineError):
        BlockScaleModel(d2, num_consumers=1, num_blocks=2, rotation="tile")
