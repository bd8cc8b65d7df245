"""CPU: several copies in one launch (kernels/copy_group.py).

Law: the group's kernel writes exactly what each plan's own kernel writes (NumPy shadows of
both), its blocks partition the launch, and its source compiles for sm_80 and sm_90a."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cute_py.errors import LaunchError
from cute_py.backends.cuda.kernels import copy as C
from cute_py.backends.cuda.kernels import copy_group as CG


def _buffers(shape, stride, fill):
    n = sum((s - 1) * abs(d) for s, d in zip(shape, stride)) + 1
    return np.arange(n, dtype=np.int64) + fill if fill >= 0 else np.full(n, fill, np.int64)


def _padded(shape, pad):
    """Row-major strides of ``shape`` with the last extent rounded up to ``pad``."""
    *lead, k = shape
    kp = -(-k // pad) * pad
    strides, acc = [1], kp
    for s in reversed(lead):
        strides.insert(0, acc)
        acc *= s
    return tuple(strides)


def _rowmajor(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.insert(0, acc)
        acc *= s
    return tuple(strides)


operand = st.tuples(st.integers(1, 3), st.integers(1, 70), st.integers(1, 70)).map(
    lambda t: t[1:] if t[0] == 1 else t)


@settings(max_examples=25, deadline=None)
@given(st.lists(operand, min_size=1, max_size=3), st.sampled_from([2, 4]),
       st.sampled_from([32, 64, 256]))
def test_group_writes_what_each_plan_writes(shapes, E, threads):
    cfg = C.CopyConfig(threads=threads)
    plans, srcs, dsts, refs = [], [], [], []
    for shape in shapes:
        ss, ds = _rowmajor(shape), _padded(shape, 8)
        p = C.plan_copy((shape, ss), (shape, ds), E, src_align=E, config=cfg)
        plans.append(p)
        srcs.append(_buffers(shape, ss, 1000))
        dsts.append(_buffers(shape, ds, -7))
        ref = dsts[-1].copy()
        C.simulate(p, srcs[-1], ref)
        refs.append(ref)
    g = CG.CopyGroup(tuple(plans))
    CG.simulate(g, srcs, dsts)
    for d, r in zip(dsts, refs):
        assert np.array_equal(d, r)
    starts = g.starts
    assert starts[0] == 0 and g.grid() == starts[-1] + plans[-1].grid()
    assert all(b - a == p.grid() for a, b, p in zip(starts, starts[1:], plans))


def test_group_source_compiles(tmp_cache):
    pa = C.plan_copy(((1000, 333), (333, 1)), ((1000, 333), (336, 1)), 2, src_align=2)
    pb = C.plan_copy(((333, 777), (777, 1)), ((333, 777), (784, 1)), 2, src_align=2)
    for plans in ((pa,), (pa, pb)):
        k = CG.group_kernel(CG.CopyGroup(plans))
        assert k.source == CG.copy_group_source(CG.CopyGroup(plans))  # deterministic
        from cute_py.backends.cuda.compiler import compile_module
        for arch in ("sm_80", "sm_90a"):
            m = compile_module(k.source, arch=arch)
            if not m.has_resource_report:
                pytest.skip(f"{m.compiler} returned no ptxas report")
            r = m.resources_for(k.group.name)
            assert r.spills == 0 and r.stack_frame == 0, (arch, r)


def test_group_rejects_bad_plans():
    t = C.plan_copy(((256, 256), (1, 256)), ((256, 256), (256, 1)), 2)
    assert t.kind == "transpose"
    r = C.plan_copy(((8, 8), (8, 1)), ((8, 8), (16, 1)), 2)
    with pytest.raises(LaunchError, match="plans"):
        CG.CopyGroup((r, t))
    with pytest.raises(LaunchError, match="plans"):
        CG.CopyGroup(())
    with pytest.raises(LaunchError, match="thread count"):
        CG.CopyGroup((r, C.plan_copy(((8, 8), (8, 1)), ((8, 8), (16, 1)), 2,
                                     config=C.CopyConfig(threads=64))))
