"""The command line: ``python -m cute_py`` (also installed as ``cute-py``).

    python -m cute_py                                   # the main job: a tour of the algebra
                                                        # (and a checked GEMM when a GPU is there)
    python -m cute_py "((2,2),4):((1,4),2)"             # layout, table, size, cosize
    python -m cute_py "(8,8):(8,1)" --op "logical_divide(_, 4:2)"
    python -m cute_py "(8,8):(8,1)" --op "zipped_divide(_, (2,4))" --op "coalesce(_)"
    python -m cute_py layout "(4,8):(8,1)" -o layout.svg          # pictures (see cute_py.svg)
    python -m cute_py mma SM80_16x8x16_F32F16F16F32_TN --atom-layout 2,2,1 -o mma.svg

``--op`` text is a call ``name(arg, ...)`` of a public algebra function; ``_`` as a whole argument
is the current layout (the previous result), so ``--op`` options chain.  Arguments are layouts in
CuTe's notation (``4:2``, ``(2,4):(1,8)``), ints, tuples of those (``(2,4)``, ``(2:1,_)``, where a
nested ``_`` is CuTe's underscore), swizzles ``Sw<3,4,3>`` and ``name=value`` keywords.  Nothing
is passed to ``eval``.
"""

from __future__ import annotations

import argparse
import sys

from .errors import CuteError, ParseError
from .svg import format_tiled_mma

__all__ = ["main", "parse_op", "apply_op", "describe", "OPS"]

# The operations --op may call (CuTe's names; all take a layout first).
OPS = (
    "coalesce", "filter", "filter_zeros", "flatten", "composition", "complement",
    "right_inverse", "left_inverse", "logical_divide", "zipped_divide", "tiled_divide",
    "flat_divide", "logical_product", "zipped_product", "tiled_product", "flat_product",
    "blocked_product", "raked_product", "tile_to_shape", "upcast", "downcast", "recast_layout",
    "max_common_layout", "max_common_vector", "nullspace", "select", "take", "group", "append",
    "prepend", "replace", "with_shape", "make_layout", "size", "cosize", "rank", "depth", "shape",
    "stride", "slice_and_offset", "get_hier_coord", "get_flat_coord", "make_layout_like",
    "make_fragment_like", "make_ordered_layout", "max_alignment",
)


