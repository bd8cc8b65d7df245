"""TiledCopy kernels on the CPU: the lowered index maps equal the algebra's ThrCopy partitions,
a NumPy shadow run (odd shapes, guard bands), validation errors, every shipped configuration
compiles for sm_80 and sm_90a with zero spills, golden sources."""

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cute_py.int_tuple as it
from cute_py.atom.copy_atom import Copy_Atom
from cute_py.atom.copy_traits import SM80_CP_ASYNC_CACHEGLOBAL, UniversalCopy
from cute_py.atom.tiled_copy import TiledCopy, make_tiled_copy
from cute_py.composed import make_composed_layout
from cute_py.errors import AtomError, LaunchError, LayoutError
from cute_py.int_tuple import elem_less
from cute_py.layout import Layout, make_layout
from cute_py.swizzle import Swizzle
from cute_py.tensor import local_tile, make_gmem_ptr, make_identity_tensor, make_tensor
from cute_py.backends.cuda.kernels import copy as C
from cute_py.backends.cuda.kernels import tiled_copy as TC

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_PLANS = ["tc_copy_f16_row4_odd", "tc_transpose_f32_smem_sw"]


def tcopy(bits, vt, thr, thr_stride, val, val_stride=None):
    return make_tiled_copy(Copy_Atom(UniversalCopy(bits), vt), make_layout(thr, thr_stride),
                           make_layout(val, val_stride))


def row_major(shape):
    st_, acc = [], 1
    for s in reversed(shape):
        st_.append(acc)
        acc *= s
    return tuple(reversed(st_))


def col_major(shape):
    st_, acc = [], 1
    for s in shape:
        st_.append(acc)
        acc *= s
    return tuple(st_)


def run_shadow(tiled_copy, shape, src_stride, dst_stride, E, smem_layout=None, guard=48):
    plan = TC.plan_tiled_copy(tiled_copy, (shape, src_stride), (shape, dst_stride), E,
                              smem_layout=smem_layout)
    n = sum((s - 1) * d for s, d in zip(shape, src_stride)) + 1
    m = sum((s - 1) * d for s, d in zip(shape, dst_stride)) + 1
    src = np.arange(n, dtype=np.int64) + 1000
    dst = np.full(m + 2 * guard, -7, dtype=np.int64)
    TC.simulate(plan, src, dst[guard:guard + m])
    idx = np.indices(shape).reshape(len(shape), -1)
    si = (idx * np.array(src_stride)[:, None]).sum(0)
    di = (idx * np.array(dst_stride)[:, None]).sum(0)
    assert np.array_equal(dst[guard:guard + m][di], src[si]), plan
    written = np.zeros(m + 2 * guard, bool)
    written[di + guard] = True
    assert np.all(dst[~written] == -7), "wrote outside the destination image"
    return plan


# ---------------------------------------------------------------------------------------------
# the shadow run


SMALL_SHIPPED = ["tc_copy_f16_row4_odd", "tc_copy_f32_row_batched", "tc_copy_f32_scalar_odd",
                 "tc_cpasync_f16_smem"]


@pytest.mark.parametrize("name", SMALL_SHIPPED)
def test_shipped_shadow(name):
    tc, (shape, ss), (_, ds), E, sm = TC.shipped_tiled_copies()[name]
    run_shadow(tc, shape, ss, ds, E, sm)


F16_ROW = tcopy(128, "float16", (16, 8), (8, 1), (1, 8))           # 16x64, vectors along n
F32_COL = tcopy(128, "float32", (8, 32), (1, 8), (4, 1))           # 32x32, vectors along m
F32_SCALAR = tcopy(32, "float32", (32, 8), (8, 1), (1, 1))
F64_PAIR = tcopy(128, "float64", (4, 16), (16, 1), (1, 2))         # 4x32
U8_ROW = tcopy(32, "uint8", (32, 4), (4, 1), (2, 4), (4, 1))      # 64x16, 4-byte vectors
LD32 = tcopy(128, "float32", (16, 16), (1, 16), (4, 4), (1, 4))
ST32 = tcopy(128, "float32", (16, 16), (16, 1), (4, 4), (4, 1))
SW32 = make_composed_layout(Swizzle(3, 2, 6), 0, make_layout((64, 64)))


