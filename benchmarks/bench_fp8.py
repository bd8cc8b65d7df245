"""FP8 GEMM (``cute_py.scaled_mm``) against ``torch._scaled_mm``, interleaved, on one GPU.

Data: N(0, 1) matrices quantized to e4m3 (``float8_e4m3fn``) on the GPU with ``s = amax / 448``
per tensor / per row (row-wise) / per 1x128 (A) and 128x128 (W) block (block-wise); printed
with the results.  A ``(M, K)`` row-major, B = ``W.T`` of a row-major ``(N, K)`` W; out bf16.

Providers per scaling mode:

- per-tensor and row-wise: ``cute_py`` (default: each 128-element k-block promoted into an fp32
  total), ``cute_py_fast`` (``use_fast_accum=True``: one accumulator), ``torch`` and
  ``torch_fast`` (``torch._scaled_mm(..., use_fast_accum=False / True)``), ``triton`` (the
  Triton tutorial's matmul on 8-bit operands, scales applied to the accumulator:
  ``triton_fp8.py``); ratios are cute_py / torch, cute_py / triton, cute_py_fast /
  torch_fast and cute_py_fast / triton (Triton's FP8 dot accumulates as ``use_fast_accum``
  does: its error is the fast kernels'; time ratio: < 1 is faster); per-tensor also an e4m3 D: ``cute_py_e4m3`` (with
  ``amax`` reduced in the epilogue) against ``torch_e4m3``;
- block-wise: ``cute_py_block`` against ``torch_block`` (``torch._scaled_mm``'s DeepSeek
  recipe, cuBLAS's 1x128 x 128x128 block scaling, where torch has it), ``triton_block`` (the
  same Triton kernel promoting each 128-deep k-block) and our own per-tensor kernels
  (``cute_py``, ``cute_py_fast``: the cost of the block scales), and ``deepgemm`` (DeepGEMM's
  ``gemm_fp8_fp8_bf16_nt``, the recipe's reference kernel, where the ``deep_gemm`` package
  imports; its host path builds four TMA descriptors per call, so at small problems its
  time includes host time).  All read the same scale memory: ``scale_a`` M-major (stride
  ``(1, M)``, as torch and DeepGEMM require), and torch's ``scale_b`` ``(K/128, N/128)`` is
  cute_py's (and DeepGEMM's) ``(N/128, K/128)`` transposed (``sb.t()``).

Each provider's output is first checked against a float64 product of the dequantized operands
(relative Frobenius-norm error).  Timing: CUDA events around ``--iters`` back-to-back calls,
providers interleaved in ``--rounds`` rounds, median of the rounds; TFLOP/s = 2MNK / time.  The
SM clock (``nvidia-smi``) is printed at the start and the end.

    python benchmarks/bench_fp8.py
    python benchmarks/bench_fp8.py --shapes 4096 --rounds 5 --json out.json
"""

import argparse
import json
import statistics
import sys
import traceback

from _shapes import SHAPES  # noqa: E402  (benchmarks/ is the script's folder)
from _timing import clocks  # noqa: E402
MODES = ("tensor", "row", "block")
E4M3_MAX = 448.0


