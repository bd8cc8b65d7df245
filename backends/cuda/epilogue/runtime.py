"""Running epilogue kernels: 2-D TMA descriptors (through the backend's one encoder), a typed
launcher that passes them as ``__grid_constant__`` parameters (through the one launch path), and :class:`EpilogueTestKernel` — the standalone kernel that proves the epilogue on
its own (accumulator read from global memory, then the full smem-staged / TMA path).
"""

from __future__ import annotations

import numpy as np

from cute_py.epilogue import evt
from cute_py.errors import LaunchError

from .sm90 import EpilogueConfig, Sm90Epilogue, build_test_kernel_source, dtype_bytes

__all__ = ["encode_tma_2d", "launch_typed", "EpilogueTestKernel"]

_SWIZZLE_BITS = {0: 0, 32: 1, 64: 2, 128: 3}
_NP_DTYPE = {"float16": np.float16, "bfloat16": np.uint16, "float32": np.float32}


def encode_tma_2d(ptr: int, dtype: str, rows: int, cols: int, ld: int, box_rows: int,
                  box_cols: int, swizzle_bytes: int) -> bytes:
    """A 128-byte ``CUtensorMap`` for a row-major ``rows x cols`` matrix (leading dimension
    ``ld`` elements) read/written in ``box_rows x box_cols`` boxes with the given swizzle
    (through the backend's one encoder, :func:`~cute_py.backends.cuda.tma.encode_tiled`, L2
    promotion 128 B).  Raises LaunchError when TMA cannot address the matrix (16-byte alignment
    of the base and of the row pitch)."""
    from ..tma import encode_tiled
    eb = dtype_bytes(dtype)
    if ptr % 16:
        raise LaunchError("encode_tma_2d", "ptr", "must be 16-byte aligned for TMA", actual=ptr)
    if (ld * eb) % 16:
        raise LaunchError("encode_tma_2d", "ld", "row pitch must be a multiple of 16 bytes "
                          "for TMA", expected="ld * sizeof(T) % 16 == 0", actual=ld * eb)
    return encode_tiled(dtype, (cols, rows), (ld * eb,), (box_cols, box_rows),
                        _SWIZZLE_BITS[swizzle_bytes], ptr, 2)


_KIND = {"tmap": "tmap", "ptr": "u64", "float": "f32", "int": "i32"}


def launch_typed(kernel, grid, block, smem: int, args, stream=None) -> None:
    """Launch ``kernel`` (a CompiledKernel) with ``(kind, value)`` arguments, kinds tmap
    (bytes), ptr (int), float, int, on ``stream`` (default: CuPy's current stream)."""
    from ..kernel import ArgPack
    from ..stream import stream_handle
    pack = ArgPack([_KIND[k] for k, _ in args])
    for i, (_, v) in enumerate(args):
        pack.set(i, v)
    if smem > 48 * 1024:
        kernel.ensure_smem(smem)
    kernel.launch_pack(grid, pack, stream_handle(stream), block=block, smem=smem)


def _ptr(a) -> int:
    return int(a.data.ptr) if hasattr(a, "data") and hasattr(a.data, "ptr") else \
        int(a.__cuda_array_interface__["data"][0])


def _check_matrix(name, a, M, N, dtype):
    want = np.dtype(_NP_DTYPE[dtype])
    if a.dtype != want:
        raise LaunchError("epilogue", name, "has the wrong dtype", expected=str(want),
                          actual=str(a.dtype))
    if tuple(a.shape) != (M, N) or a.strides[1] != a.itemsize:
        raise LaunchError("epilogue", name, "must be a row-major M x N matrix",
                          expected=(M, N), actual=(tuple(a.shape), a.strides))
    return a.strides[0] // a.itemsize


def check_tma_store_extent(op: str, name: str, n: int, itemsize: int) -> None:
    """TMA stores write whole 16-byte chunks of a row: when the row's ``n`` elements are not a
    whole number of chunks, the store would overwrite the matrix's row padding past column n
    (memory the caller did not pass).  Such a matrix cannot be a TMA store target."""
    if (n * itemsize) % 16:
        raise LaunchError(op, name, "has rows that are not a whole number of 16-byte chunks; "
                          "TMA stores write whole chunks and would overwrite the row padding "
                          "past column N (use the predicated register->global epilogue)",
                          expected="N * itemsize % 16 == 0", actual=(n, itemsize))


