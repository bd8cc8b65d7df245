"""The command line (``python -m cute_py``): the main job, layout printing, --op, pictures."""

import os
import subprocess
import sys

import pytest

import cute_py as cute
from cute_py import Layout
from cute_py.cli import apply_op, main, parse_op
from cute_py.errors import CuteError, ParseError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_main_job_runs_as_a_module():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "cute_py"], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "((2,2),3):((24,2),8)" in out            # composition from 02_layout_algebra.md
    assert "(2,3):(1,8)" in out                      # complement(4:2, 24)
    assert "TiledMMA of SM80_16x8x16_F32F16F16F32_TN" in out
    assert "== GEMM on the GPU" in out               # ran, or said why it skipped


def test_layout_argument_prints_table_size_cosize(capsys):
    assert main(["((2,2),4):((1,4),2)"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "((2,2),4):((1,4),2)"
    assert out == cute.format_layout(cute.parse_layout("((2,2),4):((1,4),2)")) + \
        "\nsize   = 16\ncosize = 12\n"


def test_op_chain_matches_the_api(capsys):
    assert main(["(8,8):(8,1)", "--op", "logical_divide(_, 4:2)", "--op", "coalesce(_)"]) == 0
    out = capsys.readouterr().out
    L = cute.logical_divide(Layout((8, 8), (8, 1)), Layout(4, 2))
    assert f"== logical_divide(_, 4:2)\n{L}" in out
    assert f"== coalesce(_)\n{cute.coalesce(L)}" in out


@pytest.mark.parametrize("op, expect", [
    ("zipped_divide(_, (2,4))", lambda L: cute.zipped_divide(L, (2, 4))),
    ("logical_divide(_, (2:1,_))", lambda L: cute.logical_divide(L, (Layout(2, 1), cute._))),
    ("tile_to_shape(_, (16,16), order=(1,0))",
     lambda L: cute.tile_to_shape(L, (16, 16), (1, 0))),
    ("composition(_, (4,2):(2,1))", lambda L: cute.composition(L, Layout((4, 2), (2, 1)))),
    ("complement(_, 128)", lambda L: cute.complement(L, 128)),
    ("composition(Sw<3,0,3>, _)", lambda L: cute.composition(cute.Swizzle(3, 0, 3), L)),
    ("size(_)", lambda L: cute.size(L)),
])
def test_op_forms(op, expect):
    L = Layout((8, 8), (8, 1))
    assert apply_op(op, L) == expect(L)


def test_parse_op_keywords_and_nested_underscore():
    name, args, kwargs = parse_op("tile_to_shape(_, (4,(2,_)), order=(1,0))", "CUR")
    assert name == "tile_to_shape" and args == ["CUR", (4, (2, cute._))]
    assert kwargs == {"order": (1, 0)}


@pytest.mark.parametrize("op", ["foo(_)", "logical_divide", "logical_divide(_, (2:1)",
                                "logical_divide(_, x)", "__import__(os)", "logical_divide(_, )",
                                "composition(_, Sw<3,a,3>)"])
def test_bad_ops_raise_parse_error(op):
    with pytest.raises(ParseError) as e:
        apply_op(op, Layout(8, 1))
    assert "--op" in str(e.value)


def test_errors_exit_2_with_a_message(capsys):
    assert main(["(8,8):(8"]) == 2
    assert "parse_layout" in capsys.readouterr().err
    assert main(["(4,6,8):(2,3,5)", "--op", "composition(_, 6:3)"]) == 2  # cutlass#3177
    assert "composition" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--op", "coalesce(_)"])  # no layout to start from


def test_pictures(tmp_path, capsys):
    svg = tmp_path / "l.svg"
    assert main(["layout", "(4,8):(8,1)", "-o", str(svg)]) == 0
    assert svg.read_text().startswith("<svg") or "<svg" in svg.read_text()[:200]
    assert main(["mma", "SM80_16x8x16_F32F16F16F32_TN", "--atom-layout", "2,2,1",
                 "--text", "C"]) == 0
    assert "T64V0" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["mma", "not_an_atom"])


def test_cli_errors_are_cute_errors():
    assert issubclass(ParseError, CuteError)


@pytest.mark.parametrize("argv", [
    ["hello"],                                             # not a layout
    ["(4,2):(2,1)", "--op", "coalesce()"],                 # wrong arity
    ["(4,2):(2,1)", "--op", "coalesce(_, 1, 2, 3)"],
    ["(4,2):(2,1)", "--op", "composition(_, x=2)"],        # unknown keyword
    ["layout", "(4,2,3):(1,4,8)", "-o", "x.svg"],          # a rank-3 layout has no picture
    ["layout", "(4,2):(1,4)", "-o", "/nonexistent/dir/x.svg"],  # unwritable output
    ["(4,2):(2,1)", "--op", "coalesce(" + "(" * 3000 + "4" + ")" * 3000 + ")"],  # deep nesting
    ["(" * 3000 + "4" + ")" * 3000],
])
def test_user_mistakes_exit_2_with_one_line(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)          # Python's default; 3000-deep text must not parse
    try:
        code = main(argv)
    finally:
        sys.setrecursionlimit(old)
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
