"""The PTX library: the device wrappers of ``include/cute_py/*.cuh``, read from the headers.

The headers are the one place a PTX instruction is wrapped; generated kernels call the wrappers
by name through :meth:`backends.cuda.builder.KernelBuilder.call`, which checks the name here.
:data:`FUNCTIONS` maps each wrapper name to the header that defines it;
:func:`instructions` maps each wrapped PTX mnemonic (``mbarrier.init.shared::cta.b64``) to the
wrappers holding it, which a test uses to keep every instruction wrapped once.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

__all__ = ["HEADER_DIR", "FUNCTIONS", "require", "functions", "namespaces", "instructions"]

#: the directory holding ``cute_py/*.cuh``
HEADER_DIR = Path(__file__).resolve().parent / "include"

_DEF = re.compile(r"^CUTE_PY_DEVICE\s+[\w:<>&\s\*]*?\b(\w+)\s*\(", re.M)
_ASM = re.compile(r'asm\s*(?:volatile)?\s*\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', re.S)


def _headers():
    return sorted((HEADER_DIR / "cute_py").glob("*.cuh"))


@functools.lru_cache(maxsize=None)
def functions() -> dict:
    """Wrapper name -> header file name, for every ``CUTE_PY_DEVICE`` function."""
    out: dict = {}
    for h in _headers():
        for m in _DEF.finditer(h.read_text()):
            out.setdefault(m.group(1), h.name)
    return out


FUNCTIONS = functions()


@functools.lru_cache(maxsize=None)
def namespaces() -> dict:
    """Header file name -> the namespaces it opens, outermost first (``("cute_py", "sm80")``)."""
    return {h.name: tuple(dict.fromkeys(re.findall(r"\bnamespace\s+(\w+)\s*\{", h.read_text())))
            for h in _headers()}


def require(name: str) -> str:
    """``name`` if it is a wrapper of the PTX library, else ``KeyError`` naming the headers.

    A qualified name (``sm80::cp_async_zfill``, ``cute_py::sm80::cp_async_zfill``) must name the
    namespaces of the wrapper's header, innermost last (generated code has ``using namespace
    cute_py;``, so the ``cute_py::`` prefix may be left out); an unqualified name is checked by
    its base name only (a generator may open the namespace with ``using``)."""
    *qual, base = name.split("::")
    ok = base in FUNCTIONS
    if ok and qual:
        ns = namespaces().get(FUNCTIONS[base], ())
        ok = tuple(qual) in (ns, ns[1:]) if ns[:1] == ("cute_py",) else tuple(qual) == ns
    if not ok:
        raise KeyError(f"ptx: no wrapper {name!r} in {HEADER_DIR / 'cute_py'} (a generator "
                       f"calls a PTX function the headers do not define)")
    return name


def _mnemonics(asm_text: str):
    """PTX instruction mnemonics of one inline-asm string (declarations and labels skipped)."""
    body = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', asm_text))
    body = body.replace("\\n", ";").replace("\\t", " ")
    out = []
    for stmt in re.split(r"[;{}]", body):
        stmt = stmt.strip()
        if not stmt or stmt.startswith((".reg", "//")) or stmt.endswith(":"):
            continue
        stmt = re.sub(r"^@!?%?\w+\s+", "", stmt)       # predicate guard
        tok = stmt.split()[0]
        if not tok[0].isalpha():
            continue
        out.append(tok)
    return out


def instructions(text: str | None = None) -> dict:
    """Mnemonic -> sorted wrapper names whose inline asm contains it (all headers, or the C
    text ``text``).  Wrappers are delimited by their ``CUTE_PY_DEVICE`` definitions."""
    sources = [text] if text is not None else [h.read_text() for h in _headers()]
    out: dict = {}
    for src in sources:
        starts = [(m.start(), m.group(1)) for m in _DEF.finditer(src)]
        for i, (pos, name) in enumerate(starts):
            end = starts[i + 1][0] if i + 1 < len(starts) else len(src)
            for a in _ASM.finditer(src, pos, end):
                for mn in _mnemonics(a.group(1)):
                    out.setdefault(mn, set()).add(name)
    return {k: sorted(v) for k, v in sorted(out.items())}
