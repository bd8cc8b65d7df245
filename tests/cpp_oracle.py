"""Run expressions through real CuTe C++ (the headers shipped in the pip package ``nvidia-cutlass``).

``run_cases(["print(coalesce(...));", ...])`` writes one translation unit per chunk of cases
(one ``static void case_i()`` per line), compiles it with g++ (host code; the CUDA headers only
provide vector types), runs it and returns each case's printed text. Cases that C++ rejects at
compile time (a ``static_assert``) are found from the compiler's line numbers, removed, and
reported as :data:`REJECTED`; the rest is recompiled. Binaries and outputs are cached by the hash
of the source under ``$CUTE_PY_ORACLE_CACHE`` (default ``~/.cache/cute_py/cpp_oracle``, honouring ``$XDG_CACHE_HOME``).

``available()`` says whether g++, the CUDA headers and the CuTe headers are present;
``cpp(x)`` spells a Layout / IntTuple / tiler as static C++ (every int is ``Int<N>{}``);
``normalize(text)`` strips C++'s ``_`` prefix of static ints so it reads like ``str(layout)``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

__all__ = ["available", "why_unavailable", "cpp", "normalize", "run_cases", "REJECTED",
           "CHUNK"]

REJECTED = "<rejected by C++>"
CHUNK = 150
_FLAGS = ["-std=c++17", "-O0", "-w", "-fmax-errors=0"]
_PRELUDE = "#include <cute/tensor.hpp>\n#include <cstdio>\nusing namespace cute;\n"


def _cute_include():
    try:
        import cutlass_library
    except ImportError:
        return None
    inc = os.path.join(os.path.dirname(cutlass_library.__file__), "source", "include")
    return inc if os.path.isfile(os.path.join(inc, "cute", "layout.hpp")) else None


def _cuda_include():
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.isfile(os.path.join(root, "include", "vector_types.h")):
            return os.path.join(root, "include")
    return None


def why_unavailable() -> str | None:
    """None when the oracle can run, else the reason."""
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        return "g++ not found"
    if _cute_include() is None:
        return "nvidia-cutlass (CuTe headers) not installed"
    if _cuda_include() is None:
        return "CUDA headers not found (/usr/local/cuda/include)"
    return None


def available() -> bool:
    return why_unavailable() is None


def cpp(x) -> str:
    """Static C++ spelling of a Layout, an IntTuple, ``_`` or a by-mode tiler tuple."""
    from cute_py import Layout
    from cute_py.int_tuple import is_underscore
    if isinstance(x, Layout):
        return f"make_layout({cpp(x.shape)}, {cpp(x.stride)})"
    if isinstance(x, tuple):
        return "make_tuple(" + ", ".join(cpp(a) for a in x) + ")"
    if is_underscore(x):
        return "_"
    if isinstance(x, int) and not isinstance(x, bool):
        return f"Int<{x}>{{}}"
    raise TypeError(f"cannot spell {x!r} in C++")


_STATIC = re.compile(r"(?<![A-Za-z0-9])_(-?\d+)")


def normalize(text: str) -> str:
    """C++ prints static ints as ``_N``; drop the underscore."""
    return _STATIC.sub(r"\1", text)


def _cache_dir() -> str:
    # per user: $CUTE_PY_ORACLE_CACHE, else $XDG_CACHE_HOME/cute_py/cpp_oracle (~/.cache/...)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = os.environ.get("CUTE_PY_ORACLE_CACHE") or os.path.join(base, "cute_py", "cpp_oracle")
    os.makedirs(d, exist_ok=True)
    return d


def _source(cases, keep) -> str:
    lines = [_PRELUDE.rstrip("\n")]
    for i, body in enumerate(cases):
        # exactly one line per case so compiler line numbers identify it
        lines.append(f"static void case_{i}() {{ {body} }}" if i in keep else "//")
    lines.append("int main() {")
    for i in range(len(cases)):
        if i in keep:
            lines.append(f'  printf("@@{i}\\n"); case_{i}(); printf("\\n");')
    lines.append('  printf("@@end\\n"); return 0;\n}\n')
    return "\n".join(lines)


def _compile(src: str, workdir: str):
    cpp_path = os.path.join(workdir, "oracle.cpp")
    exe = os.path.join(workdir, "oracle")
    with open(cpp_path, "w") as f:
        f.write(src)
    cmd = [os.environ.get("CXX", "g++"), *_FLAGS, "-I", _cute_include(), "-I", _cuda_include(),
           "-I", os.path.join(_cuda_include(), "cccl"), cpp_path, "-o", exe]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stderr, exe


def _run_chunk(cases) -> list:
    key = hashlib.sha256(("\n".join(cases) + "\0" + " ".join(_FLAGS) + "\0" +
                          _cute_include()).encode()).hexdigest()[:24]
    cache = os.path.join(_cache_dir(), key + ".json")
    if os.path.isfile(cache):
        with open(cache) as f:
            return json.load(f)
    keep = set(range(len(cases)))
    workdir = tempfile.mkdtemp(prefix="oracle_", dir=_cache_dir())
    try:
        first_line = _PRELUDE.rstrip("\n").count("\n") + 2  # line of case_0
        for _attempt in range(6):
            src = _source(cases, keep)
            rc, err, exe = _compile(src, workdir)
            if rc == 0:
                break
            bad = set()
            for m in re.finditer(r"oracle\.cpp:(\d+):", err):
                i = int(m.group(1)) - first_line
                if 0 <= i < len(cases):
                    bad.add(i)
            bad &= keep
            if not bad:
                raise RuntimeError("the oracle's C++ failed to compile:\n" + err[-4000:])
            keep -= bad
        else:  # pragma: no cover
            raise RuntimeError("the oracle's C++ kept failing to compile:\n" + err[-4000:])
        out = subprocess.run([exe], capture_output=True, text=True, timeout=120).stdout
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results = [REJECTED] * len(cases)
    for m in re.finditer(r"@@(\d+)\n(.*?)\n(?=@@)", out, re.S):
        results[int(m.group(1))] = m.group(2)
    tmp = cache + f".{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(results, f)
    os.replace(tmp, cache)
    return results


def run_cases(cases, chunk: int = CHUNK, jobs: int | None = None, chunks=None) -> list:
    """Compile and run C++ statements (each prints one result); return their printed texts.

    ``chunks`` optionally lists the number of cases per translation unit (default: ``chunk``
    each). A case C++ rejects at compile time yields :data:`REJECTED`.
    """
    cases = list(cases)
    if chunks is None:
        chunks = [min(chunk, len(cases) - i) for i in range(0, len(cases), chunk)]
    parts_in, i = [], 0
    for n in chunks:
        parts_in.append(cases[i:i + n])
        i += n
    if i != len(cases):
        raise ValueError("chunks must add up to the number of cases")
    # biggest first, so that the pool's tail is short
    order = sorted(range(len(parts_in)), key=lambda k: -len(parts_in[k]))
    jobs = jobs or max(1, min(len(parts_in), os.cpu_count() or 1))
    with ThreadPoolExecutor(jobs) as ex:
        done = dict(zip(order, ex.map(_run_chunk, [parts_in[k] for k in order])))
    return [r for k in range(len(parts_in)) for r in done[k]]
