"""Checking kernel arguments and launching them through the one launch path.

Law: ``launch`` never starts a kernel whose arguments disagree with what the kernel was built
for.  Every argument is checked against its spec (:class:`TensorSpec`: dtype, shape, strides in
elements, base-pointer alignment, device; :class:`ScalarSpec`: type and range) *before* anything
is launched, and a mismatch raises :class:`~cute_py.errors.LaunchError` naming the argument.

Arrays come as CuPy arrays, objects with ``__cuda_array_interface__`` (Numba, PyTorch, JAX ...)
or DLPack producers (``__dlpack__``).  A kernel receives a tensor as its raw device pointer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cute_py.errors import LaunchError

from .kernel import ArgPack, CompiledKernel
from .stream import stream_handle
from .tensors import is_array

__all__ = ["TensorSpec", "ScalarSpec", "ArrayView", "as_array_view", "CudaFunction", "launch",
           "check_args", "pack_args", "MAX_DEFAULT_SMEM"]

#: Dynamic shared memory a block may use without cudaFuncSetAttribute.
MAX_DEFAULT_SMEM = 48 * 1024


@dataclass(frozen=True)
class ArrayView:
    """What a launch needs to know about a device array: pointer, dtype, shape, strides in bytes."""

    ptr: int
    dtype: np.dtype
    shape: tuple
    strides: tuple  # bytes
    device: int | None
    readonly: bool = False
    owner: object = None  # keeps the producer alive for the launch

    @property
    def elem_strides(self) -> tuple:
        return tuple(s // self.dtype.itemsize for s in self.strides)


def _c_strides(shape, itemsize):
    strides, acc = [], itemsize
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(strides))


def as_array_view(obj, name: str = "array", op: str = "launch") -> ArrayView:
    """Read pointer/dtype/shape/strides from a CuPy array, a ``__cuda_array_interface__`` object
    or a DLPack producer; raises LaunchError for host arrays and anything else."""
    if isinstance(obj, ArrayView):
        return obj
    if isinstance(obj, np.ndarray):
        raise LaunchError(op, name, "is a host (NumPy) array; pass a device array",
                          expected="CuPy array / __cuda_array_interface__ / DLPack",
                          actual="numpy.ndarray")
    try:
        import cupy
    except Exception:  # pragma: no cover - only without CuPy
        cupy = None
    if cupy is not None and isinstance(obj, cupy.ndarray):
        return ArrayView(obj.data.ptr, obj.dtype, tuple(obj.shape), tuple(obj.strides),
                         obj.device.id, False, obj)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        ptr, ro = cai["data"]
        dtype = np.dtype(cai["typestr"])
        shape = tuple(int(s) for s in cai["shape"])
        strides = cai.get("strides")
        strides = _c_strides(shape, dtype.itemsize) if strides is None else tuple(strides)
        dev = None
        if cupy is not None and ptr:
            try:
                dev = cupy.cuda.runtime.pointerGetAttributes(ptr).device
            except Exception:
                dev = None
            if dev is not None and dev < 0:  # not a device allocation CUDA knows of
                dev = None
        return ArrayView(int(ptr), dtype, shape, strides, dev, bool(ro), obj)
    if hasattr(obj, "__dlpack__") and cupy is not None:
        try:
            arr = cupy.from_dlpack(obj)
        except Exception as e:
            raise LaunchError(op, name, f"DLPack export failed ({e})",
                              expected="a CUDA device tensor") from e
        return as_array_view(arr, name, op)
    raise LaunchError(op, name, "is not a device array",
                      expected="CuPy array / __cuda_array_interface__ / DLPack",
                      actual=type(obj).__name__)


@dataclass(frozen=True)
class TensorSpec:
    """A pointer argument: the kernel reads/writes ``dtype`` elements at ``ptr + layout(coord)``.

    ``shape``/``strides`` (strides in elements, NumPy order) entries may be None for "any";
    ``align`` is the required base-pointer alignment in bytes (16 for 128-bit accesses).
    ``writable`` rejects read-only buffers.
    """

    name: str
    dtype: object
    shape: tuple | None = None
    strides: tuple | None = None
    align: int = 0
    writable: bool = False

    def convert(self, obj, op: str = "launch"):
        v = as_array_view(obj, self.name, op)
        want = np.dtype(self.dtype)
        if v.dtype != want:
            raise LaunchError(op, self.name, "has the wrong dtype", expected=str(want),
                              actual=str(v.dtype))
        if self.shape is not None:
            if len(self.shape) != len(v.shape) or any(
                    e is not None and e != a for e, a in zip(self.shape, v.shape)):
                raise LaunchError(op, self.name, "has the wrong shape", expected=self.shape,
                                  actual=v.shape)
        if any(s % v.dtype.itemsize for s in v.strides):
            raise LaunchError(op, self.name, "has strides that are not whole elements",
                              actual=v.strides)
        if self.strides is not None:
            es = v.elem_strides
            if len(self.strides) != len(es) or any(
                    e is not None and e != a and sz != 1
                    for e, a, sz in zip(self.strides, es, v.shape)):
                raise LaunchError(op, self.name, "has the wrong strides (in elements)",
                                  expected=self.strides, actual=es)
        if self.align and v.ptr % self.align:
            raise LaunchError(op, self.name, f"base pointer is not {self.align}-byte aligned",
                              expected=f"ptr % {self.align} == 0", actual=hex(v.ptr))
        if self.writable and v.readonly:
            raise LaunchError(op, self.name, "is read-only but the kernel writes it")
        if v.device is not None:
            import cupy
            cur = cupy.cuda.Device().id
            if v.device != cur:
                raise LaunchError(op, self.name, "lives on another device", expected=cur,
                                  actual=v.device)
        return np.uint64(v.ptr), v


_SCALARS = {"int32": np.int32, "int64": np.int64, "uint32": np.uint32, "uint64": np.uint64,
            "float32": np.float32, "float64": np.float64}


@dataclass(frozen=True)
class ScalarSpec:
    """A by-value argument of C type ``ctype`` ('int32', 'int64', 'float32', ...) within
    ``[lo, hi]`` when given (runtime sizes the kernel's index arithmetic was bounded for)."""

    name: str
    ctype: str = "int32"
    lo: int | None = None
    hi: int | None = None

    def convert(self, value, op: str = "launch"):
        if self.ctype not in _SCALARS:
            raise LaunchError(op, self.name, "has an unknown scalar type",
                              expected=sorted(_SCALARS), actual=self.ctype)
        t = _SCALARS[self.ctype]
        if np.issubdtype(t, np.integer):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise LaunchError(op, self.name, "must be an integer",
                                  actual=type(value).__name__)
            info = np.iinfo(t)
            lo = info.min if self.lo is None else self.lo
            hi = info.max if self.hi is None else self.hi
            if not lo <= int(value) <= hi:
                raise LaunchError(op, self.name, "is out of range", expected=f"[{lo}, {hi}]",
                                  actual=int(value))
        elif not isinstance(value, (int, float, np.floating, np.integer)):
            raise LaunchError(op, self.name, "must be a number", actual=type(value).__name__)
        return t(value), None


def _dims(value, what: str, op: str, limits):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value),)
    if (not isinstance(value, tuple) or not 1 <= len(value) <= 3
            or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in value)):
        raise LaunchError(op, what, "must be an int or a tuple of 1..3 ints", actual=value)
    value = tuple(int(v) for v in value) + (1,) * (3 - len(value))
    for v, lim, axis in zip(value, limits, "xyz"):
        if not 1 <= v <= lim:
            raise LaunchError(op, f"{what}.{axis}", "is out of range", expected=f"[1, {lim}]",
                              actual=v)
    return value


