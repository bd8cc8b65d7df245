"""The PTX library: the device wrappers of ``include/cute_py/*.cuh``, read from the headers.

The headers are the one place a PTX instruction is wrapped; generated kernels call the wrappers
by name through :meth:`backends.cuda.builder.KernelBuilder.call`, which checks the name here.

* :data:`FUNCTIONS` maps each wrapper name to the header defining it: every function declared
  ``CUTE_PY_DEVICE`` or ``CUTE_PY_HOST_DEVICE`` at the start of a line, after an optional
  ``template <...>`` on the same or the previous line, whatever it returns (``u32``,
  ``u32&``, ``const T*``, ``void``);
* :func:`wrappers` gives each wrapper's body (from its ``{`` to the matching ``}``, comments and
  strings skipped when matching), so text between two functions belongs to neither;
* :func:`instructions` maps each **instruction** to the wrappers whose inline asm holds it, which
  a test uses to keep every instruction wrapped once (tests/backend/test_ptx_library.py).

What counts as one instruction (the rule :func:`instructions` implements):

1. its mnemonic, with the type suffix of a pure data movement normalised: ``ld`` / ``st`` /
   ``mov`` of N bits is one instruction whether it says ``.bN``, ``.uN`` or ``.sN``
   (``ld.shared.u32`` and ``ld.shared.b32`` move the same bits);
2. a read of a special register is a different instruction per register: ``mov.u32 %0,
   %%cluster_ctarank`` is ``mov.b32 %cluster_ctarank``, ``mov.u32 %0, %%laneid`` is
   ``mov.b32 %laneid``;
3. an operand that is a register vector (``{%0, %1, ...}``) makes a different form than a scalar
   operand in the same place: wgmma with A from registers (``{...}``) and with A from a
   descriptor are two instructions, written ``mnemonic {},{},_,...`` (``{}`` a vector, ``_`` any
   other operand); a form without vector operands is written as the bare mnemonic;
4. **glue is not counted**: compares, selects, branches, register moves and integer width
   conversions (``setp``, ``selp``, ``bra``, ``mov`` without a special register, ``cvt``
   between integer types) are how a wrapper adapts its instruction to C (a predicate from an
   int, a bool from a predicate, a spin loop, a 64 -> 32-bit address); they count only in a
   wrapper that has nothing else;
5. a guarded statement (``@p ld.global.b32 ...``) is a different form than the unguarded one,
   written ``@p mnemonic``: the predicate is part of what the wrapper does (a load that may not
   happen), not glue;
6. directives (``.reg``), labels and ``//`` comments are not instructions, nor is an empty
   ``asm volatile("" : "+f"(r))`` (a compiler fence on a register).

Law: a wrapper's instructions are the same whether the header is read whole or the wrapper's
own text alone (:func:`instructions` with ``text``).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

__all__ = ["HEADER_DIR", "FUNCTIONS", "require", "functions", "namespaces", "wrappers",
           "instructions", "asm_blocks"]

#: the directory holding ``cute_py/*.cuh``
HEADER_DIR = Path(__file__).resolve().parent / "include"

_TEMPLATE = r"(?:template\s*<(?:[^<>]|<[^<>]*>)*>\s*)?"
_DEF = re.compile(r"^[ \t]*" + _TEMPLATE + r"CUTE_PY_(?:HOST_)?DEVICE\b"
                  r"[\w:<>,&\s\*]*?\b(\w+)\s*\(", re.M)
_ASM = re.compile(r'\basm\s*(?:volatile\s*|__volatile__\s*)?\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)',
                  re.S)
_GLUE = ("setp", "selp", "bra")
_INT_TYPES = re.compile(r"^[usb](8|16|32|64)$")


def _headers():
    return sorted((HEADER_DIR / "cute_py").glob("*.cuh"))


def _matching_brace(src: str, i: int) -> int:
    """Index just past the ``}`` matching the ``{`` at ``src[i]`` (strings, chars and comments
    skipped); ``len(src)`` if unbalanced."""
    depth, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _bodies(src: str):
    """``(name, body text)`` for each wrapper definition of ``src`` (declarations skipped)."""
    for m in _DEF.finditer(src):
        # the parameter list: from the "(" the match ends at to its matching ")"
        i, depth = m.end() - 1, 0
        while i < len(src):
            depth += {"(": 1, ")": -1}.get(src[i], 0)
            i += 1
            if depth == 0:
                break
        j = i
        while j < len(src) and src[j] not in "{;":
            j += 1
        if j >= len(src) or src[j] == ";":
            continue  # a declaration, no body
        yield m.group(1), src[j:_matching_brace(src, j)]


@functools.lru_cache(maxsize=None)
def functions() -> dict:
    """Wrapper name -> header file name, for every ``CUTE_PY_DEVICE`` / ``CUTE_PY_HOST_DEVICE``
    function (the first header defining a name wins; overloads share the name)."""
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


@functools.lru_cache(maxsize=None)
def wrappers() -> dict:
    """Wrapper name -> ``(header file name, body text)``; overloads' bodies are concatenated."""
    out: dict = {}
    for h in _headers():
        for name, body in _bodies(h.read_text()):
            hdr, text = out.get(name, (h.name, ""))
            out[name] = (hdr, text + body)
    return out


def asm_blocks(text: str):
    """The PTX text of every inline-asm statement of C ``text`` (string pieces joined)."""
    return ["".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))) for m in _ASM.finditer(text)]


