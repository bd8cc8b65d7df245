"""TiledCopy kernels on the GPU: copy(src, dst, tiled_copy) against NumPy on odd shapes,
fp16/fp32 (and fp64/uint8), through registers and through a swizzled / cp.async shared-memory
tile, with poisoned destinations and guard bands; misaligned pointers raise before launch."""

import numpy as np
import pytest

from conftest import requires_gpu

from cute_py.atom.copy_atom import Copy_Atom
from cute_py.atom.copy_traits import SM80_CP_ASYNC_CACHEGLOBAL, UniversalCopy
from cute_py.atom.tiled_copy import make_tiled_copy
from cute_py.composed import make_composed_layout
from cute_py.layout import make_layout
from cute_py.swizzle import Swizzle

pytestmark = [pytest.mark.gpu, requires_gpu]

GUARD = 64


def tcopy(bits, vt, thr, thr_stride, val, val_stride=None):
    return make_tiled_copy(Copy_Atom(UniversalCopy(bits), vt), make_layout(thr, thr_stride),
                           make_layout(val, val_stride))


def _rand(cp, shape, dtype, rng):
    host = rng.integers(0, 251, size=shape).astype(dtype) if np.dtype(dtype).kind in "ui" \
        else rng.standard_normal(shape).astype(dtype)
    return cp.asarray(host), host


def _guarded(cp, shape, dtype):
    n = int(np.prod(shape))
    buf = cp.empty(n + 2 * GUARD, dtype=dtype)
    buf.view(cp.uint8).fill(0xA5)
    return buf[GUARD:GUARD + n].reshape(shape), buf


def _check_guards(buf):
    b = buf.get().view(np.uint8)
    item = buf.dtype.itemsize
    assert np.all(b[:GUARD * item] == 0xA5) and np.all(b[-GUARD * item:] == 0xA5), \
        "wrote outside the destination"


def _check(cp, dst, buf, want):
    cp.cuda.runtime.deviceSynchronize()
    got = dst.get()
    assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8)), \
        f"{int((got != want).sum())} of {got.size} elements differ"
    _check_guards(buf)


VT = {np.float16: "float16", np.float32: "float32", np.float64: "float64", np.uint8: "uint8"}


def _row_copy(dtype):
    """128-bit vectors along n: (16,8) row-major threads x (2, 16/E) row-major values."""
    E = np.dtype(dtype).itemsize
    return tcopy(128, VT[dtype], (16, 8), (8, 1), (2, 16 // E), (16 // E, 1))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.uint8],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(1, 16), (33, 64), (1001, 144), (257, 512), (5, 7, 48)],
                         ids=str)
def test_register_copy_vectors(gpu, shape, dtype):
    """Row-major -> row-major (a batch mode for rank 3) with 16-byte vectors; odd extents along m,
    residue tiles along n (n a multiple of the vector)."""
    from cute_py.backends.cuda.kernels.copy import copy
    cp = gpu
    rng = np.random.default_rng(hash((shape, np.dtype(dtype).name)) % 2**32)
    src, host = _rand(cp, shape, dtype, rng)
    dst, buf = _guarded(cp, shape, dtype)
    if len(shape) == 3:  # (B, M, N) arrays copied as the domain (M, N, B): a batch mode
        k = copy(src.transpose(1, 2, 0), dst.transpose(1, 2, 0), _row_copy(dtype))
    else:
        k = copy(src, dst, _row_copy(dtype))
    assert k.plan.kind == "register" and k.plan.vec_s * np.dtype(dtype).itemsize == 16
    _check(cp, dst, buf, host)


@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, perm", [((77, 45), (1, 0)), ((1, 1), (1, 0)), ((130, 67), (1, 0)),
                                         ((5, 3, 7), (2, 0, 1)), ((4, 6, 10, 12), (0, 3, 1, 2))],
                         ids=str)
