"""The SM80 route of ``cute_py.gemm`` for operands TMA cannot read in place (no GPU): the launch
plan's parameters follow the kernel's signature, and the configuration reads the operands where
they are (majors and vector widths from the metadata, as ``gemm_sm80`` picks them)."""

import os
import re
import sys

import pytest

from backends.cuda import gemm_api as api
from backends.cuda.kernels import gemm_sm80 as S

sys.path.insert(0, os.path.dirname(__file__))
from tensor_metas import meta  # noqa: E402


def _meta(shape, dtype="float16", strides=None, ptr=1 << 20, itemsize=2):
    return meta(shape, dtype, strides, ptr, itemsize=itemsize)


@pytest.fixture
def captured(monkeypatch):
    cap = {}
    import backends.cuda.kernel as K

    def fake_make_plan(kernel, device, grid, block, smem, params, roles, scalar_roles):
        cap.update(grid=grid, block=block, smem=smem, params=params, roles=roles,
                   scalars=scalar_roles)
        return "plan"
    monkeypatch.setattr(K, "make_plan", fake_make_plan)
    monkeypatch.setattr(S.GemmSm80, "function", property(lambda self: cap.setdefault(
        "kernel", self)))
    api._PLANS.clear()
    yield cap
    api._PLANS.clear()


@pytest.mark.parametrize("layout", ["AB", "xWT"])
def test_odd_k_plan_reads_in_place(captured, layout):
    M, N, K = 1000, 777, 333
    A = _meta((M, K))
    B = _meta((K, N)) if layout == "AB" else _meta((K, N), strides=(1, K))   # (N, K).T
    D = _meta((M, N), ptr=1 << 24)
    call = api._sm80_call(A, B, D, None)
    assert call is not None and call.plan == "plan" and call.simple
    cfg = captured["kernel"].cfg
    assert cfg.a_major == "K" and cfg.b_major == ("N" if layout == "AB" else "K")
    # rows of 333 and 777 halves: 16-byte copies realigned from the aligned vectors around them
    assert (cfg.vec_a, cfg.vec_b, cfg.realign_a, cfg.realign_b) == (8, 8, True, True)
    # parameters in the kernel's signature order
    src = S.generate_source(cfg)
    sig = re.search(r"\w+\(\s*(const EA.*?)\)\s*\{", src, re.S).group(1)
    names = [p.split()[-1].lstrip("*") for p in sig.split(",")]
    assert names == ["A", "B", "C", "D", "M", "N", "K", "lda", "ldb", "ldc", "ldd", "batch_a",
                     "batch_b", "batch_c", "batch_d", "alpha", "beta"]
    p = captured["params"]
    assert [r for _, _, r in p[:4]] == ["A", "B", "C", "D"]
    assert [v for _, v, _ in p[4:15]] == [M, N, K, K, N if layout == "AB" else K, N, N,
                                          0, 0, 0, 0]
    assert [k for k, _, _ in p] == ["u64"] * 4 + ["i32"] * 3 + ["i64"] * 8 + ["f32"] * 2
    assert captured["roles"] == ("A", "B", "D", "C") and captured["scalars"] == ("alpha", "beta")
    assert captured["grid"] == captured["kernel"].grid(M, N, 1)
    assert call.choice.kernel == S.kernel_name(cfg)


def test_routes_back_when_a_copy_is_needed(captured):
    A = _meta((64, 33))
    B = _meta((33, 48), strides=(96, 2))            # no unit stride: gemm_sm80 would copy
    assert api._sm80_call(A, B, _meta((64, 48)), None) is None
    D_cm = _meta((64, 48), strides=(1, 64))          # column-major D: gemm_sm80 swaps
    assert api._sm80_call(A, _meta((33, 48)), D_cm, None) is None


def test_plan_refuses_a_fused_epilogue():
    from cute_py.epilogue import evt
    from cute_py.errors import LaunchError
    from backends.cuda.kernels.gemm_sm80_configs import default_config
    cfg = S.with_epilogue(default_config(256, 256, 256), evt.lin_comb_bias_elt_act("relu"))
    with pytest.raises(LaunchError) as e:
        S.GemmSm80(cfg).plan(1, 256, 256, 256, (256, 256, 256, 256), (0, 0, 0, 0), 0)
    assert e.value.arg == "cfg"