def _split_top(text: str, what: str) -> list[str]:
    """Split at the commas that are not inside (), <> or []."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
            if depth < 0:
                raise ParseError("--op", what, "has an unbalanced ')'", actual=text)
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ParseError("--op", what, "has an unbalanced '('", actual=text)
    tail = "".join(cur).strip()
    if tail or parts:
        parts.append(tail)
    return parts


def _parse_arg(text: str, current, top: bool):
    import cute_py as cute
    t = text.strip()
    if not t:
        raise ParseError("--op", "argument", "is empty", actual=text)
    if t == "_":
        return current if top else cute._
    if t in ("None",):
        return None
    if t.startswith("Sw<") and t.endswith(">"):
        bms = _split_top(t[3:-1], "swizzle")
        try:
            return cute.Swizzle(*(int(x) for x in bms))
        except ValueError:
            raise ParseError("--op", "argument", "a swizzle is Sw<B,M,S> with int B, M, S",
                             actual=t) from None
    if ":" in t:
        try:
            return cute.parse_layout(t)
        except ParseError:
            if not (t.startswith("(") and t.endswith(")")):
                raise
    if t.startswith("(") and t.endswith(")"):
        items = _split_top(t[1:-1], "argument")
        return tuple(_parse_arg(x, current, top=False) for x in items)
    try:
        return int(t)
    except ValueError:
        raise ParseError("--op", "argument", "must be _, an int, a layout such as (2,4):(1,8), "
                         "a tuple of those or Sw<B,M,S>", actual=t) from None


def parse_op(text: str, current):
    """``"logical_divide(_, 4:2)"`` -> ``(name, args, kwargs)`` with ``_`` bound to ``current``."""
    if not isinstance(text, str):
        raise ParseError("--op", "op", "must be a str", actual=type(text).__name__)
    t = text.strip()
    lp = t.find("(")
    if lp <= 0 or not t.endswith(")"):
        raise ParseError("--op", "op", "must be a call such as logical_divide(_, 2:1)", actual=t)
    name = t[:lp].strip()
    if name not in OPS:
        raise ParseError("--op", "op", f"unknown operation {name!r}",
                         expected=", ".join(OPS), actual=name)
    args, kwargs = [], {}
    try:
        for part in _split_top(t[lp + 1:-1], "op"):
            key, eq, val = part.partition("=")
            if eq and key.strip().isidentifier():
                kwargs[key.strip()] = _parse_arg(val, current, top=True)
            else:
                args.append(_parse_arg(part, current, top=True))
    except RecursionError:
        raise ParseError("--op", "op", "is nested too deeply", actual=t[:40]) from None
    return name, args, kwargs


def apply_op(text: str, current):
    """Evaluate one ``--op`` against ``current``; returns the result."""
    import cute_py as cute
    import inspect
    name, args, kwargs = parse_op(text, current)
    fn = getattr(cute, name)
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:  # wrong arity or an unknown keyword
        raise ParseError("--op", "op", f"does not match {name}{inspect.signature(fn)}: {e}",
                         actual=text) from None
    return fn(*args, **kwargs)


def describe(x) -> str:
    """A layout with its table, size and cosize; other values as CuTe prints them."""
    import cute_py as cute
    if isinstance(x, cute.Layout) or cute.is_composed_layout(x):
        if isinstance(x, cute.Layout) and cute.rank(x) >= 1 and cute.is_static(x.shape) \
                and cute.is_static(x.stride) and cute.size(x) <= 4096:
            lines = [cute.format_layout(x)]  # its first line is the layout
        else:
            lines = [str(x)]
        lines.append(f"size   = {cute.size(x)}")
        lines.append(f"cosize = {cute.cosize(x)}")
        return "\n".join(lines)
    if isinstance(x, tuple) and x and all(isinstance(v, cute.Layout) for v in x):
        return "\n".join(str(v) for v in x)
    return str(x)


# ---------------------------------------------------------------------------------------------
# the main job


def _demo(out) -> int:
    import cute_py as cute
    from cute_py import Layout

    def show(title, value):
        print(f"\n== {title}", file=out)
        print(value if isinstance(value, str) else describe(value), file=out)

    L = Layout((4, (2, 3)), (1, (4, 8)))
    show("a layout: shape:stride", L)
    print(f"L(5) = {L(5)}   L(1,(1,2)) = {L(1, (1, 2))}   L(_,(1,_)) = {L(cute._, (1, cute._))}",
          file=out)
    A, B = Layout((6, 2), (8, 2)), Layout((4, 3), (3, 1))
    show(f"composition({A}, {B})", cute.composition(A, B))
    show("complement(4:2, 24)", cute.complement(Layout(4, 2), 24))
    show("logical_divide((4,2,3):(2,1,8), 4:2)",
         cute.logical_divide(Layout((4, 2, 3), (2, 1, 8)), Layout(4, 2)))
    show("zipped_divide((128,64) col-major, (32,16))",
         str(cute.zipped_divide(cute.make_layout((128, 64)), (32, 16))))
    show("raked_product((2,5):(5,1), (3,4):(1,3))",
         cute.raked_product(Layout((2, 5), (5, 1)), Layout((3, 4), (1, 3))))
    sw = cute.make_sm80_smem_layout_atom("f16", "K", 64)
    show("SM80 K-major shared-memory atom for fp16 (swizzled, ldmatrix conflict-free)", str(sw))
    mma = cute.make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN(), (2, 2, 1))
    show("a tiled MMA: 2x2 warps of mma.sync m16n8k16", str(mma))
    show("who holds which element of C (first 4 rows)",
         "\n".join(format_tiled_mma(mma, "C").splitlines()[:11]))
    return _demo_gpu(out)



def _demo_gpu(out) -> int:
    print("\n== GEMM on the GPU", file=out)
    try:
        import cupy as cp
        from cute_py.backends.cuda.device import has_gpu
    except Exception as e:  # no CuPy / backend deps: the CPU part is the whole job
        print(f"skipped: {type(e).__name__}: {e} (install the 'cuda' extra on a GPU machine)",
              file=out)
        return 0
    if not has_gpu():
        print("skipped: no CUDA GPU visible", file=out)
        return 0
    import numpy as np
    import cute_py as cute
    from cute_py.backends.cuda.device import device_properties
    M, N, K = 4096, 4096, 4096
    rng = np.random.default_rng(0)
    a = cp.asarray(rng.standard_normal((M, K), dtype=np.float32).astype(np.float16))
    b = cp.asarray(rng.standard_normal((K, N), dtype=np.float32).astype(np.float16))
    d = cute.gemm(a, b)
    cp.cuda.runtime.deviceSynchronize()
    ref = cp.matmul(a.astype(cp.float32), b.astype(cp.float32))
    err = float(cp.linalg.norm(d.astype(cp.float32) - ref) / cp.linalg.norm(ref))
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    reps = 20
    for _ in range(reps):
        cute.gemm(a, b, out=d)
    stop.record()
    stop.synchronize()
    ms = cp.cuda.get_elapsed_time(start, stop) / reps
    props = device_properties()
    print(f"device {props.name} ({props.arch}); D = A @ B, {M}x{N}x{K} fp16 -> fp16, fp32 accumulate",
          file=out)
    print(f"relative error vs fp32 reference: {err:.2e}; "
          f"{2 * M * N * K / ms / 1e9:.0f} TFLOP/s ({ms:.3f} ms, mean of {reps})", file=out)
    if not err < 1e-2:
        print("FAILED: the GEMM result is wrong", file=out)
        return 1
    return 0


# ---------------------------------------------------------------------------------------------


def _pictures(argv) -> int:
    import cute_py as cute
    p = argparse.ArgumentParser(prog="python -m cute_py {layout,mma}",
                                description="Write SVG pictures (or text tables).")
    sub = p.add_subparsers(dest="cmd", required=True)
    pl = sub.add_parser("layout", help="SVG of a layout written in CuTe notation")
    pl.add_argument("layout")
    pl.add_argument("-o", "--output", default="layout.svg")
    pm = sub.add_parser("mma", help="SVG (or text) of a TiledMMA's A/B/C thread-value layouts")
    pm.add_argument("atom", help="atom constructor name, e.g. SM80_16x8x16_F32F16F16F32_TN")
    pm.add_argument("--n", type=int, default=None, help="N of an SM90_64xNx16 atom")
    pm.add_argument("--atom-layout", default="1,1,1")
    pm.add_argument("--text", choices=["A", "B", "C"], default=None)
    pm.add_argument("-o", "--output", default="tiled_mma.svg")
    a = p.parse_args(argv)
    if a.cmd == "layout":
        print(cute.write_svg(cute.parse_layout(a.layout), a.output))
        return 0
    f = getattr(cute, a.atom, None)
    if f is None or not callable(f) or not a.atom.startswith(("SM", "Universal")):
        p.error(f"unknown atom {a.atom!r}")
    atom = f(a.n) if a.n is not None else f()
    try:
        atom_layout = tuple(int(x) for x in a.atom_layout.split(","))
    except ValueError:
        p.error(f"--atom-layout must be ints separated by commas, got {a.atom_layout!r}")
    if any(x < 1 for x in atom_layout) or len(atom_layout) > 3:
        p.error(f"--atom-layout must be up to three positive ints, got {a.atom_layout!r}")
    mma = cute.make_tiled_mma(atom, atom_layout)
    if a.text:
        print(format_tiled_mma(mma, a.text))
        return 0
    print(cute.write_svg(mma, a.output))
    return 0


def main(argv=None) -> int:
    """Entry point; returns the exit status (2 for a usage error, 1 for a failed check)."""
    import cute_py as cute
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("layout", "mma"):
        try:
            return _pictures(argv)
        except CuteError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    p = argparse.ArgumentParser(prog="python -m cute_py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("layout", nargs="?", help="a layout in CuTe notation, e.g. '(4,2):(2,1)'")
    p.add_argument("--op", action="append", default=[],
                   help="apply an operation, '_' is the current layout; repeat to chain")
    a = p.parse_args(argv)
    if a.layout is None:
        if a.op:
            p.error("--op needs a layout to start from")
        return _demo(sys.stdout)
    try:
        cur = cute.parse_layout(a.layout)
        print(describe(cur))
        for op in a.op:
            cur = apply_op(op, cur)
            print(f"\n== {op.strip()}")
            print(describe(cur))
    except CuteError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
