"""``python -m cute_py``: write pictures to files.

    python -m cute_py layout "((2,2),4):((1,4),2)" -o layout.svg
    python -m cute_py mma SM80_16x8x16_F32F16F16F32_TN --atom-layout 2,2,1 -o mma.svg
    python -m cute_py mma SM90_64xNx16_F32F16F16_SS --n 64 -o wgmma.svg
    python -m cute_py mma SM80_16x8x16_F32F16F16F32_TN --text C     # text table instead
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    import cute_py as cute
    p = argparse.ArgumentParser(prog="python -m cute_py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
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
    if f is None:
        p.error(f"unknown atom {a.atom!r}")
    atom = f(a.n) if a.n is not None else f()
    mma = cute.make_tiled_mma(atom, tuple(int(x) for x in a.atom_layout.split(",")))
    if a.text:
        from .svg import format_tiled_mma
        print(format_tiled_mma(mma, a.text))
        return 0
    print(cute.write_svg(mma, a.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
