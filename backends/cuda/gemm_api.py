"""The one-call GEMM behind ``cute_py.gemm``: checks, kernel choice, cached launch plans.

A call is described by its *key*: for every array its dtype, shape, strides, device and
alignment class (the low bits of its address that decide vector widths, TMA legality and L2
promotion), plus the flags that change the kernel (C present, alpha == 1, backend).  Pointers
are not in the key: the first call with a key builds a :class:`GemmCall` (kernel choice,
compiled kernel, packed parameters, TMA descriptors); every later call with new tensors of the
same key only reads their pointers, patches them into the pack (one 64-bit word each, TMA
descriptors included) and launches on the caller's stream.

Rules the user sees (each violation raises :class:`~cute_py.errors.LaunchError` naming the
argument as ``gemm: <arg> ...``):

- A ``(M, K)`` / ``(L, M, K)`` and B ``(K, N)`` / ``(L, K, N)`` of one dtype (float16,
  bfloat16; float32 runs the SM80 kernel in tf32), on one CUDA device, each with a unit stride
  in one of its two matrix modes (otherwise it is copied first);
- ``C`` and ``out`` have D's shape; ``out`` (D) must be of A's dtype and may not overlap A or
  B, nor C except as C itself (in place, ``C.addmm_``); C's dtype must be D's;
- ``alpha`` and ``beta`` are real numbers;
- ``stream``: see :func:`~cute_py.backends.cuda.stream.stream_handle`; default: torch's current
  stream for torch tensors, CuPy's for CuPy arrays.

Which kernel runs is decided only by checked, documented conditions (``explain=True`` returns
it): the Hopper kernel on an sm_90 device for 16-bit operands with a row-major D / C; the SM80
kernels otherwise.  There is no fallback on an unexpected exception.
"""

from __future__ import annotations

import numbers

from cute_py.errors import LaunchError

from .stream import TORCH_FAST as _T
from .stream import cupy_external_stream
from .stream import init_torch as _init_torch
from .stream import on_stream as _on_stream
from cute_py.epilogue.fused import ACTIVATIONS

from .gemm_broadcast import broadcast_call, empty_call, needs_broadcast
from .gemm_common import GemmChoice, StreamWorkspace, keep_for_stream
from .gemm_common import data_ptr as _ptr
from .gemm_common import acls as _acls
from .gemm_common import cupy_view as _cupy_view
from .gemm_common import empty as _empty
from .gemm_common import is_hopper as _hopper
from .gemm_common import meta_key as _meta_key
from .gemm_common import remember
from .hostpath import NATIVE as _NATIVE
from .tensors import TensorMeta, meta_of, overlaps, span_bytes

__all__ = ["gemm", "gemm_entry", "GemmChoice", "GemmCall", "gemm_sm90", "plan_cache", "clear_plans"]

_OP = "gemm"
_MAX_PLANS = 512


_PLANS: dict = {}


def plan_cache() -> dict:
    """The cached calls (key -> :class:`GemmCall`), for inspection and tests."""
    return _PLANS


def clear_plans() -> None:
    _PLANS.clear()


class GemmCall:
    """One cached call shape: the Hopper plan, the output's shape, operand copies, the byte
    spans used by the overlap check, and for split-K / swapped kernels the reduce plan and the
    per-stream workspace.  ``simple``: one plan launched with ``(A, B, D, C)`` pointers."""

    __slots__ = ("plan", "choice", "out_shape", "copy_a", "copy_b", "spans", "simple",
                 "swap", "reduce", "ws", "framework", "device", "pads",
                 "pad_b128", "copier")

    def __init__(self):
        self.copier = None      # the operand copies' launch plan, built by the first copy_in

    def copy_in(self, A, B_nk, stream):
        """Copy the operands TMA cannot read in place into this call's padded buffers of
        ``stream`` (allocated once per stream, pad columns zeroed once; reuse is stream-ordered:
        the next call's copy runs after this call's GEMM read them); returns their pointers
        (None for an operand read in place).  ``B_nk``: B as its ``(N, K)`` view.  The copies
        are one launch (:mod:`.kernels.copy_group`), planned on the first call from the
        operands' layouts and alignment classes (the call's key holds both)."""
        pads = self.pads.get(stream)
        if pads is None:
            # a capturing stream's buffers are the graph's (keep_for_stream); otherwise
            # cute_py's own device memory, which no framework pool sees (torch.compile's
            # CUDA-graph trees route torch allocations of their warm-up into their pool)
            from .stream import is_capturing
            cap = is_capturing(self.framework, self.device, stream)
            pads = keep_for_stream(self.pads, stream, (
                _pad_buffer(A, stream, own=not cap) if self.copy_a else (None, None),
                _pad_buffer(B_nk, stream, 64 if self.pad_b128 else 8, own=not cap)
                if self.copy_b else (None, None)), cap)
        if self.copier is None:
            self.copier = _copier([(X, view) for (view, _), X in zip(pads, (A, B_nk))
                                   if view is not None], self.device)
        args = []
        for (view, ptr), X in zip(pads, (A, B_nk)):
            if view is not None:
                args += (_ptr(X), ptr)
        self.copier.run(tuple(args), (), stream)
        return [ptr for _, ptr in pads]

    def run(self, pa, pb, pd, pc, alpha, beta, stream):
        if self.simple:
            self.plan.run((pa, pb, pd, pc), (alpha, beta), stream)
            return
        ws, cnt = self._workspace(stream)
        if self.swap:
            pa, pb = pb, pa
        self.plan.run((pa, pb, pd, pc, ws, cnt), (alpha, beta), stream)
        if self.reduce is not None:
            self.reduce.run((0, 0, pd, pc, ws), (alpha, beta), stream)

    def _workspace(self, stream):
        """The split-K workspace and tile counters of ``stream`` (:class:`StreamWorkspace`)."""
        return self.ws.pointers(stream)


# ---------------------------------------------------------------------------------------------
# checks shared by every path


