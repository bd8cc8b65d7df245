"""The SM90 pipeline model: PipelineState laws and the full/empty barrier protocol under random
interleavings of the producer, the TMA engine and the consumers (hypothesis)."""

import pytest
from hypothesis import given, settings, strategies as st

from cute_py.pipeline import (MBarrier, OrderedSequenceBarrier, PingpongModel, PipelineError,
                              PipelineModel, PipelineState,
                              PipelineTmaAsync, make_pipeline_state, make_producer_start_state)


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
