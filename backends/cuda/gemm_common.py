"""Pieces the one-call GEMM paths share (plain: ``gemm_api``; fused: ``gemm_fused``): the
record of which kernel ran, metadata keys, output allocation, the Hopper test, CuPy views, and
the split-K / stream-K workspaces of each stream."""

from __future__ import annotations

from dataclasses import dataclass

from .tensors import TensorMeta

__all__ = ["GemmChoice", "meta_key", "acls", "empty", "is_hopper", "cupy_view", "remember",
           "StreamWorkspace", "keep_for_stream", "CAPTURED", "data_ptr"]


@dataclass(frozen=True)
class GemmChoice:
    """What ``gemm`` ran: the kernel family, its configuration and why."""

    backend: str            # "sm90" or "sm80"
    kernel: str             # the kernel's entry name
    config: object
    copied: tuple           # operands copied into padded buffers first
    reason: str

    def __str__(self):
        cfg = self.config
        desc = ""
        if self.backend == "sm90":
            desc = (f"{cfg.schedule} {cfg.tile_m}x{cfg.tile_n}x{cfg.tile_k}, {cfg.stages} "
                    f"stages, A {cfg.a_major}-major, B {cfg.b_major}-major, epilogue "
                    f"{'EVT/TMA-store' if cfg.epi is not None else 'predicated'}")
        copied = f"; copied {', '.join(self.copied)}" if self.copied else ""
        return f"{self.backend}: {self.kernel} ({desc}){copied} — {self.reason}"


def acls(ptr: int) -> int:
    """Alignment class of an address: 0 (128-byte), 1 (16-byte), 2 (4-byte), 3 (other)."""
    return 0 if not ptr & 127 else 1 if not ptr & 15 else 2 if not ptr & 3 else 3


def align_of(ptr: int) -> int:
    """The largest power of two (at most 256) dividing the address ``ptr``: every alignment
    choice of a plan (TMA's 16 bytes, paired 4- / 8-byte stores) exactly; :func:`acls` is its
    coarser class."""
    return ptr & -ptr if ptr & 255 else 256


def is_hopper(device: int) -> bool:
    try:
        from .device import device_properties
        return device_properties(device).cc == (9, 0)
    except Exception:  # no GPU / no CuPy: not Hopper (the SM80 path reports what is missing)
        return False


def empty(like, shape, framework, dtype=None):
    if framework == "torch":
        import torch
        return torch.empty(shape, dtype=like.dtype if dtype is None else dtype,
                           device=like.device)
    import cupy as cp
    return cp.empty(shape, dtype=like.dtype if dtype is None else dtype)


def meta_key(m: TensorMeta):
    return (m.dtype, m.shape, m.strides, m.device, acls(m.ptr))


def cupy_view(x):
    """A CuPy view of a torch CUDA tensor (bf16 as uint16 bits) or the CuPy array itself."""
    if type(x).__module__.startswith("torch"):
        import cupy as cp
        import torch
        x = x.detach()
        bf = x.dtype == torch.bfloat16
        v = cp.asarray(x.view(torch.int16) if bf else x)
        return v.view(cp.uint16) if bf else v
    return x


def remember(cache: dict, key, value, limit: int) -> None:
    """``cache[key] = value``, dropping the oldest entry first when ``limit`` are held."""
    if len(cache) >= limit:
        cache.pop(next(iter(cache)))
    cache[key] = value


#: the key under which :func:`keep_for_stream` holds the buffers a CUDA graph capture asked
#: for (never a stream handle: no later call finds them)
CAPTURED = "captured"


def keep_for_stream(cache: dict, stream: int, value, capturing: bool):
    """Remember ``value`` (buffers just allocated on ``stream``) as ``cache[stream]`` for the
    stream's later calls -- unless ``stream`` is capturing a CUDA graph (``capturing``, asked of
    :func:`~.stream.is_capturing` only where a cached call first needs buffers for a stream,
    never on a cached launch): then under :data:`CAPTURED` only (kept alive, replacing the
    previous capture's), so that no later call on that stream handle (an eager call, another
    capture) reuses the graph's buffers.  Returns ``value``."""
    cache[CAPTURED if capturing else stream] = value
    return value


class StreamWorkspace:
    """The fp32 workspace and int32 counters of a split-K / stream-K plan, one pair per stream.

    Law: :meth:`pointers` of one stream always gives the same two arrays (calls on a stream reuse
    them in stream order -- the next call's kernel starts after this one's finished); two
    streams never share them.  Both are zeroed on the stream that first asks for them; the
    kernels leave the counters zero (each tile's last unit resets its counter), so nothing is
    cleared per call.  ``elements`` 0: no workspace (pointers 0, 0).

    Outside a CUDA-graph capture the pair is device memory of cute_py's own
    (:class:`~.driver.DeviceBuffer`, zeroed on the stream), not torch's or CuPy's: no
    framework pool holds it, so ``torch.compile(mode="reduce-overhead")``, whose warm-up
    routes torch allocations into its graphs' pool, never finds a stray tensor there.

    CUDA graphs: where the stream is capturing when it first asks (checked only then, never on
    a cached launch), the pair is allocated for that capture -- torch: in the graph's private
    pool, zeroed by a memset the graph replays -- and not remembered for the stream
    (:func:`keep_for_stream`): each capturing call gets its own pair, and no later call on that
    stream handle, eager or captured, shares it with the graph's replays.  The last captured
    pair is kept alive.  A stream that already has a pair (an eager call of this shape ran on
    it) keeps using it when it captures later, so warm up on another stream than the capture's
    (torch's ``torch.cuda.graph`` captures on its own side stream)."""

    __slots__ = ("elements", "counters", "framework", "device", "_by_stream")

    def __init__(self, elements: int, counters: int, framework: str, device: int):
        self.elements, self.counters = int(elements), int(counters)
        self.framework, self.device = framework, device
        self._by_stream = {}

    def pointers(self, stream: int) -> tuple:
        """``(workspace pointer, counters pointer)`` of ``stream`` (allocated on first use)."""
        got = self._by_stream.get(stream)
        if got is None:
            if not self.elements:
                got = self._by_stream[stream] = (None, 0, 0)
            else:
                from .stream import is_capturing
                if is_capturing(self.framework, self.device, stream):
                    w = _zeros(self.framework, self.device, self.elements, "float32", stream)
                    c = _zeros(self.framework, self.device, max(1, self.counters), "int32",
                               stream)
                    got = keep_for_stream(self._by_stream, stream, ((w, c), data_ptr(w),
                                                                    data_ptr(c)), True)
                else:
                    from .driver import device_zeros
                    w = device_zeros(4 * self.elements, self.device, stream)
                    c = device_zeros(4 * max(1, self.counters), self.device, stream)
                    got = self._by_stream[stream] = ((w, c), w.ptr, c.ptr)
        return got[1], got[2]


def data_ptr(x) -> int:
    """The device pointer of a torch tensor or a CuPy array."""
    return x.data_ptr() if hasattr(x, "data_ptr") else int(x.data.ptr)


def _zeros(framework, device, n, dtype, stream):
    """A zeroed device array of n elements, allocated and cleared on ``stream``."""
    from .stream import on_stream
    with on_stream(framework, device, stream):
        if framework == "torch":
            import torch
            return torch.zeros(n, dtype=getattr(torch, dtype), device=f"cuda:{device}")
        import cupy as cp
        return cp.zeros(n, dtype=dtype)
