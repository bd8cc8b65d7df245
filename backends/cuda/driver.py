"""The CUDA driver calls the backend makes, through ``ctypes`` on ``libcuda``.

One place for every driver entry point the launch path needs: contexts, modules, function
attributes, ``cuLaunchKernel`` / ``cuLaunchKernelEx`` (clusters), occupancy and
``cuTensorMapEncodeTiled``.  ``ctypes`` with fixed ``argtypes`` costs well under a microsecond
per call, less than any wrapper object per launch; nothing here allocates per call beyond the
call itself.  Every non-zero ``CUresult`` raises :class:`~cute_py.errors.LaunchError` naming the
driver call and the error's name.
"""

from __future__ import annotations

import ctypes
import threading
from functools import lru_cache

from cute_py.errors import LaunchError

__all__ = ["libcuda", "check", "ensure_context", "load_module",
           "module_function", "set_max_dynamic_smem", "launch_kernel", "launch_kernel_ex",
           "max_active_clusters", "tensor_map_encode_tiled", "sm_count",
           "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION", "CUDA_ERROR_INVALID_CONTEXT",
           "untyped_launchers", "DeviceBuffer", "device_zeros"]

CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
#: ``CUDA_ERROR_INVALID_CONTEXT``: the calling thread has no current context
CUDA_ERROR_INVALID_CONTEXT = _CUDA_ERROR_INVALID_CONTEXT = 201

_vp, _u32, _i32, _u64 = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_uint64


class CUlaunchAttribute(ctypes.Structure):
    """``CUlaunchAttribute``: an id and a 64-byte value union (cluster dims use 12 bytes)."""

    _fields_ = [("id", _u32), ("pad", ctypes.c_char * 4), ("value", _u32 * 16)]


class CUlaunchConfig(ctypes.Structure):
    _fields_ = [("gridDimX", _u32), ("gridDimY", _u32), ("gridDimZ", _u32),
                ("blockDimX", _u32), ("blockDimY", _u32), ("blockDimZ", _u32),
                ("sharedMemBytes", _u32), ("hStream", _vp),
                ("attrs", ctypes.POINTER(CUlaunchAttribute)), ("numAttrs", _u32)]


