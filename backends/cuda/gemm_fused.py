"""Fused GEMMs from one call: ``cute_py.gemm(A, B, C, alpha, beta, bias=, activation=,
epilogue=, **tensors)``.

:func:`cute_py.epilogue.fused.fused_call` turns the call's fused arguments into an EVT tree and
the tensors it reads and writes (checked, errors naming the user's argument).  This module runs
the tree:

- the Hopper kernel with the fused TMA-store EVT epilogue when the device is sm_90, A / B are
  16-bit and TMA can address D (2-D, row-major, 16-byte aligned rows that are whole 16-byte
  chunks) and every matrix of the tree (row-major, 2-element aligned); ping-pong 64x256 when
  A / B rows start on 128-byte boundaries (C / aux then loaded by the consumer threads),
  cooperative 128x256 otherwise — the same rule as the plain default (``gemm_sm90.evt_config``),
  and for trees that read no matrix the tiles of large problems the wave models pick
  (ping-pong 128x192 on rows on 128 bytes, ``pingpong_tile``; 256-row tiles off them,
  ``wide_tile_n``);
  launch plans cached by metadata like the plain path's;
- otherwise the SM80 kernel with the fused EVT epilogue (``gemm_sm80(epilogue=tree)``);
- a batched problem ``(L, M, K)`` runs the tree once per batch: matrices with a leading ``L``
  mode are sliced per batch, vectors (the bias) and scalars are shared.

Law: ``D == evt.evaluate(tree, A @ B, **tensors)`` within the dtype's rounding.
"""

from __future__ import annotations

from cute_py.errors import LaunchError

from .gemm_common import GemmChoice, cupy_view, empty, is_hopper, meta_key, remember
from .stream import on_stream
from .tensors import TensorMeta, is_array, meta_of

__all__ = ["run_fused"]

_OP = "gemm"
_PLANS: dict = {}


def _is_array(x) -> bool:
    return is_array(x)


def run_fused(A, B, C, alpha, beta, *, out, stream, explain, backend, bias, activation,
              epilogue, tensors, metas):
    """The fused call (the arguments of ``cute_py.gemm``; ``stream`` a raw handle, ``metas``
    the checked ``(A, B, C, out)`` metadata).  Returns D, or ``(D, choice)``; NotImplemented
    when the fused arguments add nothing to the product (the caller runs the plain GEMM)."""
    from cute_py.epilogue.fused import fused_call
    Am, Bm, Cm, Dm = metas
    batched = len(Am.shape) == 3
    shape = (*Am.shape[:-1], Bm.shape[-1])
    if out is None:
        out = empty(A, shape, Am.framework)
        Dm = meta_of(out, "out", _OP)
    elif Dm.strides[-1] != 1 and Dm.shape[-1] > 1:
        # the fused epilogues write row-major tiles: a column-major (or any other) out gets
        # the result through a row-major D, copied into it on the call's stream
        with on_stream(Am.framework, Am.device, stream):    # freed after the copy below
            tmp = empty(A, shape, Am.framework)
        res = run_fused(A, B, C, alpha, beta, out=tmp, stream=stream, explain=explain,
                        backend=backend, bias=bias, activation=activation, epilogue=epilogue,
                        tensors=tensors, metas=(Am, Bm, Cm, meta_of(tmp, "out", _OP)))
        if res is NotImplemented:
            return res
        with on_stream(Am.framework, Am.device, stream):
            if Am.framework == "torch":
                out.copy_(tmp)
            else:
                out[...] = tmp
        return (out, res[1]) if explain else out
    for name, t in list((tensors or {}).items()) + [("bias", bias)]:
        if t is not None and _is_array(t):
            m = meta_of(t, name, _OP)          # host arrays / other devices are refused here
            if m.device != Am.device:
                raise LaunchError(_OP, name, "lives on another device than A",
                                  expected=Am.device, actual=m.device)
    if C is not None and Cm is not None and Cm.strides[-1] != 1 and Cm.shape[-1] > 1:
        # the fused epilogues read C in row-major tiles: a row-major copy, on the call's stream
        with on_stream(Am.framework, Am.device, stream):
            C = C.contiguous() if Am.framework == "torch" else C.copy(order="C")
        Cm = meta_of(C, "C", _OP)
    for name, t in (tensors or {}).items():
        if _is_array(t) and len(getattr(t, "shape", ())) >= 2 and t.shape[-1] > 1:
            m = meta_of(t, name, _OP)
            if m.strides[-1] != 1:
                raise LaunchError(_OP, name, "must be row-major (unit column stride): the "
                                  "fused epilogue reads and writes its matrices in row-major "
                                  "tiles", actual=(m.shape, m.strides))
    M, N = shape[-2], shape[-1]
    d_dtype = "bfloat16" if Dm.dtype == "uint16" else Dm.dtype
    L = shape[0] if batched else 1
    choice = None
    for l in range(L):
        sl = (lambda x: x[l] if x is not None and getattr(x, "ndim", 0) == 3 else x) \
            if batched else (lambda x: x)
        tens = {k: (sl(v) if _is_array(v) and getattr(v, "ndim", 0) == 3 else v)
                for k, v in (tensors or {}).items()}
        tree, launch = fused_call(M, N, d_dtype, sl(C), alpha, beta, bias=bias,
                                  activation=activation, epilogue=epilogue, tensors=tens)
        a, b, d = sl(A), sl(B), sl(out)
        if tree is None:           # nothing to fuse after all (e.g. activation="identity")
            return NotImplemented
        choice = _run_tree(a, b, d, tree, launch, stream, backend)
    return (out, choice) if explain else out


