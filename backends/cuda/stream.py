"""Which CUDA stream a launch goes on.

Rule: an explicit ``stream`` wins — a ``torch.cuda.Stream``, a ``cupy.cuda.Stream`` (or
``ExternalStream``), an object with the ``__cuda_stream__`` protocol, or a raw ``CUstream``
handle (an int; 0 is the legacy default stream).  Without one, the stream is the one current
for the caller's arrays: ``torch.cuda.current_stream()`` of the tensor's device for torch
tensors, CuPy's current stream for CuPy arrays (and for anything else, when CuPy is loaded),
else the legacy default stream.  Work queued on that stream before the call is seen by the
kernel; the kernel's writes are seen by work queued after it.
"""

from __future__ import annotations

import sys

from cute_py.errors import LaunchError

__all__ = ["stream_handle", "torch_stream_getter", "torch_external_stream",
           "cupy_external_stream", "is_capturing"]


def torch_stream_getter():
    """A fast ``device -> raw handle of torch's current stream`` (None without torch)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda dev: torch.cuda.current_stream(dev).cuda_stream


#: ``[torch.Tensor, torch's raw current-stream getter]`` once :func:`init_torch` found torch
#: imported (the torch fast paths' type test and stream lookup); ``[None, None]`` before
TORCH_FAST: list = [None, None]


def init_torch():
    """Fill :data:`TORCH_FAST` when torch is imported; returns ``torch.Tensor`` or None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    TORCH_FAST[1] = torch_stream_getter()
    TORCH_FAST[0] = torch.Tensor
    return TORCH_FAST[0]


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def stream_handle(stream=None, like=None, op: str = "launch") -> int:
    """The raw ``CUstream`` handle for ``stream`` (see the module rule); ``like`` is one of the
    caller's arrays (decides the default).  Raises LaunchError naming ``stream`` for anything
    that is not a stream."""
    if stream is None:
        if like is not None and _is_torch(like):
            get = torch_stream_getter()
            return int(get(like.get_device()))
        cupy = sys.modules.get("cupy")
        if cupy is not None:
            return int(cupy.cuda.get_current_stream().ptr)
        return 0
    if isinstance(stream, bool):
        raise LaunchError(op, "stream", "must be a stream or a raw CUstream handle",
                          actual=stream)
    if isinstance(stream, int):
        if stream < 0:
            raise LaunchError(op, "stream", "a raw CUstream handle is a non-negative int",
                              actual=stream)
        return stream
    handle = getattr(stream, "cuda_stream", None)          # torch.cuda.Stream
    if handle is None and type(stream).__module__.startswith("cupy"):
        handle = getattr(stream, "ptr", None)              # cupy.cuda.Stream
    if handle is None and hasattr(stream, "__cuda_stream__"):
        try:
            handle = stream.__cuda_stream__()[1]          # CUDA stream protocol (version, handle)
        except Exception as e:  # a broken protocol object
            raise LaunchError(op, "stream", f"__cuda_stream__ failed ({e})") from None
    if handle is None:
        raise LaunchError(op, "stream", "must be a torch.cuda.Stream, a cupy.cuda.Stream, an "
                          "object with __cuda_stream__ or a raw CUstream handle (int)",
                          actual=type(stream).__name__)
    return int(handle)


def torch_external_stream(handle: int, device):
    """A ``torch.cuda`` stream object for the raw handle (to queue torch work on it): torch's
    current stream object when the handle is that stream (no wrapper to build)."""
    import warnings

    import torch
    cur = torch.cuda.current_stream(device)
    if cur.cuda_stream == handle:
        return cur
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return torch.cuda.ExternalStream(handle, device=device)


def cupy_external_stream(handle: int):
    """A CuPy stream object for the raw handle (``with`` it to queue CuPy work there)."""
    import warnings

    import cupy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cupy.cuda.ExternalStream(handle)


def on_stream(framework: str, device: int, handle: int):
    """A context that makes the raw stream ``handle`` current for the framework's own work
    (torch or CuPy allocations, copies); a no-op for torch when it already is current."""
    import contextlib
    if framework == "torch":
        if TORCH_FAST[1] is not None and TORCH_FAST[1](device) == handle:
            return contextlib.nullcontext()
        import torch
        return torch.cuda.stream(torch_external_stream(handle, device))
    return cupy_external_stream(handle)


def is_capturing(framework: str, device: int, handle: int) -> bool:
    """Whether the stream ``handle`` is capturing a CUDA graph (``torch.cuda.graph``, CuPy's
    ``Stream.begin_capture``): asked where a cached call first allocates buffers for a stream
    (:func:`~.gemm_common.keep_for_stream`), never per launch.  Torch's answer for torch
    arrays (the stream made current for the question), CuPy's otherwise."""
    if framework == "torch":
        import torch
        with on_stream(framework, device, handle):
            return bool(torch.cuda.is_current_stream_capturing())
    return bool(cupy_external_stream(handle).is_capturing())