@lru_cache(maxsize=1)
def libcuda():
    """``libcuda.so.1`` with the argument types of the calls used here; LaunchError without it."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise LaunchError("cuda", "driver", f"libcuda.so.1 cannot be loaded ({e}); a CUDA "
                          "driver is needed to run kernels") from None
    sig = {
        "cuInit": [_u32],
        "cuGetErrorName": [_i32, ctypes.POINTER(ctypes.c_char_p)],
        "cuCtxGetCurrent": [ctypes.POINTER(_vp)],
        "cuCtxSetCurrent": [_vp],
        "cuCtxGetDevice": [ctypes.POINTER(_i32)],
        "cuDevicePrimaryCtxRetain": [ctypes.POINTER(_vp), _i32],
        "cuDeviceGetAttribute": [ctypes.POINTER(_i32), _i32, _i32],
        "cuModuleLoadData": [ctypes.POINTER(_vp), _vp],
        "cuModuleGetFunction": [ctypes.POINTER(_vp), _vp, ctypes.c_char_p],
        "cuFuncSetAttribute": [_vp, _i32, _i32],
        "cuLaunchKernel": [_vp, _u32, _u32, _u32, _u32, _u32, _u32, _u32, _vp, _vp, _vp],
        "cuLaunchKernelEx": [ctypes.POINTER(CUlaunchConfig), _vp, _vp, _vp],
        "cuOccupancyMaxActiveClusters": [ctypes.POINTER(_i32), _vp,
                                         ctypes.POINTER(CUlaunchConfig)],
        "cuTensorMapEncodeTiled": [_vp, _i32, _u32, _vp, _vp, _vp, _vp, _vp, _i32, _i32, _i32,
                                   _i32],
        "cuMemsetD32Async": [ctypes.c_uint64, _u32, ctypes.c_size_t, _vp],
        "cuMemsetD16Async": [ctypes.c_uint64, ctypes.c_uint16, ctypes.c_size_t, _vp],
        "cuMemAlloc_v2": [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t],
        "cuMemFree_v2": [ctypes.c_uint64],
    }
    for name, argtypes in sig.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = _i32
    lib.cuInit(0)
    return lib


def _error_name(res: int) -> str:
    s = ctypes.c_char_p()
    try:
        if libcuda().cuGetErrorName(res, ctypes.byref(s)) == 0 and s.value:
            return s.value.decode()
    except Exception:  # pragma: no cover - the name is only decoration
        pass
    return "unknown"


def check(res: int, op: str, what: str) -> None:
    """Raise LaunchError(op, what, ...) for a non-zero CUresult."""
    if res:
        raise LaunchError(op, what, f"CUDA driver call failed: CUresult {res} "
                          f"({_error_name(res)})")


_ctx_lock = threading.Lock()


def ensure_context(device: int | None = None) -> int:
    """Make sure this thread has a current CUDA context; returns its device ordinal.

    With none current (a fresh thread, or nothing initialised CUDA yet) the primary context of
    ``device`` (default 0) is retained and made current: the one the CUDA runtime, CuPy and
    PyTorch use, so modules, pointers and streams are shared with them."""
    lib = libcuda()
    ctx = _vp()
    check(lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuda", "cuCtxGetCurrent")
    if not ctx.value:
        with _ctx_lock:
            check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), int(device or 0)), "cuda",
                  "cuDevicePrimaryCtxRetain")
            check(lib.cuCtxSetCurrent(ctx), "cuda", "cuCtxSetCurrent")
    dev = _i32()
    check(lib.cuCtxGetDevice(ctypes.byref(dev)), "cuda", "cuCtxGetDevice")
    return dev.value


@lru_cache(maxsize=None)
def sm_count(device: int) -> int:
    n = _i32()
    check(libcuda().cuDeviceGetAttribute(ctypes.byref(n), _CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                         device), "cuda", "cuDeviceGetAttribute")
    return n.value


def load_module(cubin: bytes):
    """``cuModuleLoadData`` into the current context; returns ``(handle, keep)`` (keep the
    image buffer alive with the module)."""
    buf = ctypes.create_string_buffer(cubin, len(cubin))
    mod = _vp()
    check(libcuda().cuModuleLoadData(ctypes.byref(mod), buf), "cuda", "cuModuleLoadData")
    return mod.value, buf


def module_function(module: int, name: str) -> int:
    fn = _vp()
    check(libcuda().cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), "cuda",
          f"cuModuleGetFunction({name})")
    return fn.value


def set_max_dynamic_smem(func: int, nbytes: int) -> None:
    check(libcuda().cuFuncSetAttribute(func, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       int(nbytes)),
          "cuda", "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")


def launch_kernel(func: int, grid, block, smem: int, stream: int, params) -> int:
    """``cuLaunchKernel``; ``params`` a ctypes ``void*[]`` (or its address).  Returns the
    CUresult (the caller raises; a context missing on this thread is fixed and retried)."""
    lib = libcuda()
    res = lib.cuLaunchKernel(func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                             smem, stream, params, None)
    if res == _CUDA_ERROR_INVALID_CONTEXT:
        ensure_context()
        res = lib.cuLaunchKernel(func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                 smem, stream, params, None)
    return res


def memset_async(ptr: int, bits: int, width: int, count: int, stream: int) -> None:
    """Queue ``count`` copies of the ``width``-byte (4 or 2) pattern ``bits`` at device address
    ``ptr`` on ``stream`` (``cuMemsetD32Async`` / ``cuMemsetD16Async``): a reduction output's
    reset before the kernel that reduces into it, with no stream object to build."""
    lib = libcuda()
    fn = lib.cuMemsetD32Async if width == 4 else lib.cuMemsetD16Async
    check(fn(ptr, bits, count, stream), "memset", "ptr")


class DeviceBuffer:
    """Device memory of cute_py's own (``cuMemAlloc`` on ``device``), freed when collected:
    buffers no framework's allocator (torch's CUDA-graph pools, CuPy's pool) should see."""

    __slots__ = ("ptr", "nbytes", "device")

    def __init__(self, nbytes: int, device: int):
        ensure_context(device)
        p = ctypes.c_uint64()
        check(libcuda().cuMemAlloc_v2(ctypes.byref(p), max(1, int(nbytes))), "cuda",
              "cuMemAlloc")
        self.ptr, self.nbytes, self.device = p.value, int(nbytes), device

    def __del__(self):
        try:
            if self.ptr:
                libcuda().cuMemFree_v2(self.ptr)
                self.ptr = 0
        except Exception:  # noqa: BLE001 - interpreter shutdown: the driver frees it anyway
            pass


