"""FP8 numbers and the scaled-GEMM references (``cute_py.fp8``): every code, rounding ties,
saturation, agreement with torch's float8 conversions, and the three scaling modes."""

import numpy as np
import pytest

from cute_py import fp8
from cute_py.errors import LaunchError

FMTS = ("float8_e4m3", "float8_e5m2")


@pytest.mark.parametrize("fmt", FMTS)
def test_every_finite_code_is_a_fixed_point(fmt):
    v = fp8.all_values(fmt)
    fin = v[np.isfinite(v)]
    assert np.array_equal(fp8.round_fp8(fin, fmt), fin)
    assert np.max(fin) == fp8.max_finite(fmt)
    assert np.min(fin[fin > 0]) == (2.0 ** -9 if fmt == "float8_e4m3" else 2.0 ** -16)


@pytest.mark.parametrize("fmt", FMTS)
def test_idempotent_and_ties_to_even(fmt):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10000) * np.exp2(rng.integers(-12, 10, 10000))
    r = fp8.round_fp8(x, fmt)
    assert np.array_equal(fp8.round_fp8(r, fmt), r)
    v = np.unique(fp8.all_values(fmt)[np.isfinite(fp8.all_values(fmt))])
    mids = (v[:-1] + v[1:]) / 2
    got = fp8.round_fp8(mids, fmt)
    # the tie goes to the neighbour whose code is even (last mantissa bit 0)
    codes = {float(x): i for i, x in enumerate(fp8.all_values(fmt)) if np.isfinite(x) and i < 128}
    for lo, hi, g in zip(v[:-1], v[1:], got):
        if lo < 0 or hi <= 0:
            continue
        even = lo if codes[float(lo)] % 2 == 0 else hi
        assert g == even, (lo, hi, g)


def test_out_of_range():
    assert fp8.round_fp8(1e6, "float8_e4m3") == 448
    assert np.isnan(fp8.round_fp8(1e6, "float8_e4m3", saturate=False))
    assert fp8.round_fp8(-1e6, "float8_e5m2", saturate=False) == -np.inf
    assert np.isnan(fp8.round_fp8(np.nan))


def test_agrees_with_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal(20000) * np.exp2(rng.integers(-14, 12, 20000))
    x = x.astype(np.float32)
    for fmt, tdt in (("float8_e4m3", torch.float8_e4m3fn), ("float8_e5m2", torch.float8_e5m2)):
        t = torch.from_numpy(x).to(tdt).to(torch.float64).numpy()
        ours = fp8.round_fp8(x, fmt, saturate=fmt == "float8_e4m3")   # torch's conventions
        same = (ours == t) | (np.isnan(ours) & np.isnan(t))
        assert same.all(), (fmt, x[~same][:5], ours[~same][:5], t[~same][:5])


def test_scaling_modes_reconstruct_the_product():
    rng = np.random.default_rng(2)
    M, N, K = 70, 150, 300
    a, b = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    exact = a @ b
    modes = {
        "tensor": (fp8.quantize(a), fp8.quantize(b)),
        "row": (fp8.quantize(a, axis=1), fp8.quantize(b, axis=0)),
        "block": (fp8.quantize_blockwise(a), fp8.quantize_blockwise(b.T, block=(128, 128))),
    }
    for name, ((qa, sa), (qb, sb)) in modes.items():
        if name == "block":
            qb = qb.T
            assert sa.shape == (M, 3) and sb.shape == (2, 3)
        d = fp8.scaled_mm_reference(qa, qb, sa, sb)
        err = np.linalg.norm(d - exact) / np.linalg.norm(exact)
        assert err < 0.05, (name, err)     # e4m3 keeps 3 mantissa bits: ~2-3% relative error
        # the reference is the dequantized product
        if name != "block":
            sa_, sb_ = np.asarray(sa, np.float64), np.asarray(sb, np.float64)
            assert np.allclose(d, (qa * sa_) @ (qb * sb_), rtol=1e-12, atol=1e-9)


def test_errors_name_the_argument():
    with pytest.raises(LaunchError) as e:
        fp8.round_fp8(1.0, "float16")
    assert e.value.arg == "fmt"
    with pytest.raises(LaunchError) as e:
        fp8.scaled_mm_reference(np.ones((4, 8)), np.ones((8, 3)), np.ones((4, 2)), 1.0)
    assert e.value.arg == "sa"
