"""The one compiled-kernel type and its packed parameters.

:class:`KernelSpec` is the frozen description of a kernel (source, entry name, typed parameters,
block, cluster, dynamic shared memory, arch); ``compiler.build_kernel`` compiles it once (the
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
import threading
from dataclasses import dataclass

from cute_py.errors import LaunchError

from . import driver

__all__ = ["PARAM_KINDS", "Param", "KernelSpec", "ArgPack", "CompiledKernel", "LaunchPlan",
           "make_plan"]

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

    def tobytes(self) -> bytes:
        return bytes(self._raw)


class CompiledKernel:
    """A compiled kernel, loaded lazily per device through the driver.

    ``launch(grid, block, args, smem=, stream=, specs=)`` checks ``args`` (NumPy scalars, CuPy
    arrays, or values converted by ``specs``: ``launch.launch``); ``launch_pack(grid, pack,
    stream)`` is the plan path (no checks, no conversions).  ``resources`` is ptxas' report."""

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
        """``launch(stream) -> CUresult``: this kernel's launch with every other argument fixed
        (a launch plan's hot path; the kernel must be loaded on ``device`` and its shared-memory
        limit set): ``cuLaunchKernel``, or ``cuLaunchKernelEx`` with a prepared config for
        clusters.  The driver entry points are the untyped ones
        (:func:`~cute_py.backends.cuda.driver.untyped_launchers`): the function, parameter
        array and config are bound as ``ctypes`` objects, the stream's ``c_void_p`` is kept per
        handle (a small table, cleared when it grows past 64 streams)."""
        plain, ex = driver.untyped_launchers()
        handle, (g0, g1, g2), (b0, b1, b2), smem = self._launch_shape(grid, block, smem, device)
        func = ctypes.c_void_p(handle)
        params = ctypes.cast(pack.params, ctypes.c_void_p)
        streams: dict = {}

        def handle_of(stream):
            s = streams.get(stream)
            if s is None:
                if len(streams) >= 64:
                    streams.clear()
                s = streams[stream] = ctypes.c_void_p(stream)
            return s

        if self.cluster == (1, 1, 1):
            def launch(stream):
                return plain(func, g0, g1, g2, b0, b1, b2, smem, handle_of(stream), params,
                             None)
            return launch
        cfg = driver.make_launch_config((g0, g1, g2), (b0, b1, b2), smem, self.cluster)
        cfg_ref = ctypes.byref(cfg)

        def launch_ex(stream):
            cfg.hStream = stream
            return ex(cfg_ref, func, params, None)
        launch_ex.keep = cfg
        return launch_ex

    def native_launcher(self, grid, pack: ArgPack, ptr_slots, scalar_slots, *, block=None,
                        smem=None, device: int):
        """The native ``Launcher`` of a plan (:func:`~.hostpath.launcher`: patch the pointer
        words ``ptr_slots`` and the scalars ``scalar_slots``, then the same driver call as
        :meth:`bound_launcher`), or None where the extension is absent."""
        from .hostpath import NATIVE, launcher
        if NATIVE is None:
            return None
        plain, ex = driver.untyped_launchers()
        func, grid, block, smem = self._launch_shape(grid, block, smem, device)
        if self.cluster == (1, 1, 1):
            return launcher(pack, ptr_slots, scalar_slots, func, grid, block, smem,
                            ctypes.cast(plain, ctypes.c_void_p).value)
        cfg = driver.make_launch_config(grid, block, smem, self.cluster)
        return launcher(pack, ptr_slots, scalar_slots, func, grid, block, smem,
                        ctypes.cast(ex, ctypes.c_void_p).value, cfg)

    def _launch_shape(self, grid, block, smem, device: int):
        """``(CUfunction, grid, block, dynamic smem)`` of a bound launch on ``device``:
        the kernel's own block and shared memory where not given."""
        smem = self.spec.smem if smem is None and self.spec is not None else (smem or 0)
        return self.handle(device), tuple(grid), tuple(block or self.block), smem

    def __repr__(self):
        return f"CompiledKernel({self.name!r}, {self.resources})"


