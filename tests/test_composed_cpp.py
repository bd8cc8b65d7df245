"""Swizzles, composed layouts, GMMA atoms and swizzled tile_to_shape checked against real CuTe C++
(headers from the pip package nvidia-cutlass, compiled with g++ as host code). Skips when g++ or
the headers are missing. One translation unit, compiled once per session (~10 s)."""

import os
import re
import shutil
import subprocess
import tempfile

import pytest

import cute_py as cute
from cute_py import GMMA, Swizzle, _, make_layout, make_composed_layout


def _include():
    try:
        import cutlass_library
    except ImportError:
        return None
    inc = os.path.join(os.path.dirname(cutlass_library.__file__), "source", "include")
    return inc if os.path.isfile(os.path.join(inc, "cute", "swizzle.hpp")) else None


INC = _include()
CUDA_INC = "/usr/local/cuda/include"
pytestmark = pytest.mark.skipif(
    INC is None or shutil.which("g++") is None or not os.path.isfile(os.path.join(CUDA_INC, "vector_types.h")),
    reason="needs g++, CUDA headers and nvidia-cutlass")


def cpp(x):
    """A Python value as static C++."""
    if isinstance(x, cute.Layout):
        return f"make_layout({cpp_t(x.shape)}, {cpp_t(x.stride)})"
    if isinstance(x, Swizzle):
        return f"Swizzle<{x.B},{x.M},{x.S}>{{}}"
    if isinstance(x, cute.ComposedLayout):
        return f"composition({cpp(x.layout_a)}, Int<{x.offset}>{{}}, {cpp(x.layout_b)})"
    return cpp_t(x)


def cpp_t(t):
    if isinstance(t, tuple):
        return "make_tuple(" + ",".join(cpp_t(a) for a in t) + ")"
    if t is _ or t is None:
        return "_"
    return f"Int<{t}>{{}}"


def norm(s):
    return re.sub(r"_(-?\d)", r"\1", s.strip())


GMMA_T = {"half_t": "f16", "float": "f32", "bfloat16_t": "bf16", "tfloat32_t": "tf32"}
KINDS = ["Layout_K_INTER_Atom", "Layout_K_SW32_Atom", "Layout_K_SW64_Atom", "Layout_K_SW128_Atom",
         "Layout_MN_INTER_Atom", "Layout_MN_SW32_Atom", "Layout_MN_SW64_Atom", "Layout_MN_SW128_Atom"]

SW = make_composed_layout(Swizzle(3, 3, 3), 0, make_layout((8, 64), (64, 1)))
SW_T = cute.tile_to_shape(SW, (32, 64))
SW2 = make_composed_layout(Swizzle(2, 3, 3), 0, make_layout((8, 32), (32, 1)))
SWM = make_composed_layout(Swizzle(3, 3, 3), 0, make_layout((64, 8), (1, 64)))
SWN = make_composed_layout(Swizzle(2, 1, -3), 0, make_layout((16, (2, 4)), (8, (1, 128))))


def _lshift(x):
    """What C++'s ``operator<<`` prints: the smem_ptr_flag offset as the ``_0`` it derives from
    (``str`` prints it as CuTe's ``print`` does, checked in test_cute_gaps.py)."""
    if isinstance(x, cute.ComposedLayout) and isinstance(x.offset, cute.smem_ptr_flag_bits):
        return f"{x.layout_a} o 0 o {x.layout_b}"
    return str(x)