@pytest.mark.parametrize("tc, shape, src, dst, E", [
    (F16_ROW, (33, 136), "row", "row", 2),
    (F16_ROW, (1, 8), "row", "row", 2),
    (F16_ROW, (17, 64, 3), (64, 1, 17 * 64), (3 * 64, 1, 64), 2),
    (F32_COL, (100, 7), "col", "col", 4),
    (F32_SCALAR, (77, 45), "row", "col", 4),        # a transpose through registers
    (F32_SCALAR, (5, 3, 2, 7), "row", "col", 4),    # a 4-D permutation, 2 batch modes
    (F64_PAIR, (9, 34), "row", "row", 8),
    (U8_ROW, (65, 20), "row", "row", 1),
])
def test_shadow_register(tc, shape, src, dst, E):
    strides = {"row": row_major, "col": col_major}
    src = strides[src](shape) if isinstance(src, str) else src
    dst = strides[dst](shape) if isinstance(dst, str) else dst
    run_shadow(tc, shape, src, dst, E)


@pytest.mark.parametrize("shape", [(64, 64), (65, 130), (1, 1), (200, 72), (68, 4), (64, 64, 2)])
def test_shadow_smem_transpose(shape):
    """Column-major src to row-major dst through a Swizzle<3,2,6> tile: vector loads along m,
    vector stores along n."""
    dst = row_major(shape[:2]) + ((shape[0] * shape[1],) if len(shape) == 3 else ())
    if shape[0] % 4 or shape[1] % 4:
        with pytest.raises(AtomError, match="straddles|contiguous"):
            TC.plan_tiled_copy((LD32, ST32), (shape, col_major(shape)), (shape, dst), 4,
                               smem_layout=SW32)
        return
    plan = run_shadow((LD32, ST32), shape, col_major(shape), dst, 4, SW32)
    assert plan.kind == "smem" and plan.smem_vec_w and not plan.smem_vec_r


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 70), st.integers(1, 70), st.sampled_from([1, 2, 4, 8]),
       st.sampled_from([(4, 8), (8, 4), (2, 16), (32, 1), (1, 32), (16, 16)]),
       st.sampled_from([(1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (1, 4)]),
       st.booleans(), st.sampled_from(["rr", "rc", "cr", "cc"]))
def test_shadow_random(M, N, E, thr, val, thr_row, sides):
    """Random odd shapes and thread/value layouts: the widest atom that the layouts allow is
    chosen; whatever is planned copies exactly and only the destination."""
    thr_stride = (thr[1], 1) if thr_row else (1, thr[0])
    val_row = sides[0] == "r"
    vstride = (val[1], 1) if val_row else (1, val[0])
    shape = (M, N)
    layouts = {"r": row_major(shape), "c": col_major(shape)}
    for nvals in (it.product(val), 1):
        bits = nvals * 8 * E
        if bits > 128:
            continue
        vt = {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}[E]
        tc = make_tiled_copy(Copy_Atom(UniversalCopy(bits), vt), make_layout(thr, thr_stride),
                             make_layout(val, vstride))
        try:
            run_shadow(tc, shape, layouts[sides[0]], layouts[sides[1]], E)
            return
        except AtomError as e:
            assert "tiled_copy" == e.arg
            assert "vector" in str(e) or "value type" in str(e)


# ---------------------------------------------------------------------------------------------
# the law: the lowered maps are the algebra's partitions


def _rest_index(coord, rest_shape):
    r, mult = 0, 1
    for c, s in zip(coord, rest_shape):
        r += c * mult
        mult *= s
    return r


@pytest.mark.parametrize("name", ["tc_copy_f32_row_batched", "tc_copy_f16_row4_odd",
                                  "tc_cpasync_f16_smem"])
