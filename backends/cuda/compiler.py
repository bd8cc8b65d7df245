"""CUDA C -> CUBIN, with one cache (memory + disk) and the resource report.

``compile_module(source, arch=..., name_expressions=(), options=())`` compiles with NVRTC (the
pip package ``nvidia-cuda-nvrtc`` through ``cuda.bindings.nvrtc``; CuPy's NVRTC binding; or
``nvcc`` as a last resort), keeps the CUBIN, the compiler log and per-kernel registers / spills /
shared memory parsed from ptxas' verbose report, and loads the CUBIN through CuPy on first
``get_function`` (so compiling needs no GPU).

Cache law: two calls with the same (source, options, arch, name expressions, library version,
compiler) compile at most once per process, and at most once per machine while the disk cache
(``$CUTE_PY_CACHE_DIR`` or ``~/.cache/cute_py``) is kept.  ``compile_count()`` counts real
compilations.

Knobs (environment):
    CUTE_PY_CACHE_DIR=<dir>     where compiled modules are kept on disk
    CUTE_PY_DISABLE_DISK_CACHE=1  keep the cache in memory only
    CUTE_PY_DUMP_SOURCE=<dir>   write every source handed to compile_module as <kernel>_<key>.cu
    CUTE_PY_EXPECT_CACHED=1     raise CompileError instead of compiling (a cached run was expected)
    CUTE_PY_COMPILER=nvrtc|cupy|nvcc  force one compiler
    CUTE_PY_LINEINFO=1          add -lineinfo (for compute-sanitizer / ncu source views)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field

from cute_py.errors import CompileError

from . import INCLUDE_DIR

__all__ = [
    "KernelResources", "CompiledModule", "compile_module", "compile_count", "cache_stats",
    "clear_memory_cache", "cache_dir", "parse_ptxas_log", "DEFAULT_OPTIONS", "library_version",
    "normalize_arch", "has_compiler", "build_kernel",
]

#: Options every compilation gets (before the caller's).
DEFAULT_OPTIONS = ("-std=c++17", "--ptxas-options=-v")

_ARCH_RE = re.compile(r"^sm_(\d+)([af]?)$")


@dataclass(frozen=True)
class KernelResources:
    """ptxas' report for one entry function."""

    name: str
    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack_frame: int = 0
    smem_static: int = 0
    barriers: int = 0

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_RE_PROPS = re.compile(r"Function properties for (\S+)")
_RE_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RE_USED = re.compile(r"Used (\d+) registers(.*)")
_RE_BARRIERS = re.compile(r"used (\d+) barriers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(log: str) -> dict[str, KernelResources]:
    """Per entry function: registers, spill stores/loads, stack frame, static smem, barriers.

    Reads the ``ptxas info`` lines that ``--ptxas-options=-v`` (``-Xptxas -v``) writes.
    """
    out: dict[str, dict] = {}
    entry = None
    props = None
    for line in log.splitlines():
        m = _RE_ENTRY.search(line)
        if m:
            entry = m.group(1)
            out.setdefault(entry, {"name": entry})
            continue
        m = _RE_PROPS.search(line)
        if m:
            props = m.group(1)
            continue
        m = _RE_FRAME.search(line)
        if m and props is not None and props in out:
            d = out[props]
            d["stack_frame"], d["spill_stores"], d["spill_loads"] = map(int, m.groups())
            continue
        m = _RE_USED.search(line)
        if m and entry is not None:
            d = out[entry]
            d["registers"] = int(m.group(1))
            rest = m.group(2)
            b = _RE_BARRIERS.search(rest)
            s = _RE_SMEM.search(rest)
            d["barriers"] = int(b.group(1)) if b else 0
            d["smem_static"] = int(s.group(1)) if s else 0
    return {k: KernelResources(**v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------------
# Versions, keys, cache state

_lock = threading.Lock()
_memory: dict[str, "CompiledModule"] = {}
_stats = {"compiles": 0, "memory_hits": 0, "disk_hits": 0}
_lib_version: str | None = None


def library_version() -> str:
    """The package version plus a digest of the shipped CUDA headers (they change the code)."""
    global _lib_version
    if _lib_version is None:
        try:
            from importlib.metadata import version
            v = version("cute_py")
        except Exception:
            v = "0+unknown"
        h = hashlib.sha256()
        for root, dirs, files in os.walk(INCLUDE_DIR):
            dirs.sort()
            for f in sorted(files):
                p = os.path.join(root, f)
                h.update(os.path.relpath(p, INCLUDE_DIR).encode())
                with open(p, "rb") as fh:
                    h.update(fh.read())
        _lib_version = f"{v}+{h.hexdigest()[:16]}"
    return _lib_version


def compile_count() -> int:
    """How many real compilations (cache misses) this process has run."""
    return _stats["compiles"]


def cache_stats() -> dict:
    """``{'compiles': n, 'memory_hits': n, 'disk_hits': n}`` for this process."""
    return dict(_stats)


def clear_memory_cache() -> None:
    """Forget the in-memory cache (the disk cache stays)."""
    with _lock:
        _memory.clear()


def cache_dir() -> str | None:
    """The disk cache folder, or None when ``CUTE_PY_DISABLE_DISK_CACHE=1``."""
    if os.environ.get("CUTE_PY_DISABLE_DISK_CACHE", "") not in ("", "0"):
        return None
    d = os.environ.get("CUTE_PY_CACHE_DIR")
    if not d:
        d = os.path.join(os.path.expanduser("~"), ".cache", "cute_py")
    return d


def normalize_arch(arch: str | None) -> str:
    """``None`` -> the current device's arch (``sm_90a`` on Hopper); validates ``sm_XY[a]``."""
    if arch is None:
        from .device import current_arch, has_gpu
        if not has_gpu():
            raise CompileError("compile_module", "arch=None needs a GPU to read the architecture "
                               "from; pass arch='sm_80' or 'sm_90a'", "", ())
        return current_arch()
    if not isinstance(arch, str) or not _ARCH_RE.match(arch):
        raise CompileError("compile_module", f"arch must look like 'sm_80' or 'sm_90a', got "
                           f"{arch!r}", "", ())
    return arch


# ---------------------------------------------------------------------------------------------
# The compiled module

@dataclass
class CompiledModule:
    """A compiled CUBIN plus what the compiler said about it.

    ``get_function(name)`` returns the kernel as a
    :class:`~cute_py.backends.cuda.kernel.CompiledKernel` (loaded per device on first launch).  ``name`` is an ``extern "C"``
    kernel name or one of the ``name_expressions`` given at compile time.
    """

    source: str
    arch: str
    options: tuple
    key: str
    cubin: bytes
    log: str
    lowered_names: dict = field(default_factory=dict)
    resources: dict = field(default_factory=dict)
    compiler: str = ""
    _kernels: dict = field(default_factory=dict, repr=False)

    def lowered_name(self, name: str) -> str:
        return self.lowered_names.get(name, name)

    def resources_for(self, name: str) -> KernelResources:
        """ptxas' report for kernel ``name`` (extern "C" name or name expression)."""
        low = self.lowered_name(name)
        if not self.resources and low == name and \
                re.search(r"\b" + re.escape(name) + r"\s*\(", self.source) is None:
            raise CompileError("CompiledModule.resources_for", f"no entry function {name!r} "
                               "in the source", self.source, self.options)
        if not self.resources:
            self._report_from_nvcc()
        if not self.resources:
            raise CompileError("CompiledModule.resources_for", "the compiler returned no ptxas "
                               "report (seen with NVRTC 13.0 on a program compiled before in "
                               "the same process); check has_resource_report first",
                               self.source, self.options)
        if low not in self.resources:
            raise CompileError("CompiledModule.resources_for", f"no entry function {name!r}; "
                               f"have {sorted(self.resources)}", self.source, self.options)
        return self.resources[low]

    def _report_from_nvcc(self) -> None:
        """NVRTC 13.0 sometimes returns an empty ptxas log (seen on the GPU machine for programs
        compiled before in the same process); ask ``nvcc`` (same source, same options, on the
        PATH) for the report instead.  The CUBIN in use stays NVRTC's."""
        if self.lowered_names or shutil.which("nvcc") is None:
            return
        ok, _, log, _ = _compile_nvcc(self.source, f"{_kernel_hint(self.source)}.cu",
                                      (f"--include-path={INCLUDE_DIR}", *self.options), ())
        if ok:
            self.resources = parse_ptxas_log(log)

    @property
    def has_resource_report(self) -> bool:
        """Whether a ptxas report is available (NVRTC's, or ``nvcc``'s when NVRTC 13.0
        returned an empty log)."""
        if not self.resources:
            self._report_from_nvcc()
        return bool(self.resources)

    def max_spills(self) -> int:
        return max((r.spills for r in self.resources.values()), default=0)

    def get_function(self, name: str, spec=None):
        """The kernel ``name`` as a :class:`~cute_py.backends.cuda.kernel.CompiledKernel`
        (loaded into a device's context on its first launch)."""
        from .kernel import CompiledKernel
        low = self.lowered_name(name)
        if not self.lowered_names and low == name and \
                re.search(r"\b" + re.escape(name) + r"\s*\(", self.source) is None:
            raise CompileError("CompiledModule.get_function", f"no kernel {name!r} in the "
                               "source", self.source, self.options)
        k = self._kernels.get((name, spec))
        if k is None:
            k = self._kernels[(name, spec)] = CompiledKernel(
                self, name, spec=spec, resources=self.resources.get(low, KernelResources(low)))
        return k


# ---------------------------------------------------------------------------------------------
# Compilers

def _kernel_hint(source: str) -> str:
    m = re.search(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\([^)]*\)\s*)?(?:void\s+)?(\w+)",
                  source)
    return m.group(1) if m else "module"


def has_compiler() -> bool:
    """Whether :func:`compile_module` has a compiler here (NVRTC through cuda-bindings or CuPy,
    or nvcc on PATH; ``CUTE_PY_COMPILER`` forces one)."""
    try:
        _which_compiler()
        return True
    except CompileError:
        return False


def _which_compiler() -> str:
    forced = os.environ.get("CUTE_PY_COMPILER", "")
    if forced:
        return forced
    try:
        from cuda.bindings import nvrtc  # noqa: F401
        return "nvrtc"
    except Exception:
        pass
    try:
        import cupy_backends.cuda.libs.nvrtc  # noqa: F401
        return "cupy"
    except Exception:
        pass
    if shutil.which("nvcc"):
        return "nvcc"
    raise CompileError("compile_module", "no CUDA compiler: install nvidia-cuda-nvrtc and "
                       "cuda-bindings (pip), or CuPy, or put nvcc on PATH", "", ())


def _compiler_id(kind: str) -> str:
    try:
        if kind == "nvrtc":
            from cuda.bindings import nvrtc
            _, major, minor = nvrtc.nvrtcVersion()
            return f"nvrtc-{major}.{minor}"
        if kind == "cupy":
            from cupy_backends.cuda.libs import nvrtc
            major, minor = nvrtc.getVersion()
            return f"cupy-nvrtc-{major}.{minor}"
        if kind == "nvcc":
            out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
            m = re.search(r"release (\S+),", out)
            return f"nvcc-{m.group(1) if m else '?'}"
    except Exception:
        pass
    return kind


def _compile_nvrtc(source, name, options, name_expressions):
    from cuda.bindings import nvrtc

    def check(res, what):
        err = res[0] if isinstance(res, tuple) else res
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"{what}: {err}")
        return res[1:] if isinstance(res, tuple) and len(res) > 1 else None

    (prog,) = check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []),
                    "nvrtcCreateProgram")
    try:
        for ne in name_expressions:
            check(nvrtc.nvrtcAddNameExpression(prog, ne.encode()), "nvrtcAddNameExpression")
        opts = [o.encode() for o in options]
        res = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        ok = res[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS
        (n,) = check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        buf = b" " * n
        check(nvrtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
        log = buf.rstrip(b"\x00").decode(errors="replace")
        if not ok:
            return False, b"", log, {}
        (n,) = check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * n
        check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
        lowered = {}
        for ne in name_expressions:
            (low,) = check(nvrtc.nvrtcGetLoweredName(prog, ne.encode()), "nvrtcGetLoweredName")
            lowered[ne] = low.decode() if isinstance(low, bytes) else low
        return True, bytes(cubin), log, lowered
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _compile_cupy(source, name, options, name_expressions):
    from cupy_backends.cuda.libs import nvrtc
    prog = nvrtc.createProgram(source, name, (), ())
    try:
        for ne in name_expressions:
            nvrtc.addNameExpression(prog, ne)
        try:
            nvrtc.compileProgram(prog, list(options))
            ok = True
        except nvrtc.NVRTCError:
            ok = False
        log = nvrtc.getProgramLog(prog)
        if isinstance(log, bytes):
            log = log.decode(errors="replace")
        log = log.rstrip("\x00")
        if not ok:
            return False, b"", log, {}
        cubin = nvrtc.getCUBIN(prog)
        lowered = {ne: nvrtc.getLoweredName(prog, ne) for ne in name_expressions}
        return True, bytes(cubin), log, lowered
    finally:
        nvrtc.destroyProgram(prog)


def _nvcc_options(options, arch):
    out = []
    for o in options:
        if o.startswith("--gpu-architecture="):
            a = o.split("=", 1)[1]
            cc = a[3:]
            out.append(f"-gencode=arch=compute_{cc},code={a}")
        elif o.startswith("--ptxas-options="):
            out += ["-Xptxas", o.split("=", 1)[1]]
        elif o.startswith("--include-path="):
            out.append("-I" + o.split("=", 1)[1])
        else:
            out.append(o)
    return out


def _compile_nvcc(source, name, options, name_expressions):
    if name_expressions:
        raise CompileError("compile_module", "name_expressions need NVRTC; the nvcc fallback "
                           "only finds extern \"C\" kernels", source, options)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, name)
        out = os.path.join(tmp, "out.cubin")
        with open(src, "w") as f:
            f.write(source)
        cmd = ["nvcc", "-cubin", *_nvcc_options(options, None), "-o", out, src]
        p = subprocess.run(cmd, capture_output=True, text=True)
        log = p.stdout + p.stderr
        if p.returncode != 0:
            return False, b"", log, {}
        with open(out, "rb") as f:
            return True, f.read(), log, {}


_COMPILERS = {"nvrtc": _compile_nvrtc, "cupy": _compile_cupy, "nvcc": _compile_nvcc}


# ---------------------------------------------------------------------------------------------
# Disk cache

def _disk_paths(key: str):
    d = cache_dir()
    if d is None:
        return None
    sub = os.path.join(d, key[:2])
    return sub, os.path.join(sub, key + ".cubin"), os.path.join(sub, key + ".json")


def _disk_load(key: str):
    paths = _disk_paths(key)
    if paths is None:
        return None
    _, cubin_p, meta_p = paths
    try:
        with open(meta_p) as f:
            meta = json.load(f)
        with open(cubin_p, "rb") as f:
            cubin = f.read()
    except (OSError, ValueError):
        return None
    if hashlib.sha256(cubin).hexdigest() != meta.get("cubin_sha256"):
        return None
    return cubin, meta


def _disk_store(key: str, cubin: bytes, meta: dict) -> None:
    paths = _disk_paths(key)
    if paths is None:
        return
    sub, cubin_p, meta_p = paths
    try:
        os.makedirs(sub, exist_ok=True)
        for path, data, mode in ((cubin_p, cubin, "wb"),
                                 (meta_p, json.dumps(meta, sort_keys=True), "w")):
            fd, tmp = tempfile.mkstemp(dir=sub)
            with os.fdopen(fd, mode) as f:
                f.write(data)
            os.replace(tmp, path)
    except OSError:
        pass  # a read-only or full disk only costs a recompile next time


def _dump_source(source: str, key: str) -> None:
    d = os.environ.get("CUTE_PY_DUMP_SOURCE")
    if not d:
        return
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"{_kernel_hint(source)}_{key[:12]}.cu"), "w") as f:
        f.write(source)


