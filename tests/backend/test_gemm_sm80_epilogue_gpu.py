"""GPU tests of the SM80 GEMM with a fused EVT epilogue (skipped without a GPU).

``D = relu(alpha * A @ B + beta * C + bias)`` and ``D = gelu(A @ B + bias)`` against a float64
NumPy reference (``evt.evaluate`` on the float64 product), fresh random inputs, D poisoned with
NaN first, odd M, the vectorized (16-byte) and the element-wise epilogue paths, K- and
MN-major operands, the 64x64 and the default 128x256 tiles.
"""

import numpy as np
import pytest

from cute_py.backends.cuda.device import has_gpu

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")]

# (id, tree name, (M, N, K), a_major, b_major, padded operands)
CASES = [
    ("relu-lincomb-bias-1001x776x333-KK", "relu", (1001, 776, 333), "K", "K", True),
    ("relu-lincomb-bias-999x777x129-MN-elementwise", "relu", (999, 777, 129), "M", "N", False),
    ("gelu-bias-1001x776x333-KN", "gelu", (1001, 776, 333), "K", "N", True),
    ("gelu-bias-4095x4096x1024-KK-default-tile", "gelu", (4095, 4096, 1024), "K", "K", True),
    ("relu-lincomb-bias-4095x4096x1024-KK-default-tile", "relu", (4095, 4096, 1024), "K", "K",
     True),
    ("gelu-bias-7x13x29-KK-elementwise", "gelu", (7, 13, 29), "K", "K", False),
]


def tree_of(name):
    from cute_py.epilogue import evt
    if name == "relu":
        return evt.lin_comb_bias_elt_act("relu")
    return evt.lin_comb_bias_elt_act("gelu", alpha=1.0, beta=0.0)


def _operand(r, c, unit_last, rng, padded):
    import cupy as cp
    if unit_last:
        ld = (c + 63) // 64 * 64 if padded else c
        return rng.standard_normal((r, ld), dtype=cp.float32).astype(cp.float16)[:, :c]
    ld = (r + 63) // 64 * 64 if padded else r
    return rng.standard_normal((c, ld), dtype=cp.float32).astype(cp.float16)[:, :r].T


def run_fused_case(tree_name, size, a_major, b_major, padded, seed=None):
    """One fused launch; returns the relative error against float64 (raises on NaN)."""
    import cupy as cp
    from cute_py.epilogue import evt
    from cute_py.backends.cuda.kernels.gemm_sm80 import gemm_sm80
    rng = cp.random.default_rng(seed)
    M, N, K = size
    A = _operand(M, K, a_major == "K", rng, padded)
    B = _operand(K, N, b_major == "N", rng, padded)
    tree = tree_of(tree_name)
    bias = rng.standard_normal((N,), dtype=cp.float32).astype(cp.float16)
    args = {"bias": bias}
    alpha, beta = 1.0, 0.0
    C = None
    if tree_name == "relu":
        alpha, beta = 0.75, -0.5
        C = rng.standard_normal((M, N), dtype=cp.float32).astype(cp.float16)
    D = cp.full((M, N), cp.nan, dtype=cp.float16)
    gemm_sm80(A, B, C, D, alpha, beta, epilogue=tree, epilogue_args=args)
    cp.cuda.runtime.deviceSynchronize()
    acc = cp.asnumpy(cp.matmul(A.astype(cp.float64), B.astype(cp.float64)))
    ref_args = {"bias": cp.asnumpy(bias).astype(np.float64)}
    if tree_name == "relu":
        ref_args.update(C=cp.asnumpy(C).astype(np.float64), alpha=alpha, beta=beta)
    ref = evt.evaluate(tree, acc, **ref_args)
    got = cp.asnumpy(D).astype(np.float64)
    nans = int(np.isnan(got).sum())
    if nans:
        raise AssertionError(f"unwritten (NaN) outputs: {nans}")
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def plan_fused_configs():
    """The GemmSm80Configs the cases launch (for the device script's parallel precompile)."""
    from cute_py.backends.cuda.kernels import gemm_sm80 as g
    with g.plan_only() as planned:
        for _, tname, size, am, bm, padded in CASES:
            try:
                run_fused_case(tname, size, am, bm, padded, seed=0)
            except Exception:
                pass
    return list(planned)


@pytest.mark.parametrize("cid,tname,size,am,bm,padded", CASES, ids=[c[0] for c in CASES])
def test_fused_gemm_sm80_matches_float64(cid, tname, size, am, bm, padded):
    err = run_fused_case(tname, size, am, bm, padded)
    assert err < 2e-3, (cid, err)


def test_fused_gemm_sm80_rejects_batched_and_column_major_d():
    import cupy as cp
    from cute_py.errors import LaunchError
    from cute_py.backends.cuda.kernels.gemm_sm80 import gemm_sm80
    A = cp.ones((2, 64, 32), cp.float16)
    B = cp.ones((2, 32, 64), cp.float16)
    bias = cp.ones((64,), cp.float16)
    with pytest.raises(LaunchError, match="L == 1"):
        gemm_sm80(A, B, epilogue=tree_of("gelu"), epilogue_args={"bias": bias})
    Dc = cp.empty((64, 64), cp.float16, order="F")
    with pytest.raises(LaunchError, match="row-major"):
        gemm_sm80(A[0], B[0], None, Dc, epilogue=tree_of("gelu"), epilogue_args={"bias": bias})
