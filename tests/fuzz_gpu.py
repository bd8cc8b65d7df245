"""A randomized GPU fuzz of the public GEMM entry points against float64 references.

``cute_py.gemm`` on random problems (fp16 / bf16 / fp32; M, N, K from 1 to 4096; row- and
column-major, padded, offset and fully strided operand views; batches with either operand
shared or expanded; C with beta, alpha, a row or column bias, every activation; a NaN-poisoned
``out``, row- or column-major; work queued on a side stream right before the call) and
``cute_py.scaled_mm`` (per-tensor, row-wise and block scaling; e4m3 / e5m2 operands; bf16, f16,
f32 and e4m3 outputs; bias; amax; fast accumulation), each checked against the float64 product
(the 16-bit GEMM within 4x torch's own rounding error of the same problem), plus bad
arguments that must raise a ``cute_py.errors.CuteError`` and nothing else.

    python tests/fuzz_gpu.py [seconds] [seed]

prints one line per failure and a summary; exit status 1 when anything failed.  Not a pytest
module (it needs a Hopper GPU, torch, and minutes)."""
import random
import sys
import time
import traceback

import torch

import cute_py
from cute_py.errors import CuteError

BUDGET = float(sys.argv[1]) if len(sys.argv) > 1 else 200
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 1
rng = random.Random(SEED)
dev = "cuda"
fails = []
counts = {}


def note(kind, ok, msg):
    c = counts.setdefault(kind, [0, 0])
    c[0] += 1
    if not ok:
        c[1] += 1
        fails.append(f"{kind}: {msg}")
        print("FAIL", kind, msg, flush=True)


def dim(small=False):
    r = rng.random()
    if r < 0.15:
        return rng.choice([1, 2, 3, 7, 8, 16])
    if r < 0.55 or small:
        return rng.randint(1, 300)
    if r < 0.85:
        return rng.randint(300, 1500)
    return rng.choice([2000, 2040, 2048, 3000, 4096])


def operand(rows, cols, dt, kind, lead=None):
    """(rows, cols) in the given layout kind."""
    if kind == "row":
        return torch.randn(rows, cols, device=dev).to(dt)
    if kind == "col":
        return torch.randn(cols, rows, device=dev).to(dt).t()
    if kind == "rowpad":
        pad = rng.choice([1, 3, 8, 64])
        return torch.randn(rows, cols + pad, device=dev).to(dt)[:, :cols]
    if kind == "colpad":
        pad = rng.choice([1, 3, 8, 64])
        return torch.randn(cols, rows + pad, device=dev).to(dt)[:, :rows].t()
    if kind == "strided":    # no unit stride at all
        return torch.randn(rows, 2 * cols, device=dev).to(dt)[:, ::2] if rng.random() < 0.5 \
            else torch.randn(2 * cols, rows, device=dev).to(dt)[::2].t()
    if kind == "offset":     # a view starting one row in (pointer off 128 bytes)
        return torch.randn(rows + 1, cols, device=dev).to(dt)[1:]
    raise ValueError(kind)


ACTS = {None: lambda v: v, "identity": lambda v: v, "relu": torch.relu,
        "gelu": lambda v: torch.nn.functional.gelu(v, approximate="tanh"),
        "gelu_erf": lambda v: torch.nn.functional.gelu(v),
        "silu": torch.nn.functional.silu, "sigmoid": torch.sigmoid}
TOL = {torch.float16: 1.5e-2, torch.bfloat16: 3e-2, torch.float32: 1e-2}


def relerr(got, want):
    got = got.double()
    if not torch.isfinite(got).all():
        return float("inf")
    n = want.norm().item()
    return (got - want).norm().item() / max(n, 1e-30)


def guarded(kind, desc, fn):
    """``fn()`` then a device sync; a raised error is a failure of ``kind`` (a CuteError:
    "-raise", anything else: "-leak"), and None is returned."""
    try:
        D = fn()
        torch.cuda.synchronize()
        return D
    except CuteError as e:
        note(kind + "-raise", False, f"{desc} -> {type(e).__name__}: {str(e)[:300]}")
    except Exception as e:
        note(kind + "-leak", False, f"{desc} -> {type(e).__name__}: "
             f"{traceback.format_exc()[-600:]}")
    return None


