"""GPU tests of the SM80 GEMM against a float64 reference (skipped without a GPU).

Fresh random inputs per case, D poisoned with NaN first, relative-norm bounds per dtype
(METHOD.md): every mainloop x dtype x operand major, odd sizes (1x1x1, 7x13x29, 1000x777x333,
4095x4097x4099), compact (unaligned: 16-bit rows of odd pitch take realigned 16-byte copies, fp32
scalar copies) and padded (aligned, 16-byte cp.async with zero-filled residues) leading
dimensions, views starting one element into their rows, batched L, alpha/beta with C, a
column-major D.

``cases()`` is importable: the device script compiles every kernel they need in parallel first.
"""

import itertools

import pytest

from cute_py.backends.cuda.device import has_gpu

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")]

MAINLOOPS = ("multistage", "pipelined", "singlestage")
DTYPES = ("f16", "bf16", "tf32")
MAJORS = (("K", "K"), ("M", "K"), ("K", "N"), ("M", "N"))
BOUND = {"f16": 2e-3, "bf16": 1e-2, "tf32": 3e-3}
SMALL = ((1, 1, 1), (7, 13, 29), (1000, 777, 333))


def cases(full: bool = True):
    """(id, kwargs) of every GPU case."""
    out = []
    for ml, dt, (am, bm), size in itertools.product(MAINLOOPS, DTYPES, MAJORS, SMALL):
        for padded in (False, True):
            if size == (1, 1, 1) and padded:
                continue
            out.append((f"{ml}-{dt}-{am}{bm}-{'x'.join(map(str, size))}-{'pad' if padded else 'compact'}",
                        dict(mainloop=ml, dtype=dt, a_major=am, b_major=bm, size=size,
                             padded=padded)))
    big = (4095, 4097, 4099)
    if full:
        for ml, dt, am, bm, padded in (("multistage", "f16", "K", "K", True),
                                       ("multistage", "f16", "M", "K", True),
                                       ("multistage", "bf16", "K", "N", True),
                                       ("multistage", "f16", "K", "K", False),
                                       ("multistage", "tf32", "K", "K", True),
                                       ("pipelined", "f16", "M", "N", True),
                                       ("singlestage", "bf16", "K", "K", True)):
            out.append((f"{ml}-{dt}-{am}{bm}-4095x4097x4099-{'pad' if padded else 'compact'}",
                        dict(mainloop=ml, dtype=dt, a_major=am, b_major=bm, size=big,
                             padded=padded)))
    for ml in MAINLOOPS:
        out.append((f"{ml}-batched-alpha-beta", dict(mainloop=ml, dtype="f16", a_major="K",
                                                     b_major="N", size=(129, 65, 70), padded=True,
                                                     L=3, alpha=1.5, beta=-0.5, out="f32")))
        out.append((f"{ml}-bf16-beta-colmajor-D", dict(mainloop=ml, dtype="bf16", a_major="M",
                                                       b_major="K", size=(200, 136, 96),
                                                       padded=True, beta=0.25, d_col=True)))
    out.append(("default-f16-256", dict(mainloop=None, dtype="f16", a_major="K", b_major="K",
                                        size=(256, 256, 256), padded=False)))
    # realigned copies: rows aligned only to the element, views starting one element in
    for ml, dt, (am, bm) in (("multistage", "f16", ("K", "N")), ("multistage", "bf16", ("M", "K")),
                             ("pipelined", "f16", ("K", "K")), ("singlestage", "bf16", ("M", "N"))):
        out.append((f"{ml}-{dt}-{am}{bm}-offset1-batched", dict(
            mainloop=ml, dtype=dt, a_major=am, b_major=bm, size=(333, 190, 251), padded=False,
            L=2, offset=1, alpha=0.5, beta=2.0)))
    return out


def bf16_bits(x):
    """float32 CuPy array -> bf16 bit patterns (uint16), round to nearest even."""
    import cupy as cp
    u = x.astype(cp.float32).view(cp.uint32)
    r = (u + cp.uint32(0x7FFF) + ((u >> 16) & cp.uint32(1))) >> 16
    return r.astype(cp.uint16)


def bf16_value(b):
    """bf16 bit patterns (uint16) -> float32 values."""
    import cupy as cp
    return (b.astype(cp.uint32) << 16).view(cp.float32)


def _rand(shape, dt, rng):
    """Random operand (f16, bf16 bits as uint16, or f32)."""
    import cupy as cp
    x = rng.standard_normal(shape, dtype=cp.float32)
    if dt == "f16":
        return x.astype(cp.float16)
    if dt == "bf16":
        return bf16_bits(x)
    return x


def _value(x, dt):
    import cupy as cp
    return (bf16_value(x) if dt == "bf16" else x).astype(cp.float64)


def _operand(shape2, major_unit_last, dt, rng, padded, L, offset=0):
    """A (L, r, c) view with unit stride on c (major_unit_last) or on r; padded = aligned ld;
    ``offset``: the view starts that many elements into each row (an odd address)."""
    r, c = shape2
    if major_unit_last:
        ld = (c + 63) // 64 * 64 if padded else c + offset
        base = _rand((L, r, ld), dt, rng)
        return base[:, :, offset:offset + c]
    ld = (r + 63) // 64 * 64 if padded else r + offset
    base = _rand((L, c, ld), dt, rng)
    return base[:, :, offset:offset + r].transpose(0, 2, 1)


