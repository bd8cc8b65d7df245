"""Tiled copies between any two layouts of the same shape: ``dst(c) = src(c)`` for every c.

Planning (pure Python, no GPU):

1. Both layouts are flattened, jointly refined to common modes, stripped of size-1 modes and
   jointly coalesced (modes reordered by destination stride: a copy may visit the domain in any
   order).  Each common mode is ``(size, src_stride, dst_stride)``.
2. If one mode is contiguous (stride 1) in both, or only one side has a contiguous mode, the copy
   goes **through registers**: each thread moves ``U`` vectors of ``V`` elements, ``V`` the
   largest power of two with ``V * elem_bytes <= 16`` that divides the contiguous mode, every
   other stride and both base-pointer alignments (CuTe's ``max_common_vector``).
3. If the contiguous modes differ (a transpose), the copy goes **through a swizzled shared-memory
   tile** of ``T x T`` elements over the two contiguous modes: coalesced vector loads along the
   source's contiguous mode, ``Swizzle<3, log2(16/E), log2(T)>`` on the tile offsets, a barrier,
   then per-thread gathers of ``Vb`` rows and coalesced vector stores along the destination's
   contiguous mode.  All other modes index the grid.

Residues are predicated with CuTe's identity-tensor rule: an access happens iff its coordinate
is ``elem_less`` than the shape (vectors never straddle the edge, since ``V`` divides the mode).
All index arithmetic is built in the IR (:mod:`..ir`) from the layouts and rendered through
:mod:`..render`; the source for a plan is deterministic (golden copies in tests/backend/golden).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from cute_py.errors import AtomError, LaunchError, LayoutError

from .. import ir, lower
from ..builder import KernelBuilder
from .vector_access import ETYPE, VTYPE, guarded, load, pack, store

__all__ = ["CopyPlan", "CopyConfig", "plan_copy", "copy_source", "CopyKernel", "build_copy",
           "copy", "transpose", "simulate", "common_modes", "max_common_vector", "SHIPPED_CONFIGS"]



@dataclass(frozen=True)
class CopyConfig:
    """Knobs of the planner's kernels (``copy(..., tiled_copy=TiledCopy)`` takes the
    :mod:`.tiled_copy` path instead)."""

    threads: int = 256
    bytes_per_thread: int = 64   # register path: U = bytes_per_thread // (V * E) vectors
    tile: int | None = None      # transpose path tile edge; None: 64 (128 for 1- and 2-byte types)

    def __post_init__(self):
        if self.threads not in (32, 64, 128, 256, 512, 1024):
            raise AtomError("CopyConfig", "threads", "must be a power of two in [32, 1024]",
                            actual=self.threads)
        if self.bytes_per_thread < 1 or self.bytes_per_thread & (self.bytes_per_thread - 1):
            raise AtomError("CopyConfig", "bytes_per_thread", "must be a power of two",
                            actual=self.bytes_per_thread)
        if self.tile is not None and (self.tile < 16 or self.tile & (self.tile - 1)):
            raise AtomError("CopyConfig", "tile", "must be a power of two >= 16",
                            actual=self.tile)


@dataclass(frozen=True)
class CopyPlan:
    """A fully decided copy kernel (hashable; the kernel cache key)."""

    kind: str                 # "register" | "transpose"
    elem_bytes: int
    modes: tuple              # ((size, src_stride, dst_stride), ...) after joint coalescing
    threads: int
    vec: int = 1              # register path: elements per vector
    vecs_per_thread: int = 1  # register path: U
    mode_a: int = -1          # transpose: source-contiguous mode
    mode_b: int = -1          # transpose: destination-contiguous mode
    vec_a: int = 1            # transpose: load vector (along a)
    vec_b: int = 1            # transpose: store vector (along b)
    tile: int = 0

    @property
    def size(self) -> int:
        return math.prod(m[0] for m in self.modes)

    @property
    def name(self) -> str:
        h = hashlib.sha256(repr(self).encode()).hexdigest()[:8]
        tag = f"reg_v{self.vec}" if self.kind == "register" else \
            f"tr{self.tile}_v{self.vec_a}x{self.vec_b}"
        return f"cute_copy_{tag}_e{self.elem_bytes}_{h}"

    def grid(self) -> int:
        if self.kind == "register":
            per_block = self.threads * self.vecs_per_thread
            return max(1, -(-(self.size // self.vec) // per_block))
        sa, sb = self.modes[self.mode_a][0], self.modes[self.mode_b][0]
        batch = math.prod(m[0] for i, m in enumerate(self.modes)
                          if i not in (self.mode_a, self.mode_b))
        return max(1, -(-sa // self.tile) * -(-sb // self.tile) * batch)

    @property
    def src_align(self) -> int:
        return (self.vec if self.kind == "register" else self.vec_a) * self.elem_bytes

    @property
    def dst_align(self) -> int:
        return (self.vec if self.kind == "register" else self.vec_b) * self.elem_bytes


# ---------------------------------------------------------------------------------------------
# planning


def _flat(t):
    if isinstance(t, tuple):
        out = []
        for a in t:
            out += _flat(a)
        return out
    return [t]


def _as_flat_layout(layout, arg):
    shape, stride = lower.shape_stride(layout)
    fs, fd = _flat(shape), _flat(stride)
    if len(fs) != len(fd):
        raise LayoutError("copy", arg, "shape and stride are not congruent",
                          expected=shape, actual=stride)
    for s, d in zip(fs, fd):
        if not isinstance(s, int) or not isinstance(d, int):
            raise LayoutError("copy", arg, "must be static (int shapes and strides); runtime "
                              "sizes are not supported by the copy kernels yet", actual=layout)
        if s < 1:
            raise LayoutError("copy", arg, "has an empty mode", actual=shape)
    return list(zip(fs, fd))


def common_modes(src_layout, dst_layout):
    """Jointly refined, coalesced modes ``((size, src_stride, dst_stride), ...)`` with
    ``dst(c) = src(c)`` preserved; sorted by destination stride (then source stride).

    Law: the multiset of (src offset, dst offset) pairs over the domain is unchanged.
    """
    a = _as_flat_layout(src_layout, "src_layout")
    b = _as_flat_layout(dst_layout, "dst_layout")
    if math.prod(s for s, _ in a) != math.prod(s for s, _ in b):
        raise LayoutError("copy", "dst_layout", "has a different size than src_layout",
                          expected=math.prod(s for s, _ in a), actual=math.prod(s for s, _ in b))
    modes, i, j = [], 0, 0
    a, b = list(a), list(b)
    while i < len(a) and j < len(b):
        (sa, da), (sb, db) = a[i], b[j]
        if sa == sb:
            modes.append((sa, da, db))
            i += 1
            j += 1
        elif sa % sb == 0:
            modes.append((sb, da, db))
            a[i] = (sa // sb, da * sb)
            j += 1
        elif sb % sa == 0:
            modes.append((sa, da, db))
            b[j] = (sb // sa, db * sa)
            i += 1
        else:
            raise LayoutError("copy", "dst_layout", "shape is not compatible with src_layout's "
                              "(no common refinement)", expected=src_layout, actual=dst_layout)
    modes += [(s, d, 0) for s, d in a[i:] if s == 1] + [(s, 0, d) for s, d in b[j:] if s == 1]
    modes = [m for m in modes if m[0] != 1]
    for s, ds, dd in modes:
        if dd == 0:
            raise LayoutError("copy", "dst_layout", "has a stride-0 mode (several coordinates "
                              "would write one element)", actual=dst_layout)
    modes.sort(key=lambda m: (abs(m[2]), abs(m[1])))
    out = []
    for m in modes:
        if out:
            s, ds, dd = out[-1]
            if m[1] == s * ds and m[2] == s * dd:
                out[-1] = (s * m[0], ds, dd)
                continue
        out.append(m)
    return tuple(out)


def _pow2_divisor(x: int, cap: int) -> int:
    v = cap
    while v > 1 and x % v:
        v //= 2
    return v


def max_common_vector(modes, k, elem_bytes, src_align=16, dst_align=16, check_dst=True,
                      check_src=True) -> int:
    """Largest power-of-two V (V * elem_bytes <= 16) such that vectors of V elements along mode
    ``k`` are contiguous and aligned on the checked sides for every coordinate."""
    v = max(1, 16 // elem_bytes)
    size = modes[k][0]
    v = _pow2_divisor(size, v)
    for i, (s, ds, dd) in enumerate(modes):
        if i == k:
            continue
        if check_src:
            v = _pow2_divisor(ds, v)
        if check_dst:
            v = _pow2_divisor(dd, v)
    if check_src:
        v = _pow2_divisor(src_align // elem_bytes if src_align >= elem_bytes else 1, v)
    if check_dst:
        v = _pow2_divisor(dst_align // elem_bytes if dst_align >= elem_bytes else 1, v)
    return max(v, 1)


def plan_copy(src_layout, dst_layout, elem_bytes: int, *, src_align: int = 16,
              dst_align: int = 16, config: CopyConfig | None = None) -> CopyPlan:
    """Decide the kernel for ``dst_layout(c) <- src_layout(c)`` on ``elem_bytes``-wide elements
    whose base pointers are ``src_align``/``dst_align``-byte aligned."""
    if elem_bytes not in ETYPE:
        raise LayoutError("copy", "elem_bytes", "must be 1, 2, 4 or 8", actual=elem_bytes)
    cfg = config or CopyConfig()
    modes = common_modes(src_layout, dst_layout)
    if not modes:
        modes = ((1, 1, 1),)
    ks = next((i for i, m in enumerate(modes) if m[1] == 1), None)
    kd = next((i for i, m in enumerate(modes) if m[2] == 1), None)
    if ks is not None and kd is not None and ks != kd:
        tile = cfg.tile or (128 if elem_bytes <= 2 else 64)   # measured best on H100
        va = max_common_vector(modes, ks, elem_bytes, src_align, dst_align, check_dst=False)
        vb = max_common_vector(modes, kd, elem_bytes, src_align, dst_align, check_src=False)
        va, vb = min(va, tile), min(vb, tile)
        # the swizzle needs 8 16-byte chunks per tile row; each phase must give every thread
        # a whole number of vectors; phase 2 puts 8 threads along b in a warp
        if tile * elem_bytes < 128 or (tile * tile // va) % cfg.threads \
                or (tile * tile // vb) % cfg.threads or (tile // vb) % 8:
            raise AtomError("copy", "tiled_copy", f"tile {tile} does not fit {cfg.threads} "
                            f"threads for {elem_bytes}-byte elements (need tile*elem_bytes >= "
                            "128 and tile*tile/vector a multiple of threads)",
                            actual=cfg)
        return CopyPlan("transpose", elem_bytes, modes, cfg.threads, mode_a=ks, mode_b=kd,
                        vec_a=va, vec_b=vb, tile=tile)
    k = kd if kd is not None else (ks if ks is not None else 0)
    if k != 0:  # the vectorised mode goes first (innermost)
        modes = (modes[k],) + modes[:k] + modes[k + 1:]
    both = modes[0][1] == 1 and modes[0][2] == 1
    v = max_common_vector(modes, 0, elem_bytes, src_align, dst_align) if both else 1
    u = max(1, cfg.bytes_per_thread // (v * elem_bytes))
    total_vecs = math.prod(m[0] for m in modes) // v
    while u > 1 and (u // 2) * cfg.threads >= total_vecs:  # small copies: fewer per thread
        u //= 2
    return CopyPlan("register", elem_bytes, modes, cfg.threads, vec=v, vecs_per_thread=u)


# ---------------------------------------------------------------------------------------------
# code generation


def _builder(plan: CopyPlan, what: str) -> KernelBuilder:
    """The kernel's builder: ``(src, dst)`` parameters, the plan as a comment, tid/bid."""
    et = ETYPE[plan.elem_bytes]
    kb = KernelBuilder(plan.name, threads=plan.threads, origin="cute_py.backends.cuda.kernels.copy",
                       description=what)
    kb.param(f"const {et}* __restrict__", "src")
    kb.param(f"{et}* __restrict__", "dst")
    shape = tuple(m[0] for m in plan.modes)
    kb.comment(f"common modes (size, src stride, dst stride): {plan.modes}\n"
               f"  src layout {shape}:{tuple(m[1] for m in plan.modes)}\n"
               f"  dst layout {shape}:{tuple(m[2] for m in plan.modes)}\n"
               f"plan: {plan}")
    return kb


