"""Every activation and bias kind of the one-call fused GEMM (``cute_py.epilogue.fused``)
compiles (CPU, nvcc / NVRTC) into the Hopper ping-pong kernel the one call uses for
``alpha * A @ B + beta * C`` (``default_evt_config``'s configuration with the fused tree), for
sm_90a with no spills."""

import pytest

from cute_py.backends.cuda.compiler import has_compiler
from cute_py.epilogue.fused import fused_epilogue

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no CUDA compiler")

M, N = 4095, 4096
# (activation, bias kind, has C, dtype): each activation once; both bias kinds, with and
# without C, fp16 and bf16 among them
CASES = [
    ("gelu", "row", False, "f16"),          # nn.Linear + GELU
    ("relu", "row", True, "f16"),           # relu(alpha*acc + beta*C + bias)
    ("gelu_erf", "col", False, "bf16"),
    ("silu", "row", True, "bf16"),
    ("sigmoid", "col", True, "f16"),
    (None, "col", False, "bf16"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_fused_trees_compile_sm90a_zero_spills(case):
    from cute_py.backends.cuda.compiler import compile_module
    from cute_py.backends.cuda.kernels import gemm_sm90 as G
    act, bias, has_c, dt = case
    ed = {"f16": "float16", "bf16": "bfloat16"}[dt]
    tree, names = fused_epilogue(M, N, D_dtype=ed, C_dtype=ed, has_c=has_c, alpha=1.5,
                                 beta=0.5, bias_shape=(N,) if bias == "row" else (M, 1),
                                 bias_dtype=ed, activation=act)
    assert ("C" in names) == has_c and "bias" in names
    cfg = G.Sm90GemmConfig(64, 256, 64, 5, 2, dt, group_m=16, schedule="pingpong",
                           epi=G.make_epilogue_config(tree, 64, 256, element_d=ed,
                                                      schedule="pingpong"))
    cfg.check()
    res = compile_module(G.generate_source(cfg), arch="sm_90a").resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res
