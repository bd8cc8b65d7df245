"""The one compiled-kernel type and its packed parameters.

:class:`KernelSpec` is the frozen description of a kernel (source, entry name, typed parameters,
block, cluster, dynamic shared memory, arch); :func:`build_kernel` compiles it once (the
compiler's cache) into a :class:`CompiledKernel`.  Every kernel the backend runs is a
``CompiledKernel`` — copies, tiled copies, SM80 and SM90 GEMMs, the epilogue test kernels — and
every launch goes through :meth:`CompiledKernel.launch_pack` (``cuLaunchKernel``, or
``cuLaunchKernelEx`` for clusters).

:class:`ArgPack` holds a kernel's parameters packed once in their C layout (a ``CUtensorMap``
64-byte aligned, scalars at their natural alignment); a launch plan patches only what changes
between calls (pointers: one 64-bit word each, see :meth:`ArgPack.word`).

Law: ``launch_pack`` passes exactly the bytes of the pack, in parameter order, to the kernel on
the given stream; a failing driver call raises :class:`~cute_py.errors.LaunchError`.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass

from cute_py.errors import LaunchError

from . import driver

__all__ = ["PARAM_KINDS", "Param", "KernelSpec", "ArgPack", "CompiledKernel", "build_kernel"]

#: parameter kind -> (bytes, alignment, struct format; None for a 128-byte CUtensorMap)
PARAM_KINDS = {"ptr": (8, 8, "Q"), "u64": (8, 8, "Q"), "i64": (8, 8, "q"), "i32": (4, 4, "i"),
               "u32": (4, 4, "I"), "f32": (4, 4, "f"), "f64": (8, 8, "d"), "tmap": (128, 64, None)}


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name (for errors) and kind (a key of PARAM_KINDS)."""

    name: str
    kind: str

    def __post_init__(self):
        if self.kind not in PARAM_KINDS:
            raise LaunchError("Param", "kind", "is not a parameter kind",
                              expected=sorted(PARAM_KINDS), actual=self.kind)


@dataclass(frozen=True)
class KernelSpec:
    """A kernel as the backend builds it: the value every generator returns.

    ``params`` may be None for kernels launched with per-call checked arguments
    (:func:`~cute_py.backends.cuda.launch.launch`); ``smem`` is the dynamic shared memory of a
    launch, ``cluster`` the thread-block cluster shape (``(1, 1, 1)``: none)."""

    source: str
    entry: str
    params: tuple | None = None
    block: tuple = (128, 1, 1)
    cluster: tuple = (1, 1, 1)
    smem: int = 0
    arch: str | None = "sm_90a"
    options: tuple = ()