def run_case(mainloop, dtype, a_major, b_major, size, padded, L=1, alpha=1.0, beta=0.0,
             out=None, d_col=False, seed=None, offset=0):
    """Launch one case; returns the relative error (or raises)."""
    import cupy as cp
    from cute_py.backends.cuda.kernels.gemm_sm80 import gemm_sm80
    rng = cp.random.default_rng(seed)
    M, N, K = size
    A = _operand((M, K), a_major == "K", dtype, rng, padded, L, offset)
    B = _operand((K, N), b_major == "N", dtype, rng, padded, L, offset)
    odt = {"f16": "f16", "bf16": "bf16", "tf32": "f32"}[dtype]
    if out == "f32":
        odt = "f32"
    C = None
    if beta:
        C = _rand((L, M, N), "f32" if odt == "f32" else odt, rng)

    def poisoned(shape):
        x = cp.full(shape, cp.nan, dtype=cp.float32)
        return x.astype(cp.float16) if odt == "f16" else (bf16_bits(x) if odt == "bf16" else x)
    if d_col:
        D = poisoned((L, N, M)).transpose(0, 2, 1)
    else:
        D = poisoned((L, M, N))
    gemm_sm80(A, B, C, D, alpha, beta, mainloop=mainloop, bf16=(dtype == "bf16"))
    cp.cuda.runtime.deviceSynchronize()
    ref = alpha * cp.matmul(_value(A, dtype), _value(B, dtype))
    if C is not None:
        ref += beta * _value(C, odt)
    Dd = _value(D, odt)
    if bool(cp.isnan(Dd).any()):
        raise AssertionError(f"unwritten (NaN) outputs: {int(cp.isnan(Dd).sum())}")
    err = float(cp.linalg.norm(Dd - ref) / max(float(cp.linalg.norm(ref)), 1e-30))
    return err


def bound_for(kw):
    b = BOUND[kw["dtype"]]
    if kw.get("out") == "f32" and kw["dtype"] == "f16":
        b = 1e-4
    return b


@pytest.mark.parametrize("cid,kw", cases(full=False), ids=[c[0] for c in cases(full=False)])
def test_gemm_sm80_matches_float64(cid, kw):
    err = run_case(**kw)
    assert err < bound_for(kw), (cid, err)


@pytest.mark.slow
@pytest.mark.parametrize("cid,kw", [c for c in cases() if "4095" in c[0]],
                         ids=[c[0] for c in cases() if "4095" in c[0]])
def test_gemm_sm80_large_odd(cid, kw):
    err = run_case(**kw)
    assert err < bound_for(kw), (cid, err)


def test_gemm_sm80_rejects_bad_arguments():
    import cupy as cp
    from cute_py.backends.cuda.kernels.gemm_sm80 import gemm_sm80
    from cute_py.errors import LaunchError
    A = cp.ones((4, 8), cp.float16)
    with pytest.raises(LaunchError, match="B"):
        gemm_sm80(A, cp.ones((9, 4), cp.float16))
    with pytest.raises(LaunchError, match="dtype"):
        gemm_sm80(A, cp.ones((8, 4), cp.float32))
    with pytest.raises(LaunchError, match="dtype"):
        gemm_sm80(A.astype(cp.int8), cp.ones((8, 4), cp.int8))


# ------------------------------------------------------------------------ device-run helpers

def precompile_all(extra=()):
    """Compile every kernel the cases (and ``extra`` configs) need, in a process pool."""
    import cupy as cp
    from cute_py.backends.cuda.kernels import gemm_sm80 as g
    cfgs = list(extra)
    with g.plan_only() as planned:
        for _, kw in cases():
            run_case_plan(**kw)
    cfgs += planned
    res = g.precompile(cfgs)
    bad = [r for r in res if r[2]]
    print(f"precompiled {len(res)} kernels; max regs {max(r[1] for r in res)}; "
          f"with spills: {bad}")
    cp.get_default_memory_pool().free_all_blocks()
    return res


def run_case_plan(mainloop, dtype, a_major, b_major, size, padded, L=1, alpha=1.0, beta=0.0,
                  out=None, d_col=False, seed=None):
    """Like run_case, under plan_only: tiny stand-in arrays with the same strides/alignment."""
    try:
        run_case(mainloop, dtype, a_major, b_major, size, padded, L, alpha, beta, out, d_col,
                 seed)
    except AssertionError:
        pass  # D stays poisoned under plan_only


def sanitize_cases():
    """A few small launches of every mainloop (for compute-sanitizer)."""
    errs = []
    for ml in MAINLOOPS:
        for kw in (dict(dtype="f16", a_major="K", b_major="K", size=(7, 13, 29), padded=False),
                   dict(dtype="f16", a_major="M", b_major="N", size=(129, 65, 70), padded=True,
                        L=2, beta=0.5),
                   dict(dtype="tf32", a_major="M", b_major="N", size=(70, 33, 40), padded=True),
                   dict(dtype="bf16", a_major="K", b_major="N", size=(100, 70, 130),
                        padded=True)):
            errs.append((ml, kw["dtype"], run_case(mainloop=ml, **kw)))
    print("sanitize cases:", errs)
