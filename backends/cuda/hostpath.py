"""The native host path: an optional C accelerator of two hot Python paths.

``backends/cuda/native/hostpath.c`` builds (at install, where a C compiler and Python's
headers exist) into ``_hostpath``, holding:

- ``Launcher``: the patch-and-launch step of :meth:`~.kernel.LaunchPlan.run` -- each call's
  pointers written into the packed parameters, f32 / f64 scalars when they change, then
  ``cuLaunchKernel`` (``cuLaunchKernelEx`` for clusters) with the GIL held;
- ``gemm_fast``: :func:`~.gemm_api.gemm_entry`'s torch fast path, statement for statement (its
  key is :func:`~.gemm_api._fast_key`'s tuple).

Law: with or without the extension, every call launches the same kernel with the same
parameter bytes on the same stream and raises the same errors; the Python code is the
reference (tests run both against a recording stand-in driver).  ``CUTE_PY_NATIVE=0`` in the
environment turns the extension off."""

from __future__ import annotations

import os

__all__ = ["NATIVE", "launcher"]

NATIVE = None
if os.environ.get("CUTE_PY_NATIVE", "1") != "0":
    try:
        from . import _hostpath as NATIVE
    except ImportError:        # not built here: the Python paths run
        NATIVE = None

_SCALAR_F64 = {"f32": False, "f64": True}


def launcher(pack, ptr_slots, scalar_slots, func: int, grid, block, smem: int, launch: int,
             config=None):
    """A native ``Launcher`` for a plan, or None (no extension, or a scalar parameter that is
    not f32 / f64).  ``ptr_slots``: ``(word, role)``; ``scalar_slots``: ``(param, role)``;
    ``func``: the ``CUfunction``; ``launch``: the address of ``cuLaunchKernel`` (``config``
    None) or of ``cuLaunchKernelEx`` (``config``: a ``CUlaunchConfig`` kept alive by the
    launcher)."""
    if NATIVE is None:
        return None
    import ctypes
    scal = []
    for i, r in scalar_slots:
        f64 = _SCALAR_F64.get(pack.kinds[i])
        if f64 is None:
            return None
        scal.append((pack.offsets[i], r, f64))
    params = ctypes.cast(pack.params, ctypes.c_void_p).value
    cfg = 0 if config is None else ctypes.addressof(config)
    return NATIVE.Launcher(func, tuple(grid), tuple(block), smem, params, pack.base, pack.size,
                           tuple(ptr_slots), tuple(scal), launch, cfg, (pack, config))
