"""CPU checks of the per-stream buffers of cached GEMM calls (``gemm_common.StreamWorkspace``,
``keep_for_stream``): one pair per stream outside CUDA graph capture, a pair of its own for each
capturing call, never handed to a later call on the capture's stream handle.  The allocation
and the capture query are stand-ins (no GPU needed); ``test_cuda_graph_gpu.py`` runs the real
thing."""

import pytest

from cute_py.backends.cuda import gemm_common, stream


class _Buf:
    """A stand-in device array: a distinct fake pointer per allocation."""

    count = 0

    def __init__(self, n, dtype):
        _Buf.count += 1
        self.n, self.dtype, self.ptr = n, dtype, 0x1000 * _Buf.count

    def data_ptr(self):
        return self.ptr


@pytest.fixture
def fake(monkeypatch):
    """Allocations recorded as ``(stream, dtype)``; ``capturing`` the set of capturing
    streams; ``asked`` the streams whose capture state was queried."""
    state = {"allocs": [], "capturing": set(), "asked": []}

    def zeros(framework, device, n, dtype, s):
        state["allocs"].append((s, dtype))
        return _Buf(n, dtype)

    def is_capturing(framework, device, s):
        state["asked"].append(s)
        return s in state["capturing"]

    def device_zeros(nbytes, device, s):        # outside capture: cute_py's own memory
        state["allocs"].append((s, "device"))
        return _Buf(nbytes // 4, "device")

    from cute_py.backends.cuda import driver
    monkeypatch.setattr(gemm_common, "_zeros", zeros)
    monkeypatch.setattr(driver, "device_zeros", device_zeros)
    monkeypatch.setattr(stream, "is_capturing", is_capturing)
    return state


def test_one_pair_per_stream_outside_capture(fake):
    """Law: pointers(s) gives the same pair on every call on s; two streams never share one;
    the capture state is asked once per stream (at allocation), never on a cached call."""
    ws = gemm_common.StreamWorkspace(1024, 8, "torch", 0)
    p1 = ws.pointers(11)
    assert ws.pointers(11) == p1 and ws.pointers(11) == p1
    p2 = ws.pointers(22)
    assert p2 != p1 and not set(p1) & set(p2)
    # outside capture: device memory of cute_py's own (no framework pool sees it)
    assert fake["allocs"] == [(11, "device"), (11, "device"), (22, "device"), (22, "device")]
    assert fake["asked"] == [11, 22]


def test_capture_gets_its_own_pair_never_shared_with_eager_calls(fake):
    """A capturing stream without a pair gets a fresh pair per call, remembered only under
    CAPTURED (kept alive); the eager call on the same handle after the capture allocates its
    own; the warm-up stream keeps its pair."""
    ws = gemm_common.StreamWorkspace(1024, 8, "torch", 0)
    warm = ws.pointers(5)                          # eager warm-up on a side stream
    fake["capturing"].add(7)
    g1 = ws.pointers(7)                            # the capture (torch's own capture stream)
    g2 = ws.pointers(7)                            # a second call of the shape in the graph
    assert len({warm, g1, g2}) == 3
    assert 7 not in ws._by_stream
    assert (ws._by_stream[gemm_common.CAPTURED][1:]) == g2     # the last captured pair lives
    fake["capturing"].clear()
    eager = ws.pointers(7)                         # eager, on the capture's stream handle
    assert eager not in (g1, g2, warm)
    assert ws.pointers(7) == eager and ws.pointers(5) == warm
    assert ws._by_stream[gemm_common.CAPTURED][1:] == g2


def test_no_workspace_allocates_nothing(fake):
    ws = gemm_common.StreamWorkspace(0, 0, "torch", 0)
    fake["capturing"].add(3)
    assert ws.pointers(3) == (0, 0) and ws.pointers(4) == (0, 0)
    assert fake["allocs"] == [] and fake["asked"] == []


def test_keep_for_stream_rule(fake):
    """keep_for_stream: cache[stream] outside capture; cache[CAPTURED] (replaced by the next
    capture's) while the stream captures; returns the value either way."""
    cache = {}
    assert gemm_common.keep_for_stream(cache, 1, "a", False) == "a"
    assert gemm_common.keep_for_stream(cache, 2, "b", True) == "b"
    assert gemm_common.keep_for_stream(cache, 2, "c", True) == "c"
    assert cache == {1: "a", gemm_common.CAPTURED: "c"}
    assert not isinstance(gemm_common.CAPTURED, int)               # never a stream handle
