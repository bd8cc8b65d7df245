"""Copy kernels on the CPU: planning laws, a NumPy shadow run of the generated index maps,
every shipped configuration compiles for sm_80 and sm_90a with zero spills, golden sources."""

import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cute_py.errors import AtomError, LayoutError
from cute_py.backends.cuda.kernels import copy as C

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_PLANS = ["copy_f32_contig", "transpose_f32_8192", "transpose_f16_8192",
                "permute4d_0213_f32", "transpose_u8_odd"]


def run_shadow(shape, src_stride, dst_stride, E=4, src_align=16, dst_align=16, config=None):
    plan = C.plan_copy((shape, src_stride), (shape, dst_stride), E, src_align=src_align,
                       dst_align=dst_align, config=config)
    n = sum((s - 1) * abs(d) for s, d in zip(shape, src_stride)) + 1
    m = sum((s - 1) * abs(d) for s, d in zip(shape, dst_stride)) + 1
    guard = 32
    src = np.arange(n, dtype=np.int64) + 1000
    dst = np.full(m + 2 * guard, -7, dtype=np.int64)
    body = dst[guard:guard + m]
    C.simulate(plan, src, body)
    idx = np.indices(shape).reshape(len(shape), -1)
    si = (idx * np.array(src_stride)[:, None]).sum(0)
    di = (idx * np.array(dst_stride)[:, None]).sum(0)
    assert np.array_equal(body[di], src[si]), plan
    written = np.zeros(m + 2 * guard, bool)
    written[di + guard] = True
    assert np.all(dst[~written] == -7), "wrote outside the destination image"
    return plan


def perm_strides(shape, perm):
    """Row-major strides of shape permuted by perm: dst[perm] is compact."""
    pshape = [shape[p] for p in perm]
    st_ = [0] * len(shape)
    acc = 1
    for i in reversed(range(len(perm))):
        st_[perm[i]] = acc
        acc *= pshape[i]
    return tuple(st_)


def row_major(shape):
    return perm_strides(shape, list(range(len(shape))))


@pytest.mark.parametrize("shape, perm, E", [
    ((33, 70), (1, 0), 8), ((129, 67), (1, 0), 1), ((64, 64), (1, 0), 4),
    ((65, 130), (1, 0), 2), ((3, 5, 7), (2, 1, 0), 4), ((4, 6, 10, 12), (0, 3, 1, 2), 2),
    ((8, 16, 32, 64), (0, 2, 1, 3), 4), ((1000,), (0,), 4), ((7,), (0,), 2),
    ((1, 1), (1, 0), 4), ((2, 3, 1, 5), (3, 1, 2, 0), 8),
])
def test_shadow_permutations(shape, perm, E):
    run_shadow(shape, row_major(shape), perm_strides(shape, perm), E)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=4), st.randoms(use_true_random=False),
       st.sampled_from([1, 2, 4, 8]), st.sampled_from([16, 8, 4]))
def test_shadow_random(shape, rnd, E, align):
    shape = tuple(shape)
    perm = list(range(len(shape)))
    rnd.shuffle(perm)
    src = row_major(shape)
    if rnd.random() < 0.3:  # a strided (padded) source
        src = tuple(s * 2 for s in src)
    plan = run_shadow(shape, src, perm_strides(shape, perm), E,
                      src_align=align, dst_align=16)
    assert plan.src_align <= max(align, E)


