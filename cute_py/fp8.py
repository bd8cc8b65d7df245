"""FP8 numbers and scaled-GEMM references in NumPy (float64): the semantics the FP8 kernels meet.

Formats (OCP 8-bit floating point, as ``torch.float8_e4m3fn`` / ``torch.float8_e5m2``):

===============  ====  ========  ===========  ======================  =========================
format           bias  mantissa  max finite   smallest subnormal      inf / nan
===============  ====  ========  ===========  ======================  =========================
``float8_e4m3``  7     3 bits    448          2**-9                   no inf; ``S.1111.111`` nan
``float8_e5m2``  15    2 bits    57344        2**-16                  IEEE-like inf and nan
===============  ====  ========  ===========  ======================  =========================

:func:`round_fp8` rounds to nearest, ties to even.  With ``saturate`` (the default, the
hardware's ``cvt.rn.satfinite``) out-of-range values clamp to +-max; without, they become what
the OCP formats say (e4m3: nan; e5m2: inf).  torch's ``.to(torch.float8_e4m3fn)`` is the
saturating conversion, ``.to(torch.float8_e5m2)`` the non-saturating one.  Law: ``round_fp8(round_fp8(x)) == round_fp8(x)``, and every
value of :func:`all_values` is a fixed point.

Scaling, with ``q`` the FP8 codes as float64 values and ``s`` float32 scales
(dequantized value = ``q * s``):

* per tensor (``torch._scaled_mm``): ``D = (q_a @ q_b) * s_a * s_b``, ``s_a``, ``s_b`` scalars;
* row-wise: ``s_a`` of shape ``(M, 1)``, ``s_b`` of shape ``(1, N)``;
* block-wise (DeepGEMM / CUTLASS blockwise): A in ``1 x 128`` blocks along K (``s_a``:
  ``(M, ceil(K/128))``), B in ``128 x 128`` blocks (``s_b``: ``(ceil(N/128), ceil(K/128))``);
  ``D = sum_k-block (q_a[:, kb] @ q_b[kb, :]) * s_a[:, kb] * s_b[nb, kb]``.

:func:`scaled_mm_reference` computes each in float64; :func:`quantize` /
:func:`quantize_blockwise` produce ``(q, s)`` from real data with ``s = amax / max_finite``
per scaling group (a zero group gets scale 1).
"""

from __future__ import annotations

import numpy as np

from .errors import LaunchError

__all__ = ["FORMATS", "max_finite", "all_values", "round_fp8", "quantize", "quantize_blockwise",
           "scaled_mm_reference", "BLOCK_K"]

#: format -> (exponent bits, mantissa bits, bias, max finite)
FORMATS = {"float8_e4m3": (4, 3, 7, 448.0), "float8_e5m2": (5, 2, 15, 57344.0)}
#: the K extent of one scaling block (1 x 128 for A, 128 x 128 for B)
BLOCK_K = 128


def _fmt(fmt, op: str, arg: str = "fmt") -> str:
    from .numeric import canonical_type
    try:
        name = canonical_type(fmt, op, arg, error=LaunchError)
    except LaunchError:
        name = None
    if name not in FORMATS:
        raise LaunchError(op, arg, "is not an FP8 format", expected=sorted(FORMATS),
                          actual=repr(fmt))
    return name


def max_finite(fmt) -> float:
    """The largest finite value of ``fmt`` (448 for e4m3, 57344 for e5m2)."""
    return FORMATS[_fmt(fmt, "max_finite")][3]


def all_values(fmt) -> np.ndarray:
    """The 256 codes of ``fmt`` decoded to float64 (index = the byte; nan / inf included)."""
    e, m, bias, _ = FORMATS[_fmt(fmt, "all_values")]
    codes = np.arange(256)
    sign = np.where(codes >> 7, -1.0, 1.0)
    exp = (codes >> m) & ((1 << e) - 1)
    man = codes & ((1 << m) - 1)
    normal = sign * (1.0 + man / (1 << m)) * np.exp2(exp - bias)
    sub = sign * (man / (1 << m)) * np.exp2(1 - bias)
    out = np.where(exp == 0, sub, normal)
    if e == 4:        # e4m3fn: only S.1111.111 is nan, no inf
        out = np.where((exp == 15) & (man == 7), np.nan, out)
    else:             # e5m2: IEEE-like
        out = np.where((exp == 31) & (man == 0), sign * np.inf, out)
        out = np.where((exp == 31) & (man != 0), np.nan, out)
    return out


