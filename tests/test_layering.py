"""The dependency direction of the tree, every import counted (module level and inside functions).

- ``cute_py/``: no import cycle, and every module imports only modules of its own layer or below
  (the table ``LAYERS``; a new module must be placed in it).
- The algebra never imports the backend (``backends/``, installed as ``cute_py.backends``); the two
  user-facing entry points that run it (``cute_py.gemm``, the ``cute_py.cli`` demo) load it inside
  the call, and nothing else may.
- ``backends/``: no import cycle (beyond the ones listed in ``KNOWN_BACKEND_CYCLES``, which may only
  shrink).
- ``import cute_py`` (and its namespaces) imports neither CuPy nor the backend.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: cute_py's layers, bottom first. A module may import its own layer and the layers below.
LAYERS = [
    ["errors"],
    ["numeric", "int_tuple", "pipeline", "fp8"],
    ["layout"],
    ["algebra", "swizzle"],
    ["composed", "printing"],
    ["latex"],
    ["svg", "tensor", "smem_atoms", "testing"],
    ["symbolic", "atom.mma_atom", "atom.copy_traits", "atom.mma_traits_sm80",
     "atom.mma_traits_sm90", "atom.copy_atom", "epilogue.evt", "epilogue.fused"],
    ["atom.tiled_mma", "atom.tiled_copy"],
    ["executor", "bank_conflicts", "nvgpu.sm80", "nvgpu.sm90"],
    ["gemm", "scaled_mm", "cli", "__main__"],
]
#: the entry points that may load the backend when called (never at import time)
BACKEND_FACADES = {"cute_py.gemm", "cute_py.scaled_mm", "cute_py.cli"}
#: backend cycles that predate this test; the set may only shrink
KNOWN_BACKEND_CYCLES = {frozenset("cute_py.backends.cuda." + m for m in c) for c in (
)}


def _modules():
    mods = {}
    for folder, name in (("cute_py", "cute_py"), ("backends", "cute_py.backends")):
        base = os.path.join(ROOT, folder)
        for dp, dn, fn in os.walk(base):
            dn[:] = [d for d in dn if d != "__pycache__"]
            for f in fn:
                if f.endswith(".py"):
                    parts = [name] + os.path.relpath(os.path.join(dp, f), base)[:-3].split(os.sep)
                    init = parts[-1] == "__init__"
                    if init:
                        parts = parts[:-1]
                    mods[".".join(parts)] = (os.path.join(dp, f), init)
    return mods


def _graph():
    """module -> {imported module: first line}; imports of a package's face (__init__) count as
    imports of the package, not of its contents."""
    mods = _modules()

    def resolve(t):
        while t and t not in mods:
            if "." not in t:
                return None
            t = t.rsplit(".", 1)[0]
        return t

    G = {}
    for m, (path, init) in mods.items():
        parts = m.split(".")
        edges = G.setdefault(m, {})
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = parts if init else parts[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod
                           for a in node.names]
            else:
                continue
            for t in targets:
                r = resolve(t)
                if r and r != m and not mods[r][1]:
                    edges.setdefault(r, node.lineno)
    return mods, G


def _cycles(G, nodes):
    """Strongly connected components with more than one module (Tarjan, iterative over the
    sorted nodes; the graph is small, so recursion depth is the module count)."""
    idx, low, st, on, out, c = {}, {}, [], set(), [], [0]

    def strong(v):
        idx[v] = low[v] = c[0]
        c[0] += 1
        st.append(v)
        on.add(v)
        for w in G.get(v, ()):
            if w not in nodes:
                continue
            if w not in idx:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = set()
            while True:
                w = st.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))

    for v in sorted(nodes):
        if v not in idx:
            strong(v)
    return out


def _is_algebra(m):
    return m.startswith("cute_py") and not m.startswith("cute_py.backends")


def test_algebra_has_no_import_cycle():
    mods, G = _graph()
    cyc = _cycles(G, {m for m in mods if _is_algebra(m)})
    assert not cyc, [sorted(c) for c in cyc]


def test_algebra_imports_only_downward():
    mods, G = _graph()
    rank = {f"cute_py.{m}": i for i, layer in enumerate(LAYERS) for m in layer}
    faces = {m for m, (_, init) in mods.items() if init}
    unplaced = sorted(m for m in mods if _is_algebra(m) and m not in rank and m not in faces)
    assert not unplaced, f"place these modules in LAYERS: {unplaced}"
    bad = []
    for m in rank:
        for t, line in G.get(m, {}).items():
            if t in rank and rank[t] > rank[m]:
                bad.append(f"{m}:{line} imports {t} (layer {rank[t]} > {rank[m]})")
    assert not bad, "\n".join(bad)


def test_algebra_never_imports_the_backend():
    mods, G = _graph()
    bad = [f"{m}:{line} imports {t}" for m in mods if _is_algebra(m) and m not in BACKEND_FACADES
           for t, line in G[m].items() if t.startswith("cute_py.backends")]
    assert not bad, "\n".join(bad)


def test_backend_import_cycles_do_not_grow():
    mods, G = _graph()
    cyc = set(_cycles(G, {m for m in mods if m.startswith("cute_py.backends")}))
    new = cyc - KNOWN_BACKEND_CYCLES
    assert not new, [sorted(c) for c in new]
    if cyc:
        pytest.xfail(f"{len(cyc)} known backend import cycle(s) remain: "
                     + "; ".join(" <-> ".join(sorted(c)) for c in cyc))


def test_import_loads_neither_cupy_nor_the_backend():
    code = ("import sys, cute_py, cute_py.atom, cute_py.nvgpu, cute_py.cli, cute_py.testing, "
            "cute_py.epilogue; from cute_py import *; "
            "bad = [m for m in sys.modules if m == 'cupy' or m.startswith('cupy.') "
            "or m.startswith('cute_py.backends')]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
