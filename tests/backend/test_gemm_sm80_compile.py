"""CPU-only: every shipped SM80 GEMM configuration compiles for sm_80 and sm_90a, zero spills.

Uses the library's compiler (NVRTC from the pip package, CuPy's NVRTC or nvcc); no GPU needed.
The kernel names, register counts and spill bytes come from ptxas' verbose report.
"""

import pytest

from cute_py.backends.cuda.kernels.gemm_sm80 import precompile, kernel_name
from cute_py.backends.cuda.kernels.gemm_sm80_configs import shipped_configs, default_config
from cute_py.backends.cuda.compiler import has_compiler


pytestmark = pytest.mark.skipif(not has_compiler(), reason="no CUDA compiler")


def _all_configs():
    cfgs = list(shipped_configs())
    # what the heuristic returns for big and small problems is shipped too
    for dt, od in (("f16", "f16"), ("tf32", "f32")):
        for ml in ("multistage", "pipelined", "singlestage", None):
            for size in ((64, 64, 64), (8192, 8192, 8192)):
                cfgs.append(default_config(*size, dtype=dt, out_dtype=od, mainloop=ml))
    return sorted(set(cfgs), key=kernel_name)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_every_shipped_config_compiles_without_spills(arch):
    res = precompile(_all_configs(), arch=arch, processes=2)
    assert len(res) == len(_all_configs())
    spilled = [(name, regs, spills) for name, regs, spills in res if spills]
    assert not spilled, spilled
    assert all(0 < regs <= 255 for _, regs, _ in res)


_HEADER_PROBE = r'''
#include "cute_py/ptx_sm80.cuh"
using namespace cute_py::sm80;
extern "C" __global__ void ptx_sm80_probe(const float* g, float* out) {
  __shared__ __align__(128) unsigned char s[4096];
  const u32 a = smem_u32(s) + threadIdx.x * 16;
  cp_async_zfill<16>(a, g + threadIdx.x * 4, 16);
  cp_async_zfill<8>(a + 2048, g, 8);
  cp_async_pred_zfill<4>(a + 3072, g, threadIdx.x & 1);
  cp_async_commit();
  cp_async_wait<0>();
  cp_async_wait_all();
  __syncthreads();
  u32 r[4], b[2];
  ldmatrix_x1(r[0], a); ldmatrix_x2(r[0], r[1], a); ldmatrix_x4(r[0], r[1], r[2], r[3], a);
  ldmatrix_x1_trans(r[0], a); ldmatrix_x2_trans(b[0], b[1], a);
  ldmatrix_x4_trans(r[0], r[1], r[2], r[3], a);
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  mma_m16n8k16_f16f32(d, r, b);
  mma_m16n8k16_bf16f32(d, r, b);
  r[0] = cvt_tf32(r[0]); b[0] = cvt_tf32(ld_shared_32(a));
  mma_m16n8k8_tf32f32(d, r, b);
  st_shared_16(a, f32_to_f16_bits(d[0])); st_shared_32(a, pack_f16x2(d[0], d[1]));
  sts64(a, pack_bf16x2(d[2], d[3]), 0u); st_shared_128(a, make_uint4(0u, 1u, 2u, 3u));
  out[threadIdx.x] = d[0] + d[1] + d[2] + d[3] + f16_bits_to_f32(f32_to_bf16_bits(d[0])) + bf16_bits_to_f32(1);
}
'''


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ptx_sm80_header_compiles_every_wrapper(arch):
    from cute_py.backends.cuda.compiler import compile_module
    mod = compile_module(_HEADER_PROBE, arch=arch)
    assert mod.resources_for("ptx_sm80_probe").spills == 0
