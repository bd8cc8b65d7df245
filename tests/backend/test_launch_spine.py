"""CPU checks of the launch spine: packed parameters, stream resolution, tensor metadata,
the gemm call's checks (no GPU needed)."""

import struct

import numpy as np
import pytest

from cute_py.backends.cuda.kernel import PARAM_KINDS, ArgPack, Param
from cute_py.backends.cuda.stream import stream_handle
from cute_py.backends.cuda.tensors import TensorMeta, overlaps, span_bytes
from cute_py.errors import LaunchError


def test_argpack_lays_parameters_out_like_the_c_abi():
    """int, CUtensorMap (64-byte aligned), pointer, float: offsets 0, 64, 192, 200."""
    p = ArgPack(["i32", "tmap", "ptr", "f32", "i64"])
    assert p.offsets == (0, 64, 192, 200, 208)
    assert p.base % 64 == 0
    p.set(0, -5)
    p.set(1, bytes(range(128)))
    p.set(2, 0xDEADBEEF000)
    p.set(3, 1.5)
    p.set(4, -(1 << 40))
    raw = p.tobytes()
    assert struct.unpack_from("<i", raw, 0)[0] == -5
    assert raw[64:192] == bytes(range(128))
    assert struct.unpack_from("<Q", raw, 192)[0] == 0xDEADBEEF000
    assert struct.unpack_from("<f", raw, 200)[0] == 1.5
    assert struct.unpack_from("<q", raw, 208)[0] == -(1 << 40)
    # a plan patches a pointer (or a descriptor's address word) as one 64-bit word
    p.words[p.word(2)] = 0x1234
    p.words[p.word(1)] = 0xABC0
    raw = p.tobytes()
    assert struct.unpack_from("<Q", raw, 192)[0] == 0x1234
    assert struct.unpack_from("<Q", raw, 64)[0] == 0xABC0 and raw[72:192] == bytes(range(8, 128))
    # the kernel-parameter array points at each slot
    assert [p.params[i] for i in range(5)] == [p.base + o for o in p.offsets]


def test_argpack_and_param_reject_unknown_kinds():
    with pytest.raises(LaunchError, match="kinds"):
        ArgPack(["i32", "complex"])
    with pytest.raises(LaunchError, match="kind"):
        Param("x", "int")
    with pytest.raises(LaunchError, match="128 bytes"):
        ArgPack(["tmap"]).set(0, b"short")
    assert set(PARAM_KINDS) >= {"ptr", "i32", "i64", "f32", "tmap"}


def test_stream_handle_rules():
    assert stream_handle(0) == 0 and stream_handle(1234) == 1234

    class Torchish:
        cuda_stream = 77

    class Protocol:
        def __cuda_stream__(self):
            return (0, 99)
    assert stream_handle(Torchish()) == 77
    assert stream_handle(Protocol()) == 99
    for bad in (-1, True, "s", 1.5, object()):
        with pytest.raises(LaunchError) as e:
            stream_handle(bad, op="gemm")
        assert e.value.arg == "stream" and e.value.op == "gemm"


def _m(ptr, shape, strides, itemsize=2):
    return TensorMeta(ptr, shape, strides, "float16", itemsize, 0, "cupy")


def test_span_and_overlap():
    a = _m(1000, (4, 8), (8, 1))            # 32 halves: bytes [1000, 1064)
    assert span_bytes(a) == (1000, 1064)
    assert overlaps(a, _m(1062, (1,), (1,)))
    assert not overlaps(a, _m(1064, (4,), (1,)))
    assert overlaps(a, _m(950, (4, 8), (1, 4)))         # column-major view over it
    assert not overlaps(a, _m(900, (4, 8), (1, 4)))     # ends at byte 964
    assert span_bytes(_m(1000, (0, 8), (8, 1))) == (1000, 1000)


def test_meta_swap_and_batch():
    a = _m(16, (3, 5), (5, 1))
    assert a.swap_last().shape == (5, 3) and a.swap_last().strides == (1, 5)
    assert a.batched().shape == (1, 3, 5)


def test_gemm_rejects_bad_scalars_and_arguments_without_a_gpu():
    """Scalars are checked before anything touches a device."""
    from cute_py.backends.cuda import gemm_api

    class Dev:
        def __init__(self, shape, typestr="<f2"):
            st, acc = [], 2
            for s in reversed(shape):
                st.append(acc)
                acc *= s
            self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                             "data": (1 << 20, False),
                                             "strides": tuple(reversed(st)), "version": 3}
    A, B = Dev((4, 8)), Dev((8, 6))
    for bad in ("2", 1j, None, True):
        with pytest.raises(LaunchError) as e:
            gemm_api.gemm(A, B, alpha=bad)
        assert e.value.op == "gemm" and e.value.arg == "alpha"
    with pytest.raises(LaunchError) as e:
        gemm_api.gemm(A, Dev((7, 6)))
    assert e.value.arg == "B" and e.value.op == "gemm"
    with pytest.raises(LaunchError) as e:
        gemm_api.gemm(A, B, out=Dev((4, 6), "<f4"))
    assert e.value.arg == "out"
    with pytest.raises(LaunchError) as e:        # out aliases A's memory
        gemm_api.gemm(A, B, out=Dev((4, 6)))
    assert e.value.arg == "out" and "overlaps" in str(e.value)
    with pytest.raises(LaunchError) as e:
        gemm_api.gemm(A, B, stream="s")
    assert e.value.arg == "stream"
    with pytest.raises(LaunchError) as e:
        gemm_api.gemm(np.ones((4, 8), np.float16), B)
    assert e.value.arg == "A"


def test_gemm_choice_prints_the_kernel():
    from cute_py.backends.cuda.gemm_api import GemmChoice
    from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90GemmConfig
    c = GemmChoice("sm90", "k", Sm90GemmConfig(), ("A",), "because")
    assert "cooperative 128x256x64" in str(c) and "copied A" in str(c) and "because" in str(c)


def test_make_plan_raises_the_smem_limit_of_large_plans():
    """A plan above 48 KB of dynamic shared memory raises its kernel's limit once, on the
    plan's device (a launch would otherwise fail with CUDA_ERROR_INVALID_VALUE)."""
    from cute_py.backends.cuda.kernel import make_plan
    asked = []

    class FakeKernel:
        def ensure_smem(self, smem, device=None):
            asked.append((smem, device))
    params = [("u64", None, "A"), ("i32", 7, None), ("f32", None, "$alpha")]
    make_plan(FakeKernel(), 3, (1, 1, 1), (128, 1, 1), 48 * 1024, params, ("A",), ("alpha",))
    assert asked == []
    p = make_plan(FakeKernel(), 3, (1, 1, 1), (128, 1, 1), 64 * 1024, params, ("A",), ("alpha",))
    assert asked == [(64 * 1024, 3)] and p.smem == 64 * 1024