class LaunchPlan:
    """A checked launch of one kernel for fixed shapes, strides, dtypes and alignment classes:
    the packed kernel parameters, the grid, and where each call's pointers and scalars go.  ``run(ptrs, scalars, stream)`` patches them into the pack and launches — a
    pointer is one 64-bit word (a kernel argument, or a ``CUtensorMap``'s global-address word
    where :func:`~cute_py.backends.cuda.tma.address_word_patchable` verified that; otherwise
    the descriptor is encoded again).  ``roles`` names the pointers in ``ptrs`` order,
    ``scalar_roles`` the scalars.  ``workspace``: ``(fp32 elements, int32 counters)`` of the
    scratch memory the kernel needs beside its arguments (a split-K / stream-K GEMM's partials
    and tile counters or flags; the caller passes their pointers), ``(0, 0)`` for none."""

    __slots__ = ("kernel", "device", "grid", "block", "smem", "pack", "ptr_slots",
                 "encode_slots", "scalar_slots", "roles", "scalar_roles", "resets",
                 "workspace", "_last", "_launch", "_lock", "_native")

    def run(self, ptrs, scalars=(), stream: int = 0) -> None:
        # the native launcher (hostpath) patches and launches holding the GIL; it exists from
        # the plan's first launch on, and then every launch of the plan goes through it (one
        # record of the scalars written)
        if self._native is not None:
            return self._run_native(ptrs, scalars, stream)
        # the driver reads the pack during the call (ctypes releases the GIL): one thread at a
        # time patches and launches
        with self._lock:
            if self._native is not None:        # made by another thread meanwhile
                return self._run_native(ptrs, scalars, stream)
            pack = self.pack
            words = pack.words
            for w, r in self.ptr_slots:
                words[w] = ptrs[r]
            if self.encode_slots:
                for i, atom, l2, r in self.encode_slots:
                    pack.set(i, atom(ptrs[r], l2))
            if scalars != self._last:
                for i, r in self.scalar_slots:
                    pack.set(i, scalars[r])
                self._last = scalars
            launch = self._launch
            if launch and not launch(stream):
                return
            self.kernel.launch_pack(self.grid, pack, stream, device=self.device)
            if launch is None:
                if not self.encode_slots:
                    self._native = self.kernel.native_launcher(
                        self.grid, pack, self.ptr_slots, self.scalar_slots, block=self.block,
                        smem=self.smem, device=self.device)
                    if self._native is not None:
                        return
                self._launch = self.kernel.bound_launcher(
                    self.grid, pack, block=self.block, smem=self.smem, device=self.device) \
                    or False

    def _run_native(self, ptrs, scalars, stream) -> None:
        """Launch through the native launcher; a thread without a current context makes the
        plan's device current and launches again, any other failure raises."""
        res = self._native(ptrs, scalars, stream)
        if res == driver.CUDA_ERROR_INVALID_CONTEXT:
            driver.ensure_context(self.device)
            res = self._native(ptrs, scalars, stream)
        if res:
            driver.check(res, f"launch({self.kernel.name})", "cuLaunchKernel")


def make_plan(kernel: CompiledKernel, device: int, grid, block, smem: int, params, roles=(),
              scalar_roles=()) -> LaunchPlan:
    """A :class:`LaunchPlan` from ``params``: one ``(kind, value, role)`` per kernel parameter.

    ``role`` None: a fixed value (``value``); ``"$name"``: a per-call scalar named ``name``;
    any other string: a per-call pointer of that role (``value`` None), or for ``kind`` "tmap"
    a descriptor whose global address is that pointer (``value`` = ``(encode(ptr, l2), l2,
    ptr0)``: encoded once at ``ptr0``, then patched — one address word — or re-encoded per call
    where :func:`~cute_py.backends.cuda.tma.address_word_patchable` says patching is unsafe).
    ``roles`` / ``scalar_roles`` fix the first pointer / scalar positions (the caller's calling
    convention); further names are appended in order of appearance.  A plan above the
    default 48 KB of dynamic shared memory raises the kernel's limit on ``device`` first."""
    from .tma import address_word_patchable
    if smem > 48 * 1024:
        kernel.ensure_smem(smem, device)
    pack = ArgPack([k for k, _, _ in params])
    roles, scalar_roles = list(roles), list(scalar_roles)
    patch = address_word_patchable()
    ptr_slots, encode_slots, scalar_slots = [], [], []
    for i, (kind, value, role) in enumerate(params):
        if role is None:
            pack.set(i, value)
            continue
        if role.startswith("$"):
            name = role[1:]
            if name not in scalar_roles:
                scalar_roles.append(name)
            scalar_slots.append((i, scalar_roles.index(name)))
            continue
        if role not in roles:
            roles.append(role)
        r = roles.index(role)
        if kind == "tmap":
            encode, l2, ptr0 = value
            pack.set(i, encode(ptr0, l2))
            if patch:
                ptr_slots.append((pack.word(i), r))
            else:
                encode_slots.append((i, encode, l2, r))
        else:
            ptr_slots.append((pack.word(i), r))
    plan = LaunchPlan()
    plan.kernel, plan.device, plan.grid = kernel, device, tuple(grid)
    plan.block, plan.smem, plan.pack = tuple(block), smem, pack
    plan.ptr_slots, plan.encode_slots = tuple(ptr_slots), tuple(encode_slots)
    plan.scalar_slots, plan.roles = tuple(scalar_slots), tuple(roles)
    plan.scalar_roles, plan.resets, plan.workspace = tuple(scalar_roles), (), (0, 0)
    plan._last, plan._launch, plan._lock, plan._native = None, None, threading.Lock(), None
    return plan