def _run_tree(A, B, D, tree, launch, h, backend):
    """One 2-D fused GEMM ``D = tree(A @ B, **launch)`` on stream ``h``."""
    from .kernels import gemm_sm90 as G
    Am, Bm, Dm = meta_of(A, "A", _OP), meta_of(B, "B", _OP), meta_of(D, "out", _OP)
    Bnk = Bm.swap_last()
    tm = {k: meta_of(v, k, _OP) for k, v in launch.items() if _is_array(v)}
    scal = {k: v for k, v in launch.items() if not _is_array(v)}
    hopper = (backend != "sm80" and is_hopper(Am.device) and Am.dtype in ("float16", "bfloat16")
              and G.tma_major(Am) is not None and G.tma_major(Bnk) is not None
              and G.tma_store_ok(Dm)
              and all(_matrix_ok(m, Dm.shape) for m in tm.values()))
    if backend == "sm90" and not hopper:
        raise LaunchError(_OP, "backend", "sm90 cannot run this fused GEMM (needs an sm_90 "
                          "device, 16-bit A / B readable by TMA, a row-major out whose rows are "
                          "whole 16-byte chunks, and row-major 2-element aligned tree matrices)")
    if not hopper:
        return _run_sm80_tree(A, B, D, tree, launch, h, Am)
    key = (tree, meta_key(Am), meta_key(Bnk), meta_key(Dm),
           tuple(sorted((k, meta_key(m)) for k, m in tm.items())), tuple(sorted(scal)))
    entry = _PLANS.get(key)
    if entry is None:
        dt = "f16" if Am.dtype == "float16" else "bf16"
        # the first candidate whose compiled kernel does not spill (checked, not guessed: a
        # tree's registers beside a 128x192 ping-pong or a 256-row tile's accumulators), else
        # the default tile
        cands = _fused_configs(tree, dt, Am, Bnk, tm)
        for cfg in cands:
            g = G.get_kernel(cfg)
            if not (g.resources.spills or g.resources.stack_frame):
                break
        else:
            cfg = cands[-1]
            g = G.get_kernel(cfg)
        plan = g.plan(Am, Bnk, Dm, None, tensors={**tm, **scal}, device=Am.device)
        entry = (plan, GemmChoice("sm90", cfg.name, cfg, (),
                                  "fused EVT epilogue on the Hopper kernel"))
        remember(_PLANS, key, entry, 256)
    plan, choice = entry
    ptr = {"A": Am.ptr, "B": Bnk.ptr, "D": Dm.ptr, "C": tm["C"].ptr if "C" in tm else Dm.ptr,
           **{k: m.ptr for k, m in tm.items()}}
    vals = {"alpha": 1.0, "beta": 0.0, **scal}
    for name, value in plan.resets:
        G._fill(launch[name], value, h)
    plan.run(tuple(ptr[r] for r in plan.roles), tuple(float(vals[r]) for r in plan.scalar_roles),
             h)
    return choice


