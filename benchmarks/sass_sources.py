"""Write the Hopper GEMM sources of a source tree into a directory, for ``sass_compare.py``.

    python benchmarks/sass_sources.py TREE OUT [--no-extra]

``TREE``: a checkout (the work tree, or ``git archive REV | tar -x -C TREE``); its generator
writes every ``sm90_*`` golden case of ``tests/backend/test_golden_gemm.py`` (the EVT test
kernels ``sm90_epitest*`` left out) and, unless ``--no-extra``, the configurations without a
golden copy: split-K ("workspace", "atomic", "fixup"), ``transpose_d``, narrow tiles, MN-major
operands, stream-K, more FP8 scalings (files ``sm90_x_<kernel name>.cu``).  Run it once on the
old tree and once on the new one, then compare the two directories:

    git archive main | tar -x -C /tmp/old_tree
    python benchmarks/sass_sources.py /tmp/old_tree /tmp/old_src
    python benchmarks/sass_sources.py . /tmp/new_src
    python benchmarks/sass_compare.py /tmp/old_src /tmp/new_src \\
        --old-include /tmp/old_tree/backends/cuda/include
"""

from __future__ import annotations

import argparse
import os
import sys

#: configurations without golden copies (keyword arguments of Sm90GemmConfig; "fit" -> fit_stages)
EXTRA = (
    dict(tile_m=128, tile_n=16, stages=8, split_k="workspace", transpose_d=True),
    dict(tile_m=128, tile_n=32, stages=8, dtype="bf16", split_k="workspace", transpose_d=True,
         a_major="MN"),
    dict(tile_m=128, tile_n=128, stages=6, split_k="workspace"),
    dict(tile_m=128, tile_n=16, stages=8, split_k="atomic", transpose_d=True),
    dict(tile_m=128, tile_n=256, stages=4, split_k="atomic", cluster_m=2),
    dict(tile_m=128, tile_n=16, stages=8, transpose_d=True, has_c=True),
    dict(tile_m=128, tile_n=32, stages=8, dtype="bf16", vec2=False),
    dict(tile_m=128, tile_n=128, stages=6, transpose_d=True, has_c=True, b_major="MN"),
    dict(tile_m=128, tile_n=16, stages=8, split_k="fixup", transpose_d=True, has_c=True),
    dict(tile_m=128, tile_n=32, stages=8, dtype="bf16", split_k="fixup", transpose_d=True),
    dict(tile_m=128, tile_n=128, stages=6, split_k="fixup", has_c=True),
    dict(tile_m=128, tile_n=128, stages=6, stream_k=True),
    dict(tile_m=128, tile_n=128, stages=6, dtype="bf16", stream_k=True, has_c=True, vec2=False,
         a_major="MN", b_major="MN"),
    dict(tile_m=128, tile_n=64, stages=8, stream_k=True, transpose_d=True),
    dict(tile_m=128, tile_n=32, stages=8, stream_k=True, transpose_d=True, has_c=True),
    dict(tile_n=128, tile_k=128, dtype="e4m3", out_dtype="f32", scaling="row", fit=True),
    dict(tile_n=128, tile_k=128, dtype="e5m2", out_dtype="f16", scaling="tensor", promote=True,
         vec2=False, fit=True),
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree")
    ap.add_argument("out")
    ap.add_argument("--no-extra", action="store_true")
    a = ap.parse_args(argv)
    tree = os.path.abspath(a.tree)
    sys.path[:0] = [tree, os.path.join(tree, "tests", "backend")]
    from cute_py.backends.cuda.kernels import gemm_sm90 as G
    import test_golden_gemm as T
    os.makedirs(a.out, exist_ok=True)
    n = 0
    for name, fn in T.CASES.items():
        if name.startswith("sm90_") and not name.startswith("sm90_epitest"):
            with open(os.path.join(a.out, name + ".cu"), "w") as f:
                f.write(fn())
            n += 1
    if not a.no_extra:
        for kw in EXTRA:
            kw = dict(kw)
            fit = kw.pop("fit", False)
            cfg = G.Sm90GemmConfig(**kw)
            cfg = cfg.fit_stages() if fit else cfg
            with open(os.path.join(a.out, f"sm90_x_{cfg.name}.cu"), "w") as f:
                f.write(G.generate_source(cfg))
            n += 1
    print(f"{n} sources in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