# ---------------------------------------------------------------------------------------------
# Entry point

def compile_module(source: str, *, arch: str | None = "sm_90a", name_expressions=(),
                   options=()) -> CompiledModule:
    """Compile CUDA C ``source`` for ``arch`` (``'sm_80'``, ``'sm_90a'``, or None = current GPU).

    The shipped include folder (``cute_py/prelude.cuh`` ...) is on the include path; the
    options are ``DEFAULT_OPTIONS + options`` plus ``--gpu-architecture=<arch>``.  Returns a
    :class:`CompiledModule` (CUBIN, log, per-kernel :class:`KernelResources`); raises
    :class:`~cute_py.errors.CompileError` carrying the log and the numbered source on failure,
    or when ``CUTE_PY_EXPECT_CACHED=1`` and the module is not cached.
    """
    if not isinstance(source, str) or not source.strip():
        raise CompileError("compile_module", "source must be a non-empty str", str(source), ())
    arch = normalize_arch(arch)
    name_expressions = tuple(name_expressions)
    opts = (*DEFAULT_OPTIONS, f"--gpu-architecture={arch}", *tuple(options))
    if os.environ.get("CUTE_PY_LINEINFO", "") not in ("", "0"):
        opts = (*opts, "-lineinfo")
    kind = _which_compiler()
    if kind not in _COMPILERS:
        raise CompileError("compile_module", f"CUTE_PY_COMPILER={kind!r} is not one of "
                           f"{sorted(_COMPILERS)}", source, opts)
    cid = _compiler_id(kind)
    key = hashlib.sha256(json.dumps(
        [source, list(opts), arch, list(name_expressions), library_version(), cid]
    ).encode()).hexdigest()
    _dump_source(source, key)

    with _lock:
        hit = _memory.get(key)
        if hit is not None:
            _stats["memory_hits"] += 1
            return hit

    loaded = _disk_load(key)
    if loaded is not None:
        cubin, meta = loaded
        mod = CompiledModule(source=source, arch=arch, options=opts, key=key, cubin=cubin,
                             log=meta["log"], lowered_names=meta["lowered_names"],
                             resources=parse_ptxas_log(meta["log"]), compiler=cid)
        with _lock:
            _stats["disk_hits"] += 1
            return _memory.setdefault(key, mod)

    if os.environ.get("CUTE_PY_EXPECT_CACHED", "") not in ("", "0"):
        raise CompileError("compile_module", f"CUTE_PY_EXPECT_CACHED=1 but kernel "
                           f"{_kernel_hint(source)!r} (key {key[:12]}) is not cached",
                           source, opts)

    all_opts = (f"--include-path={INCLUDE_DIR}", *opts)
    ok, cubin, log, lowered = _COMPILERS[kind](source, f"{_kernel_hint(source)}.cu", all_opts,
                                               name_expressions)
    with _lock:
        _stats["compiles"] += 1
    if not ok:
        raise CompileError("compile_module", log, source, opts)
    mod = CompiledModule(source=source, arch=arch, options=opts, key=key, cubin=cubin, log=log,
                         lowered_names=lowered, resources=parse_ptxas_log(log), compiler=cid)
    _disk_store(key, cubin, {"log": log, "lowered_names": lowered, "arch": arch,
                             "options": list(opts), "compiler": cid,
                             "cubin_sha256": hashlib.sha256(cubin).hexdigest()})
    with _lock:
        return _memory.setdefault(key, mod)


def build_kernel(spec):
    """Compile a :class:`~cute_py.backends.cuda.kernel.KernelSpec` (cached on source + options
    + arch) into its :class:`~cute_py.backends.cuda.kernel.CompiledKernel`."""
    mod = compile_module(spec.source, arch=spec.arch, options=spec.options)
    return mod.get_function(spec.entry, spec=spec)