def test_common_modes_law():
    # refinement + coalescing keep the (src, dst) offset pairs
    modes = C.common_modes(((8, 4), (4, 1)), (((2, 4), 4), ((1, 2), 8)))
    pairs = set()
    for c in np.ndindex(*[m[0] for m in modes]):
        pairs.add((sum(i * m[1] for i, m in zip(c, modes)), sum(i * m[2] for i, m in zip(c, modes))))
    want = set()
    for i in range(8):
        for j in range(4):
            want.add((i * 4 + j, (i % 2) * 1 + (i // 2) * 2 + j * 8))
    assert pairs == want
    assert C.common_modes(((8, 4), (1, 8)), ((8, 4), (1, 8))) == ((32, 1, 1),)


def test_plan_choices():
    p = C.plan_copy(((1024, 1024), (1024, 1)), ((1024, 1024), (1024, 1)), 4)
    assert p.kind == "register" and p.vec == 4
    p = C.plan_copy(((1024, 1024), (1, 1024)), ((1024, 1024), (1024, 1)), 2)
    assert p.kind == "transpose" and (p.vec_a, p.vec_b, p.tile) == (8, 8, 128)
    p = C.plan_copy(((1024, 1024), (1024, 1)), ((1024, 1024), (1024, 1)), 4, src_align=4)
    assert p.vec == 1
    p = C.plan_copy(((1024, 1023), (1023, 1)), ((1024, 1023), (1023, 1)), 2)
    assert p.vec == 8  # contiguous both sides: coalesced into one mode of 1024*1023
    p = C.plan_copy(((1024, 1023), (1024, 1)), ((1024, 1023), (1023, 1)), 2)
    assert p.vec == 1  # 1023-wide rows: vectors would straddle rows
    assert C.max_common_vector(((12, 1, 1), (5, 12, 16)), 0, 2) == 4


def test_plan_errors():
    with pytest.raises(LayoutError, match="different size"):
        C.plan_copy(((4, 4), (4, 1)), ((4, 5), (5, 1)), 4)
    with pytest.raises(LayoutError, match="stride-0"):
        C.plan_copy(((4, 4), (4, 1)), ((4, 4), (0, 1)), 4)
    with pytest.raises(LayoutError, match="elem_bytes"):
        C.plan_copy(((4,), (1,)), ((4,), (1,)), 3)
    with pytest.raises(LayoutError, match="compatible"):
        C.plan_copy(((6, 4), (4, 1)), ((4, 6), (6, 1)), 4)
    with pytest.raises(AtomError):
        C.CopyConfig(threads=100)
    with pytest.raises(AtomError):
        C.CopyConfig(tile=48)
    with pytest.raises(AtomError, match="tile"):
        C.plan_copy(((64, 64), (1, 64)), ((64, 64), (64, 1)), 2, config=C.CopyConfig(tile=32))
    with pytest.raises(AtomError, match="tile"):
        C.plan_copy(((64, 64), (1, 64)), ((64, 64), (64, 1)), 4,
                    config=C.CopyConfig(threads=512, tile=32))


def test_shipped_configs_compile_without_spills(tmp_cache):
    for name, plan in C.shipped_plans().items():
        k = C.build_copy(plan)
        for arch in ("sm_80", "sm_90a"):
            m = k.compile(arch)
            if not m.has_resource_report:
                pytest.skip(f"{m.compiler} returned no ptxas report")
            r = m.resources_for(k.name)
            assert r.spills == 0 and r.stack_frame == 0, (name, arch, r)
            assert r.registers <= 128, (name, arch, r)


def test_source_is_deterministic():
    for plan in C.shipped_plans().values():
        a = C._register_source(plan) if plan.kind == "register" else C._transpose_source(plan)
        assert a == C.copy_source(plan)


@pytest.mark.parametrize("name", GOLDEN_PLANS)
def test_golden_sources(name):
    """Codegen changes show up as diffs here; regenerate with CUTE_PY_UPDATE_GOLDEN=1."""
    src = C.copy_source(C.shipped_plans()[name])
    path = GOLDEN / f"{name}.cu"
    if os.environ.get("CUTE_PY_UPDATE_GOLDEN") == "1":
        path.write_text(src)
    assert path.read_text() == src


def test_copy_rejects_bad_arguments():
    from cute_py.errors import LaunchError

    class A:
        def __init__(self, shape, typestr="<f4", ro=False):
            self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                             "data": (4096, ro), "strides": None, "version": 3}
    with pytest.raises(LaunchError, match="dtype"):
        C.copy(A((4,)), A((4,), "<f2"))
    with pytest.raises(LaunchError, match="shape"):
        C.copy(A((4,)), A((5,)))
    with pytest.raises(LaunchError, match="read-only"):
        C.copy(A((4,)), A((4,), ro=True))
    with pytest.raises(LaunchError, match="outside"):
        C.copy(A((16,)), A((16,)), src_layout=((4, 4), (1, 5)))
    with pytest.raises(AtomError, match="tiled_copy"):
        C.copy(A((4,)), A((4,)), tiled_copy="x")


def test_every_vector_combination_compiles(tmp_cache):
    """Each (element size, path, vector widths) the planner can emit compiles for sm_80 and
    sm_90a without spills (odd extents force the narrower vectors)."""
    shapes = {1: [(129, 67), (130, 66), (132, 68), (136, 72), (144, 80)],
              2: [(33, 70), (34, 70), (36, 72), (40, 80)], 4: [(33, 70), (34, 70), (36, 72)],
              8: [(33, 70), (34, 70)]}
    seen = set()
    for E, ss in shapes.items():
        for a, b in ss:
            for plan in (C.plan_copy(((b, a), (1, b)), ((b, a), (a, 1)), E),
                         C.plan_copy(((a, b), (b, 1)), ((a, b), (b, 1)), E)):
                key = (E, plan.kind, plan.vec, plan.vec_a, plan.vec_b)
                if key in seen:
                    continue
                seen.add(key)
                k = C.build_copy(plan)
                for arch in ("sm_80", "sm_90a"):
                    m = k.compile(arch)
                    if not m.has_resource_report:
                        pytest.skip(f"{m.compiler} returned no ptxas report")
                    assert m.resources_for(k.name).spills == 0, (key, arch)
    assert len(seen) >= 20
