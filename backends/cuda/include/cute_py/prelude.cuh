// cute_py CUDA prelude: the one header generated kernels include.
//
// Static text shipped with the package; needs nothing beyond what NVRTC provides (no CUTLASS,
// no CUDA toolkit headers). Per-architecture PTX wrappers live in their own files:
//   ptx_common.cuh  integer types, 16-byte loads/stores, cvta, conversions, lane/warp ids
//   ptx_sm80.cuh    cp.async, ldmatrix, mma.sync                     (issue 6)
//   ptx_sm90.cuh    mbarrier, wgmma, TMA, fence.proxy.async, setmaxnreg (issue 7)
#pragma once

#include "cute_py/ptx_common.cuh"

#if __has_include("cute_py/ptx_sm80.cuh")
#include "cute_py/ptx_sm80.cuh"
#endif

#if __has_include("cute_py/ptx_sm90.cuh")
#include "cute_py/ptx_sm90.cuh"
#endif