def _check_scalar(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise LaunchError(_OP, name, "must be a real number", actual=type(v).__name__)
    return float(v)


def _check_metas(A: TensorMeta, B: TensorMeta, C, D, bits_ok: bool = False,
                 allow_empty: bool = False):
    if A.dtype == "uint16" and not bits_ok:
        raise LaunchError(_OP, "A", "is uint16; CuPy has no bfloat16: pass torch bfloat16 "
                          "tensors, or bf16 bit patterns to gemm_sm90 / gemm_sm80(bf16=True)",
                          expected="float16, bfloat16 or float32", actual=A.dtype)
    if A.dtype != B.dtype:
        raise LaunchError(_OP, "B", "dtype must equal A's", expected=A.dtype, actual=B.dtype)
    if A.dtype not in ("float16", "bfloat16", "float32", "uint16"):
        raise LaunchError(_OP, "A", "has an unsupported dtype",
                          expected="float16, bfloat16 or float32", actual=A.dtype)
    if len(A.shape) not in (2, 3) or len(B.shape) != len(A.shape):
        raise LaunchError(_OP, "B", "A and B must both be matrices (M, K), (K, N) or both "
                          "batched (L, M, K), (L, K, N)", actual=(A.shape, B.shape))
    if A.shape[-1] != B.shape[-2] or (len(A.shape) == 3 and A.shape[0] != B.shape[0]):
        raise LaunchError(_OP, "B", "shape does not match A", expected=(*A.shape[:-2],
                          A.shape[-1], "N"), actual=B.shape)
    if not allow_empty and (min(A.shape) < 1 or min(B.shape) < 1):
        raise LaunchError(_OP, "A", "needs M, N, K (and L) >= 1", actual=(A.shape, B.shape))
    shape = (*A.shape[:-1], B.shape[-1])
    for nm, X in (("C", C), ("out", D)):
        if X is None:
            continue
        if tuple(X.shape) != shape:
            raise LaunchError(_OP, nm, "has the wrong shape", expected=shape, actual=X.shape)
        if X.device != A.device:
            raise LaunchError(_OP, nm, "lives on another device than A", expected=A.device,
                              actual=X.device)
    if B.device != A.device:
        raise LaunchError(_OP, "B", "lives on another device than A", expected=A.device,
                          actual=B.device)
    if D is not None:
        if D.dtype != A.dtype:
            raise LaunchError(_OP, "out", "must have A's dtype (D is written in the operands' "
                              "precision)", expected=A.dtype, actual=D.dtype)
        for nm, X in (("A", A), ("B", B), ("C", C)):
            if nm == "C" and X is not None and (X.ptr, X.strides) == (D.ptr, D.strides):
                continue        # in place (D is C): every element of C is read before D's
            if X is not None and overlaps(D, X):
                raise LaunchError(_OP, "out", f"overlaps {nm}; the GEMM reads {nm} while "
                                  "writing out", actual=(hex(D.ptr), hex(X.ptr)))
    if C is not None and C.dtype != (D.dtype if D is not None else A.dtype):
        raise LaunchError(_OP, "C", "dtype must equal D's (A's)", expected=A.dtype,
                          actual=C.dtype)
    return shape


# ---------------------------------------------------------------------------------------------
# operand copies (operands TMA cannot read in place)


# ---------------------------------------------------------------------------------------------
# the Hopper route


def _build_sm90(Am, Bm, Dm, Cm, alpha_one, cfg, device):
    """A GemmCall for A ``(M, K)`` and B given as ``(N, K)``; Dm / Cm metas (Cm None: no C)."""
    from . import driver
    from .kernels import gemm_sm90 as G
    call = GemmCall()
    call.out_shape = Dm.shape
    call.spans = _spans(Am, Bm, Cm, Dm)
    call.copy_a, call.copy_b = G.tma_major(Am) is None, G.tma_major(Bm) is None
    # a K-major B whose rows start off 128-byte boundaries costs the mainloop ~25% (every TMA
    # row read straddles L2 lines); for problems with M >= PAD_B_MIN_M one copy of B into
    # 128-byte rows per call is cheaper than that (docs/performance.md, "Hopper GEMM", v5)
    call.pad_b128 = (cfg is None and not call.copy_b and G.tma_major(Bm) == "K"
                     and not G.rows_on(Bm, PAD_B_ROWS) and Am.shape[-2] >= PAD_B_MIN_M)
    call.copy_b = call.copy_b or call.pad_b128
    if call.copy_a:
        Am = _padded_meta(Am)
    if call.copy_b:
        Bm = _padded_meta(Bm, 64 if call.pad_b128 else 8)
    call.simple, call.swap, call.reduce, call.pads = True, False, None, {}
    call.ws = StreamWorkspace(0, 0, Am.framework, device)
    call.framework, call.device = Am.framework, device
    use_c = Cm is not None
    sms = driver.sm_count(device)
    reason = "16-bit operands on an sm_90 device"
    if cfg is None and not (call.copy_a or call.copy_b) and Dm.strides[-1] == 1:
        from .kernels.gemm_sm90_heuristic import choose_sm90
        L = Am.shape[0] if len(Am.shape) == 3 else 1
        M, K, N = Am.shape[-2], Am.shape[-1], Bm.shape[-2]
        vec2 = G.vec2_ok(Dm, Cm)
        ch = choose_sm90(M, N, K, L, "f16" if Am.dtype == "float16" else "bf16",
                         G.tma_major(Am), G.tma_major(Bm), sms, d_vec2=vec2)
        if not ch.default_path:
            return _build_sm90_special(call, ch, Am, Bm, Dm, Cm, device)
        reason += f"; {ch.reason}"
    if cfg is None:
        cfg = G.choose_config(Am, Bm, Dm, Cm, alpha_one, sms)
    else:
        from dataclasses import replace
        if cfg.vec2 and not G.vec2_ok(Dm, Cm if use_c else None):
            # paired stores need even leading dimensions: like has_c, the call decides
            cfg = replace(cfg, vec2=False)
        kA, kB = (Bm, Am) if cfg.transpose_d else (Am, Bm)
        if (cfg.a_major, cfg.b_major) != (G.tma_major(kA), G.tma_major(kB)):
            raise LaunchError(_OP, "config", "its operand majors differ from the arrays' "
                              "(kernel A, kernel B: the user's B, A when transpose_d)",
                              expected=(G.tma_major(kA), G.tma_major(kB)),
                              actual=(cfg.a_major, cfg.b_major))
        if cfg.splits or cfg.stream_k or cfg.transpose_d:
            # a split, stream-K or transposed configuration needs its workspace, its reduce
            # and its swapped operands: the heuristic's special route, with the split count
            # of its rule
            from .kernels.gemm_sm90_heuristic import forced_choice
            L = Am.shape[0] if len(Am.shape) == 3 else 1
            ch = forced_choice(cfg, Am.shape[-2], Bm.shape[-2], Am.shape[-1], L, sms)
            return _build_sm90_special(call, ch, Am, Bm, Dm, Cm, device)
        if cfg.epi is None and cfg.has_c != use_c:
            # the built-in epilogue's C term follows the call (as on the special route)
            cfg = replace(cfg, has_c=use_c)
    g = G.get_kernel(cfg)
    if cfg.epi is not None:
        plan = _evt_plan(g, Am, Bm, Dm, Cm, device)
    else:
        plan = g.plan(Am, Bm, Dm, Cm if cfg.has_c else None, device=device)
    call.plan = plan
    copied = tuple(n for n, c in (("A", call.copy_a), ("B", call.copy_b)) if c)
    if call.pad_b128:
        reason += (f"; K-major B with rows off {PAD_B_ROWS}-byte boundaries copied into 128-byte "
                   "rows")
    if cfg.cluster_m == 2 and cfg.b_major == "MN" and not G.rows_128(Bm):
        reason += "; N-contiguous B with rows off 128-byte boundaries: clusters of 2 (B multicast)"
    call.choice = GemmChoice("sm90", cfg.name, cfg, copied,
                             reason + (", TMA-store EVT epilogue" if cfg.epi is not None else
                                       ", predicated epilogue (batched, or D / C rows not "
                                       "16-byte aligned)"))
    return call


def _evt_plan(g, A, B, Dm, Cm, device):
    """The plan of a TMA-store EVT kernel ``g`` for ``D = alpha * A @ B (+ beta * C)``: C, when
    given, is the tree's named tensor, and the tree's scalars alpha / beta share the kernel's
    scalar slots (same names)."""
    tensors = {"C": Cm, "alpha": 1.0, "beta": 0.0} if Cm is not None else None
    return g.plan(A, B, Dm, None, tensors=tensors, device=device)


def _build_sm90_special(call, ch, Am, Bm, Dm, Cm, device):
    """A swapped, split-K or stream-K call (``choose_sm90``'s choice ``ch``): kernel A / B are
    the user's B / A when swapped (D stored transposed); split-K "workspace" / "atomic" add the
    fixed-order reduce kernel, "fixup" sums in the GEMM itself; stream-K (built-in or EVT
    epilogue) gets its partials' workspace and flags."""
    from dataclasses import replace

    from .kernels import gemm_sm90 as G
    from .kernels.gemm_sm90_splitk import splitk_layout
    from .kernels.splitk_reduce import SplitKReduceConfig, _vec_meta
    use_c = Cm is not None
    cfg = ch.cfg
    gemm_writes_d = cfg.split_k in ("none", "fixup")
    if cfg.epi is None:     # the built-in epilogue's C term follows the call
        cfg = replace(cfg, has_c=use_c and gemm_writes_d)
    if not gemm_writes_d:
        cfg = replace(cfg, vec2=False)
    g = G.get_kernel(cfg)
    kA, kB = (Bm, Am) if ch.swap else (Am, Bm)
    L = Am.shape[0] if len(Am.shape) == 3 else 1
    if cfg.epi is not None:     # stream-K with the TMA-store EVT epilogue
        plan = _evt_plan(g, kA, kB, Dm, Cm, device)
    else:
        plan = g.plan(kA, kB, Dm, Cm if cfg.has_c else None, device=device,
                      splits=max(1, ch.splits))
    call.plan, call.simple, call.swap = plan, False, ch.swap
    # split-K's partials and tile counters, stream-K's partials and per-CTA flags (zeroed
    # once; the kernels leave them zero)
    call.ws = StreamWorkspace(*plan.workspace, call.framework, call.device)
    if cfg.splits and not gemm_writes_d:
        # "workspace" / "atomic": the fixed-order reduce kernel writes D
        lay = splitk_layout(cfg, kA.shape[-2], kB.shape[-2], L, ch.splits)
        vec = _vec_meta(Dm) and (not use_c or _vec_meta(Cm))
        red = _reduce_kernel(SplitKReduceConfig(cfg.dtype, use_c, vec, cfg.split_k == "atomic"))
        call.reduce = red.plan(lay, Dm, Cm, device=device)
    call.choice = GemmChoice("sm90", cfg.name, cfg, (), str(ch))
    return call


_REDUCE: dict = {}


def _reduce_kernel(cfg):
    from .kernels.splitk_reduce import SplitKReduce
    k = _REDUCE.get(cfg)
    if k is None:
        k = _REDUCE[cfg] = SplitKReduce(cfg)
    return k


#: the smallest M for which a K-major B whose rows are off ``PAD_B_ROWS``-byte boundaries is
#: copied into 128-byte rows first.  Measured on the H100 (x @ W.T, fp16, wall per call vs
#: torch.mm): 4096x4096x2040 0.73x -> 0.82x, 8192x8192x2040 0.74x -> 0.90x; 3000x5000x2000
#: 0.88x -> 0.70x (the copy of a strided view costs ~25 us there, more than the mainloop gains
#: at M = 3000)
PAD_B_MIN_M = 4096
#: ... rows off this many bytes (a 32-byte sector): rows on sectors are read in place.  Measured
#: on the H100 (x @ W.T, wall per call vs torch.mm, copied -> in place): K = 2000 (4000-byte
#: rows, on sectors) 4096x4096 0.89-0.90x -> 1.00x, 8192x8192 0.96x -> 1.01x, 4096x11008 0.88x ->
#: 0.97x; K = 2040 (4080-byte rows, off sectors) 4096x4096 0.92x -> 0.72x, 8192x8192 0.95x ->
#: 0.78x, 16384x4096 0.97x -> 0.77x (docs/performance.md, "Hopper GEMM", v12)
PAD_B_ROWS = 32


def _keeps_mn(m: TensorMeta) -> bool:
    """Whether an operand TMA cannot read in place is copied MN-major (its rows / columns are
    contiguous along M or N, the pitch only is off): the copy then stays a straight copy and a
    configuration built for an MN-major operand still applies.  Otherwise K-major (also for
    K = 1: TMA reads an operand MN-major only when K > 1, ``tma_major``)."""
    return m.strides[-1] != 1 and m.strides[-2] == 1 and m.shape[-2] > 1 and m.shape[-1] > 1


def _padded_meta(m: TensorMeta, mult: int = 8) -> TensorMeta:
    """The metadata of :func:`_pad_buffer`'s view (fresh allocations are 256-byte aligned):
    the pitch padded to a multiple of ``mult`` elements, in the operand's own major when it
    has one along M / N (:func:`_keeps_mn`), else K-major.  Law: TMA reads the result in
    place (``tma_major`` is not None) for every 2- or 3-D operand of 2-, 4- or 8-byte
    elements."""
    rows, K = m.shape[-2], m.shape[-1]
    if _keeps_mn(m):
        Rp = -(-rows // mult) * mult
        st = (K * Rp, 1, Rp) if len(m.shape) == 3 else (1, Rp)
    else:
        Kp = -(-K // mult) * mult
        st = (rows * Kp, Kp, 1) if len(m.shape) == 3 else (Kp, 1)
    return m._replace(ptr=1 << 20, strides=st)


def gemm_sm90(A, B, D=None, C=None, alpha=1.0, beta=0.0, cfg=None, *, stream=None,
              op="gemm_sm90"):
    """One-call GEMM with a cached kernel and launch plan: ``D = alpha * A @ B.T + beta * C``
    for A ``(M, K)`` and B ``(N, K)`` (CuPy arrays, bf16 as uint16 bits, or torch tensors),
    optionally batched ``(L, ...)``.  Each operand may be K-contiguous or contiguous along its
    rows (e.g. ``B = B_kn.T`` for a row-major ``(K, N)`` B): the kernel reads either in place.

    The configuration is :func:`choose_config`'s unless ``cfg`` is given.  Operands TMA cannot
    read in place (row pitch not a multiple of 16 bytes) are copied into padded buffers first.
    Launch plans are cached by shapes, strides, dtypes and alignment classes (never by pointer):
    see :func:`gemm`.  ``stream``: the launch's stream (default:
    the arrays' framework's current stream)."""
    from .stream import stream_handle
    alpha, beta = _check_scalar("alpha", alpha), _check_scalar("beta", beta)
    Am, Bm = meta_of(A, "A", op), meta_of(B, "B", op)
    h = stream_handle(stream, A, op)
    Bkn = Bm.swap_last()
    Cm = meta_of(C, "C", op) if (C is not None and beta != 0.0) else None
    if D is None:
        shape = (*Am.shape[:-1], Bm.shape[-2])
        D = _empty(A, shape, Am.framework)
    Dm = meta_of(D, "D", op)
    _check_metas(Am, Bkn, Cm, Dm, bits_ok=True)
    call = _sm90_call(Am, Bm, Dm, Cm, alpha, cfg)
    _run_call(call, A, B, Am, Bm, Dm, Cm, alpha, beta, h)
    return D


def _sm90_call(Am, Bnk, Dm, Cm, alpha, cfg=None):
    """The cached Hopper call for these metadata (B given as ``(N, K)``), built on first use."""
    key = ("sm90", cfg, _meta_key(Am), _meta_key(Bnk), _meta_key(Dm),
           None if Cm is None else _meta_key(Cm), alpha == 1.0)
    call = _PLANS.get(key)
    if call is None:
        call = _build_sm90(Am, Bnk, Dm, Cm, alpha == 1.0, cfg, Am.device)
        _remember(key, call)
    return call


#: Problems (2*M*N*K*L flops) up to this size whose operands TMA cannot read in place (odd K,
#: rows not 16-byte aligned) run the SM80 kernel reading them where they are (realigned 16-byte
#: copies), in one launch, instead of copying them into padded buffers for the Hopper kernel
#: (two launches: 25-30 us of host time).  Measured on the H100 (fp16, GPU us of the kernel in
#: place / wall us of the copies route): 1000x777x333 14.4 / 27.6, 2000x1000x333 14.7 / 26.6;
#: but 1000x4096x333 26-31 / 25-33 (a tie) and 2048x2048x1001 58 / 31 (docs/performance.md,
#: "Hopper GEMM", v10)
SM80_IN_PLACE_MAX_FLOP = 2 * 10 ** 9
#: ... and M, N at least this: decode-sized M keeps the copies and the swapped split-K Hopper
#: kernel (16x4096x1001, x @ W.T: 45 us against 59 us for the SM80 kernel in place)
SM80_IN_PLACE_MIN_MN = 64


def _sm80_call(Am, Bm, Dm, Cm):
    """The cached SM80 call (a launch plan of the plain kernel) for these metadata (B given as
    ``(K, N)``), or None when the SM80 route must first copy or transpose something (D or C
    without a unit column stride, an operand without a unit stride, C of another dtype)."""
    key = ("sm80", _meta_key(Am), _meta_key(Bm), _meta_key(Dm),
           None if Cm is None else _meta_key(Cm))
    call = _PLANS.get(key)
    if call is None:
        call = _build_sm80(Am, Bm, Dm, Cm)
        _remember(key, call)
    return call or None


def _build_sm80(Am, Bm, Dm, Cm):
    from .kernels import gemm_sm80 as S
    A3, B3, D3 = Am.batched(), Bm.batched(), Dm.batched()
    C3 = D3 if Cm is None else Cm.batched()
    dt = {"float16": "f16", "bfloat16": "bf16", "float32": "tf32"}.get(Am.dtype)
    out = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}.get(Dm.dtype)
    if (dt is None or out is None or Bm.dtype != Am.dtype or C3.dtype != D3.dtype
            or D3.strides[2] != 1 or C3.strides[2] != 1
            or 1 not in A3.strides[1:] or 1 not in B3.strides[1:]):
        return False
    eb, ec = Am.itemsize, Dm.itemsize
    if Am.ptr % eb or Bm.ptr % eb:
        return False
    L, M, K = A3.shape
    N = B3.shape[2]
    base, va, vb = S.operand_config(A3.ptr, A3.strides, B3.ptr, B3.strides, M, N, K, eb, None,
                                    None, dt, out)
    cfg = S.plain_config(base, va, vb, [(X.ptr, X.strides[1], X.strides[0]) for X in (C3, D3)],
                         ec)
    k = S.get_kernel(cfg)
    lda = A3.strides[1] if cfg.a_major == "K" else A3.strides[2]
    ldb = B3.strides[2] if cfg.b_major == "K" else B3.strides[1]
    call = GemmCall()
    call.plan = k.plan(L, M, N, K, (lda, ldb, C3.strides[1], D3.strides[1]),
                       (A3.strides[0], B3.strides[0], C3.strides[0], D3.strides[0]),
                       Am.device)
    call.out_shape = Dm.shape
    call.spans = _spans(Am, Bm, Cm, Dm)
    call.copy_a = call.copy_b = call.pad_b128 = False
    call.simple, call.swap, call.reduce, call.pads = True, False, None, {}
    call.ws = StreamWorkspace(0, 0, Am.framework, Am.device)
    call.framework, call.device = Am.framework, Am.device
    call.choice = GemmChoice("sm80", S.kernel_name(cfg), cfg, (),
                             "SM80 cp.async + ldmatrix + mma.sync mainloop, launch plan")
    return call


def _run_call(call, A, B, Am, Bm, Dm, Cm, alpha, beta, h):
    pa, pb = Am.ptr, Bm.ptr
    if call.copy_a or call.copy_b:
        ca, cb = call.copy_in(A, B, h)
        pa, pb = ca or pa, cb or pb
    pd = Dm.ptr
    call.run(pa, pb, pd, Cm.ptr if Cm is not None else pd, alpha, beta, h)


def _pad_buffer(X, stream, mult: int = 8, own: bool = False):
    """A zeroed buffer for operand X (``(rows, K)`` / ``(L, rows, K)``) whose pitch is a
    multiple of ``mult`` elements, in X's major (:func:`_keeps_mn`; K-major otherwise),
    allocated on ``stream``; ``(view of X's shape, ptr)``.  ``own``: device memory of
    cute_py's own (:class:`~.driver.DeviceBuffer`, zeroed on ``stream``; the view is its
    :class:`TensorMeta`), else the framework's array."""
    m = meta_of(X, "A", _OP)
    rows, K = m.shape[-2], m.shape[-1]
    mn = _keeps_mn(m)
    shape = (*m.shape[:-2], K, -(-rows // mult) * mult) if mn else \
        (*m.shape[:-2], rows, -(-K // mult) * mult)
    if own:
        from .driver import device_zeros
        n = 1
        for e in shape:
            n *= e
        buf = device_zeros(-(-n * m.itemsize // 4) * 4, m.device, stream)
        pitch = shape[-1]
        bstride = (shape[-2] * pitch,) if len(shape) == 3 else ()
        view = TensorMeta(buf.ptr, m.shape, bstride + ((1, pitch) if mn else (pitch, 1)),
                          m.dtype, m.itemsize, m.device, m.framework, buf)
        return view, buf.ptr
    with _on_stream(m.framework, m.device, stream):
        if m.framework == "torch":
            buf = X.new_zeros(shape)
        else:
            import cupy as cp
            buf = cp.zeros(shape, dtype=X.dtype)
    if mn:
        v = (buf.transpose(-1, -2) if m.framework == "torch" else buf.swapaxes(-1, -2))
        v = v[..., :rows, :]
    else:
        v = buf[..., :K]
    return v, meta_of(v, "A", _OP).ptr


def _copier(pairs, device):
    """The launch plan copying each ``(X, view)`` of ``pairs`` (source operand, padded view of
    the same shape) in one launch: roles ``src0, dst0, src1, dst1...``.  A source pointer off
    16 bytes plans element-wide accesses (the call's key holds that alignment class)."""
    from cute_py.layout import Layout

    from .kernels.copy import plan_copy
    from .kernels.copy_group import CopyGroup, group_kernel
    plans = []
    for X, view in pairs:
        sm = meta_of(X, "A", _OP)
        dm = view if isinstance(view, TensorMeta) else meta_of(view, "A", _OP)
        plans.append(plan_copy(Layout(sm.shape, sm.strides), Layout(dm.shape, dm.strides),
                               sm.itemsize, src_align=16 if sm.ptr % 16 == 0 else sm.itemsize,
                               dst_align=16 if dm.ptr % 16 == 0 else dm.itemsize))
    return group_kernel(CopyGroup(tuple(plans))).plan(device)


def _remember(key, call):
    remember(_PLANS, key, call, _MAX_PLANS)


# ---------------------------------------------------------------------------------------------
# the public call


def gemm(A, B, C=None, alpha=1.0, beta=0.0, *, out=None, stream=None, explain=False,
         backend="auto", mainloop=None, config=None, bias=None, activation=None,
         epilogue=None, **tensors):
    """``D = alpha * A @ B + beta * C``: see :func:`cute_py.gemm` for the contract."""
    return gemm_entry(A, B, C, alpha, beta, out, stream, explain, backend, mainloop, config,
                      bias, activation, epilogue, tensors)


def gemm_entry(A, B, C, alpha, beta, out, stream, explain, backend, mainloop, config, bias,
               activation, epilogue, tensors):
    """:func:`gemm` with every argument positional (the entry ``cute_py.gemm`` calls).

    Torch tensors of a call kind seen before take the cached path inline: read pointers,
    shapes, strides, dtypes and devices, look the call up, check ``out`` for overlap, patch and
    launch on torch's current stream (or ``stream``)."""
    T = _T[0]
    if not _READY[0]:
        T = _ready()
    if _NATIVE is not None:
        # the same fast path in C (hostpath.c's gemm_fast): None where the general path runs
        res = _NATIVE.gemm_fast(A, B, C, alpha, beta, out, stream, explain, backend, mainloop,
                                config, bias, activation, epilogue, tensors)
        if res is not None:
            return res
    elif (type(A) is T and type(B) is T and bias is None and activation is None
            and epilogue is None and not tensors and mainloop is None and config is None
            and not explain and (backend == "auto" or backend == "sm90" or backend == "sm80")
            and (C is None or type(C) is T) and (out is None or type(out) is T)):
        ta, tb = type(alpha), type(beta)
        if (ta is float or ta is int) and (tb is float or tb is int):
            pa, pb = A.data_ptr(), B.data_ptr()
            dev = A.get_device()
            use_c = C is not None and beta != 0
            pc = C.data_ptr() if use_c else 0
            pd = out.data_ptr() if out is not None else 0
            call = _PLANS.get(_fast_key(A, B, C, out, alpha, use_c, pa, pb, pc, pd, dev,
                                         backend))
            if call is not None:
                if out is None:
                    out = A.new_empty(call.out_shape)
                    pd = out.data_ptr()
                else:
                    sp = call.spans
                    lo, hi = pd + sp[0], pd + sp[1]
                    if (lo < pa + sp[2][1] and pa + sp[2][0] < hi) or \
                            (lo < pb + sp[3][1] and pb + sp[3][0] < hi) or \
                            (pc and lo < pc + sp[4][1] and pc + sp[4][0] < hi
                             and not (pc == pd and C.stride() == out.stride())):
                        _overlap_error(pd)
                h = _T[1](dev) if stream is None else _stream(stream, A)
                if call.copy_a or call.copy_b:
                    ca, cb = call.copy_in(A, B.transpose(-1, -2), h)
                    pa, pb = ca or pa, cb or pb
                if call.simple:
                    call.plan.run((pa, pb, pd, pc if use_c else pd), (alpha, beta), h)
                else:
                    call.run(pa, pb, pd, pc if use_c else pd, alpha, beta, h)
                return out
    if backend != "auto" and backend not in ("sm80", "sm90"):
        raise LaunchError(_OP, "backend", "is not one of auto/sm80/sm90", actual=backend)
    return _gemm_general(A, B, C, alpha, beta, out=out, stream=stream, explain=explain,
                         backend=backend, mainloop=mainloop, config=config, bias=bias,
                         activation=activation, epilogue=epilogue, tensors=tensors)




#: whether the fast paths know torch (and the native one its state); False until torch is seen
_READY = [False]


def _ready():
    """torch.Tensor once torch is imported (None before): the fast paths' setup."""
    T = _init_torch()
    if T is not None:
        if _NATIVE is not None:
            _NATIVE.configure(T, _T[1], _stream, _overlap_error, _PLANS)
        _READY[0] = True
    return T


def _stream(stream, like):
    from .stream import stream_handle
    return stream_handle(stream, like, _OP)


def _overlap_error(pd):
    """The fast paths' out-overlap error (``pd``: out's pointer)."""
    raise LaunchError(_OP, "out", "overlaps an input (A, B or C); the GEMM reads it while "
                      "writing out", actual=hex(pd))


def _py_fast_key(A, B, C, out, alpha, use_c, pa, pb, pc, pd, dev, backend):
    """The torch fast path's key: dtypes, shapes, strides, devices and alignment classes of
    the call's tensors (pointers ``pa`` ... ``pd`` of A, B, C, out; 0 when absent), C only when
    it is read, whether alpha is 1, and the backend asked for ("auto" may pick the SM80 kernel
    where "sm90" may not).  One flat tuple (no nested tuples to build and hash):
    C's and out's fields are None when they are absent."""
    if use_c:
        cd, cs, cst, cdev, cal = C.dtype, C.shape, C.stride(), C.get_device(), _acls(pc)
    else:
        cd = cs = cst = cdev = cal = None
    if out is not None:
        od, osh, ost, odev, oal = out.dtype, out.shape, out.stride(), out.get_device(), \
            _acls(pd)
    else:
        od = osh = ost = odev = oal = None
    return (A.dtype, A.shape, A.stride(), B.dtype, B.shape, B.stride(), dev, B.get_device(),
            pa & 127 == 0, pa & 15 == 0, pb & 127 == 0, pb & 15 == 0, cd, cs, cst, cdev, cal,
            od, osh, ost, odev, oal, alpha == 1, backend)


#: the key function of both fast paths: the native one where built (the same tuple)
_fast_key = _NATIVE.fast_key if _NATIVE is not None else _py_fast_key


def _gemm_general(A, B, C, alpha, beta, *, out, stream, explain, backend, mainloop, config,
                  bias, activation, epilogue, tensors):
    alpha, beta = _check_scalar("alpha", alpha), _check_scalar("beta", beta)
    Am, Bm = meta_of(A, "A", _OP), meta_of(B, "B", _OP)
    use_c = C is not None and beta != 0.0
    Cm = meta_of(C, "C", _OP) if C is not None else None
    Dm = meta_of(out, "out", _OP) if out is not None else None
    h = _stream(stream, A)
    kw = dict(backend=backend, mainloop=mainloop, config=config, bias=bias,
              activation=activation, epilogue=epilogue, tensors=tensors)
    if needs_broadcast(Am, Bm):
        # a broadcast operand: one folded GEMM or one per batch (gemm_broadcast)
        on_fold = None
        if _T[0] is not None and type(A) is _T[0] and not explain and stream is None and \
                not (bias is not None or activation is not None or epilogue is not None
                     or tensors or mainloop is not None or config is not None):
            def on_fold(A2, B2, C2, D2):
                _remember_fold(A, B, C, out, alpha, beta, Am, A2, B2, C2, D2, backend)
        return broadcast_call(_entry_kw, A, B, C, alpha, beta, out, Am, Bm, Cm, Dm, h,
                              explain, kw, on_fold)
    shape = _check_metas(Am, Bm, Cm, Dm, allow_empty=True)
    if min(shape) == 0 or Am.shape[-1] == 0:
        if activation is not None and activation not in ("identity", *ACTIVATIONS):
            raise LaunchError(_OP, "activation", "is not a known activation",
                              expected=" | ".join(ACTIVATIONS), actual=activation)
        return empty_call(_entry_kw, A, B, C, alpha, beta, out, Am, Bm, shape,
                          lambda shp: _zeros_like(A, Am, shp, h), h, explain, kw)
    if C is not None and not use_c:
        Cm = None
    fused = bias is not None or activation is not None or epilogue is not None or tensors
    if fused:
        from .gemm_fused import run_fused
        res = run_fused(A, B, C, alpha, beta, out=out, stream=h, explain=explain,
                        backend=backend, bias=bias, activation=activation, epilogue=epilogue,
                        tensors=tensors, metas=(Am, Bm, Cm, Dm))
        if res is not NotImplemented:
            return res
    hopper = _hopper(Am.device) and Am.dtype in ("float16", "bfloat16")
    cfg90 = config if _is_sm90_config(config) else None
    if cfg90 is not None and cfg90.epi is not None:
        _check_config_tree(cfg90.epi.tree, use_c, alpha, beta)
    if cfg90 is not None and backend == "sm80":
        raise LaunchError(_OP, "config", "is a Hopper configuration; backend='sm80' asked for "
                          "the SM80 kernel", actual=getattr(cfg90, "name", cfg90))
    sm90_ok = hopper and mainloop is None and (config is None or cfg90 is not None) and \
        backend != "sm80" and (Dm is None or Dm.strides[-1] == 1) and \
        (Cm is None or Cm.strides[-1] == 1)
    if (backend == "sm90" or cfg90 is not None) and not sm90_ok:
        raise LaunchError(_OP, "backend" if cfg90 is None else "config",
                          "the Hopper kernel needs an sm_90 device, 16-bit A and B, a "
                          "row-major out / C, and no SM80 mainloop / config",
                          actual=(Am.dtype, hopper))
    user_out = out
    if out is None:
        out = _empty(A, shape, Am.framework)
        Dm = meta_of(out, "out", _OP)
    if sm90_ok and cfg90 is None and backend == "auto" and Am.framework == "torch":
        # operands TMA cannot read in place, a small problem: the SM80 kernel reads them where
        # they are (one launch) instead of copies + the Hopper kernel
        from .kernels.gemm_sm90 import tma_major
        L = Am.shape[0] if len(Am.shape) == 3 else 1
        flop = 2 * L * Am.shape[-2] * Am.shape[-1] * Bm.shape[-1]
        if flop <= SM80_IN_PLACE_MAX_FLOP and min(Am.shape[-2], Bm.shape[-1]) >= \
                SM80_IN_PLACE_MIN_MN and (tma_major(Am) is None or
                                          tma_major(Bm.swap_last()) is None):
            res = _run_sm80_plan(A, B, C, alpha, beta, user_out, out, Am, Bm, Cm, Dm, use_c,
                                 backend, explain, h, "operands read in place: rows TMA cannot "
                                 "read, a small problem")
            if res is not None:
                return res
    if sm90_ok:
        Bnk = Bm.swap_last()
        call = _sm90_call(Am, Bnk, Dm, Cm, alpha, cfg90)
        if Am.framework == "torch" and not explain and cfg90 is None:
            # the torch fast path finds this call by its own key from now on
            _remember(_fast_key(A, B, C, user_out, alpha, use_c, Am.ptr, Bm.ptr,
                                Cm.ptr if use_c else 0, user_out.data_ptr() if user_out is not None
                                else 0, Am.device, backend), call)
        B_nk = B.transpose(-1, -2) if Bm.framework == "torch" else B.swapaxes(-1, -2)
        _run_call(call, A, B_nk, Am, Bnk, Dm, Cm, alpha, beta, h)
        return (out, call.choice) if explain else out
    if Am.framework == "torch" and mainloop is None and config is None:
        res = _run_sm80_plan(A, B, C, alpha, beta, user_out, out, Am, Bm, Cm, Dm, use_c, backend,
                             explain, h, "not an sm_90 device, or backend='sm80'")
        if res is not None:
            return res
    choice = _run_sm80(A, B, C if use_c else None, out, alpha, beta, Am, h, mainloop, config,
                       explain)
    return (out, choice) if explain else out


def _remember_fold(A, B, C, out, alpha, beta, Am, A2, B2, C2, D2, backend):
    """A folded broadcast call (torch, plain) is the 2-D call on the same pointers: remember a
    copy of that call, with D's 3-D shape, under the 3-D call's fast-path key, so the next
    such call skips the fold (unless the 2-D call copies operands: their buffers follow the
    2-D shapes)."""
    use_c = C is not None and beta != 0
    c2 = C2 if use_c else None
    call = _PLANS.get(_fast_key(A2, B2, c2, D2, alpha, use_c, A2.data_ptr(), B2.data_ptr(),
                                c2.data_ptr() if use_c else 0, D2.data_ptr(), Am.device,
                                backend))
    if call is None or call.copy_a or call.copy_b or not isinstance(call, GemmCall):
        return
    import copy
    folded = copy.copy(call)
    folded.out_shape = (*A.shape[:-1], B.shape[-1])
    _remember(_fast_key(A, B, C, out, alpha, use_c, A.data_ptr(), B.data_ptr(),
                        C.data_ptr() if use_c else 0, out.data_ptr() if out is not None else 0,
                        Am.device, backend), folded)


def _entry_kw(A, B, C, alpha, beta, out, *, stream, explain, backend, mainloop, config, bias,
              activation, epilogue, tensors):
    """:func:`gemm_entry` with keyword arguments (the sub-calls of ``gemm_broadcast``)."""
    return gemm_entry(A, B, C, alpha, beta, out, stream, explain, backend, mainloop, config,
                      bias, activation, epilogue, tensors)


def _zeros_like(X, m, shape, stream):
    """Zeros of X's dtype and device, cleared on ``stream`` (before the launch that reads
    them)."""
    with _on_stream(m.framework, m.device, stream):
        if m.framework == "torch":
            import torch
            return torch.zeros(shape, dtype=X.dtype, device=X.device)
        import cupy as cp
        return cp.zeros(shape, dtype=X.dtype)


def _run_sm80_plan(A, B, C, alpha, beta, user_out, out, Am, Bm, Cm, Dm, use_c, backend, explain,
                   h, why):
    """Torch tensors on the SM80 kernel through its cached launch plan (:func:`_sm80_call`),
    the call remembered for the fast path; None when the plan cannot take them as they are
    (``_run_sm80`` copies or transposes first)."""
    call = _sm80_call(Am, Bm, Dm, Cm if use_c else None)
    if call is None:
        return None
    if not explain:
        _remember(_fast_key(A, B, C, user_out, alpha, use_c, Am.ptr, Bm.ptr,
                            Cm.ptr if use_c else 0, user_out.data_ptr() if user_out is not None
                            else 0, Am.device, backend), call)
    call.plan.run((Am.ptr, Bm.ptr, Dm.ptr, Cm.ptr if use_c else Dm.ptr), (alpha, beta), h)
    if not explain:
        return out
    from dataclasses import replace
    return out, replace(call.choice, reason=call.choice.reason + f" ({why})")


def _check_config_tree(tree, use_c: bool, alpha: float, beta: float) -> None:
    """A Hopper ``config`` with an EVT epilogue, called without ``epilogue=``: its tree must
    compute this call's ``alpha * A @ B (+ beta * C)`` -- read C exactly when the call has one,
    carry the ``alpha`` / ``beta`` scalars the call sets to other than 1, and take no other
    named tensor (those come with ``epilogue=tree, **tensors``)."""
    sig = tree.signature
    if use_c != ("C" in sig):
        raise LaunchError(_OP, "C", "the configuration's epilogue tree " +
                          ("does not read C (pass epilogue= a tree that does, or drop C)"
                           if use_c else "reads C: pass C (and beta)"),
                          expected="C" if "C" in sig else None)
    for nm, v in (("alpha", alpha), ("beta", beta if use_c else 1.0)):
        if v != 1.0 and nm not in sig:
            raise LaunchError(_OP, nm, "the configuration's epilogue tree has no scalar of this "
                              "name, so it cannot scale by it", actual=v)
    extra = sorted(set(sig) - {"C", "alpha", "beta"})
    if extra:
        raise LaunchError(_OP, "config", "its epilogue tree takes named tensors: call gemm("
                          "..., epilogue=tree, **tensors) with them", actual=extra)


def _is_sm90_config(config) -> bool:
    if config is None:
        return False
    from .kernels.gemm_sm90 import Sm90GemmConfig
    return isinstance(config, Sm90GemmConfig)


def _spans(Am, Bm, Cm, Dm):
    """Byte spans relative to each base pointer: (D lo, D hi, A, B, C) for the overlap check."""
    def rel(m):
        if m is None:
            return (0, 0)
        lo, hi = span_bytes(m)
        return (lo - m.ptr, hi - m.ptr)
    d = rel(Dm)
    return (d[0], d[1], rel(Am), rel(Bm), rel(Cm))


def _run_sm80(A, B, C, out, alpha, beta, Am, h, mainloop, config, explain=False):
    """The SM80 kernels (CuPy views of the caller's arrays, launched on stream ``h``)."""
    from .kernels.gemm_sm80 import gemm_sm80, plan_only
    bf16 = Am.dtype == "bfloat16" or (Am.framework != "torch" and Am.dtype == "uint16")
    a, b = _cupy_view(A), _cupy_view(B)
    c = None if C is None else _cupy_view(C)
    d = _cupy_view(out)
    cfgs = []
    with cupy_external_stream(h):
        if explain:
            with plan_only() as cfgs:
                gemm_sm80(a, b, c, d, alpha, beta, config=config, mainloop=mainloop, bf16=bf16)
        gemm_sm80(a, b, c, d, alpha, beta, config=config, mainloop=mainloop, bf16=bf16)
    cfg = cfgs[-1] if cfgs else None
    from .kernels.gemm_sm80 import kernel_name
    return GemmChoice("sm80", kernel_name(cfg) if cfg is not None else "gemm_sm80", cfg, (),
                      "SM80 cp.async + ldmatrix + mma.sync mainloop (" +
                      ("float32 operands, tf32" if Am.dtype == "float32" else
                       "not an sm_90 device, or an SM80 mainloop / config / backend asked for, "
                       "or a column-major out / C") + ")")
