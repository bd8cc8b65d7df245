"""Batch broadcasting and empty problems of ``cute_py.gemm`` (``torch.matmul``'s rules).

The kernels take ``(M, K) @ (K, N)`` or two batched operands of one batch size ``L`` whose
batches TMA can step through.  :func:`broadcast_call` runs the other batched cases as those:

- **one operand broadcast** (2-D, a batch of 1, or a batch stride of 0, e.g. ``W.expand(L, K,
  N)``) against a batched one: ``D (L, M, N)``, each batch ``A[l] @ B[l]`` with the broadcast
  operand's one matrix.  When B is the broadcast one and A, C and out *fold* (their ``(L, M)``
  modes merge into one row mode of stride ``s1``: ``L == 1``, ``M == 1`` or ``s0 == M * s1``
  -- a contiguous ``x (L, M, K)`` as ``nn.Linear`` sees it), the call is one ``(L*M, K) @ (K,
  N)`` GEMM on views: no copy, one launch.  Otherwise (A broadcast, or an operand that does not
  fold, or a per-row bias / epilogue tree) it is ``L`` calls of the 2-D GEMM, one per batch, on
  the caller's stream.

:func:`empty_call` handles problems with an empty extent the way ``torch.mm`` does: ``L``,
``M`` or ``N`` zero gives the empty D; ``K == 0`` gives ``D = epilogue(acc = 0)`` (``beta * C``,
the bias, the activation) by running the GEMM on 8 columns of exact zeros, so every epilogue
(tree, reductions) sees exactly zero accumulators.

Law (``tests/backend/test_gemm_broadcast.py``): :func:`fold_strides` returns a stride exactly
when ``(l, m) -> l * s0 + m * s1`` equals ``(l * M + m) -> (l * M + m) * s`` on the whole
domain.
"""

from __future__ import annotations

from cute_py.errors import LaunchError

__all__ = ["fold_strides", "broadcast_call", "empty_call", "is_broadcast", "needs_broadcast"]

_OP = "gemm"


def fold_strides(shape, strides):
    """The ``(rows, cols)`` element strides of a 3-D ``(L, M, K)`` operand seen as ``(L * M,
    K)`` (one row mode), or None when its ``(L, M)`` modes do not merge (``L > 1``, ``M > 1``
    and ``s0 != M * s1``)."""
    L, M, _ = shape
    s0, s1, s2 = strides
    if L == 1:
        return (s1, s2)
    if M == 1:
        return (s0, s2)
    return (s1, s2) if s0 == M * s1 else None


def is_broadcast(m) -> bool:
    """Operand meta ``m`` is one matrix for every batch: 2-D, a batch of 1, or batch stride 0."""
    return len(m.shape) == 2 or m.shape[0] == 1 or m.strides[0] == 0


def _batch(m) -> int:
    return 1 if len(m.shape) == 2 else m.shape[0]


def _view(X, framework, shape, strides, itemsize):
    if framework == "torch":
        return X.as_strided(shape, strides)
    from cupy.lib.stride_tricks import as_strided
    return as_strided(X, shape, tuple(s * itemsize for s in strides))


def _matrix(X, m, l):
    """Batch ``l`` of operand X (its one matrix when broadcast)."""
    if len(m.shape) == 2:
        return X
    return X[0] if is_broadcast(m) else X[l]


def needs_broadcast(Am, Bm) -> bool:
    """The call is batched with a broadcast operand (what the kernels do not take as is)."""
    if len(Am.shape) not in (2, 3) or len(Bm.shape) not in (2, 3):
        return False
    if len(Am.shape) == 2 and len(Bm.shape) == 2:
        return False
    L = max(_batch(Am), _batch(Bm))
    if L == 1 and len(Am.shape) == len(Bm.shape):
        return False
    return is_broadcast(Am) or is_broadcast(Bm)