def check_direct_matrix(op: str, name: str, a) -> None:
    """The direct C / aux path reads pairs of adjacent elements with one access: the matrix
    must be aligned to two elements and have an even row stride."""
    ld = a.strides[0] // a.itemsize
    if _ptr(a) % (2 * a.itemsize) or ld % 2:
        raise LaunchError(op, name, "needs a pointer aligned to 2 elements and an even row "
                          "stride for load_path='direct'", expected="even row stride",
                          actual=(hex(_ptr(a)), ld))


class EpilogueTestKernel:
    """The standalone SM90 epilogue kernel for one :class:`EpilogueConfig`.

    ``k(acc, D, **tensors)``: ``acc`` a float32 M x N CuPy array (the accumulator the GEMM would
    have), ``D`` the output (float16 / uint16 bits for bfloat16 / float32), tensors as for
    :func:`cute_py.epilogue.evt.evaluate` plus the side outputs (aux stores, reductions — the
    latter are reset to their identity before the launch)."""

    def __init__(self, cfg: EpilogueConfig, arch: str = "sm_90a"):
        from ..compiler import compile_module
        self.cfg = cfg
        self.epi = Sm90Epilogue(cfg)
        self.source, self.name = build_test_kernel_source(self.epi)
        self.module = compile_module(self.source, arch=arch)
        self._kernel = None

    @property
    def resources(self):
        return self.module.resources_for(self.name)

    def __call__(self, acc, D, **tensors):
        cfg, epi = self.cfg, self.epi
        M, N = D.shape
        bound = evt.bind_arguments(cfg.tree, M, N, tensors, op="EpilogueTestKernel",
                                   need_outputs=True)
        if tuple(acc.shape) != (M, N) or acc.dtype != np.float32:
            raise LaunchError("EpilogueTestKernel", "acc", "must be float32 M x N",
                              expected=(M, N), actual=(tuple(acc.shape), str(acc.dtype)))
        em, en = epi.epi_m, epi.epi_n
        args = [("ptr", _ptr(acc)), ("int", M), ("int", N)]
        for p in epi.params():
            if p.kind == "tmap":
                a = D if p.tensor == "D" else bound[p.tensor]
                ld = _check_matrix(p.tensor, a, M, N, p.dtype)
                if p.tensor == "D" or p.tensor in dict(epi.lt.stores):
                    check_tma_store_extent("EpilogueTestKernel", p.tensor, N, a.itemsize)
                args.append(("tmap", encode_tma_2d(_ptr(a), p.dtype, M, N, ld, em, en,
                                                   en * dtype_bytes(p.dtype))))
            elif p.kind == "mat":
                a = bound[p.tensor]
                _check_matrix(p.tensor, a, M, N, p.dtype)
                check_direct_matrix("EpilogueTestKernel", p.tensor, a)
                args.append(("ptr", _ptr(a)))
            elif p.kind == "ld":
                a = bound[p.tensor]
                args.append(("int", a.strides[0] // a.itemsize))
            elif p.kind == "ptr":
                a = bound[p.tensor]
                role = cfg.tree.signature[p.tensor][0]
                if role.split(":")[0] in ("row_reduce", "col_reduce", "scalar_reduce"):
                    a.fill(evt.reduction_identity(role.split(":")[1]))
                want = np.dtype(_NP_DTYPE[p.dtype])
                if a.dtype != want:
                    raise LaunchError("EpilogueTestKernel", p.tensor, "has the wrong dtype",
                                      expected=str(want), actual=str(a.dtype))
                args.append(("ptr", _ptr(a)))
            elif p.kind == "float":
                args.append(("float", float(bound[p.tensor])))
        if self._kernel is None:
            self._kernel = self.module.get_function(self.name)
        grid = (-(-N // cfg.tile_n), -(-M // cfg.tile_m), 1)
        block = (cfg.fragment.num_threads + (64 if cfg.store_warp else 32), 1, 1)
        launch_typed(self._kernel, grid, block, epi.smem_bytes + 1024, args)
        return D
