"""An MLP block (Linear + bias + GELU + Linear, as in a transformer) whose matmuls run through
cute_py's GEMM as a torch custom operator (``torch.ops.cute_py.gemm``), compared with torch eager
and ``torch.compile`` for agreement (relative-norm error against a float64 reference) and speed
(CUDA events, median of interleaved rounds).

    python examples/mlp_block.py                       # tokens=8192, d=4096, hidden=14336
    python examples/mlp_block.py --tokens 4096 --d 2048 --hidden 8192 --dtype bf16 --backward

The first Linear's bias and GELU (tanh approximation, as ``torch._addmm_activation``) are fused
into cute_py's GEMM epilogue; torch eager runs ``addmm`` then ``gelu``.  Without a CUDA GPU (or
without torch) the script says so and exits 0.
"""

import argparse
import statistics
import sys


class CuteMLP:
    """``y = gelu(x @ W1.T + b1) @ W2.T`` with both matmuls through ``cute_py::gemm``
    (the first with its bias and GELU fused)."""

    def __init__(self, W1, b1, W2):
        self.W1, self.b1, self.W2 = W1, b1, W2

    def __call__(self, x):
        from cute_py.backends.cuda.torch_ops import linear
        return linear(linear(x, self.W1, self.b1, "gelu"), self.W2)


def torch_mlp(W1, b1, W2):
    import torch
    F = torch.nn.functional

    def f(x):
        return F.linear(F.gelu(F.linear(x, W1, b1), approximate="tanh"), W2)
    return f


def time_ms(fns, rounds=7, reps=10):
    """Median ms per call of each function; rounds interleave the functions."""
    import torch
    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            fn()
            st.record()
            for _ in range(reps):
                fn()
            en.record()
            en.synchronize()
            samples[name].append(st.elapsed_time(en) / reps)
    return {k: statistics.median(v) for k, v in samples.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--d", type=int, default=4096)
    p.add_argument("--hidden", type=int, default=14336)
    p.add_argument("--dtype", choices=("f16", "bf16"), default="f16")
    p.add_argument("--backward", action="store_true", help="also time forward + backward")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("mlp_block: torch is not installed; nothing to run")
        return 0
    if not torch.cuda.is_available():
        print("mlp_block: no CUDA GPU; nothing to run")
        return 0
    import cute_py.backends.cuda.torch_ops  # noqa: F401  (registers torch.ops.cute_py.gemm)

    dt = torch.float16 if args.dtype == "f16" else torch.bfloat16
    T, D, H = args.tokens, args.d, args.hidden
    g = torch.Generator(device="cuda").manual_seed(0)
    # nn.Linear-like initialisation: weights ~ N(0, 1/in_features), activations ~ N(0, 1)
    W1 = (torch.randn(H, D, generator=g, device="cuda") / D ** 0.5).to(dt)
    b1 = (torch.randn(H, generator=g, device="cuda") * 0.1).to(dt)
    W2 = (torch.randn(D, H, generator=g, device="cuda") / H ** 0.5).to(dt)
    x = torch.randn(T, D, generator=g, device="cuda").to(dt)

    impls = {"cute_py (torch op)": CuteMLP(W1, b1, W2), "torch eager": torch_mlp(W1, b1, W2)}
    if not args.no_compile:
        try:
            cute = CuteMLP(W1, b1, W2)
            impls["torch.compile (cute_py op)"] = torch.compile(lambda x: cute(x),
                                                                fullgraph=True)
            impls["torch.compile (torch)"] = torch.compile(torch_mlp(W1, b1, W2))
        except Exception as e:     # keep the run: report and go on
            print(f"torch.compile unavailable: {type(e).__name__}: {e}")

    ref = torch_mlp(W1.double(), b1.double(), W2.double())(x.double())
    print(f"MLP block: tokens={T} d={D} hidden={H} {args.dtype}, data ~ N(0, 1), "
          f"device {torch.cuda.get_device_name()}")
    errs, ok = {}, {}
    for name, f in impls.items():
        try:
            y = f(x)
            torch.cuda.synchronize()
            errs[name] = ((y.double() - ref).norm() / ref.norm()).item()
            ok[name] = f
        except Exception as e:
            print(f"{name}: FAILED {type(e).__name__}: {e}")
    times = time_ms({k: (lambda f=f: f(x)) for k, f in ok.items()})
    flop = 2 * T * D * H * 2
    base = times.get("torch eager")
    print(f"\n{'implementation':30s} {'rel err':>9s} {'ms':>8s} {'TFLOP/s':>8s} {'x eager':>8s}")
    for name in ok:
        ms = times[name]
        ratio = f"{base / ms:8.3f}" if base else "       -"
        print(f"{name:30s} {errs[name]:9.2e} {ms:8.3f} {flop / ms / 1e9:8.1f} {ratio}")

    if args.backward:
        print("\nforward + backward (grads of x, W1, b1, W2):")
        params = [t.clone().requires_grad_() for t in (W1, b1, W2)]
        xg = x.clone().requires_grad_()
        fb = {"cute_py (torch op)": CuteMLP(*params), "torch eager": torch_mlp(*params)}

        def step(f):
            for t in (xg, *params):
                t.grad = None
            f(xg).float().square().mean().backward()
        tb = time_ms({k: (lambda f=f: step(f)) for k, f in fb.items()}, rounds=5, reps=3)
        for name, ms in tb.items():
            print(f"{name:30s} {ms:8.3f} ms  {tb['torch eager'] / ms:6.3f}x eager")
    return 0


if __name__ == "__main__":
    sys.exit(main())
