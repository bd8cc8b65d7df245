"""The batch fold of ``gemm_broadcast`` (CPU): ``fold_strides`` merges ``(L, M)`` into one row
mode exactly when every element keeps its address; ``needs_broadcast`` / ``is_broadcast``."""

import itertools

import pytest

from cute_py.backends.cuda.gemm_broadcast import fold_strides, is_broadcast, needs_broadcast
from cute_py.backends.cuda.tensors import TensorMeta


def _addresses(shape, strides):
    L, M, K = shape
    return [l * strides[0] + m * strides[1] + k * strides[2]
            for l, m, k in itertools.product(range(L), range(M), range(K))]


@pytest.mark.parametrize("shape", [(1, 3, 2), (3, 1, 2), (3, 4, 2), (2, 5, 3), (4, 2, 1)])
@pytest.mark.parametrize("strides", [(8, 2, 1), (12, 3, 1), (10, 2, 1), (6, 1, 4), (8, 1, 16),
                                     (0, 2, 1), (30, 3, 1), (5, 1, 1)])
def test_fold_strides_law(shape, strides):
    """Law: a stride ``(s, k)`` is returned exactly when ``(l, m, k) -> l*s0 + m*s1 + k*s2``
    equals ``(l*M + m, k) -> (l*M + m)*s + k*s2`` on the whole domain."""
    L, M, K = shape
    got = fold_strides(shape, strides)
    want = _addresses(shape, strides)
    ok = [s for s in set(strides) | {0, 1, M * strides[1]}
          if [(l * M + m) * s + k * strides[2] for l, m, k in
              itertools.product(range(L), range(M), range(K))] == want]
    if got is None:
        assert not ok
    else:
        assert got[1] == strides[2]
        assert [(l * M + m) * got[0] + k * got[1] for l, m, k in
                itertools.product(range(L), range(M), range(K))] == want


def _meta(shape, strides):
    return TensorMeta(0, tuple(shape), tuple(strides), "float16", 2, 0, "torch")


def test_needs_broadcast():
    a3 = _meta((4, 8, 16), (128, 16, 1))
    b2 = _meta((16, 8), (8, 1))
    b3 = _meta((4, 16, 8), (128, 8, 1))
    b0 = _meta((4, 16, 8), (0, 8, 1))
    b1 = _meta((1, 16, 8), (128, 8, 1))
    assert needs_broadcast(a3, b2) and needs_broadcast(a3, b0) and needs_broadcast(a3, b1)
    assert needs_broadcast(_meta((8, 16), (16, 1)), b3)
    assert not needs_broadcast(a3, b3)
    assert not needs_broadcast(_meta((8, 16), (16, 1)), b2)
    assert not needs_broadcast(_meta((1, 8, 16), (128, 16, 1)), b1)
    assert is_broadcast(b0) and is_broadcast(b1) and is_broadcast(b2) and not is_broadcast(b3)