def round_fp8(x, fmt="float8_e4m3", saturate: bool = True) -> np.ndarray:
    """``x`` rounded to ``fmt`` (nearest, ties to even), as float64 (see the module docstring
    for out-of-range values; nan stays nan)."""
    name = _fmt(fmt, "round_fp8")
    e, m, bias, mx = FORMATS[name]
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    # the spacing of representable values around |x|: 2**(floor(log2|x|) - m), floored at the
    # subnormal spacing 2**(1 - bias - m)
    with np.errstate(divide="ignore", invalid="ignore"):
        ex = np.floor(np.log2(np.where(ax > 0, ax, 1.0)))
    ex = np.maximum(ex, 1 - bias)
    step = np.exp2(ex - m)
    r = np.sign(x) * np.round(ax / step) * step         # np.round: ties to even
    if saturate:
        r = np.clip(r, -mx, mx)
    else:
        over = np.abs(r) > mx
        r = np.where(over, np.nan if e == 4 else np.sign(x) * np.inf, r)
    return np.where(np.isnan(x), np.nan, r)


def quantize(x, fmt="float8_e4m3", axis=None):
    """``(q, s)``: ``s = amax / max_finite`` over the whole tensor (``axis=None``) or per row /
    column (``axis=1``: one scale per row, shape ``(M, 1)``; ``axis=0``: per column, ``(1, N)``),
    ``q = round_fp8(x / s)`` (float64 values of FP8 codes; ``s`` float32)."""
    name = _fmt(fmt, "quantize")
    x = np.asarray(x, dtype=np.float64)
    amax = np.max(np.abs(x)) if axis is None else np.max(np.abs(x), axis=axis, keepdims=True)
    s = np.where(amax > 0, amax / FORMATS[name][3], 1.0).astype(np.float32)
    return round_fp8(x / s.astype(np.float64), name), s


def quantize_blockwise(x, fmt="float8_e4m3", block=(1, BLOCK_K)):
    """``(q, s)`` with one scale per ``block`` (rows x K) tile of the ``(R, K)`` matrix ``x``
    (ragged edge blocks included): ``s`` has shape ``(ceil(R/br), ceil(K/bk))``."""
    name = _fmt(fmt, "quantize_blockwise")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise LaunchError("quantize_blockwise", "x", "must be a matrix", actual=x.shape)
    br, bk = block
    R, K = x.shape
    nr, nk = -(-R // br), -(-K // bk)
    pad = np.zeros((nr * br, nk * bk))
    pad[:R, :K] = np.abs(x)
    amax = pad.reshape(nr, br, nk, bk).max(axis=(1, 3))
    s = np.where(amax > 0, amax / FORMATS[name][3], 1.0).astype(np.float32)
    full = np.repeat(np.repeat(s.astype(np.float64), br, 0), bk, 1)[:R, :K]
    return round_fp8(x / full, name), s


def scaled_mm_reference(qa, qb, sa, sb) -> np.ndarray:
    """``D`` in float64 for ``qa`` ``(M, K)``, ``qb`` ``(K, N)`` (FP8 values) and scales in any
    mode of the module docstring, recognised by their shapes: scalars (per tensor); ``(M, 1)``
    and ``(1, N)`` (row-wise); ``(M, ceil(K/128))`` and ``(ceil(N/128), ceil(K/128))``
    (block-wise)."""
    op = "scaled_mm_reference"
    qa = np.asarray(qa, dtype=np.float64)
    qb = np.asarray(qb, dtype=np.float64)
    if qa.ndim != 2 or qb.ndim != 2 or qa.shape[1] != qb.shape[0]:
        raise LaunchError(op, "qb", "shapes do not chain (M, K) @ (K, N)",
                          actual=(qa.shape, qb.shape))
    M, K = qa.shape
    N = qb.shape[1]
    sa = np.asarray(sa, dtype=np.float64)
    sb = np.asarray(sb, dtype=np.float64)
    nk, nn = -(-K // BLOCK_K), -(-N // BLOCK_K)
    if sa.size == 1 and sb.size == 1:
        return (qa @ qb) * sa.item() * sb.item()
    if sa.shape == (M, 1) and sb.shape == (1, N):
        return (qa @ qb) * sa * sb
    if sa.shape == (M, nk) and sb.shape == (nn, nk):
        out = np.zeros((M, N))
        for kb in range(nk):
            ks = slice(kb * BLOCK_K, min(K, (kb + 1) * BLOCK_K))
            part = qa[:, ks] @ qb[ks, :]
            sbn = np.repeat(sb[:, kb], BLOCK_K)[:N]
            out += part * sa[:, kb:kb + 1] * sbn[None, :]
        return out
    raise LaunchError(op, "sa", "scale shapes match no scaling mode (per tensor: scalars; "
                      "row-wise: (M, 1) and (1, N); block-wise: (M, ceil(K/128)) and "
                      "(ceil(N/128), ceil(K/128)))", actual=(sa.shape, sb.shape))
