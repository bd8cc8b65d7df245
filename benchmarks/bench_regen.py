"""Old against new generated GEMM kernels, in the same run.

Every shipped GEMM configuration (SM90 plain and EVT-fused, SM80) is compiled twice: from the
generator as it is now, and from its golden source at a git revision
(``tests/backend/golden/gemm/<name>.cu`` at ``--rev``).  Both are launched through the same plan
(the kernel signatures are the same; an old source is compiled against
the headers it was generated for, ``<old-dir>/include``), checked to produce the same D on N(0, 1) data, then timed
in interleaved rounds (alternating which goes first) with CUDA events.  Prints the new/old time ratio per configuration (< 1 is
faster) and its geometric mean.

    python benchmarks/bench_regen.py --rev REV | --old-dir DIR [--size 4096] [--rounds 7] [--only sm90|sm80]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _inline(src: str, inc: str, seen=None) -> str:
    """``src`` with every ``#include "cute_py/..."`` replaced by that header of ``inc`` (each
    once): old sources compile against the headers they were generated for."""
    import re
    seen = set() if seen is None else seen

    def sub(m):
        name = m.group(1)
        if name in seen:
            return ""
        seen.add(name)
        text = open(os.path.join(inc, name)).read().replace("#pragma once", "")
        return _inline(text, inc, seen)
    return re.sub(r'#include "(cute_py/[\w.]+)"', sub, src)


def _golden(rev: str, name: str, old_dir: str | None = None) -> str | None:
    if old_dir:
        path = os.path.join(old_dir, f"{name}.cu")
        if not os.path.isfile(path):
            return None
        src = open(path).read()
        inc = os.path.join(old_dir, "include")
        return _inline(src, inc) if os.path.isdir(inc) else src
    try:
        return subprocess.run(["git", "-C", ROOT, "show", f"{rev}:tests/backend/golden/gemm/{name}.cu"],
                              check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError:
        return None


def _cases():
    sys.path.insert(0, os.path.join(ROOT, "tests", "backend"))
    from test_golden_gemm import _short
    from cute_py.backends.cuda.kernels import gemm_sm80 as S80
    from cute_py.backends.cuda.kernels import gemm_sm90 as G
    from cute_py.backends.cuda.kernels.gemm_sm80_configs import default_config, shipped_configs
    from cute_py.epilogue import evt
    out = []
    for cfg in G.SHIPPED_CONFIGS:
        out.append(("sm90", _short(f"sm90_{cfg.name}", ""), cfg))
    for i, cfg in enumerate(G.shipped_epilogue_configs()):
        out.append(("sm90", _short(f"sm90_epi{i:02d}_{cfg.name}", ""), cfg))
    for cfg in shipped_configs():
        out.append(("sm80", _short(f"sm80_{S80.kernel_name(cfg)}", ""), cfg))
    big = default_config(8192, 8192, 8192)
    for label, tree in (("relu", evt.lin_comb_bias_elt_act("relu")),
                        ("gelu", evt.lin_comb_bias_elt_act("gelu", alpha=1.0, beta=0.0))):
        out.append(("sm80", f"sm80_fused_{label}", S80.with_epilogue(big, tree)))
    return out


def _tree_tensors(tree, M, N, torch_mod, dev, dtype):
    """Random inputs (and zeroed outputs) for every named argument of ``tree`` (scalars 1.0)."""
    from cute_py.epilogue import evt
    out = {}
    outs = evt.outputs(tree)
    for name, (role, _dt) in tree.signature.items():
        if name == "D":
            continue
        if role == "scalar":          # the kernel's alpha / beta slots take these
            out[name] = 1.0
            continue
        shape = evt._expected_shape(role, M, N)
        if name in outs:
            red = "reduce" in role
            out[name] = torch_mod.zeros(shape, device=dev,
                                        dtype=torch_mod.float32 if red else dtype)
        else:
            out[name] = torch_mod.randn(shape, device=dev).to(dtype)
    return out


def _sm90_pair(cfg, source_old, M, N, K, torch):
    from cute_py.backends.cuda.compiler import build_kernel
    from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90Gemm
    new = Sm90Gemm(cfg)
    old = copy.copy(new)
    old.source = source_old
    old.spec = dataclasses.replace(new.spec, source=source_old)
    old.kernel = build_kernel(old.spec)
    old.module = old.kernel.module
    old._max_ctas = {}
    dt = torch.float16 if cfg.dtype == "f16" else torch.bfloat16
    dev = "cuda"
    A = torch.randn(M, K, device=dev).to(dt) if cfg.a_major == "K" else \
        torch.randn(K, M, device=dev).to(dt).t()
    B = torch.randn(N, K, device=dev).to(dt) if cfg.b_major == "K" else \
        torch.randn(K, N, device=dev).to(dt).t()
    C = torch.randn(M, N, device=dev).to(dt) if cfg.has_c else None
    tensors = None
    epi = cfg.epilogue()
    if epi is not None:
        tensors = _tree_tensors(epi.cfg.tree, M, N, torch, dev, dt)
        C = None                      # a tree's C is one of its named tensors
    runs = []
    for g in (old, new):
        D = torch.full((M, N), float("nan"), device=dev, dtype=dt)
        t = None if tensors is None else {k: (v.clone() if hasattr(v, "clone") else v)
                                          for k, v in tensors.items()}
        beta = 0.5 if (C is not None or (t and "C" in t)) else 0.0
        runs.append((g.prepare(A, B, D, C, 1.0, beta, tensors=t), D))
    return runs


def _sm80_pair(cfg, source_old, M, N, K):
    import cupy as cp
    import numpy as np
    from cute_py.backends.cuda.kernels.gemm_sm80 import GemmSm80
    new = GemmSm80(cfg)
    old = copy.copy(new)
    old.source, old._func, old._module = source_old, None, None
    dt = {"f16": cp.float16, "bf16": cp.uint16, "tf32": cp.float32}[cfg.dtype]
    odt = {"f16": cp.float16, "bf16": cp.uint16, "f32": cp.float32}[cfg.out_dtype]
    rng = cp.random.default_rng(0)

    def mat(r, c):
        x = rng.standard_normal((r, c), dtype=cp.float32)
        if dt == cp.uint16:
            return (x.view(cp.uint32) >> 16).astype(cp.uint16)
        return x.astype(dt)
    A = mat(M, K)[None] if cfg.a_major == "K" else mat(K, M).T[None]
    B = mat(N, K).T[None] if cfg.b_major == "K" else mat(K, N)[None]
    C = cp.zeros((1, M, N), odt)
    epi_args = None
    if cfg.epi is not None:
        from cute_py.backends.cuda.kernels.gemm_sm80 import epilogue_of
        tree = epilogue_of(cfg).cfg.tree
        epi_args = {}
        for name, (role, _d) in tree.signature.items():
            if name == "D":
                continue
            base = role.split(":")[0]
            if base == "scalar":
                epi_args[name] = np.float32(1.0)
            else:
                from cute_py.epilogue import evt
                shape = evt._expected_shape(role, M, N)
                epi_args[name] = (mat(*shape) if len(shape) == 2 else mat(1, shape[0])[0]) \
                    .astype(odt) if odt != cp.uint16 else mat(*((1,) + shape)[-2:])
    runs = []
    for g in (old, new):
        D = cp.full((1, M, N), np.nan if odt != cp.uint16 else 0x7fff, odt)

        def run(g=g, D=D):
            g(A, B, C, D, 1.0, 0.0, epi_args=epi_args)
        runs.append((run, D))
    return runs


def _warm_one(job):
    src, arch = job
    from cute_py.backends.cuda.compiler import compile_module
    try:
        compile_module(src, arch=arch, options=())
    except Exception as e:  # reported again (with its log) when the case runs
        return f"{type(e).__name__}"
    return None


def _warm(jobs, processes):
    """Compile every old and new source in parallel into the compile cache."""
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(processes) as ex:
        return list(ex.map(_warm_one, jobs))


def _time(fns, rounds, calls, sync, events):
    out = [[] for _ in fns]
    for r in range(rounds):
        order = list(enumerate(fns))
        for i, f in (order if r % 2 == 0 else order[::-1]):   # alternate who goes first
            s, e = events()
            f()
            s.record()
            for _ in range(calls):
                f()
            e.record()
            sync()
            out[i].append(s.elapsed_time(e) * 1e3 / calls)
    return [sorted(x)[len(x) // 2] for x in out]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", help="git revision whose golden sources are the old kernels")
    ap.add_argument("--old-dir", help="a folder of old golden sources (instead of --rev)")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--only", choices=("sm90", "sm80"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="processes compiling the sources first")
    a = ap.parse_args(argv)
    if not (a.rev or a.old_dir):
        ap.error("give --rev or --old-dir")
    import torch
    M = N = K = a.size
    ratios = {"sm90": [], "sm80": []}
    print(f"old = golden sources at {a.rev or a.old_dir}; {M}x{N}x{K}, N(0,1) data; median of {a.rounds} "
          f"interleaved rounds x {a.calls} calls (CUDA events)")
    cases = [c for c in _cases() if not a.only or c[0] == a.only]
    jobs = []
    for fam, name, cfg in cases:
        old = _golden(a.rev, name, a.old_dir)
        if old is None:
            continue
        if fam == "sm90":
            from cute_py.backends.cuda.kernels.gemm_sm90 import generate_source as g90
            jobs += [(old, "sm_90a"), (g90(cfg), "sm_90a")]
        else:
            from cute_py.backends.cuda.kernels.gemm_sm80 import generate_source as g80
            jobs += [(old, None), (g80(cfg), None)]
    if a.jobs > 1:
        _warm(jobs, a.jobs)
    print(f"{'configuration':<92} {'old us':>8} {'new us':>8} {'new/old':>8}  same D")
    for fam, name, cfg in cases:
        src = _golden(a.rev, name, a.old_dir)
        if src is None:
            print(f"{name:<92} (no old golden source)")
            continue
        try:
            if fam == "sm90":
                runs = _sm90_pair(cfg, src, M, N, K, torch)
                fns = [r for r, _ in runs]
                sync = torch.cuda.synchronize

                def events():
                    return (torch.cuda.Event(enable_timing=True),
                            torch.cuda.Event(enable_timing=True))
                for f in fns:
                    f()
                sync()
                same = bool(torch.equal(runs[0][1], runs[1][1]))
            else:
                import cupy as cp
                runs = _sm80_pair(cfg, src, M, N, K)
                fns = [r for r, _ in runs]
                sync = cp.cuda.Device().synchronize

                class _E:
                    def __init__(self, e):
                        self.e = e

                    def record(self):
                        self.e.record()

                    def elapsed_time(self, other):
                        return cp.cuda.get_elapsed_time(self.e, other.e)

                def events():
                    return _E(cp.cuda.Event()), _E(cp.cuda.Event())
                for f in fns:
                    f()
                sync()
                same = bool(cp.array_equal(runs[0][1], runs[1][1]))
            t_old, t_new = _time(fns, a.rounds, a.calls, sync, events)
        except Exception as e:  # report and go on: one broken configuration must not hide the rest
            print(f"{name:<92} FAILED: {type(e).__name__}: {str(e)[:200]}")
            continue
        r = t_new / t_old
        ratios[fam].append(r)
        print(f"{name[:92]:<92} {t_old:8.1f} {t_new:8.1f} {r:8.3f}  {same}")
    for fam, rs in ratios.items():
        if rs:
            gm = math.exp(sum(math.log(x) for x in rs) / len(rs))
            print(f"{fam}: geomean new/old {gm:.4f} over {len(rs)} configurations; "
                  f"worst {max(rs):.4f}")


if __name__ == "__main__":
    main()