def quantize(x, torch, mode, rows_block):
    """``(q, s)``: e4m3 codes and float32 scales of ``x`` (R, K): per tensor (s shape ()),
    per row ((R, 1)), or per ``rows_block x 128`` block ((ceil(R/rb), ceil(K/128)))."""
    f8 = torch.float8_e4m3fn
    if mode == "tensor":
        s = (x.abs().amax() / E4M3_MAX).clamp_min(1e-12).float()
        return (x / s).to(f8), s
    if mode == "row":
        s = (x.abs().amax(dim=1, keepdim=True) / E4M3_MAX).clamp_min(1e-12).float()
        return (x / s).to(f8), s
    R, K = x.shape
    rb, kb = rows_block, 128
    nr, nk = -(-R // rb), -(-K // kb)
    pad = torch.zeros(nr * rb, nk * kb, device=x.device, dtype=x.dtype)
    pad[:R, :K] = x
    blocks = pad.view(nr, rb, nk, kb)
    s = (blocks.abs().amax(dim=(1, 3)) / E4M3_MAX).clamp_min(1e-12).float()
    q = (blocks / s[:, None, :, None]).view(nr * rb, nk * kb)[:R, :K].contiguous().to(f8)
    return q, s


def dequant(q, s, mode, rows_block, torch):
    x = q.double()
    if mode in ("tensor", "row"):
        return x * s.double()
    R, K = q.shape
    full = s.double().repeat_interleave(rows_block, 0).repeat_interleave(128, 1)[:R, :K]
    return x * full


def problem(name, mode, torch, seed):
    M, N, K = SHAPES[name]
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(M, K, generator=g, device="cuda")
    w = torch.randn(N, K, generator=g, device="cuda")
    qa, sa = quantize(x, torch, mode, 1)
    qw, sw = quantize(w, torch, mode, 128)
    sb = sw.t().contiguous() if mode == "row" else sw       # (1, N) row-wise
    if mode == "block":
        sa = sa.t().contiguous().t()        # M-major, as torch takes it (cute_py: any strides)
    return qa, qw, sa, sb, sw


_LEFT_OUT: set = set()


def _optional(module: str, label: str):
    """Module ``module`` (``triton_fp8`` of benchmarks/, ``deep_gemm``), or None where it does
    not import: ``label``'s providers are then left out (said once)."""
    import importlib
    try:
        return importlib.import_module(module)
    except Exception as e:          # not installed here
        if module not in _LEFT_OUT:
            print(f"{label} left out: {type(e).__name__}: {e}")
            _LEFT_OUT.add(module)
        return None


def providers(mode, qa, qw, sa, sb, torch):
    import cute_py
    B = qw.t()
    tri = _optional("triton_fp8", "Triton providers")
    M, N = qa.shape[0], qw.shape[0]
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    fns = {}
    if mode in ("tensor", "row"):
        fns["cute_py"] = lambda: cute_py.scaled_mm(qa, B, sa, sb, out=out)
        fns["cute_py_fast"] = lambda: cute_py.scaled_mm(qa, B, sa, sb, out=out,
                                                        use_fast_accum=True)
        ta, tb = (sa.reshape(()), sb.reshape(())) if mode == "tensor" else (sa, sb)
        fns["torch"] = lambda: torch._scaled_mm(qa, B, scale_a=ta, scale_b=tb,
                                                out_dtype=torch.bfloat16)
        fns["torch_fast"] = lambda: torch._scaled_mm(qa, B, scale_a=ta, scale_b=tb,
                                                     out_dtype=torch.bfloat16,
                                                     use_fast_accum=True)
        if mode == "tensor":
            # an 8-bit D for the next layer (ours also reduces amax = max |D| in the epilogue)
            f8 = torch.float8_e4m3fn
            out8 = torch.empty(M, N, device="cuda", dtype=f8)
            amax = torch.zeros(1, device="cuda")
            fns["cute_py_e4m3"] = lambda: cute_py.scaled_mm(qa, B, sa, sb, out_dtype=f8,
                                                            out=out8, amax=amax)
            fns["torch_e4m3"] = lambda: torch._scaled_mm(qa, B, scale_a=ta, scale_b=tb,
                                                         out_dtype=f8)
        if tri is not None:
            fns["triton"] = lambda: tri.scaled_mm(qa, B, sa, sb, mode, out=out)
    else:
        fns["cute_py_block"] = lambda: cute_py.scaled_mm(qa, B, sa, sb, out=out)
        # torch's scale_b is (K/128, N/128): ours transposed (the same memory)
        fns["torch_block"] = lambda: torch._scaled_mm(qa, B, scale_a=sa, scale_b=sb.t(),
                                                      out_dtype=torch.bfloat16)
        if tri is not None:
            fns["triton_block"] = lambda: tri.scaled_mm(qa, B, sa, sb, "block", out=out)
        dg = _optional("deep_gemm", "DeepGEMM provider")
        if dg is not None:          # writes out, returns None
            fns["deepgemm"] = lambda: (dg.gemm_fp8_fp8_bf16_nt((qa, sa), (qw, sb), out), out)[1]
        one = torch.ones((), device="cuda")
        fns["cute_py"] = lambda: cute_py.scaled_mm(qa, B, one, one, out=out)
        fns["cute_py_fast"] = lambda: cute_py.scaled_mm(qa, B, one, one, out=out,
                                                        use_fast_accum=True)
    return fns, out


def time_ms(fn, iters, torch):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / iters


def run_case(name, mode, args, torch, results):
    M, N, K = SHAPES[name]
    qa, qw, sa, sb, sw = problem(name, mode, torch, args.seed)
    fns, out = providers(mode, qa, qw, sa, sb, torch)
    ref = dequant(qa, sa, mode, 1, torch) @ dequant(qw, sw, mode, 128, torch).t()
    rn = ref.norm().item()
    ok = {}
    for p, fn in fns.items():
        try:
            out.fill_(float("nan"))
            D = fn()
            torch.cuda.synchronize()
            if mode == "block" and p in ("cute_py", "cute_py_fast"):
                err = float("nan")          # per-tensor kernels on block data: timing only
            else:
                err = (D.double() - ref).norm().item() / rn
            ok[p] = fn
            results.append(dict(shape=name, mode=mode, provider=p, rel_err=err))
        except Exception:
            print(f"  {name} {mode} {p}: FAILED\n" + traceback.format_exc(limit=3))
    del ref
    for fn in ok.values():                  # warm-up (plans, cuBLASLt heuristics)
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    times = {p: [] for p in ok}
    for _ in range(args.rounds):            # interleaved rounds
        for p, fn in ok.items():
            times[p].append(time_ms(fn, args.iters, torch))
    flop = 2.0 * M * N * K
    med = {p: statistics.median(t) for p, t in times.items()}
    for r in results:
        if r["shape"] == name and r["mode"] == mode and r["provider"] in med:
            r["ms"] = med[r["provider"]]
            r["tflops"] = flop / med[r["provider"]] / 1e9
    pairs = ([("cute_py", "torch"), ("cute_py", "triton"), ("cute_py_fast", "torch_fast"),
              ("cute_py_fast", "triton"),
              ("cute_py_e4m3", "torch_e4m3")] if mode != "block"
             else [("cute_py_block", "torch_block"), ("cute_py_block", "deepgemm"),
                   ("cute_py_block", "triton_block"), ("cute_py_block", "cute_py"),
                   ("cute_py_block", "cute_py_fast"), ("deepgemm", "cute_py")])
    line = f"{name:>8} {mode:>6} " + "  ".join(
        f"{p} {flop / med[p] / 1e9:7.1f} TF/s (err {next(r['rel_err'] for r in results if r['shape'] == name and r['mode'] == mode and r['provider'] == p):.1e})"
        for p in med)
    print(line)
    for a, b in pairs:
        if a in med and b in med:
            print(f"{'':>16} time {a} / {b} = {med[a] / med[b]:.3f}")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", nargs="*", default=list(SHAPES), choices=list(SHAPES))
    ap.add_argument("--modes", nargs="*", default=list(MODES), choices=list(MODES))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch
    print("data: N(0, 1) quantized to e4m3 (float8_e4m3fn), scales amax/448 per tensor / row / "
          "1x128 (A) and 128x128 (W) block; out bf16; B = W.T (K-major)")
    print("clock at start:", clocks())
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    results = []
    for name in args.shapes:
        for mode in args.modes:
            try:
                run_case(name, mode, args, torch, results)
            except Exception:
                print(f"{name} {mode}: FAILED\n" + traceback.format_exc(limit=4))
    print("clock at end:", clocks())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
