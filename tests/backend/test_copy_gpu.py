"""Copy kernels on the GPU: against NumPy for many shapes (odd ones too), poisoned outputs,
guard bands around the destination, misaligned pointers, the compile counter."""

import numpy as np
import pytest

from conftest import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]

DTYPES = [np.float32, np.float16, np.float64, np.uint8]
GUARD = 64  # elements of guard band on each side of the destination


def _rand(cp, shape, dtype, rng):
    host = rng.integers(0, 251, size=shape).astype(dtype) if np.dtype(dtype).kind in "ui" \
        else rng.standard_normal(shape).astype(dtype)
    return cp.asarray(host), host


def _guarded(cp, shape, dtype, offset=0):
    """A poisoned destination inside a buffer with guard bands; returns (dst, buffer)."""
    n = int(np.prod(shape))
    buf = cp.empty(n + 2 * GUARD + offset, dtype=dtype)
    buf.view(cp.uint8).fill(0xA5)  # poison: NaN-like pattern for floats, 0xA5 for bytes
    dst = buf[GUARD + offset:GUARD + offset + n].reshape(shape)
    return dst, buf


def _check_guards(buf, offset=0):
    b = buf.view(np.uint8) if isinstance(buf, np.ndarray) else buf.get().view(np.uint8)
    item = buf.dtype.itemsize
    head = b[:(GUARD + offset) * item]
    tail = b[-GUARD * item:]
    assert np.all(head == 0xA5) and np.all(tail == 0xA5), "wrote outside the destination"


SHAPES_PERMS = [
    ((1,), (0,)), ((7,), (0,)), ((1000,), (0,)), ((1 << 20,), (0,)),
    ((1, 1), (1, 0)), ((3, 5), (1, 0)), ((33, 70), (1, 0)), ((64, 64), (1, 0)),
    ((65, 127), (1, 0)), ((127, 65), (1, 0)), ((1024, 1024), (1, 0)), ((1000, 1), (1, 0)),
    ((3, 5, 7), (2, 1, 0)), ((4, 6, 10, 12), (0, 3, 1, 2)), ((8, 16, 32, 64), (0, 2, 1, 3)),
    ((2, 3, 1, 5), (3, 1, 2, 0)), ((5, 33, 17), (1, 0, 2)), ((9, 130, 66), (0, 2, 1)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, perm", SHAPES_PERMS, ids=str)
def test_permuted_copy_matches_numpy(gpu, shape, perm, dtype):
    from cute_py.backends.cuda.kernels.copy import copy
    cp = gpu
    rng = np.random.default_rng(hash((shape, perm, np.dtype(dtype).name)) % 2**32)
    src, host = _rand(cp, shape, dtype, rng)
    want = np.transpose(host, perm)
    dst, buf = _guarded(cp, want.shape, dtype)
    copy(src.transpose(perm), dst)
    cp.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(dst.get(), want)
    _check_guards(buf)


@pytest.mark.parametrize("offset", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: np.dtype(d).name)
def test_misaligned_destination_and_source(gpu, offset, dtype):
    from cute_py.backends.cuda.kernels.copy import copy
    cp = gpu
    rng = np.random.default_rng(offset)
    shape = (96, 80)
    base, host = _rand(cp, (96 * 80 + 8,), dtype, rng)
    src = base[offset:offset + 96 * 80].reshape(shape)
    dst, buf = _guarded(cp, (80, 96), dtype, offset=offset)
    copy(src.T, dst)
    np.testing.assert_array_equal(dst.get(), host[offset:offset + 96 * 80].reshape(shape).T)
    _check_guards(buf, offset)
    dst2, buf2 = _guarded(cp, shape, dtype, offset=offset + 1)
    copy(src, dst2)
    np.testing.assert_array_equal(dst2.get(), host[offset:offset + 96 * 80].reshape(shape))
    _check_guards(buf2, offset + 1)


def test_strided_views_and_explicit_layouts(gpu):
    from cute_py.backends.cuda.kernels.copy import copy
    import cute_py as cute
    cp = gpu
    rng = np.random.default_rng(0)
    a, host = _rand(cp, (64, 96), np.float32, rng)
    dst, buf = _guarded(cp, (32, 48), np.float32)
    copy(a[::2, 1::2], dst)
    np.testing.assert_array_equal(dst.get(), host[::2, 1::2])
    _check_guards(buf)
    # explicit CuTe layouts over flat buffers: column-major (64,96) -> row-major
    flat = a.reshape(-1)
    out, buf = _guarded(cp, (64 * 96,), np.float32)
    copy(flat, out, src_layout=cute.make_layout((96, 64)),
         dst_layout=cute.make_layout((96, 64), stride=(1, 96)))
    np.testing.assert_array_equal(out.get().reshape(64, 96), host.reshape(-1).reshape(64, 96))
    _check_guards(buf)


def test_transpose_helper_and_fresh_inputs(gpu):
    from cute_py.backends.cuda.kernels.copy import transpose
    cp = gpu
    for seed in range(3):
        a = cp.random.default_rng(seed).standard_normal((257, 513), dtype=cp.float32)
        np.testing.assert_array_equal(transpose(a).get(), a.get().T)


def test_many_launches_one_compile(gpu, tmp_cache):
    from cute_py.backends.cuda import compiler
    from cute_py.backends.cuda.kernels.copy import copy
    cp = gpu
    a = cp.arange(300 * 200, dtype=cp.float32).reshape(300, 200)
    out = cp.empty((200, 300), cp.float32)
    before = compiler.compile_count()
    for _ in range(10):
        copy(a.T, out)
    assert compiler.compile_count() == before + 1
    np.testing.assert_array_equal(out.get(), a.get().T)


def test_torch_arguments(gpu):
    try:
        import torch
    except Exception as e:  # absent, or broken by another test's monkeypatching
        pytest.skip(f"torch unavailable: {e}")
    from cute_py.backends.cuda.kernels.copy import copy
    x = torch.randn(48, 80, device="cuda")
    y = torch.empty(80, 48, device="cuda")
    copy(x.t(), y)
    torch.cuda.synchronize()
    assert torch.equal(y, x.t().contiguous())


def test_launch_errors_before_any_launch(gpu):
    from cute_py.errors import LaunchError
    from cute_py.backends.cuda.kernels.copy import copy
    cp = gpu
    with pytest.raises(LaunchError, match="host"):
        copy(np.zeros(4, np.float32), cp.zeros(4, cp.float32))
    with pytest.raises(LaunchError, match="shape"):
        copy(cp.zeros((4, 5), cp.float32), cp.zeros((5, 4), cp.float32))
