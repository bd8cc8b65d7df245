"""One public surface: an explicit ``__all__``, no builtin shadowed by ``from cute_py import *``,
architecture atoms also by generation (``cute_py.nvgpu.sm80`` / ``.sm90``)."""

import ast
import builtins
import os

import cute_py as cute

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_all_is_written_out():
    tree = ast.parse(open(os.path.join(ROOT, "cute_py", "__init__.py")).read())
    assigns = [n for n in tree.body if isinstance(n, (ast.Assign, ast.AugAssign))
               and any(isinstance(t, ast.Name) and t.id == "__all__"
                       for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    assert len(assigns) == 1 and isinstance(assigns[0], ast.Assign)
    value = assigns[0].value
    assert isinstance(value, ast.List) and all(isinstance(e, ast.Constant) for e in value.elts)
    names = [e.value for e in value.elts]
    assert names == cute.__all__
    assert len(names) == len(set(names))
    for n in names:
        assert hasattr(cute, n), n


def test_star_import_shadows_no_builtin():
    ns = {}
    exec("from cute_py import *", ns)
    # "_" is CuTe's underscore; builtins._ is only the interactive interpreter's last value
    shadowed = sorted(n for n in ns if n not in ("__builtins__", "_") and hasattr(builtins, n))
    assert shadowed == [], shadowed
    assert "zip" not in cute.__all__ and "filter" not in cute.__all__
    # CuTe's names stay reachable on the module
    assert str(cute.zip(cute.Layout((2, 3)), cute.Layout((4, 5)))) is not None
    assert cute.filter(cute.Layout((2, 1, 3), (1, 0, 2))) == cute.Layout(6, 1)


def test_nvgpu_namespaces_hold_the_same_atoms():
    from cute_py.nvgpu import sm80, sm90
    for ns in (sm80, sm90):
        for n in ns.__all__:
            assert getattr(ns, n) is getattr(cute, n), n
    assert "SM80_16x8x16_F32F16F16F32_TN" in sm80.__all__
    assert "SM80_CP_ASYNC_CACHEGLOBAL" in sm80.__all__ and "SM75_U32x4_LDSM_N" in sm80.__all__
    assert "SM90_64x128x16_F32F16F16_SS" in sm90.__all__ and "SM90_TMA_LOAD" in sm90.__all__
    assert not set(sm80.__all__) & set(sm90.__all__)
    atom = sm90.SM90_64x128x16_F32F16F16_SS()
    assert atom.shape_mnk == (64, 128, 16)


def test_old_import_paths_still_work():
    from cute_py.atom.mma_atom import sizeof_bits as a
    from cute_py.atom.tiled_mma import layout_table as t1
    from cute_py.layout import layout_table as t2
    from cute_py.smem_atoms import sizeof_bits as b
    assert a is b is cute.sizeof_bits and t1 is t2
    from cute_py.layout import make_fragment_like, with_shape
    from cute_py.swizzle import composition_sw_layout
    L = cute.Layout((4, 4))
    assert with_shape(L, (2, 8)) == cute.with_shape(L, (2, 8))
    import cute_py.algebra
    assert make_fragment_like is cute_py.algebra.make_fragment_like
    assert str(composition_sw_layout(cute.Swizzle(1, 0, 1), cute.Layout(4))) == "Sw<1,0,1> o 0 o 4:1"
    L = cute.Layout((4, 4))
    assert L.with_shape(2, 8) == cute.with_shape(L, (2, 8))
    assert L.compose(cute.Layout(4, 2)) == cute.composition(L, cute.Layout(4, 2))
    assert L.tile(2) == cute.tiled_divide(L, 2)
    assert L._repr_svg_().startswith("<svg")
    assert cute.Layout((2, 2, 2))._repr_svg_() is None   # rank 3 has no picture
