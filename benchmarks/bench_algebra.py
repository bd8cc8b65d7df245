"""Layout algebra speed: cute_py vs NVIDIA's pycute on the same random inputs, in one run.

    python benchmarks/bench_algebra.py [--cases N] [--seconds S] [--seed K]

Per operation (coalesce, composition, complement, right/left inverse, the divides and products
pycute has, evaluation of every index of a layout) the same seeded list of inputs goes through
both libraries; a case enters the list only if both accept it and agree on the result (the
benchmark times equal work).  Prints ops/s of each and the ratio ours/pycute, then the geometric
mean.  Targets: no operation slower than pycute; geometric mean >= 3x.

Inputs: layouts of rank 1-4 with nested modes, shapes with powers of two and small odd factors,
injective strides (a permuted compact layout, optionally with gaps) — the kind of layouts CuTe
kernels tile; tilers that divide them. Also: building a layout and asking its size and cosize
(``make+size+cosize``), composition and logical_divide of rank-20 layouts by 1-D tilers
(``*_r20``), and the absolute time of ``check_tiled_mma`` on an SM90 64x256x16 TiledMMA.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import pycute  # noqa: E402

import cute_py as cute  # noqa: E402


# ------------------------------------------------------------------------------ inputs

def _factors(rng, n_modes, pow2):
    out = []
    for _ in range(n_modes):
        if pow2 or rng.random() < 0.6:
            out.append(2 ** rng.randint(0, 4))
        else:
            out.append(rng.choice((3, 5, 6, 7, 12)))
    return out


def _nest(rng, flat):
    """Group a flat list into a nested tuple of rank 1..3."""
    if len(flat) == 1:
        return flat[0]
    cuts = sorted(rng.sample(range(1, len(flat)), rng.randint(0, min(2, len(flat) - 1))))
    parts, prev = [], 0
    for c in cuts + [len(flat)]:
        seg = flat[prev:c]
        parts.append(seg[0] if len(seg) == 1 else tuple(seg))
        prev = c
    return tuple(parts) if len(parts) > 1 else (tuple(parts[0]) if isinstance(parts[0], list)
                                                   else parts[0])


def _unflatten_like(nested, flat_vals):
    it = iter(flat_vals)

    def go(t):
        if isinstance(t, tuple):
            return tuple(go(x) for x in t)
        return next(it)
    return go(nested)


def random_layout(rng, pow2=False, gaps=True, max_modes=4):
    """(shape, stride) nested alike; injective (a permutation of compact strides, gaps allowed)."""
    n = rng.randint(1, max_modes)
    flat = _factors(rng, n, pow2)
    order = list(range(n))
    rng.shuffle(order)
    strides = [0] * n
    cur = 1
    for i in order:
        strides[i] = cur
        cur *= flat[i] * (2 if gaps and rng.random() < 0.25 else 1)
    shape = _nest(rng, flat)
    if not isinstance(shape, tuple):
        return shape, strides[0]
    return shape, _unflatten_like(shape, strides)


def random_tiler(rng, shape):
    """A 1-D tiler layout that divides size(shape): compact over a divisor, maybe strided."""
    size = math.prod(cute.flatten(shape)) if isinstance(shape, tuple) else shape
    divs = [d for d in range(1, size + 1) if size % d == 0]
    d = rng.choice(divs)
    rest = size // d
    sdivs = [s for s in range(1, rest + 1) if rest % s == 0 and d * s <= size]
    return d, rng.choice(sdivs)


# ------------------------------------------------------------------------------ cases

def random_rank20(rng, n=20):
    """A rank-``n`` flat layout of extents 1-4 with permuted compact strides (injective)."""
    flat = [rng.choice((1, 2, 2, 2, 3, 4)) for _ in range(n)]
    order = list(range(n))
    rng.shuffle(order)
    strides, cur = [0] * n, 1
    for i in order:
        strides[i] = cur
        cur *= flat[i]
    return tuple(flat), tuple(strides)


def _rank20_tiler(rng, size):
    d = 1
    while d * 2 <= size and d < 4096 and rng.random() < 0.9:
        d *= 2
    s = rng.choice((1, 2, 4, 8))
    return (d, s) if size % (d * s) == 0 else (d, 1)


def build_cases(n, seed):
    rng = random.Random(seed)
    cases = {k: [] for k in ("coalesce", "composition", "complement", "right_inverse",
                             "left_inverse", "logical_divide", "zipped_divide", "tiled_divide",
                             "logical_product", "zipped_product", "tiled_product", "evaluate",
                             "make+size+cosize", "composition_r20", "logical_divide_r20")}
    tries = 0
    while min(len(v) for v in cases.values()) < n and tries < 200 * n:
        tries += 1
        s, d = random_layout(rng)
        ours, theirs = cute.Layout(s, d), pycute.Layout(s, d)
        _add(cases, "coalesce", (ours,), (theirs,))
        _add(cases, "right_inverse", (ours,), (theirs,))
        _add(cases, "left_inverse", (ours,), (theirs,), check=False)  # off-image values differ
        _add(cases, "evaluate", (ours,), (theirs,))
        cot = cute.cosize(ours) * rng.choice((1, 2, 4))
        _add(cases, "complement", (ours, cot), (theirs, cot))
        sp, dp = random_layout(rng, pow2=True, gaps=False)
        A, Ap = cute.Layout(sp, dp), pycute.Layout(sp, dp)
        ts, td = random_tiler(rng, sp)
        T, Tp = cute.Layout(ts, td), pycute.Layout(ts, td)
        _add(cases, "composition", (A, T), (Ap, Tp))
        for op in ("logical_divide", "zipped_divide", "tiled_divide"):
            _add(cases, op, (A, T), (Ap, Tp))
        s2, d2 = random_layout(rng, max_modes=2)
        B, Bp = cute.Layout(s2, d2), pycute.Layout(s2, d2)
        for op in ("logical_product", "zipped_product", "tiled_product"):
            _add(cases, op, (A, B), (Ap, Bp))
        _add(cases, "make+size+cosize", (s, d), (s, d))
        if len(cases["composition_r20"]) < n or len(cases["logical_divide_r20"]) < n:
            s20, d20 = random_rank20(rng)
            A20, A20p = cute.Layout(s20, d20), pycute.Layout(s20, d20)
            ts, td = _rank20_tiler(rng, math.prod(s20))
            T20, T20p = cute.Layout(ts, td), pycute.Layout(ts, td)
            _add(cases, "composition_r20", (A20, T20), (A20p, T20p))
            _add(cases, "logical_divide_r20", (A20, T20), (A20p, T20p))
    return {k: v[:n] for k, v in cases.items()}


def _run_ours(op, args):
    if op == "evaluate":
        L = args[0]
        return [L(i) for i in range(cute.size(L))]
    if op == "make+size+cosize":
        L = cute.make_layout(*args)
        return [cute.size(L), cute.cosize(L)]
    return getattr(cute, op.replace("_r20", ""))(*args)


def _run_theirs(op, args):
    if op == "evaluate":
        L = args[0]
        return [L(i) for i in range(pycute.size(L))]
    if op == "make+size+cosize":  # pycute's make_layout takes layouts; its Layout(shape, stride)
        L = pycute.Layout(*args)
        return [pycute.size(L), pycute.cosize(L)]
    return getattr(pycute, op.replace("_r20", ""))(*args)


def _same(a, b):
    if isinstance(a, list):
        return a == b
    if str(a.shape) == str(b.shape).replace(" ", ""):
        return True
    n = cute.size(a)
    if n != pycute.size(b):
        return False
    # equal functions: every index of small layouts, a deterministic sample of large ones
    idx = range(n) if n <= 4096 else random.Random(n).sample(range(n), 4096)
    return all(a(i) == b(i) for i in idx)


def _add(cases, op, ours, theirs, check=True):
    try:
        a = _run_ours(op, ours)
        b = _run_theirs(op, theirs)
    except Exception:  # a case one of the libraries rejects is not comparable work
        return
    if check and not _same(a, b):
        return
    cases[op].append((ours, theirs))


# ------------------------------------------------------------------------------ timing

def _rate(fn, items, seconds):
    """Operations per second: passes over ``items`` until ``seconds`` have elapsed (best of 3)."""
    best = 0.0
    for _ in range(3):
        n, t0 = 0, time.perf_counter()
        while True:
            for x in items:
                fn(x)
            n += len(items)
            dt = time.perf_counter() - t0
            if dt >= seconds / 3:
                break
        best = max(best, n / dt)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=0.6, help="per operation and library")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    cases = build_cases(a.cases, a.seed)
    print(f"{'operation':16s} {'cases':>5s} {'cute_py ops/s':>14s} {'pycute ops/s':>13s} "
          f"{'ratio':>7s}")
    ratios = []
    for op, items in cases.items():
        if not items:
            print(f"{op:16s} no comparable cases")
            continue
        ours = _rate(lambda c: _run_ours(op, c[0]), items, a.seconds)
        theirs = _rate(lambda c: _run_theirs(op, c[1]), items, a.seconds)
        r = ours / theirs
        ratios.append(r)
        flag = "" if r >= 1 else "   <- slower than pycute"
        print(f"{op:16s} {len(items):5d} {ours:14.0f} {theirs:13.0f} {r:6.2f}x{flag}")
    gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geometric mean {gm:.2f}x  (target >= 3x, every op >= 1x: "
          f"{'met' if gm >= 3 and min(ratios) >= 1 else 'NOT met'})")
    _time_check_tiled_mma()
    return gm, min(ratios)


def _time_check_tiled_mma():
    """``check_tiled_mma`` of an SM90 64x256x16 TiledMMA (pycute has none: absolute time)."""
    mma = cute.make_tiled_mma(cute.SM90_64x256x16_F32F16F16_SS())
    cute.check_tiled_mma(mma)  # warm (NumPy import)
    t0 = time.perf_counter()
    for _ in range(5):
        assert cute.check_tiled_mma(mma)
    print(f"check_tiled_mma(SM90 64x256x16): {(time.perf_counter() - t0) / 5 * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
