"""CPU-only: the SM80 GEMM with a fused EVT epilogue compiles for sm_80 and sm_90a with zero
spills (the default 128x256 tile with relu(alpha*acc + beta*C + bias) and gelu(acc + bias), and
the element-wise epilogue path on the 64x64 tile), and the configuration checks."""

import pytest

from cute_py.epilogue import evt
from cute_py.errors import AtomError
from cute_py.backends.cuda.kernels.gemm_sm80 import (generate_source, kernel_name,
                                                     with_epilogue, epilogue_of)
from cute_py.backends.cuda.kernels.gemm_sm80_configs import default_config
from cute_py.backends.cuda.compiler import has_compiler


TREES = {"relu": evt.lin_comb_bias_elt_act("relu"),
         "gelu": evt.lin_comb_bias_elt_act("gelu", alpha=1.0, beta=0.0)}


def _configs():
    big = default_config(8192, 8192, 8192)
    small = default_config(64, 64, 64)
    return [("default-relu", with_epilogue(big, TREES["relu"])),
            ("default-gelu", with_epilogue(big, TREES["gelu"])),
            ("64x64-relu-elementwise", with_epilogue(small, TREES["relu"], vectorized=False))]


@pytest.mark.skipif(not has_compiler(), reason="no CUDA compiler")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_fused_configs_compile_without_spills(arch):
    from cute_py.backends.cuda.compiler import compile_module
    for label, cfg in _configs():
        src = generate_source(cfg)
        assert "cute_epi_visit" in src and "SM80 epilogue" in src, label
        r = compile_module(src, arch=arch).resources_for(kernel_name(cfg))
        assert r.spills == 0 and 0 < r.registers <= 255, (label, arch, r)


def test_with_epilogue_matches_the_gemm_fragment_and_tile():
    from cute_py.backends.cuda.epilogue.fragment import mma_sm80_fragment
    cfg = with_epilogue(default_config(8192, 8192, 8192), TREES["gelu"])
    e = epilogue_of(cfg).cfg
    assert e.fragment == mma_sm80_fragment(*cfg.warps, *cfg.warp_tile)
    assert (e.tile_m, e.tile_n) == cfg.tile[:2] and e.element_d == "float16"
    assert cfg.launch_smem_bytes >= cfg.smem_bytes
    assert kernel_name(cfg) != kernel_name(with_epilogue(cfg, None))
    assert with_epilogue(cfg, None).epi is None


def test_mismatched_epilogue_is_rejected():
    from dataclasses import replace
    big = default_config(8192, 8192, 8192)
    small = default_config(64, 64, 64)
    wrong = replace(big, epi=with_epilogue(small, TREES["gelu"]).epi)
    with pytest.raises(AtomError, match="epi"):
        wrong.check()
    with pytest.raises(AtomError, match="epi"):
        with_epilogue(big, "relu")