def _split_operands(s: str):
    out, depth, cur = [], 0, ""
    for c in s:
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def _normalise(mn: str) -> str:
    parts = mn.split(".")
    if parts[0] in ("ld", "st", "mov") and _INT_TYPES.match(parts[-1]):
        parts[-1] = "b" + parts[-1][1:]
    return ".".join(parts)


def _instruction(stmt: str):
    """``(key, glue)`` of one PTX statement, or None for directives, labels and empties."""
    stmt = stmt.strip()
    while stmt.startswith("{"):
        stmt = stmt[1:].strip()
    while stmt.endswith("}") and stmt.count("{") < stmt.count("}"):
        stmt = stmt[:-1].strip()
    stmt = re.sub(r"^(\w+:\s*)+", "", stmt)                # labels
    guarded = re.match(r"^@!?%{0,2}\w+\s+", stmt) is not None
    stmt = re.sub(r"^@!?%{0,2}\w+\s+", "", stmt)           # predicate guard
    if not stmt or stmt.startswith((".", "//")) or not stmt[0].isalpha():
        return None
    mn, _, rest = stmt.partition(" ")
    mn = _normalise(mn.strip())
    ops = _split_operands(rest.replace("\t", " "))
    root = mn.split(".")[0]
    special = [o.lstrip("%") for o in ops if o.startswith("%%")]
    if root == "mov" and special:
        return f"{mn} %{special[0]}", False
    glue = root in _GLUE or root == "mov" or (
        root == "cvt" and all(_INT_TYPES.match(t) for t in mn.split(".")[1:] if t))
    if any(o.startswith("{") for o in ops):
        mn += " " + ",".join("{}" if o.startswith("{") else "_" for o in ops)
    if guarded and not glue:
        mn = "@p " + mn
    return mn, glue


def _keys(asm_texts):
    found = []
    for body in asm_texts:
        body = body.replace("\\n", "\n").replace("\\t", " ")
        body = re.sub(r"//[^\n]*", "", body)
        for stmt in body.split(";"):
            k = _instruction(stmt)
            if k:
                found.append(k)
    real = [k for k, glue in found if not glue]
    return set(real) if real else {k for k, _ in found}


def instructions(text: str | None = None) -> dict:
    """Instruction (see the module docstring) -> sorted names of the wrappers holding it, for all
    headers or for the C text ``text``."""
    if text is None:
        bodies = [(name, body) for name, (_h, body) in wrappers().items()]
    else:
        bodies = list(_bodies(text))
    out: dict = {}
    for name, body in bodies:
        for k in _keys(asm_blocks(body)):
            out.setdefault(k, set()).add(name)
    return {k: sorted(v) for k, v in sorted(out.items())}