def device_zeros(nbytes: int, device: int, stream: int) -> DeviceBuffer:
    """A :class:`DeviceBuffer` of ``nbytes`` (a multiple of 4) zeroed on ``stream``."""
    buf = DeviceBuffer(nbytes, device)
    memset_async(buf.ptr, 0, 4, max(1, nbytes // 4), stream)
    return buf


def untyped_launchers():
    """``(cuLaunchKernel, cuLaunchKernelEx)`` without ``argtypes``: the launch plans' hot path.

    ``ctypes`` spends most of a typed call converting its eleven arguments (2.7 µs against
    0.7 µs for the same call with pre-built ``c_void_p`` handles, measured on the CPU with a
    stand-in library).  Callers must pass every 64-bit value (function, stream, parameter
    array, config) as a ``ctypes`` object and only small non-negative ints (grid, block, shared
    memory sizes: C ``int``) as Python ints."""
    lib = libcuda()
    out = []
    for name in ("cuLaunchKernel", "cuLaunchKernelEx"):
        fn = lib[name]              # a fresh function pointer: the typed one stays as it is
        fn.restype = _i32
        out.append(fn)
    return tuple(out)


def make_launch_config(grid, block, smem: int, cluster) -> CUlaunchConfig:
    """A ``CUlaunchConfig`` with a cluster-dimension attribute (kept alive by the config)."""
    cfg = CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes = smem
    attr = CUlaunchAttribute()
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attr.value[0], attr.value[1], attr.value[2] = cluster
    cfg._attr = attr  # noqa: SLF001 - keeps the attribute alive with the config
    cfg.attrs = ctypes.pointer(attr)
    cfg.numAttrs = 1
    return cfg


def launch_kernel_ex(func: int, config: CUlaunchConfig, stream: int, params) -> int:
    """``cuLaunchKernelEx`` with a prepared config (cluster launches); returns the CUresult."""
    config.hStream = stream
    res = libcuda().cuLaunchKernelEx(ctypes.byref(config), func, params, None)
    if res == _CUDA_ERROR_INVALID_CONTEXT:
        ensure_context()
        res = libcuda().cuLaunchKernelEx(ctypes.byref(config), func, params, None)
    return res


def max_active_clusters(func: int, grid, block, smem: int, cluster) -> int:
    """``cuOccupancyMaxActiveClusters`` for a cluster launch (0 when the driver says none)."""
    n = _i32()
    cfg = make_launch_config(grid, block, smem, cluster)
    res = libcuda().cuOccupancyMaxActiveClusters(ctypes.byref(n), func, ctypes.byref(cfg))
    check(res, "cuda", "cuOccupancyMaxActiveClusters")
    return n.value


def tensor_map_encode_tiled(out_addr: int, dtype: int, dims, strides, box, ptr: int,
                            swizzle: int, l2_promotion: int) -> int:
    """``cuTensorMapEncodeTiled`` into the 64-byte aligned 128 bytes at ``out_addr``;
    element strides 1, no interleave, zero OOB fill.  Returns the CUresult."""
    r = len(dims)
    d = (_u64 * r)(*dims)
    s = (_u64 * max(1, r - 1))(*strides)
    b = (_u32 * r)(*box)
    e = (_u32 * r)(*([1] * r))
    return libcuda().cuTensorMapEncodeTiled(out_addr, dtype, r, ptr, d, s, b, e, 0, swizzle,
                                            l2_promotion, 0)