def _cases():
    cases = []  # (python value thunk, C++ expression printed with operator<<)
    for ct, pt in GMMA_T.items():
        for kind in KINDS:
            atom = getattr(GMMA, kind)(pt)
            cases.append((_lshift(atom), f"SM90::GMMA::{kind}<{ct}>{{}}"))
            for shp in ((128, 64), (64, 128), (256, 32)):
                try:
                    py = _lshift(cute.tile_to_shape(atom, shp))
                except cute.LayoutError:
                    continue
                cases.append((py, f"tile_to_shape(SM90::GMMA::{kind}<{ct}>{{}}, {cpp_t(shp)})"))
            py = _lshift(cute.tile_to_shape(atom, (128, 64), (1, 0)))
            cases.append((py, f"tile_to_shape(SM90::GMMA::{kind}<{ct}>{{}}, {cpp_t((128, 64))}, Step<_2,_1>{{}})"))
    for L in (SW, SW_T, SW2, SWM, SWN):
        for c in ((2, _), (_, 3), (_, 9), (5, _), (_, _)):
            if any(x is not _ and x >= cute.size(L, i) for i, x in enumerate(c)):
                continue  # past the shape C++'s offset breaks L(c) == sub(c_) + off (docs)
            try:
                sub, off = cute.slice_and_offset(c, L)
            except cute.CuteError:
                continue
            cases.append((f"{sub} {off}", f"get<0>(slice_and_offset({cpp_t(c)}, {cpp(L)})) << ' ' << get<1>(slice_and_offset({cpp_t(c)}, {cpp(L)}))"))
        for name in ("right_inverse", "left_inverse"):
            try:  # outside CuTe's "simple cases" we raise instead of returning a wrong layout
                cases.append((str(getattr(cute, name)(L)), f"{name}({cpp(L)})"))
            except cute.LayoutError:
                pass
        cases.append((str(cute.upcast(L, 2)), f"upcast<2>({cpp(L)})"))
        cases.append((str(cute.downcast(L, 2)), f"downcast<2>({cpp(L)})"))
        cases.append((str(cute.logical_divide(L, (4, 8))), f"logical_divide({cpp(L)}, {cpp_t((4, 8))})"))
        cases.append((str(cute.zipped_divide(L, (8, 8))), f"zipped_divide({cpp(L)}, {cpp_t((8, 8))})"))
        cases.append((str(cute.composition(L, (make_layout(4, 2), make_layout(8)))),
                      f"composition({cpp(L)}, make_tile({cpp(make_layout(4, 2))}, {cpp(make_layout(8))}))"))
        vals = " ".join(str(L(i)) for i in range(cute.size(L)))
        cases.append((vals, "[&]{ auto l = " + cpp(L) + "; std::string s; for (int i = 0; i < size(l); ++i) "
                      "{ s += std::to_string(int(l(i))); s += (i + 1 < size(l) ? \" \" : \"\"); } return s; }()"))
    for sw, n in ((Swizzle(3, 4, 3), 2), (Swizzle(3, 1, 3), 8), (Swizzle(2, 0, -3), 4)):
        cases.append((str(cute.upcast(sw, n)), f"upcast<{n}>({cpp(sw)})"))
        cases.append((str(cute.downcast(sw, n)), f"downcast<{n}>({cpp(sw)})"))
        vals = " ".join(str(sw(o)) for o in range(0, 2048, 37))
        cases.append((vals, "[&]{ std::string s; for (int o = 0; o < 2048; o += 37) { s += std::to_string("
                      f"{cpp(sw)}(o)); s += (o + 37 < 2048 ? \" \" : \"\"); }} return s; }}()"))
    for y, z in ((0b1000, 0b0100), (0b11000000, 0b110), (0b1110000000, 0b1110000)):
        cases.append((str(cute.make_swizzle(y, z)), f"make_swizzle<{y}u,{z}u>()"))
    return cases


@pytest.fixture(scope="module")
def cpp_results():
    cases = _cases()
    body = "\n".join(f'  std::cout << {c} << "\\n";' for _p, c in cases)
    src = ("#include <cute/tensor.hpp>\n#include <cute/atom/mma_traits_sm90_gmma.hpp>\n#include <iostream>\n"
           "#include <string>\nusing namespace cute;\nint main() {\n" + body + "\n}\n")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.cpp")
        with open(path, "w") as f:
            f.write(src)
        exe = os.path.join(d, "t")
        r = subprocess.run(["g++", "-std=c++17", "-O0", "-w", f"-I{INC}", f"-I{CUDA_INC}",
                            f"-I{CUDA_INC}/cccl", path, "-o", exe], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert len(lines) == len(cases)
    return [(p, norm(c), src_expr) for (p, src_expr), c in zip(cases, lines)]


def test_everything_matches_cpp(cpp_results):
    bad = [(py, c, e) for py, c, e in cpp_results if py != c]
    assert not bad, "\n".join(f"{e}\n  python: {py}\n  c++:    {c}" for py, c, e in bad[:10])
    assert len(cpp_results) > 150
