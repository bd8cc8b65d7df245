"""Is there a GPU, and what is it?  Answers without raising when CuPy or a driver is missing."""

from __future__ import annotations

import functools
from dataclasses import dataclass

__all__ = ["has_gpu", "DeviceProperties", "device_properties", "current_arch", "arch_for_cc"]


@functools.lru_cache(maxsize=None)
def has_gpu() -> bool:
    """True when CuPy imports and the CUDA runtime reports at least one device."""
    try:
        import cupy  # noqa: F401
        from cupy.cuda import runtime
        return runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device: all mean "no GPU"
        return False


@dataclass(frozen=True)
class DeviceProperties:
    """The properties kernels are sized from."""

    name: str
    cc: tuple[int, int]
    sm_count: int
    smem_per_block_optin: int  # bytes a block may get after cudaFuncSetAttribute
    smem_per_sm: int
    l2_bytes: int
    regs_per_sm: int
    max_threads_per_block: int

    @property
    def arch(self) -> str:
        """The NVRTC architecture for this device (``sm_90a`` on Hopper, else ``sm_XY``)."""
        return arch_for_cc(self.cc)


def arch_for_cc(cc: tuple[int, int]) -> str:
    """``(9, 0) -> 'sm_90a'`` (arch-specific features: wgmma, setmaxnreg); ``(8, 0) -> 'sm_80'``."""
    major, minor = cc
    suffix = "a" if (major, minor) in ((9, 0), (10, 0), (10, 1), (12, 0)) else ""
    return f"sm_{major}{minor}{suffix}"


@functools.lru_cache(maxsize=None)
def device_properties(device_id: int | None = None) -> DeviceProperties:
    """Properties of ``device_id`` (default: CuPy's current device). Needs a GPU."""
    import cupy
    from cupy.cuda import runtime
    if device_id is None:
        device_id = cupy.cuda.Device().id
    p = runtime.getDeviceProperties(device_id)
    name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    return DeviceProperties(
        name=name,
        cc=(int(p["major"]), int(p["minor"])),
        sm_count=int(p["multiProcessorCount"]),
        smem_per_block_optin=int(p.get("sharedMemPerBlockOptin", p["sharedMemPerBlock"])),
        smem_per_sm=int(p.get("sharedMemPerMultiprocessor", 0)),
        l2_bytes=int(p.get("l2CacheSize", 0)),
        regs_per_sm=int(p.get("regsPerMultiprocessor", 0)),
        max_threads_per_block=int(p["maxThreadsPerBlock"]),
    )


def current_arch() -> str:
    """The NVRTC architecture of the current device; raises when there is no GPU."""
    return device_properties().arch