def check_args(specs, args, op: str = "launch"):
    """Convert ``args`` by ``specs`` (same length); returns the values to pass. Raises
    LaunchError naming the first bad argument."""
    if len(specs) != len(args):
        raise LaunchError(op, "args", "has the wrong number of arguments",
                          expected=[s.name for s in specs], actual=len(args))
    return [s.convert(a, op)[0] for s, a in zip(specs, args)]


#: The one compiled-kernel type (kept under its former name for callers of ``get_function``).
CudaFunction = CompiledKernel

_KIND_OF = {np.dtype(np.uint64): "u64", np.dtype(np.int64): "i64", np.dtype(np.int32): "i32",
            np.dtype(np.uint32): "u32", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def pack_args(values, op: str = "launch") -> ArgPack:
    """An :class:`ArgPack` of launch values: NumPy scalars (pointers as ``np.uint64``), device
    arrays (passed as their pointer) or 128-byte ``CUtensorMap`` buffers."""
    kinds, vals = [], []
    for i, v in enumerate(values):
        if isinstance(v, np.generic) and v.dtype in _KIND_OF:
            kinds.append(_KIND_OF[v.dtype])
            vals.append(v.item())
        elif isinstance(v, (bytes, bytearray)) and len(v) == 128:
            kinds.append("tmap")
            vals.append(v)
        elif isinstance(v, ArrayView) or is_array(v):
            kinds.append("ptr")
            vals.append(as_array_view(v, f"args[{i}]", op).ptr)
        else:
            raise LaunchError(op, f"args[{i}]", "must be a NumPy scalar (np.int32, np.uint64, "
                              "np.float32 ...), a device array or a 128-byte CUtensorMap",
                              actual=type(v).__name__)
    pack = ArgPack(kinds)
    for i, v in enumerate(vals):
        pack.set(i, v)
    return pack


def launch(func: CompiledKernel, grid, block, args, *, smem: int = 0, stream=None, specs=None):
    """Launch ``func<<<grid, block, smem, stream>>>(*args)`` after checking everything.

    ``specs`` (a sequence of TensorSpec / ScalarSpec, one per argument) checks and converts the
    arguments; without specs, arguments must already be NumPy scalars (pointers as
    ``np.uint64``) or device arrays.  ``smem`` above 48 KB raises the kernel's dynamic limit
    first (once), and must fit the device's opt-in limit.  ``stream``: see
    :func:`~cute_py.backends.cuda.stream.stream_handle` (default: the current stream of the
    first array argument's framework).
    """
    op = f"launch({func.name})"
    grid = _dims(grid, "grid", op, (2**31 - 1, 65535, 65535))
    block = _dims(block, "block", op, (1024, 1024, 64))
    if block[0] * block[1] * block[2] > 1024:
        raise LaunchError(op, "block", "has more than 1024 threads", actual=block)
    if isinstance(smem, bool) or not isinstance(smem, (int, np.integer)) or smem < 0:
        raise LaunchError(op, "smem", "must be a non-negative int", actual=smem)
    like = next((a for a in args if not isinstance(a, (np.generic, bytes)) and is_array(a)),
                None)
    handle = stream_handle(stream, like, op)
    if specs is not None:
        values = check_args(specs, args, op)
    else:
        values = list(args)
    pack = pack_args(values, op)
    static = func.resources.smem_static if func.resources is not None else 0
    if smem + static > MAX_DEFAULT_SMEM:
        func.ensure_smem(int(smem))
    func.launch_pack(grid, pack, handle, block=block, smem=int(smem))