def _fused_configs(tree, dt, Am, Bnk, tm) -> tuple:
    """The Hopper kernels of a 2-D fused GEMM in order of preference, the default tile last:
    :func:`_fused_config`'s pick, for a 128x192 ping-pong tile also with the 24 / 240 register
    split, then ``_fused_config(wide=False)``."""
    from .kernels import gemm_sm90 as G
    pick, default = _fused_config(tree, dt, Am, Bnk, tm), \
        _fused_config(tree, dt, Am, Bnk, tm, wide=False)
    out = [pick]
    if pick.schedule == "pingpong" and pick.tile_m == 128:
        out.append(G.pingpong_evt_config(tree, dt, pick.tile_m, pick.tile_n, pick.a_major,
                                         pick.b_major, registers=(24, 240)))
    return tuple(dict.fromkeys(out + [default]))


def _fused_config(tree, dt, Am, Bnk, tm, wide: bool = True):
    """The Hopper kernel of a 2-D fused GEMM: the plain default's rule (``evt_config``: ping-pong
    64x256 for operand rows on 128 bytes, cooperative 128x256 otherwise) or, for trees that
    read no matrix (bias vectors, activations: nothing staged through shared memory) on
    problems with a full wave of 128x256 tiles, the tile the wave models pick for ``D = A @
    B``: the ping-pong 128x192 tile (``pingpong_tile``) for operand rows on 128 bytes, the
    256-row tile (``wide_tile_n``) for rows off them (``wide`` False: neither)."""
    from .driver import sm_count
    from .kernels import gemm_sm90 as G
    a_major, b_major = G.tma_major(Am), G.tma_major(Bnk)
    r128 = G.rows_128(Am) and G.rows_128(Bnk)
    cluster = G.cluster_for(Bnk, 256)
    M, N, K = Am.shape[-2], Bnk.shape[-2], Am.shape[-1]
    vectors_only = all(len(m.shape) < 2 for m in tm.values())
    full = -(-M // 128) * -(-N // 256) >= sm_count(Am.device)
    if wide and r128 and cluster == 1 and vectors_only and full:
        return G.pingpong_evt_config(tree, dt, *G.pingpong_tile(M, N, 1, sm_count(Am.device)),
                                     a_major, b_major)
    if wide and a_major == "K" and cluster == 1 and not r128 and vectors_only and full:
        # 160 at most: a 192-wide tile with an activation's temporaries spills
        tn = G.wide_tile_n(M, N, K, b_major, ("cooperative", 128, 256),
                           sm_count(Am.device), 160)
        if tn:
            return G.wide_evt_config(dt, tn, a_major, b_major, tree)
    return G.evt_config(tree, dt, 256, a_major, b_major, r128, cluster)


def _matrix_ok(m: TensorMeta, dshape) -> bool:
    """A tree matrix (C / aux) the Hopper epilogue can read / write in place, or a vector."""
    if len(m.shape) == 2 and tuple(m.shape) == tuple(dshape):
        return m.strides[1] == 1 and m.ptr % (2 * m.itemsize) == 0 and m.strides[0] % 8 == 0 \
            and m.ptr % 16 == 0
    return True


def _run_sm80_tree(A, B, D, tree, launch, h, Am):
    """The SM80 kernel with the fused epilogue (CuPy views, launched on stream ``h``)."""
    from .kernels.gemm_sm80 import gemm_sm80
    from .stream import cupy_external_stream
    bf16 = Am.dtype == "bfloat16"
    args = {k: (cupy_view(v) if _is_array(v) else v) for k, v in launch.items()}
    with cupy_external_stream(h):
        gemm_sm80(cupy_view(A), cupy_view(B), None, cupy_view(D), 1.0, 0.0, bf16=bf16,
                  epilogue=tree, epilogue_args=args)
    return GemmChoice("sm80", "gemm_sm80 + EVT", None, (),
                      "fused EVT epilogue on the SM80 kernel (not sm_90, or the Hopper "
                      "epilogue cannot address out / the tree's matrices in place)")