def test_register_copy_scalar_any_layouts(gpu, shape, perm, dtype):
    """A scalar TiledCopy between arbitrary strided views (transposes and permutations through
    registers), every extent odd."""
    from cute_py.backends.cuda.kernels.copy import copy
    cp = gpu
    rng = np.random.default_rng(len(shape) * 7 + shape[0])
    src, host = _rand(cp, shape, dtype, rng)
    want = np.transpose(host, perm)
    dst, buf = _guarded(cp, want.shape, dtype)
    tc = tcopy(np.dtype(dtype).itemsize * 8, VT[dtype], (32, 8), (8, 1), (1, 1))
    copy(src.transpose(perm), dst, tc)
    _check(cp, dst, buf, want)


LD32 = tcopy(128, "float32", (16, 16), (1, 16), (4, 4), (1, 4))
ST32 = tcopy(128, "float32", (16, 16), (16, 1), (4, 4), (4, 1))
SW32 = make_composed_layout(Swizzle(3, 2, 6), 0, make_layout((64, 64)))


@pytest.mark.parametrize("shape", [(64, 64), (68, 4), (200, 72), (1024, 1028), (4, 4)], ids=str)
def test_smem_transpose_fp32_swizzled(gpu, shape):
    """dst = a.T: 16-byte loads along the source's rows into a Swizzle<3,2,6> tile, 16-byte
    stores along the destination's rows."""
    from cute_py.backends.cuda.kernels.copy import copy
    cp = gpu
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    a, host = _rand(cp, (shape[1], shape[0]), np.float32, rng)
    dst, buf = _guarded(cp, shape, np.float32)
    k = copy(a.T, dst, (LD32, ST32), smem_layout=SW32)
    assert k.plan.kind == "smem" and k.plan.vec_s == k.plan.vec_d == 4
    _check(cp, dst, buf, host.T)


@pytest.mark.parametrize("shape", [(104, 200), (64, 16), (8, 8), (520, 336)], ids=str)
def test_smem_cp_async_fp16(gpu, shape):
    """cp.async (16 bytes along m) into a column-major smem tile, 16-byte stores along n."""
    from cute_py.backends.cuda.kernels.copy import copy
    cp = gpu
    cpa = make_tiled_copy(Copy_Atom(SM80_CP_ASYNC_CACHEGLOBAL(128), "float16"),
                          make_layout((8, 16), (1, 8)), make_layout((8, 1)))
    st = tcopy(128, "float16", (64, 2), (2, 1), (1, 8))
    rng = np.random.default_rng(shape[0])
    a, host = _rand(cp, (shape[1], shape[0]), np.float16, rng)
    dst, buf = _guarded(cp, shape, np.float16)
    copy(a.T, dst, (cpa, st), smem_layout=make_layout((64, 16)))
    _check(cp, dst, buf, host.T)


def test_fresh_inputs_and_one_compile(gpu, tmp_cache):
    from cute_py.backends.cuda import compiler
    from cute_py.backends.cuda.kernels.copy import copy
    cp = gpu
    tc = _row_copy(np.float16)
    before = compiler.compile_count()
    for seed in range(5):
        src, host = _rand(cp, (333, 256), np.float16, np.random.default_rng(seed))
        dst, buf = _guarded(cp, (333, 256), np.float16)
        copy(src, dst, tc)
        _check(cp, dst, buf, host)
    assert compiler.compile_count() == before + 1


def test_misaligned_pointers_raise(gpu):
    from cute_py.errors import AtomError, LaunchError
    from cute_py.backends.cuda.kernels.copy import copy
    cp = gpu
    base = cp.zeros(64 * 64 + 8, cp.float16)
    src = base[1:1 + 64 * 64].reshape(64, 64)
    with pytest.raises(LaunchError, match="misaligned") as e:
        copy(src, cp.zeros((64, 64), cp.float16), _row_copy(np.float16))
    assert e.value.arg == "src"
    with pytest.raises(AtomError, match="contiguous"):
        copy(cp.zeros((64, 60), cp.float16), cp.zeros((64, 60), cp.float16),
             _row_copy(np.float16))