def test_offsets_are_thrcopy_partitions(name):
    """For every thread and some tiles: kernel offsets == ThrCopy.partition_S(local_tile(src))
    (and partition_D of dst), predicates == elem_less of the identity tensor's partition."""
    tc, (shape, ss), (_, ds), E, sm = TC.shipped_tiled_copies()[name]
    plan = TC.plan_tiled_copy(tc, (shape, ss), (shape, ds), E, smem_layout=sm)
    tc1, tc2 = tc if isinstance(tc, tuple) else (tc, tc)
    gS = make_tensor(make_gmem_ptr("float32"), Layout(shape, ss))
    gD = make_tensor(make_gmem_ptr("float32"), Layout(shape, ds))
    ident = make_identity_tensor(shape)
    rest = tuple(-(-s // t) for s, t in zip(shape, plan.tile)) + shape[len(plan.tile):]
    loads, stores = TC._ir(plan)
    import itertools
    from cute_py.backends.cuda import ir
    tiles = list(itertools.product(*[range(r) for r in rest]))
    for coord in tiles[:3] + tiles[-3:]:
        r = _rest_index(coord, rest)
        env = {"tid": np.arange(plan.threads, dtype=np.int64), "bid": np.int64(r)}
        for tcx, g, items, vec, part in ((tc1, gS, loads, plan.vec_s, "partition_S"),
                                        (tc2, gD, stores, plan.vec_d, "partition_D")):
            for t in range(plan.threads):
                thr = tcx.get_slice(t)
                p = getattr(thr, part)(local_tile(g, tcx.tiler_mn, coord))
                pc = thr.partition_S(local_tile(ident, tcx.tiler_mn, coord))
                for x, (off, _sm, pred) in enumerate(items):
                    j = x * vec
                    got_off = int(np.broadcast_to(ir.evaluate(off, env), (plan.threads,))[t])
                    got_pred = int(np.broadcast_to(ir.evaluate(pred, env), (plan.threads,))[t])
                    assert got_off == p(j).index, (t, coord, j)
                    assert got_pred == int(elem_less(tuple(pc(j)), shape)), (t, coord, j)


# ---------------------------------------------------------------------------------------------
# validation


def test_errors_name_the_argument():
    sh = (64, 64)
    rm, cm = (sh, row_major(sh)), (sh, col_major(sh))
    with pytest.raises(AtomError, match="value type") as e:
        TC.plan_tiled_copy(F16_ROW, rm, rm, 4)
    assert e.value.arg == "tiled_copy"
    with pytest.raises(AtomError, match="contiguous.*src") as e:
        TC.plan_tiled_copy(F16_ROW, cm, rm, 2)
    assert e.value.arg == "tiled_copy"
    with pytest.raises(AtomError, match="contiguous.*dst"):
        TC.plan_tiled_copy(F16_ROW, rm, cm, 2)
    with pytest.raises(AtomError, match="contiguous"):  # rows of 60 halves: 8-vectors misalign
        TC.plan_tiled_copy(F16_ROW, ((64, 60), (60, 1)), ((64, 60), (60, 1)), 2)
    with pytest.raises(AtomError, match="straddles"):   # aligned rows, ragged extent
        TC.plan_tiled_copy(F16_ROW, ((64, 60), (64, 1)), ((64, 60), (64, 1)), 2)
    with pytest.raises(AtomError, match="rank"):
        TC.plan_tiled_copy(F16_ROW, ((64,), (1,)), ((64,), (1,)), 2)
    with pytest.raises(LayoutError, match="shape") as e:
        TC.plan_tiled_copy(F16_ROW, rm, ((64, 32, 2), (64, 1, 32)), 2)
    assert e.value.arg == "dst"
    with pytest.raises(LayoutError, match="stride-0"):
        TC.plan_tiled_copy(F16_ROW, rm, (sh, (0, 1)), 2)
    with pytest.raises(LayoutError, match="hierarchical"):
        TC.plan_tiled_copy(F16_ROW, (((5, 7), 64), ((64, 320), 1)), ((35, 64), (64, 1)), 2)
    with pytest.raises(AtomError, match="cover"):
        part = TiledCopy(Copy_Atom(UniversalCopy(32), "float32"), Layout((32, 1)), (64,))
        TC.plan_tiled_copy(part, ((64,), (1,)), ((64,), (1,)), 4)
    with pytest.raises(AtomError, match="threads"):
        big = tcopy(32, "float32", (64, 32), (32, 1), (1, 1))
        TC.plan_tiled_copy(big, rm, rm, 4)
    cpa = make_tiled_copy(Copy_Atom(SM80_CP_ASYNC_CACHEGLOBAL(128), "float16"),
                          make_layout((8, 16), (1, 8)), make_layout((8, 1)))
    with pytest.raises(AtomError, match="cannot run here"):
        TC.plan_tiled_copy(cpa, cm, cm, 2)
    with pytest.raises(AtomError, match="one tile"):
        TC.plan_tiled_copy((cpa, F16_ROW), cm, rm, 2)
    with pytest.raises(LayoutError, match="tile's shape") as e:
        TC.plan_tiled_copy((LD32, ST32), cm, rm, 4, smem_layout=make_layout((32, 64)))
    assert e.value.arg == "smem_layout"
    with pytest.raises(LayoutError, match="injective"):
        TC.plan_tiled_copy((LD32, ST32), cm, rm, 4, smem_layout=make_layout((64, 64), (1, 32)))
    with pytest.raises(AtomError, match="smem_layout"):
        TC.plan_tiled_copy(F16_ROW, rm, rm, 2, smem_layout=SW32)


class _Arr:
    def __init__(self, shape, typestr="<f2", ptr=4096, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (ptr, False), "strides": strides, "version": 3}


def test_copy_entry_point_checks_before_launch():
    """copy(src, dst, TiledCopy) raises for misaligned base pointers and bad layouts before
    anything is compiled or launched (fake device arrays)."""
    with pytest.raises(LaunchError, match="misaligned") as e:
        C.copy(_Arr((64, 64), ptr=4096 + 2), _Arr((64, 64)), F16_ROW)
    assert e.value.arg == "src"
    with pytest.raises(LaunchError, match="misaligned") as e:
        C.copy(_Arr((64, 64)), _Arr((64, 64), ptr=4096 + 8), F16_ROW)
    assert e.value.arg == "dst"
    with pytest.raises(AtomError, match="contiguous"):
        C.copy(_Arr((64, 64), strides=(2, 128)), _Arr((64, 64)), F16_ROW)
    with pytest.raises(AtomError, match="tiled_copy"):
        C.copy(_Arr((64, 64)), _Arr((64, 64)), (F16_ROW,))
    with pytest.raises(AtomError, match="smem_layout"):
        C.copy(_Arr((64, 64)), _Arr((64, 64)), F16_ROW, smem_layout=SW32)


# ---------------------------------------------------------------------------------------------
# compile, golden


def test_shipped_tiled_copies_compile_without_spills(tmp_cache):
    for name, plan in TC.shipped_tiled_plans().items():
        k = TC.build_tiled_copy(plan)
        for arch in ("sm_80", "sm_90a"):
            m = k.compile(arch)
            if not m.has_resource_report:
                pytest.skip(f"{m.compiler} returned no ptxas report")
            r = m.resources_for(k.name)
            assert r.spills == 0 and r.stack_frame == 0, (name, arch, r)
            assert r.registers <= 64, (name, arch, r)


def test_source_is_deterministic():
    for plan in TC.shipped_tiled_plans().values():
        assert TC._source(plan) == TC.tiled_copy_source(plan)
    assert "ld_global_128" in TC.tiled_copy_source(TC.shipped_tiled_plans()["tc_copy_f16_row_8192"])


@pytest.mark.parametrize("name", GOLDEN_PLANS)
def test_golden_sources(name):
    """Codegen changes show up as diffs here; regenerate with CUTE_PY_UPDATE_GOLDEN=1."""
    src = TC.tiled_copy_source(TC.shipped_tiled_plans()[name])
    path = GOLDEN / f"{name}.cu"
    if os.environ.get("CUTE_PY_UPDATE_GOLDEN") == "1":
        path.write_text(src)
    assert path.read_text() == src