def _thread_ids(kb: KernelBuilder) -> None:
    kb.decl("const int", "tid", "threadIdx.x", hint=False)
    kb.decl("const int", "bid", "blockIdx.x", hint=False)


def _register_ir(plan: CopyPlan, bid=None):
    """Per unrolled step u: (src offset, dst offset, predicate) as IR over tid and ``bid``
    (the block's index within this plan's grid; default ``blockIdx.x``)."""
    V, U, T = plan.vec, plan.vecs_per_thread, plan.threads
    grid = plan.grid()
    n_vec = plan.size // V
    # the vector domain: mode 0 counted in vectors, other modes as they are
    shape = (plan.modes[0][0] // V,) + tuple(m[0] for m in plan.modes[1:])
    s_stride = (plan.modes[0][1] * V,) + tuple(m[1] for m in plan.modes[1:])
    d_stride = (plan.modes[0][2] * V,) + tuple(m[2] for m in plan.modes[1:])
    tid = ir.thread_idx(T)
    bid = ir.block_idx(grid) if bid is None else bid
    items = []
    for u in range(U):
        e = bid * (U * T) + u * T + tid
        pred = ir.lt(e, n_vec)
        items.append((lower.crd2idx(e, shape, s_stride), lower.crd2idx(e, shape, d_stride), pred))
    return items


def _register_body(kb: KernelBuilder, plan: CopyPlan, src: str, dst: str, bid=None,
                   prefix: str = "v") -> None:
    """The register path's statements for ``plan`` from pointer ``src`` to ``dst``: all loads
    of a thread's vectors (registers ``<prefix>0``...), then all stores (``bid``: as
    :func:`_register_ir`)."""
    vbytes = plan.vec * plan.elem_bytes
    items = _register_ir(plan, bid)
    kb.cse([x for it in items for x in it], hint="t")
    vt = VTYPE[vbytes]
    names = [kb.decl(vt, f"{prefix}{u}", hint=False) for u in range(len(items))]
    for v, (so, do, p) in zip(names, items):
        with guarded(kb, p):
            kb.assign(v, load(kb, vbytes, src, so))
    for v, (so, do, p) in zip(names, items):
        with guarded(kb, p):
            store(kb, vbytes, dst, do, v)


def _register_source(plan: CopyPlan) -> str:
    E, V, U = plan.elem_bytes, plan.vec, plan.vecs_per_thread
    kb = _builder(plan, f"tiled copy through registers, {U} x {V * E}-byte vectors per thread")
    _thread_ids(kb)
    _register_body(kb, plan, "src", "dst")
    return kb.source()


def _transpose_ir(plan: CopyPlan):
    """(loads, stores, swizzle): loads are (src offset, smem offset, predicate) per step,
    stores (dst offset, [smem offset per gathered row], predicate) per step."""
    E, T, NT = plan.elem_bytes, plan.tile, plan.threads
    va, vb = plan.vec_a, plan.vec_b
    et = ETYPE[E]
    a, b = plan.mode_a, plan.mode_b
    sa, dsa, dda = plan.modes[a]
    sbz, dsb, ddb = plan.modes[b]
    others = [m for i, m in enumerate(plan.modes) if i not in (a, b)]
    ta_n, tb_n = -(-sa // T), -(-sbz // T)
    grid = plan.grid()
    tid, bid = ir.thread_idx(NT), ir.block_idx(grid)
    # block -> (tile along a, tile along b, batch coordinate...)
    bshape = (ta_n, tb_n) + tuple(m[0] for m in others)
    crd = lower.idx2crd(bid, bshape)
    a0, b0 = crd[0] * T, crd[1] * T
    bsrc = lower.crd2idx(tuple(crd[2:]), tuple(m[0] for m in others),
                         tuple(m[1] for m in others)) if others else ir.const(0)
    bdst = lower.crd2idx(tuple(crd[2:]), tuple(m[0] for m in others),
                         tuple(m[2] for m in others)) if others else ir.const(0)
    chunk = 16 // E  # elements per 16-byte smem chunk
    swz = (3, int(math.log2(chunk)), int(math.log2(T)))
    # phase 1: vectors of va along a; thread layout (T/va along a) x (rows along b)
    nva = T // va
    loads = []
    for i in range(T * nva // NT):
        w = i * NT + tid
        ja, jb = (w % nva) * va, w // nva
        ga, gb = a0 + ja, b0 + jb
        pred = ir.land(ir.lt(ga, sa), ir.lt(gb, sbz))
        soff = ga * dsa + gb * dsb + bsrc
        sm = lower.swizzle_apply(jb * T + ja, swz)
        loads.append((soff, sm, pred))
    # phase 2: vb rows per thread at one column; warp = 8 threads along b x 4 along a
    nvb = T // vb
    stores = []
    for i in range(T * nvb // NT):
        w = i * NT + tid
        c = lower.idx2crd(w, (8, 4, nvb // 8, T // 4))
        rv, col = c[0] + c[2] * 8, c[1] + c[3] * 4
        ga, gb = a0 + col, b0 + rv * vb
        pred = ir.land(ir.lt(ga, sa), ir.lt(gb, sbz))
        doff = ga * dda + gb * ddb + bdst
        sms = [lower.swizzle_apply((rv * vb + r) * T + col, swz) for r in range(vb)]
        stores.append((doff, sms, pred))
    return loads, stores, swz


def _transpose_source(plan: CopyPlan) -> str:
    E, T = plan.elem_bytes, plan.tile
    va, vb = plan.vec_a, plan.vec_b
    et = ETYPE[E]
    loads, stores, swz = _transpose_ir(plan)
    kb = _builder(plan, f"transpose through a swizzled {T}x{T} shared-memory tile "
                        f"(Swizzle<{swz[0]},{swz[1]},{swz[2]}>), {va * E}-byte loads, "
                        f"{vb * E}-byte stores")
    kb.stmt(f"__shared__ __align__(16) {et} tile[{T * T}]")
    kb.reserve("tile")
    _thread_ids(kb)
    roots = [x for s, m, p in loads for x in (s, m, p)]
    roots += [x for d, ms, p in stores for x in (d, p, *ms)]
    kb.cse(roots, hint="t")
    vta = VTYPE[va * E]
    kb.comment(f"global -> shared: {va}-element vectors along the source's contiguous mode")
    for i in range(len(loads)):
        kb.decl(vta, f"a{i}", hint=False)
    for i, (so, sm, p) in enumerate(loads):
        with guarded(kb, p):
            kb.assign(f"a{i}", load(kb, va * E, "src", so))
    for i, (so, sm, p) in enumerate(loads):
        with guarded(kb, p):
            kb.assign(f"*reinterpret_cast<{vta}*>(&tile[{kb.expr(sm)}])", f"a{i}")
    kb.sync_threads()
    kb.comment(f"shared -> global: {vb} rows gathered per thread, stored along the "
               f"destination's contiguous mode")
    for i, (do, sms, p) in enumerate(stores):
        names = [kb.decl(f"const {et}", f"b{i}_{r}", f"tile[{kb.expr(sm)}]", hint=False)
                 for r, sm in enumerate(sms)]
        with guarded(kb, p):
            store(kb, vb * E, "dst", do, pack(E, vb, names))
    return kb.source()


def simulate(plan: CopyPlan, src: np.ndarray, dst: np.ndarray) -> None:
    """NumPy shadow of the generated kernel: runs the same IR index maps for every block and
    thread (vectorised over threads) on flat element buffers ``src``/``dst`` (modified in place).
    Lets CPU tests check the plan's index maps, predicates and swizzle without a GPU."""
    T = plan.threads
    tid = np.arange(T, dtype=np.int64)
    for b in range(plan.grid()):
        env = {"tid": tid, "bid": np.int64(b)}
        if plan.kind == "register":
            V = plan.vec
            for so, do, p in _register_ir(plan):
                so, do, p = (np.broadcast_to(ir.evaluate(x, env), (T,)) for x in (so, do, p))
                for t in np.nonzero(p)[0]:
                    dst[do[t]:do[t] + V] = src[so[t]:so[t] + V]
            continue
        loads, stores, _ = _transpose_ir(plan)
        tile = np.full(plan.tile * plan.tile, -1, dtype=src.dtype)
        va, vb = plan.vec_a, plan.vec_b
        for so, sm, p in loads:
            so, sm, p = (np.broadcast_to(ir.evaluate(x, env), (T,)) for x in (so, sm, p))
            for t in np.nonzero(p)[0]:
                tile[sm[t]:sm[t] + va] = src[so[t]:so[t] + va]
        for do, sms, p in stores:
            do, p = (np.broadcast_to(ir.evaluate(x, env), (T,)) for x in (do, p))
            sms = [np.broadcast_to(ir.evaluate(x, env), (T,)) for x in sms]
            for t in np.nonzero(p)[0]:
                dst[do[t]:do[t] + vb] = [tile[sm[t]] for sm in sms]


@lru_cache(maxsize=256)
def copy_source(plan: CopyPlan) -> str:
    """The CUDA source of ``plan``'s kernel (deterministic)."""
    if plan.kind == "register":
        return _register_source(plan)
    return _transpose_source(plan)


# ---------------------------------------------------------------------------------------------
# kernels and the user entry point


class CopyKernel:
    """A planned copy: ``source``, ``compile(arch)``, and ``__call__(src, dst)`` (device arrays
    or pointers) with argument checks."""

    def __init__(self, plan: CopyPlan):
        self.plan = plan
        self.name = plan.name
        self.source = copy_source(plan)
        self._funcs: dict = {}  # device id -> CudaFunction (keeps the launch path short)

    @property
    def spec(self):
        """The kernel as a frozen :class:`~cute_py.backends.cuda.kernel.KernelSpec`."""
        from ..kernel import KernelSpec, Param
        return KernelSpec(self.source, self.name, (Param("src", "ptr"), Param("dst", "ptr")),
                          (self.plan.threads, 1, 1), arch=None)

    def function(self):
        """The compiled kernel (for the current device's architecture; compiled on first use)."""
        f = self._funcs.get(0)
        if f is None:
            from ..compiler import build_kernel
            f = self._funcs[0] = build_kernel(self.spec)
        return f

    def compile(self, arch: str | None = None):
        from ..compiler import compile_module
        return compile_module(self.source, arch=arch)

    def specs(self, src_shape=None, dst_shape=None, dtype=None):
        from ..launch import TensorSpec
        return [TensorSpec("src", dtype, align=self.plan.src_align),
                TensorSpec("dst", dtype, align=self.plan.dst_align, writable=True)]

    def launch_pointers(self, src_ptr: int, dst_ptr: int, stream=None):
        from ..launch import launch
        if src_ptr % self.plan.src_align or dst_ptr % self.plan.dst_align:
            raise LaunchError("copy", "src" if src_ptr % self.plan.src_align else "dst",
                              "base pointer is misaligned for this kernel",
                              expected=(self.plan.src_align, self.plan.dst_align),
                              actual=(hex(src_ptr), hex(dst_ptr)))
        launch(self.function(), self.plan.grid(), self.plan.threads,
               (np.uint64(src_ptr), np.uint64(dst_ptr)), stream=stream)


@lru_cache(maxsize=512)
def build_copy(plan: CopyPlan) -> CopyKernel:
    """The (cached) kernel for a plan."""
    return CopyKernel(plan)


def _align_of(ptr: int) -> int:
    a = 16
    while a > 1 and ptr % a:
        a //= 2
    return a


def _array_layout(view):
    shape = tuple(view.shape) or (1,)
    stride = tuple(view.elem_strides) or (1,)
    return shape, stride


def _check_fits(view, layout, arg):
    """The layout's offsets must stay inside the array's memory: [min, max] within the span."""
    shape, stride = lower.shape_stride(layout)
    fs, fd = _flat(shape), _flat(stride)
    lo = sum((s - 1) * d for s, d in zip(fs, fd) if d < 0)
    hi = sum((s - 1) * d for s, d in zip(fs, fd) if d > 0)
    vlo = sum((s - 1) * d for s, d in zip(view.shape, view.elem_strides) if d < 0)
    vhi = sum((s - 1) * d for s, d in zip(view.shape, view.elem_strides) if d > 0)
    if any(s == 0 for s in view.shape) or lo < vlo or hi > vhi:
        raise LaunchError("copy", arg, "layout reaches outside the array's memory",
                          expected=f"offsets within [{vlo}, {vhi}]", actual=f"[{lo}, {hi}]")


def _key(layout):
    shape, stride = lower.shape_stride(layout)
    return (shape, stride)


@lru_cache(maxsize=1024)
def _kernel_for(sl, dl, elem_bytes, src_align, dst_align, config):
    return build_copy(plan_copy(sl, dl, elem_bytes, src_align=src_align, dst_align=dst_align,
                                config=config))


def copy(src, dst, tiled_copy=None, *, src_layout=None, dst_layout=None, smem_layout=None,
         stream=None):
    """``dst(c) = src(c)`` for every coordinate c (``dst[...] = src`` for same-shape arrays).

    ``src``/``dst``: CuPy arrays, ``__cuda_array_interface__`` or DLPack objects of one dtype
    (1, 2, 4 or 8 bytes).  Without explicit layouts each array's own shape/strides are used and
    the shapes must match; with ``src_layout``/``dst_layout`` (a ``cute_py.Layout`` or
    ``(shape, stride)`` in elements from the array's base pointer) the layouts are copied and must
    have the same size.  Source and destination must not overlap.

    ``tiled_copy``:

    * ``None`` or a :class:`CopyConfig`: the planner picks the kernel (registers or a swizzled
      transpose tile); returns the :class:`CopyKernel` used;
    * a :class:`cute_py.atom.TiledCopy` (``make_tiled_copy(Copy_Atom(UniversalCopy(128),
      "float16"), thr_layout, val_layout)``): the copy domain's first ``rank(tiler)`` modes are
      tiled by its tile, one tile per CTA, each thread's offsets are the TiledCopy's
      ``partition_S(src)`` / ``partition_D(dst)``, residues predicated with a partitioned
      identity tensor (:mod:`.tiled_copy`); the layouts must then agree mode by mode;
    * a ``(load, store)`` pair of TiledCopies with one tile: through a shared-memory tile laid
      out by ``smem_layout`` (a ``Layout`` or swizzled ``ComposedLayout`` of the tile's shape;
      default column-major).  Returns the :class:`~.tiled_copy.TiledCopyKernel` used.
    """
    from ..launch import as_array_view
    sv = as_array_view(src, "src", "copy")
    dv = as_array_view(dst, "dst", "copy")
    if sv.dtype != dv.dtype:
        raise LaunchError("copy", "dst", "dtype differs from src", expected=str(sv.dtype),
                          actual=str(dv.dtype))
    if dv.readonly:
        raise LaunchError("copy", "dst", "is read-only")
    from cute_py.atom.tiled_copy import TiledCopy
    tiled = isinstance(tiled_copy, TiledCopy) or (
        isinstance(tiled_copy, (tuple, list)) and len(tiled_copy) == 2
        and all(isinstance(t, TiledCopy) for t in tiled_copy))
    if tiled_copy is not None and not isinstance(tiled_copy, CopyConfig) and not tiled:
        raise AtomError("copy", "tiled_copy", "must be None, a CopyConfig, a TiledCopy or a "
                        "(load, store) pair of TiledCopies", actual=type(tiled_copy).__name__)
    if smem_layout is not None and not (tiled and not isinstance(tiled_copy, TiledCopy)):
        raise AtomError("copy", "tiled_copy", "smem_layout needs a (load, store) pair of "
                        "TiledCopies", actual=type(tiled_copy).__name__)
    if src_layout is None and dst_layout is None and tuple(sv.shape) != tuple(dv.shape):
        raise LaunchError("copy", "dst", "shape differs from src", expected=sv.shape,
                          actual=dv.shape)
    sl = src_layout if src_layout is not None else _array_layout(sv)
    dl = dst_layout if dst_layout is not None else _array_layout(dv)
    if src_layout is not None:
        _check_fits(sv, sl, "src_layout")
    if dst_layout is not None:
        _check_fits(dv, dl, "dst_layout")
    if math.prod(sv.shape) == 0 and src_layout is None:
        return None
    if tiled:
        from .tiled_copy import copy_tiled
        return copy_tiled(sv, dv, tiled_copy, sl, dl, smem_layout=smem_layout, stream=stream)
    k = _kernel_for(_key(sl), _key(dl), sv.dtype.itemsize, _align_of(sv.ptr),
                    _align_of(dv.ptr), tiled_copy)
    k.launch_pointers(sv.ptr, dv.ptr, stream=stream)
    return k


def transpose(a, out=None, *, stream=None):
    """``out = a.T`` (2-D, any strides) through the swizzled shared-memory tile; returns out."""
    import cupy as cp
    v = a if isinstance(a, cp.ndarray) else cp.asarray(a)
    if v.ndim != 2:
        raise LaunchError("transpose", "a", "must be 2-D", actual=v.shape)
    if out is None:
        out = cp.empty((v.shape[1], v.shape[0]), dtype=v.dtype)
    copy(v.T, out, stream=stream)
    return out


# Configurations the CPU test compiles for sm_80 and sm_90a (and the benchmark/examples use).
SHIPPED_CONFIGS = {
    "copy_f32_contig": (((8192, 8192), (8192, 1)), ((8192, 8192), (8192, 1)), 4),
    "copy_f16_contig": (((8192, 8192), (8192, 1)), ((8192, 8192), (8192, 1)), 2),
    "transpose_f32_8192": (((8192, 8192), (1, 8192)), ((8192, 8192), (8192, 1)), 4),
    "transpose_f16_8192": (((8192, 8192), (1, 8192)), ((8192, 8192), (8192, 1)), 2),
    "transpose_f64_odd": (((33, 70), (1, 33)), ((33, 70), (70, 1)), 8),
    "transpose_u8_odd": (((129, 67), (1, 129)), ((129, 67), (67, 1)), 1),
    "permute4d_0213_f32": (((8, 16, 32, 64), (32768, 2048, 64, 1)),
                           ((8, 16, 32, 64), (32768, 64, 1024, 1)), 4),
    "permute4d_0312_f16": (((4, 6, 10, 12), (720, 120, 12, 1)),
                           ((4, 6, 10, 12), (720, 1, 72, 6)), 2),
    "strided_gather_f32": (((1000, 37), (64, 2)), ((1000, 37), (37, 1)), 4),
}


def shipped_plans():
    """``{name: CopyPlan}`` for SHIPPED_CONFIGS (aligned base pointers)."""
    return {k: plan_copy(s, d, e) for k, (s, d, e) in SHIPPED_CONFIGS.items()}