class ArgPack:
    """Kernel parameters in one buffer, laid out as the C ABI lays them out.

    ``set(i, value)`` writes parameter ``i``; ``word(i)`` is the index of its first 64-bit word
    in ``words`` (a pointer parameter, or a ``CUtensorMap``'s global-address word), so a plan
    patches a pointer with ``pack.words[w] = ptr``."""

    __slots__ = ("kinds", "offsets", "size", "_buf", "base", "words", "params", "_raw")

    def __init__(self, kinds):
        self.kinds = tuple(kinds)
        offs, pos = [], 0
        for k in self.kinds:
            if k not in PARAM_KINDS:
                raise LaunchError("ArgPack", "kinds", "has an unknown parameter kind",
                                  expected=sorted(PARAM_KINDS), actual=k)
            size, align, _ = PARAM_KINDS[k]
            pos = -(-pos // align) * align
            offs.append(pos)
            pos += size
        self.offsets = tuple(offs)
        self.size = max(8, -(-pos // 8) * 8)
        self._buf = ctypes.create_string_buffer(self.size + 64)
        addr = ctypes.addressof(self._buf)
        self.base = addr + (-addr) % 64
        self._raw = (ctypes.c_char * self.size).from_address(self.base)
        self.words = memoryview(self._raw).cast("B").cast("Q")
        self.params = (ctypes.c_void_p * max(1, len(offs)))(*[self.base + o for o in offs])

    def set(self, i: int, value) -> None:
        kind = self.kinds[i]
        fmt = PARAM_KINDS[kind][2]
        if fmt is None:
            if len(value) != 128:
                raise LaunchError("ArgPack.set", f"param {i}", "a CUtensorMap is 128 bytes",
                                  actual=len(value))
            ctypes.memmove(self.base + self.offsets[i], bytes(value), 128)
        else:
            struct.pack_into("<" + fmt, self._raw, self.offsets[i], value)

    def word(self, i: int) -> int:
        off = self.offsets[i]
        if off % 8:
            raise LaunchError("ArgPack.word", f"param {i}", "is not 8-byte aligned")
        return off // 8

    def address(self, i: int) -> int:
        return self.base + self.offsets[i]

    def tobytes(self) -> bytes:
        return bytes(self._raw)


class CompiledKernel:
    """A compiled kernel, loaded lazily per device through the driver.

    ``launch(grid, block, args, smem=, stream=, specs=)`` checks ``args`` (NumPy scalars, CuPy
    arrays, or values converted by ``specs``) and launches; ``launch_pack(grid, pack, stream)``
    is the plan path (no checks, no conversions).  ``resources`` is ptxas' report."""

    def __init__(self, module, name: str, *, spec: KernelSpec | None = None, resources=None):
        self.module = module
        self.name = name
        self.spec = spec
        self.resources = resources
        self.block = tuple(spec.block) if spec is not None else None
        self.cluster = tuple(spec.cluster) if spec is not None else (1, 1, 1)
        self._handles: dict = {}   # device -> (CUfunction, max dynamic smem set)
        self._keep: dict = {}
        self._launch_cfg: dict = {}

    # -- loading ---------------------------------------------------------------------------
    def _entry(self, device: int | None):
        dev = driver.ensure_context() if device is None else device
        h = self._handles.get(dev)
        if h is None:
            driver.ensure_context(dev)
            mod, keep = driver.load_module(self.module.cubin)
            low = self.module.lowered_name(self.name)
            func = driver.module_function(mod, low)
            self._keep[dev] = (mod, keep)
            h = self._handles[dev] = [func, 48 * 1024]
        return h

    def handle(self, device: int | None = None) -> int:
        """The ``CUfunction`` in ``device``'s primary context (default: the current one)."""
        return self._entry(device)[0]

    def ensure_smem(self, smem: int, device: int | None = None) -> None:
        """Raise the kernel's dynamic shared-memory limit to ``smem`` bytes (once)."""
        h = self._entry(device)
        func = h[0]
        if smem > h[1]:
            static = self.resources.smem_static if self.resources is not None else 0
            from .device import device_properties
            limit = device_properties().smem_per_block_optin
            if smem + static > limit:
                raise LaunchError(f"launch({self.name})", "smem", "exceeds the device's shared "
                                  "memory per block", expected=f"<= {limit - static} dynamic "
                                  "bytes", actual=smem)
            driver.set_max_dynamic_smem(func, smem)
            h[1] = smem

    def set_max_dynamic_smem(self, nbytes: int) -> None:
        self.ensure_smem(int(nbytes))

    # -- launching -------------------------------------------------------------------------
    def launch_pack(self, grid, pack: ArgPack, stream: int = 0, *, block=None, smem=None,
                    device: int | None = None) -> None:
        """Launch with packed parameters on ``stream`` (a raw ``CUstream`` handle)."""
        spec = self.spec
        block = block or self.block
        smem = spec.smem if smem is None and spec is not None else (smem or 0)
        func = self.handle(device)
        if self.cluster != (1, 1, 1):
            key = (func, tuple(grid), tuple(block), smem)
            cfg = self._launch_cfg.get(key)
            if cfg is None:
                cfg = self._launch_cfg[key] = driver.make_launch_config(grid, block, smem,
                                                                       self.cluster)
            res = driver.launch_kernel_ex(func, cfg, stream, pack.params)
        else:
            res = driver.launch_kernel(func, grid, block, smem, stream, pack.params)
        if res:
            driver.check(res, f"launch({self.name})", "cuLaunchKernel")

    def bound_launcher(self, grid, pack: ArgPack, *, block=None, smem=None, device: int):
        """``launch(stream) -> CUresult``: this kernel's ``cuLaunchKernel`` with every other
        argument fixed (a launch plan's hot path; the kernel must be loaded on ``device`` and
        its shared-memory limit set).  Cluster kernels return None (use launch_pack)."""
        if self.cluster != (1, 1, 1):
            return None
        fn = driver.libcuda().cuLaunchKernel
        func = self.handle(device)
        (g0, g1, g2), (b0, b1, b2) = grid, block or self.block
        smem = self.spec.smem if smem is None and self.spec is not None else (smem or 0)
        params = pack.params
        return lambda stream: fn(func, g0, g1, g2, b0, b1, b2, smem, stream, params, None)

    def __call__(self, grid, block, args, *, smem: int = 0, stream=None, specs=None):
        from .launch import launch
        return launch(self, grid, block, args, smem=smem, stream=stream, specs=specs)

    def __repr__(self):
        return f"CompiledKernel({self.name!r}, {self.resources})"


def build_kernel(spec: KernelSpec) -> CompiledKernel:
    """Compile ``spec`` (cached by the compiler on source + options + arch) into its kernel."""
    from .compiler import compile_module
    mod = compile_module(spec.source, arch=spec.arch, options=spec.options)
    return mod.get_function(spec.entry, spec=spec)
