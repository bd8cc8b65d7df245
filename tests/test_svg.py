"""Pictures: the SVG is well-formed XML and every cell's label matches the layout it draws."""

import xml.etree.ElementTree as ET

import pytest

import cute_py as cute
from cute_py import Layout
from cute_py.svg import (format_tiled_mma, format_tv_layout, layout_svg, tiled_copy_svg,
                         tiled_mma_svg, tv_layout_svg, write_svg, TV_COLORS)

NS = "{http://www.w3.org/2000/svg}"


def cells(svg):
    root = ET.fromstring(svg)
    assert root.tag == NS + "svg"
    out = {}
    for g in root.iter(NS + "g"):
        if g.get("class") == "cell":
            key = (g.get("data-operand"), int(g.get("data-row")), int(g.get("data-col")))
            rect = g.find(NS + "rect")
            out[key] = (g.get("data-label"), rect.get("fill"), int(g.get("data-holders") or 1))
    return out


@pytest.mark.parametrize("L", [Layout((4, 8), (8, 1)), Layout(((2, 2), 3), ((1, 6), 2)), Layout(6, 2)])
def test_layout_svg_labels(L):
    c = cells(layout_svg(L))
    M = cute.size(L.shape[0]) if isinstance(L.shape, tuple) else L.size()
    N = L.size() // M
    assert len(c) == M * N
    for (_op, m, n), (label, _f, _h) in c.items():
        assert label == str(L((m, n)) if isinstance(L.shape, tuple) else L(m))
    assert L._repr_svg_() == layout_svg(L)


def test_tv_layout_svg_labels_and_colours():
    tiler, tv = cute.make_layout_tv(Layout((2, 3), (3, 1)), Layout((2, 2), (2, 1)))
    svg = tv_layout_svg(tv, tiler)
    c = cells(svg)
    M, N = tiler
    assert len(c) == M * N
    for (_op, m, n), (label, fill, _h) in c.items():
        t, v = map(int, label[1:].split("V"))
        assert tv((t, v)) == m + M * n
        assert fill == TV_COLORS[t % 8]


def test_tiled_mma_svg():
    mma = cute.make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN(), (2, 2, 1))
    c = cells(tiled_mma_svg(mma))
    tM, tN, tK = mma.tile_shape
    assert sum(1 for k in c if k[0] == "C") == tM * tN
    assert sum(1 for k in c if k[0] == "A") == tM * tK
    assert sum(1 for k in c if k[0] == "B") == tN * tK
    LC, LA = mma.get_layoutC_TV(), mma.get_layoutA_TV()
    for (op, m, n), (label, fill, holders) in c.items():
        t, v = map(int, label.split("+")[0][1:].split("V"))
        if op == "C":
            assert LC((t, v)) == m + tM * n and holders == 1
        if op == "A":
            assert LA((t, v)) == m + tM * n and holders == 2      # two threads along N
    assert mma._repr_svg_() == tiled_mma_svg(mma)


def test_tiled_copy_svg_and_write(tmp_path):
    mma = cute.make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN(), (2, 2, 1))
    tc = cute.make_tiled_copy_A(cute.Copy_Atom(cute.SM75_U32x4_LDSM_N, "f16"), mma)
    c = cells(tiled_copy_svg(tc))
    S, D = tc.get_layoutS_TV(), tc.get_layoutD_TV()
    M = tc.tile_shape[0]
    for (op, m, n), (label, _f, _h) in c.items():
        t, v = map(int, label.split("+")[0][1:].split("V"))
        assert {"S": S, "D": D}[op]((t, v)) == m + M * n
    p = write_svg(tc, str(tmp_path / "x.svg"))
    ET.parse(p)


def test_text_tables():
    tiler, tv = cute.make_layout_tv(Layout((2, 3), (3, 1)), Layout((2, 2), (2, 1)))
    txt = format_tv_layout(tv, tiler)
    rows = [ln for ln in txt.splitlines() if ln.lstrip().startswith(tuple("0123456789")) and "|" in ln]
    assert len(rows) == 4
    assert rows[0].split("|")[1].strip() == "T0V0"
    mma = cute.make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN())
    t = format_tiled_mma(mma, "C")
    assert "T0V0" in t and "T31V3" in t
    assert "T0V0*" not in format_tiled_mma(mma, "A")
    with pytest.raises(cute.LayoutError):
        layout_svg(Layout((2, 2, 2)))


def test_cli_writes_svg(tmp_path):
    from cute_py.__main__ import main
    out = tmp_path / "m.svg"
    assert main(["mma", "SM80_16x8x16_F32F16F16F32_TN", "--atom-layout", "2,1,1", "-o", str(out)]) == 0
    c = cells(out.read_text())
    assert sum(1 for k in c if k[0] == "C") == 32 * 8
    out2 = tmp_path / "l.svg"
    assert main(["layout", "((2,2),4):((1,4),2)", "-o", str(out2)]) == 0
    assert len(cells(out2.read_text())) == 16
