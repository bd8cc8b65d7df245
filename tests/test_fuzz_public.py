"""The public boundary: garbage in, a cute_py error (or an answer) out, never a foreign exception
and never a hang. The fuzzer is tests/fuzz_public.py; here it runs in a subprocess with a memory
limit, seeded and bounded (a few seconds)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cute_py as cute
from cute_py import Layout
from cute_py.errors import CuteError

HERE = os.path.dirname(os.path.abspath(__file__))

#: Gaps being closed by the coordinate-layout work (E-strided layouts, identity tensors): these
#: callables still fail inside ScaledBasis / ArithmeticTuple arithmetic. Tolerated only with that
#: signature; remove an entry as soon as its callable answers (the test says when).
COORDINATE_LAYOUT_GAPS = {"cute_py.upcast", "Tensor.get_hier_coord"}


def _is_coordinate_gap(leak):
    name, _args, err = leak
    return name in COORDINATE_LAYOUT_GAPS and ("ScaledBasis" in err or "ArithmeticTuple" in err)


def test_fuzz_every_public_callable():
    r = subprocess.run([sys.executable, os.path.join(HERE, "fuzz_public.py"), "--json",
                        "--examples", "24", "--timeout", "2", "--seed", "0", "--mem-gb", "4"],
                       capture_output=True, text=True, timeout=300, cwd=os.path.dirname(HERE))
    assert r.stdout.strip(), r.stderr[-3000:]
    rep = json.loads(r.stdout.strip().splitlines()[-1])
    assert rep["calls"] > 4000
    assert rep["hangs"] == 0, rep["hang_samples"][:10]
    leaks = [tuple(x) for x in rep["leak_samples"] if not _is_coordinate_gap(x)]
    assert not leaks, leaks[:10]


def test_coordinate_layout_gaps_are_still_gaps():
    """Each listed gap still fails as described (else: delete it from COORDINATE_LAYOUT_GAPS)."""
    T = cute.make_identity_tensor((4, 8))
    still = set()
    for name, call in [("cute_py.cosize", lambda: cute.cosize(T)),
                       ("Tensor.cosize", lambda: T.cosize()),
                       ("Tensor.get_hier_coord", lambda: T.get_hier_coord(2)),
                       ("cute_py.complement", lambda: cute.complement(T)),
                       ("cute_py.raked_product", lambda: cute.raked_product(Layout(4, 1), T)),
                       ("cute_py.blocked_product", lambda: cute.blocked_product(Layout(4, 1), T)),
                       ("cute_py.upcast", lambda: cute.upcast(T, 4))]:
        try:
            call()
        except CuteError:
            continue
        except Exception as e:  # noqa: BLE001
            if _is_coordinate_gap((name, "", f"{type(e).__name__}: {e}")):
                still.add(name)
    fixed = COORDINATE_LAYOUT_GAPS - still
    assert not fixed, f"answer or raise a CuteError now; remove from COORDINATE_LAYOUT_GAPS: {fixed}"


def test_fuzzer_sees_every_namespace():
    sys.path.insert(0, HERE)
    try:
        import fuzz_public
    finally:
        sys.path.remove(HERE)
    names = {n for n, _ in fuzz_public.targets()}
    assert "cute_py.make_layout" in names and "cute_py.cli.parse_op" in names
    assert any(n.startswith("cute_py.atom.") or n.startswith("cute_py.nvgpu.") for n in names) \
        or "cute_py.SM80_16x8x16_F32F16F16F32_TN" in names


# the examples that leaked or hung before the boundary existed -------------------------------

@pytest.mark.parametrize("call, arg", [
    (lambda: cute.signum(Layout(4, 2)), "a"),
    (lambda: cute.domain_distribute(1, Layout(4, 2)), "b"),
    (lambda: cute.domain_distribute(1.5, 1), "a"),
    (lambda: cute.stride(4), "x"),
    (lambda: cute.increment(4, (0, 1)), "shape"),
    (lambda: cute.format_tv_layout(Layout((4, 2)), 0), "tile_mn"),
    (lambda: cute.sizeof_bits(None), "t"),
    (lambda: cute.parse_layout("hello"), "text"),
    (lambda: cute.write_svg(Layout(4, 1), True), "path"),
    (lambda: cute.print_layout(Layout((2 ** 35, 2 ** 35))), "layout"),
    (lambda: cute.layout_svg(Layout(2 ** 70)), "layout"),
    (lambda: cute.CLayout_64xN("x"), "N"),
    (lambda: cute.ScaledBasis(1, "x"), "modes"),
    (lambda: cute.TiledMMA(1, 2, 3), "atom"),
])
def test_boundary_names_the_argument(call, arg):
    with pytest.raises(CuteError) as e:
        call()
    assert e.value.arg == arg, str(e.value)


def test_huge_sizes_answer_at_once():
    atom = cute.make_copy_atom(cute.UniversalCopy(32), "f32")
    tc = cute.make_tiled_copy(atom, 2 ** 70, 4)      # algebraic: no work proportional to 2**70
    assert cute.size(tc.layout_tv) == 2 ** 72


def test_execute_tiled_mma_checks_C():
    mma = cute.make_tiled_mma(cute.UniversalFMA("f32", "f32", "f32", "f32"))
    A, B = np.ones((2, 3)), np.ones((4, 3))
    with pytest.raises(cute.AtomError) as e:
        cute.execute_tiled_mma(mma, A, B, np.ones((4, 2)))   # 8 elements, wrong shape
    assert e.value.arg == "C"
    D = cute.execute_tiled_mma(mma, A, B, np.ones((2, 4)))
    assert np.array_equal(D, np.full((2, 4), 4.0))


def test_write_svg_keeps_stdout_open():
    with pytest.raises(cute.LayoutError):
        cute.write_svg(Layout(4, 1), 1)                     # a file descriptor is not a path
    assert not sys.stdout.closed


def test_symbolic_comparisons_raise_symbolic_error():
    N = cute.symbols("N")
    with pytest.raises(cute.SymbolicError):
        cute.elem_less((1, 2), (N, 4))


def test_sizeof_bits_is_one_function():
    import cute_py.atom as atom
    import cute_py.numeric as numeric
    import cute_py.smem_atoms as smem
    assert cute.sizeof_bits is numeric.sizeof_bits is atom.sizeof_bits is smem.sizeof_bits
    for name, bits in [("f16", 16), ("half_t", 16), ("bf16", 16), ("tf32", 32), ("e4m3", 8),
                       ("float8_e5m2", 8), ("int4", 4), (np.float64, 64), ("uint128", 128)]:
        assert cute.sizeof_bits(name) == bits
        assert cute.sizeof_bits(cute.canonical_type(name)) == bits
    with pytest.raises(CuteError):
        cute.sizeof_bits(0)
