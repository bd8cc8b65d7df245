"""Several copies in one launch: the padded operand copies of a GEMM call.

A :class:`CopyGroup` holds register-path :class:`~.copy.CopyPlan` s (each ``dst_i(c) =
src_i(c)`` over its own layouts).  Block ``b`` of the launch runs plan ``i`` when
``starts[i] <= b < starts[i] + grid_i``, as block ``b - starts[i]`` of that plan, on the
pointers ``src<i>`` / ``dst<i>``; the statements are :mod:`.copy`'s register path with the
block index shifted.

Law: launching the group writes exactly what launching each plan alone writes
(:func:`simulate` runs the group's own index maps; a CPU test compares it with
:func:`.copy.simulate` of every plan).  One launch instead of one per operand saves a driver
launch (5-9 µs of host time on the H100 machine) per GEMM call whose operands TMA cannot read
in place.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from cute_py.errors import LaunchError

from .. import ir
from ..builder import KernelBuilder
from .copy import ETYPE, CopyPlan, _register_body, _register_ir

__all__ = ["CopyGroup", "copy_group_source", "simulate", "group_kernel"]


@dataclass(frozen=True)
class CopyGroup:
    """Register-path copy plans launched together (hashable; the kernel cache key)."""

    plans: tuple

    def __post_init__(self):
        op = "CopyGroup"
        if not isinstance(self.plans, tuple) or not self.plans:
            raise LaunchError(op, "plans", "must be a non-empty tuple of CopyPlan",
                              actual=type(self.plans).__name__)
        for p in self.plans:
            if not isinstance(p, CopyPlan) or p.kind != "register":
                raise LaunchError(op, "plans", "must be register-path CopyPlans (a transpose "
                                  "copy uses shared memory: launch it alone)",
                                  actual=getattr(p, "kind", type(p).__name__))
        if len({p.threads for p in self.plans}) != 1:
            raise LaunchError(op, "plans", "must share one thread count",
                              actual=[p.threads for p in self.plans])

    @property
    def threads(self) -> int:
        return self.plans[0].threads

    @property
    def starts(self) -> tuple:
        """The first block of each plan."""
        out, b = [], 0
        for p in self.plans:
            out.append(b)
            b += p.grid()
        return tuple(out)

    def grid(self) -> int:
        return sum(p.grid() for p in self.plans)

    @property
    def name(self) -> str:
        h = hashlib.sha256(repr(self).encode()).hexdigest()[:8]
        return f"cute_copy_group{len(self.plans)}_{h}"


def _branches(group: CopyGroup):
    """Per plan: its branch condition on ``blk`` (blockIdx.x), its block index shifted into
    its own grid, and that grid."""
    blk = ir.var("blk", 0, group.grid() - 1)
    return [(ir.lt(blk, s + p.grid()), ir.sub(blk, s), p.grid())
            for p, s in zip(group.plans, group.starts)]


def copy_group_source(group: CopyGroup) -> str:
    """The CUDA source of the group's kernel (deterministic): one branch per plan on the
    block index, each the plan's register-path body on its own pointers."""
    n = len(group.plans)
    kb = KernelBuilder(group.name, threads=group.threads,
                       origin="cute_py.backends.cuda.kernels.copy_group",
                       description=f"{n} copies through registers in one launch")
    for i, p in enumerate(group.plans):
        et = ETYPE[p.elem_bytes]
        kb.param(f"const {et}* __restrict__", f"src{i}")
        kb.param(f"{et}* __restrict__", f"dst{i}")
    for i, (p, s) in enumerate(zip(group.plans, group.starts)):
        shape = tuple(m[0] for m in p.modes)
        kb.comment(f"copy {i}: blocks [{s}, {s + p.grid()}), common modes (size, src stride, "
                   f"dst stride) {p.modes}\n  src layout {shape}:{tuple(m[1] for m in p.modes)}"
                   f"\n  dst layout {shape}:{tuple(m[2] for m in p.modes)}\n  plan: {p}")
    kb.decl("const int", "tid", "threadIdx.x", hint=False)
    kb.decl("const int", "blk", "blockIdx.x", hint=False)
    branches = _branches(group)
    for i, (p, (cond, shifted, g)) in enumerate(zip(group.plans, branches)):
        if i == 0:
            ctx = kb.if_(cond) if n > 1 else kb.scope()
        else:
            ctx = kb.else_(cond if i < n - 1 else None)
        with ctx:
            bid = kb.var("const int", f"bid{i}", shifted, lo=0, hi=g - 1)
            _register_body(kb, p, f"src{i}", f"dst{i}", bid, prefix=f"v{i}_")
    return kb.source()


def simulate(group: CopyGroup, srcs, dsts) -> None:
    """NumPy shadow of the group's kernel: for every block, the branch it takes and that
    plan's index maps at the shifted block index, on flat buffers ``srcs[i]`` / ``dsts[i]``
    (modified in place)."""
    T = group.threads
    tid = np.arange(T, dtype=np.int64)
    branches = _branches(group)
    for b in range(group.grid()):
        env = {"tid": tid, "blk": np.int64(b)}
        for i, (p, (cond, shifted, _)) in enumerate(zip(group.plans, branches)):
            if not ir.evaluate(cond, env):
                continue
            env["bid"] = np.int64(ir.evaluate(shifted, env))
            for so, do, pr in _register_ir(p):
                so, do, pr = (np.broadcast_to(ir.evaluate(x, env), (T,)) for x in (so, do, pr))
                for t in np.nonzero(pr)[0]:
                    dsts[i][do[t]:do[t] + p.vec] = srcs[i][so[t]:so[t] + p.vec]
            break


class GroupKernel:
    """The compiled group kernel and its launch plans (roles ``src0``, ``dst0``, ...)."""

    def __init__(self, group: CopyGroup):
        from ..kernel import KernelSpec
        self.group = group
        self.source = copy_group_source(group)
        self.spec = KernelSpec(self.source, group.name, None, (group.threads, 1, 1), arch=None)
        self._kernel = None

    def plan(self, device: int):
        """A launch plan: ``plan.run((src0, dst0, src1, dst1, ...), (), stream)``."""
        from ..compiler import build_kernel
        from ..kernel import make_plan
        if self._kernel is None:
            self._kernel = build_kernel(self.spec)
        params, roles = [], []
        for i in range(len(self.group.plans)):
            for r in (f"src{i}", f"dst{i}"):
                params.append(("u64", None, r))
                roles.append(r)
        return make_plan(self._kernel, device, (self.group.grid(), 1, 1),
                         (self.group.threads, 1, 1), 0, params, roles)


_KERNELS: dict = {}


def group_kernel(group: CopyGroup) -> GroupKernel:
    """The (cached) kernel of ``group``."""
    k = _KERNELS.get(group)
    if k is None:
        k = _KERNELS[group] = GroupKernel(group)
    return k