def gemm_case():
    dt = rng.choice([torch.float16, torch.bfloat16, torch.float16, torch.bfloat16, torch.float32])
    M, N, K = dim(), dim(), dim()
    if M * N * K > 3e9:
        K = max(1, int(3e9 / (M * N)))
    batched = rng.random() < 0.2
    ka = rng.choice(["row", "row", "col", "rowpad", "colpad", "offset", "strided"])
    kb = rng.choice(["row", "col", "col", "rowpad", "colpad", "offset", "strided"])
    desc = dict(dt=str(dt)[6:], M=M, N=N, K=K, ka=ka, kb=kb)
    if batched:
        L = rng.choice([2, 3])
        bmode = rng.choice(["both", "Bshared", "Ashared", "expandB"])
        desc["L"], desc["bmode"] = L, bmode
        A = torch.stack([operand(M, K, dt, ka) for _ in range(L)]) if bmode != "Ashared" \
            else operand(M, K, dt, ka)
        if bmode == "both":
            B = torch.stack([operand(K, N, dt, kb) for _ in range(L)])
        elif bmode == "expandB":
            B = operand(K, N, dt, kb).unsqueeze(0).expand(L, K, N)
        else:
            B = operand(K, N, dt, kb)
        if bmode == "Ashared":
            B = torch.stack([operand(K, N, dt, kb) for _ in range(L)])
        shape = (L, M, N)
    else:
        A, B = operand(M, K, dt, ka), operand(K, N, dt, kb)
        shape = (M, N)
    alpha = rng.choice([1.0, 1.0, 0.5, -2.0, 3])
    beta = 0.0
    C = None
    ocol = rng.random() < 0.15 and not batched
    if rng.random() < 0.3:
        C = torch.randn(shape, device=dev).to(dt)
        if ocol:
            C = C.t().contiguous().t()
        beta = rng.choice([1.0, 0.5, -1.0, 0])
    bias = act = None
    kw = {}
    if rng.random() < 0.35 and dt != torch.float32:
        bk = rng.choice(["n", "m1", None])
        if bk == "n":
            bias = torch.randn(N, device=dev).to(dt)
        elif bk == "m1":
            bias = torch.randn(M, 1, device=dev).to(dt)
        act = rng.choice(list(ACTS))
        desc["bias"], desc["act"] = bk, act
        if bias is not None:
            kw["bias"] = bias
        if act is not None:
            kw["activation"] = act
    use_out = rng.random() < 0.5
    out = torch.full(shape, float("nan"), device=dev, dtype=dt) if use_out else None
    if use_out and ocol:
        out = torch.full(shape[::-1], float("nan"), device=dev, dtype=dt).t()
    desc["ocol"] = ocol
    side = rng.random() < 0.3
    desc.update(alpha=alpha, beta=beta, C=C is not None, out=use_out, side=side)
    ref = alpha * torch.matmul(A.double(), B.double())
    if C is not None and beta != 0:
        ref = ref + beta * C.double()
    if bias is not None:
        ref = ref + bias.double()
    ref = ACTS[act](ref)
    torch.cuda.synchronize()

    def call():
        if not side:
            return cute_py.gemm(A, B, C, alpha, beta, out=out, **kw)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            A2 = A * 1            # produced on the side stream just before the call
            torch.cuda._sleep(200000)
            A2 = A2 + 0
            D = cute_py.gemm(A2, B, C, alpha, beta, out=out, **kw)
        torch.cuda.current_stream().wait_stream(s)
        return D
    D = guarded("gemm", desc, call)
    if D is None:
        return
    if tuple(D.shape) != shape or D.dtype != dt:
        note("gemm", False, f"{desc} shape/dtype {tuple(D.shape)} {D.dtype}")
        return
    # torch's own rounding as the yardstick
    tref = alpha * torch.matmul(A, B).double()
    err, terr = relerr(D, ref), relerr(tref.to(dt), ref)
    ok = err <= max(4 * terr, TOL[dt] * 0.2) and err < TOL[dt]
    note("gemm", ok, f"{desc} err={err:.2e} torch={terr:.2e}")


FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def quant(x, fmt, axis=None, block=None):
    mx = 448.0 if fmt == "e4m3" else 57344.0
    if block is not None:
        r, c = x.shape
        br, bc = block
        R, Cc = -(-r // br), -(-c // bc)
        xp = torch.zeros(R * br, Cc * bc, device=dev, dtype=torch.float64)
        xp[:r, :c] = x
        a = xp.view(R, br, Cc, bc).abs().amax(dim=(1, 3)).clamp(min=1e-12)
        s = a / mx
        q = (xp.view(R, br, Cc, bc) / s[:, None, :, None]).view(R * br, Cc * bc)[:r, :c]
        return q.to(FP8[fmt]), s
    a = x.abs().amax(dim=axis, keepdim=True) if axis is not None else x.abs().amax()
    s = a.clamp(min=1e-12) / mx
    return (x / s).to(FP8[fmt]), s


def fp8_case():
    M = dim()
    N = rng.choice([16, 32, 48, 128, 136, 256, 264, 1000, 1024, 3072]) if rng.random() < 0.5 \
        else 16 * rng.randint(1, 200)
    K = 16 * rng.randint(1, 260)
    mode = rng.choice(["tensor", "row", "block"])
    fa, fb = rng.choice(["e4m3", "e4m3", "e5m2"]), rng.choice(["e4m3", "e4m3", "e5m2"])
    od = rng.choice(["bfloat16", "float16", "float32", "float8_e4m3fn"])
    if od == "float8_e4m3fn":      # an 8-bit D is stored in whole 16-byte rows (documented)
        N = -(-N // 16) * 16
    fast = mode != "block" and rng.random() < 0.2
    use_bias = rng.random() < 0.3
    use_amax = od == "float8_e4m3fn" and rng.random() < 0.6
    desc = dict(M=M, N=N, K=K, mode=mode, fa=fa, fb=fb, od=od, fast=fast, bias=use_bias,
                amax=use_amax)
    x = torch.randn(M, K, device=dev, dtype=torch.float64)
    w = torch.randn(N, K, device=dev, dtype=torch.float64)
    if mode == "block":
        qa, sa = quant(x, fa, block=(1, 128))
        qw, sb = quant(w, fb, block=(128, 128))
        sa_, sb_ = sa.float(), sb.float()
        kb = -(-K // 128)
        sa_full = sa.repeat_interleave(128, dim=1)[:, :K]
        sb_full = sb.repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)[:N, :K]
        ref = (qa.double() * sa_full) @ (qw.double() * sb_full).T
        assert sa_.shape == (M, kb)
    elif mode == "row":
        qa, sa = quant(x, fa, axis=1)
        qw, sw = quant(w, fb, axis=1)
        sa_, sb_ = sa.float(), sw.T.float().contiguous()
        ref = (qa.double() @ qw.double().T) * sa * sw.T
    else:
        qa, sa = quant(x, fa)
        qw, sb = quant(w, fb)
        sa_, sb_ = sa.float().reshape(()), sb.float().reshape(())
        ref = (qa.double() @ qw.double().T) * sa * sb
    odt = getattr(torch, od)
    bias = None
    if use_bias:
        bdt = odt if od != "float8_e4m3fn" else torch.bfloat16
        bias = torch.randn(N, device=dev).to(bdt)
        ref = ref + bias.double()
    amax = torch.full((1,), -1.0, device=dev) if use_amax else None
    kw = {}
    if amax is not None:
        kw["amax"] = amax
    D = guarded("fp8", desc, lambda: cute_py.scaled_mm(
        qa, qw.t(), sa_, sb_, out_dtype=odt, bias=bias, use_fast_accum=fast, **kw))
    if D is None:
        return
    if od == "float8_e4m3fn":
        want = ref.clamp(-448, 448)
        err = relerr(D.double(), want)
        tol = 8e-2
    else:
        err = relerr(D, ref)
        tol = {"bfloat16": 8e-3, "float16": 2e-3, "float32": 1e-3}[od] * (4 if fast else 1)
        if fa == "e5m2" or fb == "e5m2":
            tol *= 1.5
    ok = err < tol
    if use_amax:
        am = ref.abs().max().item()
        ok = ok and abs(amax.item() - am) <= (5e-3 if fast else 1e-3) * am + 1e-6
        desc["amax_err"] = abs(amax.item() - am) / max(am, 1e-30)
    note("fp8", ok, f"{desc} err={err:.2e} tol={tol:.1e}")


def error_case():
    """Bad arguments: must raise CuteError, never another exception, never succeed."""
    A = torch.randn(64, 32, device=dev, dtype=torch.float16)
    B = torch.randn(32, 48, device=dev, dtype=torch.float16)
    bad = [
        ("cpu A", lambda: cute_py.gemm(A.cpu(), B)),
        ("dtype mismatch", lambda: cute_py.gemm(A, B.float())),
        ("int8", lambda: cute_py.gemm(A.to(torch.int8), B.to(torch.int8))),
        ("float64", lambda: cute_py.gemm(A.double(), B.double())),
        ("K mismatch", lambda: cute_py.gemm(A, B[:31])),
        ("out overlap", lambda: cute_py.gemm(A[:, :32], B[:, :32], out=A[:, :32])),
        ("alpha str", lambda: cute_py.gemm(A, B, alpha="1")),
        ("alpha complex", lambda: cute_py.gemm(A, B, alpha=1j)),
        ("C wrong shape", lambda: cute_py.gemm(A, B, torch.randn(64, 47, device=dev,
                                                                  dtype=torch.float16), 1, 1)),
        ("out wrong dtype", lambda: cute_py.gemm(A, B, out=torch.empty(64, 48, device=dev))),
        ("out wrong shape", lambda: cute_py.gemm(A, B, out=torch.empty(64, 47, device=dev,
                                                                       dtype=torch.float16))),
        ("bias wrong len", lambda: cute_py.gemm(A, B, bias=torch.randn(47, device=dev,
                                                                      dtype=torch.float16))),
        ("bad activation", lambda: cute_py.gemm(A, B, activation="tanhh")),
        ("numpy A", lambda: cute_py.gemm(A.cpu().numpy(), B.cpu().numpy())),
        ("list A", lambda: cute_py.gemm([[1.0]], [[1.0]])),
        ("1-D A", lambda: cute_py.gemm(A[0], B)),
        ("4-D A", lambda: cute_py.gemm(A[None, None], B)),
        ("bad stream", lambda: cute_py.gemm(A, B, stream="x")),
        ("bad backend", lambda: cute_py.gemm(A, B, backend="sm70")),
        ("bias + unknown tensor", lambda: cute_py.gemm(A, B, foo=A)),
        ("fp8 N-major A", lambda: cute_py.scaled_mm(A.to(torch.float8_e4m3fn).t().contiguous().t(),
                                                  B.t().contiguous().to(torch.float8_e4m3fn).t(),
                                                  torch.ones((), device=dev),
                                                  torch.ones((), device=dev))),
        ("fp8 fp16 A", lambda: cute_py.scaled_mm(A, B, torch.ones((), device=dev),
                                               torch.ones((), device=dev))),
        ("fp8 K%16", lambda: cute_py.scaled_mm(
            torch.zeros(64, 24, device=dev).to(torch.float8_e4m3fn),
            torch.zeros(48, 24, device=dev).to(torch.float8_e4m3fn).t(),
            torch.ones((), device=dev), torch.ones((), device=dev))),
        ("fp8 scale f16", lambda: cute_py.scaled_mm(
            torch.zeros(64, 32, device=dev).to(torch.float8_e4m3fn),
            torch.zeros(48, 32, device=dev).to(torch.float8_e4m3fn).t(),
            torch.ones((), device=dev, dtype=torch.float16), torch.ones((), device=dev))),
        ("fp8 scale shape", lambda: cute_py.scaled_mm(
            torch.zeros(64, 32, device=dev).to(torch.float8_e4m3fn),
            torch.zeros(48, 32, device=dev).to(torch.float8_e4m3fn).t(),
            torch.ones(64, 2, device=dev), torch.ones((), device=dev))),
        ("fp8 scale cpu", lambda: cute_py.scaled_mm(
            torch.zeros(64, 32, device=dev).to(torch.float8_e4m3fn),
            torch.zeros(48, 32, device=dev).to(torch.float8_e4m3fn).t(),
            torch.ones(()), torch.ones((), device=dev))),
        ("fp8 out_dtype int", lambda: cute_py.scaled_mm(
            torch.zeros(64, 32, device=dev).to(torch.float8_e4m3fn),
            torch.zeros(48, 32, device=dev).to(torch.float8_e4m3fn).t(),
            torch.ones((), device=dev), torch.ones((), device=dev), out_dtype=torch.int32)),
    ]
    for name, fn in bad:
        try:
            fn()
            torch.cuda.synchronize()
            note("error", False, f"{name}: no error raised")
        except CuteError as e:
            note("error", True, "")
            print("  ok", name, "->", str(e)[:160], flush=True)
        except Exception as e:
            note("error", False, f"{name}: leaked {type(e).__name__}: {str(e)[:200]}")


def main():
    error_case()
    t0 = time.time()
    i = 0
    while time.time() - t0 < BUDGET:
        i += 1
        try:
            (gemm_case if rng.random() < 0.65 else fp8_case)()
        except Exception:
            note("harness", False, traceback.format_exc()[-800:])
    print("cases", i, "time", round(time.time() - t0), "counts", counts)
    print("FAILURES", len(fails))
    for f in fails:
        print(" ", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
