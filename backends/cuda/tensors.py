"""What a launch reads from a caller's array: pointer, shape, strides, dtype, device.

:func:`meta_of` reads a torch tensor, a CuPy array or any ``__cuda_array_interface__`` object
into a :class:`TensorMeta` without converting it (a torch tensor costs its ``data_ptr()``,
``shape``, ``stride()``, ``dtype`` and device: no CuPy view, no DLPack capsule).  Strides are in
elements.  bfloat16 is named ``"bfloat16"`` for torch tensors; CuPy has no bfloat16, so CuPy
callers pass bf16 bit patterns as ``uint16`` and say so (``bf16=True``).
"""

from __future__ import annotations

from typing import NamedTuple

from cute_py.errors import LaunchError

__all__ = ["TensorMeta", "meta_of", "is_torch", "is_array", "span_bytes", "overlaps", "TORCH_DTYPES"]

#: torch dtype name (``str(t.dtype)`` without ``torch.``) -> (name, itemsize)
TORCH_DTYPES = {"float16": ("float16", 2), "bfloat16": ("bfloat16", 2),
                "float32": ("float32", 4), "float64": ("float64", 8),
                "float8_e4m3fn": ("float8_e4m3fn", 1), "float8_e5m2": ("float8_e5m2", 1),
                "int8": ("int8", 1), "uint8": ("uint8", 1), "int16": ("int16", 2),
                "int32": ("int32", 4), "int64": ("int64", 8)}


class TensorMeta(NamedTuple):
    ptr: int
    shape: tuple
    strides: tuple      # elements
    dtype: str
    itemsize: int
    device: int         # -1: not a CUDA device array
    framework: str      # "torch", "cupy", "cai"
    obj: object = None

    def swap_last(self) -> "TensorMeta":
        """The view with its last two modes exchanged (a matrix transpose, no copy)."""
        sh, st = self.shape, self.strides
        return self._replace(shape=sh[:-2] + (sh[-1], sh[-2]),
                             strides=st[:-2] + (st[-1], st[-2]))

    def batched(self) -> "TensorMeta":
        """The 3-D ``(L, rows, cols)`` view (L = 1 for a matrix)."""
        if len(self.shape) == 3:
            return self
        return self._replace(shape=(1,) + self.shape, strides=(0,) + self.strides)


def is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def is_array(x) -> bool:
    """A torch tensor, a CuPy / NumPy array or a ``__cuda_array_interface__`` object (torch's
    property raises for tensors that require grad, so torch is recognised by its type)."""
    mod = type(x).__module__
    if mod.startswith(("torch", "cupy", "numpy")):
        return hasattr(x, "shape")
    try:
        return hasattr(x, "__cuda_array_interface__")
    except Exception:  # a property that raises: not an array we can read
        return False


def meta_of(x, name: str, op: str) -> TensorMeta:
    """Read ``x`` (torch CUDA tensor, CuPy array, ``__cuda_array_interface__`` object)."""
    mod = type(x).__module__
    if mod.startswith("torch"):
        dev = x.get_device()
        if dev < 0:
            raise LaunchError(op, name, "must live on a CUDA device", actual=str(x.device))
        dn = str(x.dtype)[6:]
        dt, es = TORCH_DTYPES.get(dn, (dn, x.element_size()))
        return TensorMeta(x.data_ptr(), tuple(x.shape), tuple(x.stride()), dt, es, dev,
                          "torch", x)
    if mod.startswith("cupy") and hasattr(x, "data") and hasattr(x, "strides"):
        es = x.itemsize
        return TensorMeta(int(x.data.ptr), tuple(x.shape), tuple(s // es for s in x.strides),
                          str(x.dtype), es, x.device.id, "cupy", x)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        import numpy as np
        dt = np.dtype(cai["typestr"])
        shape = tuple(int(s) for s in cai["shape"])
        st = cai.get("strides")
        if st is None:
            st, acc = [], dt.itemsize
            for s in reversed(shape):
                st.append(acc)
                acc *= max(s, 1)
            st = tuple(reversed(st))
        return TensorMeta(int(cai["data"][0]), shape, tuple(s // dt.itemsize for s in st),
                          str(dt), dt.itemsize, 0, "cai", x)
    if mod.startswith("numpy"):
        raise LaunchError(op, name, "is a host (NumPy) array; pass a device array",
                          expected="a torch CUDA tensor or a CuPy array", actual=type(x).__name__)
    raise LaunchError(op, name, "must be a torch CUDA tensor or a CuPy array",
                      actual=type(x).__name__)


def span_bytes(m: TensorMeta) -> tuple[int, int]:
    """``[lo, hi)``: the bytes the view can touch."""
    lo = hi = m.ptr
    for s, d in zip(m.shape, m.strides):
        if s == 0:
            return m.ptr, m.ptr
        if d > 0:
            hi += (s - 1) * d * m.itemsize
        else:
            lo += (s - 1) * d * m.itemsize
    return lo, hi + m.itemsize


def overlaps(a: TensorMeta, b: TensorMeta) -> bool:
    """Whether the two views' byte ranges intersect (conservative: ranges, not elements)."""
    alo, ahi = span_bytes(a)
    blo, bhi = span_bytes(b)
    return alo < bhi and blo < ahi