def broadcast_call(entry, A, B, C, alpha, beta, out, Am, Bm, Cm, Dm, stream, explain,
                   kw, on_fold=None) -> object:
    """Run a batched call with a broadcast operand (module docstring) through ``entry`` (the
    2-D call, ``gemm_entry``'s signature); returns D or ``(D, choice)``.  ``on_fold(A2, B2, C2,
    D2)`` is told the 2-D views of a folded call (the caller caches the fold)."""
    from .gemm_common import empty
    LA, LB = _batch(Am), _batch(Bm)
    if len(Am.shape) == 3 and len(Bm.shape) == 3 and LA != LB and 1 not in (LA, LB):
        raise LaunchError(_OP, "B", "batch sizes must be equal, or one of them 1 (broadcast)",
                          expected=(LA, "or 1"), actual=LB)
    if Am.shape[-1] != Bm.shape[-2]:
        raise LaunchError(_OP, "B", "shape does not match A", expected=(Am.shape[-1], "N"),
                          actual=Bm.shape)
    L = max(LA, LB)
    M, K, N = Am.shape[-2], Am.shape[-1], Bm.shape[-1]
    shape = (L, M, N)
    for nm, X in (("C", Cm), ("out", Dm)):
        if X is not None and tuple(X.shape) != shape:
            raise LaunchError(_OP, nm, "has the wrong shape (a broadcast batch gives D (L, M, "
                              "N))", expected=shape, actual=X.shape)
    if out is None:
        from .tensors import meta_of
        out = empty(A, shape, Am.framework)
        Dm = meta_of(out, "out", _OP)
    bias, activation, epilogue, tensors = kw["bias"], kw["activation"], kw["epilogue"], \
        kw["tensors"]
    # a per-column bias is the same for every row of the folded problem; a per-row one is not
    row_bias = bias is None or len(getattr(bias, "shape", ())) == 1 or \
        tuple(bias.shape) == (1, N)
    fold = None
    if is_broadcast(Bm) and not is_broadcast(Am) and row_bias and epilogue is None and \
            not tensors:
        fold = [fold_strides(m.shape, m.strides) for m in (Am, Dm)] + \
            [fold_strides(Cm.shape, Cm.strides) if Cm is not None else (0, 0)]
        if any(f is None for f in fold):
            fold = None
    common = dict(stream=stream, backend=kw["backend"], mainloop=kw["mainloop"],
                  config=kw["config"], bias=bias, activation=activation)
    if fold is not None:
        fa, fd, fc = fold
        A2 = _view(A, Am.framework, (L * M, K), fa, Am.itemsize)
        D2 = _view(out, Dm.framework, (L * M, N), fd, Dm.itemsize)
        C2 = _view(C, Cm.framework, (L * M, N), fc, Cm.itemsize) if Cm is not None else None
        B2 = _matrix(B, Bm, 0)
        res = entry(A2, B2, C2, alpha, beta, D2, explain=explain, epilogue=None, tensors={},
                    **common)
        if on_fold is not None:
            on_fold(A2, B2, C2, D2)
        if explain:
            from dataclasses import replace
            ch = res[1]
            return out, replace(ch, reason=ch.reason + f" (batch of {L} folded into M: B "
                                "broadcast)")
        return out
    choice = None
    for l in range(L):
        tens = {k: (v[l] if getattr(v, "ndim", 0) == 3 else v)
                for k, v in (tensors or {}).items()}
        res = entry(_matrix(A, Am, l), _matrix(B, Bm, l), C[l] if Cm is not None else None,
                    alpha, beta, out[l], explain=explain, epilogue=epilogue, tensors=tens,
                    **common)
        if explain:
            choice = res[1]
    if explain:
        if choice is None:
            return out, _nothing("an empty batch: nothing to compute")
        from dataclasses import replace
        return out, replace(choice, reason=choice.reason + f" (broadcast batch: {L} calls)")
    return out


def empty_call(entry, A, B, C, alpha, beta, out, Am, Bm, shape, zeros, stream, explain, kw):
    """A problem with an empty extent (module docstring); ``shape`` is D's, ``zeros(shape)``
    allocates a zeroed array of A's dtype ordered before the launch on ``stream``."""
    from .gemm_common import empty
    if min(shape) == 0:
        if kw["epilogue"] is not None or kw["tensors"]:
            raise LaunchError(_OP, "A", "an empty problem (L, M or N of 0) takes no epilogue "
                              "tree (its side outputs would be left unwritten)",
                              actual=(Am.shape, Bm.shape))
        if out is None:
            out = empty(A, shape, Am.framework)
        if explain:
            return out, _nothing("an empty D: nothing to compute")
        return out
    # K == 0: the product is exactly zero; the epilogue still runs
    k = 8
    A0 = zeros((*Am.shape[:-1], k))
    B0 = zeros((*Bm.shape[:-2], k, Bm.shape[-1]))
    return entry(A0, B0, C, alpha, beta, out, stream=stream, explain=explain, **kw)


def _nothing(reason):
    from .gemm_common import GemmChoice
    return GemmChoice("none", "", None, (), reason)
