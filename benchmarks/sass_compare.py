"""Compare two sets of generated CUDA sources by what ptxas makes of them (CPU only).

Each side is a directory of ``.cu`` files or a git revision (its golden sources under
``--golden`` and its headers under ``--include``, read with ``git show`` / ``git archive``).
Every file present on both sides is compiled with ``nvcc -arch=<arch> -cubin -Xptxas -v``
(one nvcc at a time; cubins cached by content hash under ``--cache``) and compared:
registers, spill stores / loads, stack, and the SASS of each kernel (``cuobjdump -sass``,
addresses, encodings and comments stripped, branch targets renamed by order of appearance) as
an instruction sequence.

    python benchmarks/sass_compare.py main HEAD --glob 'sm90_*.cu'
    python benchmarks/sass_compare.py /tmp/old_src /tmp/new_src \\
        --old-include /tmp/old_inc --new-include backends/cuda/include

Configurations without a golden copy (split-K, stream-K, more FP8): write both trees' sources
with ``benchmarks/sass_sources.py`` and compare the two directories.

Output: one line per file (registers old -> new, spills, SASS identical or the instruction
count delta and the opcodes whose counts differ), then a summary.  Exit status 1 when a file
differs (``--strict``) or fails to compile.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = "tests/backend/golden/gemm"
INCLUDE = "backends/cuda/include"
CUOBJDUMP_CANDIDATES = ("/tmp/sm90cmp/cuobj/nvidia/cu13/bin/cuobjdump", "cuobjdump")


def _git(repo: Path, *args, binary=False):
    out = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return out.stdout if binary else out.stdout.decode()


def _is_rev(repo: Path, x: str) -> bool:
    if os.path.isdir(x):
        return False
    r = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", x + "^{commit}"],
                       capture_output=True)
    return r.returncode == 0


def _dir_hash(d: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(d.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(d)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


class Side:
    """One side of the comparison: ``sources()`` -> {file name: text}, ``include``: a dir."""

    def __init__(self, spec: str, include: str | None, golden: str, glob: str, repo: Path,
                 cache: Path):
        self.spec, self.glob = spec, glob
        if _is_rev(repo, spec):
            rev = _git(repo, "rev-parse", spec).strip()
            self._files = {}
            for path in _git(repo, "ls-tree", "--name-only", f"{rev}:{golden}").split():
                if Path(path).match(glob):
                    self._files[path] = _git(repo, "show", f"{rev}:{golden}/{path}")
            inc_path = include or INCLUDE
            inc = cache / "inc" / f"{rev[:12]}_{hashlib.sha1(inc_path.encode()).hexdigest()[:6]}"
            if not inc.exists():
                data = _git(repo, "archive", rev, inc_path, binary=True)
                tmp = inc.with_suffix(".tmp")
                tmp.mkdir(parents=True, exist_ok=True)
                with tarfile.open(fileobj=io.BytesIO(data)) as t:
                    t.extractall(tmp)
                tmp.rename(inc)
            self.include = inc / inc_path
        else:
            d = Path(spec)
            self._files = {p.name: p.read_text() for p in sorted(d.glob(glob))}
            self.include = Path(include) if include else ROOT / INCLUDE
        self.inc_hash = _dir_hash(self.include)

    def sources(self) -> dict:
        return self._files


def _cuobjdump() -> str:
    for c in CUOBJDUMP_CANDIDATES:
        if os.path.isabs(c) and os.path.exists(c):
            return c
    return CUOBJDUMP_CANDIDATES[-1]


_RES = re.compile(r"Used (\d+) registers")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def compile_one(src: str, include: Path, inc_hash: str, arch: str, cache: Path) -> dict:
    """``{"regs", "stack", "spill_st", "spill_ld", "sass": {kernel: [instr, ...]}}`` of one
    source (cached by the hash of source, headers and flags)."""
    key = hashlib.sha256((src + inc_hash + arch).encode()).hexdigest()[:24]
    cu, cubin, log, sass = (cache / f"{key}{s}" for s in (".cu", ".cubin", ".log", ".sass"))
    if not cubin.exists():
        cache.mkdir(parents=True, exist_ok=True)
        cu.write_text(src)
        r = subprocess.run(["nvcc", f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-I",
                            str(include), "-o", str(cubin), str(cu)], capture_output=True,
                           text=True)
        log.write_text(r.stdout + r.stderr)
        if r.returncode:
            cubin.unlink(missing_ok=True)
            return {"error": (r.stdout + r.stderr)[-2000:]}
    if not sass.exists():
        r = subprocess.run([_cuobjdump(), "-sass", str(cubin)], capture_output=True, text=True,
                           check=True)
        sass.write_text(r.stdout)
    text = log.read_text()
    m, s = _RES.search(text), _SPILL.search(text)
    return {"regs": int(m.group(1)) if m else -1,
            "stack": int(s.group(1)) if s else -1,
            "spill_st": int(s.group(2)) if s else -1,
            "spill_ld": int(s.group(3)) if s else -1,
            "sass": normalize_sass(sass.read_text())}


_ADDR = re.compile(r"/\*[0-9a-f]{4,}\*/")
_COMMENT = re.compile(r"/\*.*?\*/")
_LABEL = re.compile(r"`\(\.L_x_\d+\)")


def normalize_sass(text: str) -> dict:
    """{function: [instruction, ...]}: addresses, encodings, comments dropped; branch labels
    renumbered in order of first use (so a shifted label is not a difference)."""
    out, cur = {}, None
    for ln in text.split("\n"):
        m = re.match(r"\s*Function : (\S+)", ln)
        if m:
            cur = out.setdefault(m.group(1), [])
            labels = {}
            continue
        if cur is None:
            continue
        s = ln.strip()
        if not s.startswith("/*") or not _ADDR.match(s):
            continue
        s = _ADDR.sub("", s, count=1)
        s = _COMMENT.sub("", s).strip().rstrip(";").strip()
        if not s:
            continue

        def lab(mm, labels=labels):
            return labels.setdefault(mm.group(0), f"L{len(labels)}")
        s = _LABEL.sub(lab, s)
        s = re.sub(r"\s+", " ", s)
        cur.append(s)
    return out


def opcode(instr: str) -> str:
    s = re.sub(r"^@!?U?P[T0-9]+ ", "", instr)
    return s.split(" ")[0]


def compare(old: dict, new: dict) -> dict:
    """Per-file facts: registers, spills, SASS identical, instruction counts and opcode deltas."""
    if "error" in old or "error" in new:
        return {"error": old.get("error") or new.get("error")}
    so, sn = old["sass"], new["sass"]
    io_ = [i for f in sorted(so) for i in so[f]]
    in_ = [i for f in sorted(sn) for i in sn[f]]
    co = collections.Counter(opcode(i) for i in io_)
    cn = collections.Counter(opcode(i) for i in in_)
    delta = {k: cn[k] - co[k] for k in set(co) | set(cn) if cn[k] != co[k]}
    return {"regs": (old["regs"], new["regs"]),
            "spills": ((old["spill_st"], old["spill_ld"]), (new["spill_st"], new["spill_ld"])),
            "stack": (old["stack"], new["stack"]),
            "identical": so == sn, "count": (len(io_), len(in_)), "opcodes": delta,
            "same_multiset": co == cn}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", help="directory of .cu files or git revision")
    ap.add_argument("new", help="directory of .cu files or git revision")
    ap.add_argument("--old-include", default=None,
                    help="header dir (directory side: default the work tree's; revision side: "
                         "a path inside the revision, default backends/cuda/include)")
    ap.add_argument("--new-include", default=None)
    ap.add_argument("--golden", default=GOLDEN, help="golden dir inside a revision")
    ap.add_argument("--glob", default="sm90_*.cu")
    ap.add_argument("--repo", default=str(ROOT))
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--cache", default="/tmp/h1_sass")
    ap.add_argument("--strict", action="store_true", help="exit 1 when any SASS differs")
    ap.add_argument("-k", default=None, help="only files whose name contains this")
    a = ap.parse_args(argv)
    repo, cache = Path(a.repo), Path(a.cache)
    old = Side(a.old, a.old_include, a.golden, a.glob, repo, cache)
    new = Side(a.new, a.new_include, a.golden, a.glob, repo, cache)
    so, sn = old.sources(), new.sources()
    names = sorted(set(so) & set(sn))
    if a.k:
        names = [n for n in names if a.k in n]
    for n in sorted(set(so) ^ set(sn)):
        print(f"only on one side: {n}")
    same = diff = err = 0
    for n in names:
        ro = compile_one(so[n], old.include, old.inc_hash, a.arch, cache)
        rn = ro if (so[n] == sn[n] and old.inc_hash == new.inc_hash) else \
            compile_one(sn[n], new.include, new.inc_hash, a.arch, cache)
        c = compare(ro, rn)
        if "error" in c:
            err += 1
            print(f"{n}: COMPILE ERROR\n{c['error']}")
            continue
        text_same = so[n] == sn[n]
        tag = "identical" if c["identical"] else (
            f"DIFFERS ({c['count'][0]} -> {c['count'][1]} instr, "
            f"{c['count'][1] - c['count'][0]:+d}; "
            + ("same opcode counts" if c["same_multiset"] else
               "opcodes " + ", ".join(f"{k}{v:+d}" for k, v in sorted(c["opcodes"].items())))
            + ")")
        same += c["identical"]
        diff += not c["identical"]
        print(f"{n}: regs {c['regs'][0]}->{c['regs'][1]}, spills st/ld {c['spills'][0]}->"
              f"{c['spills'][1]}, stack {c['stack'][0]}->{c['stack'][1]}, "
              f"{c['count'][1]} instr, SASS {tag}" + (" [same source]" if text_same else ""),
              flush=True)
    print(f"summary: {len(names)} files, {same} SASS identical, {diff} differ, {err} errors")
    return 1 if err or (a.strict and diff) else 0


if __name__ == "__main__":
    sys.exit(main())
