"""Compare two CUDA sources' machine code on the CPU (no GPU): registers, spills and SASS.

For every file name given, compiles the ``old`` and the ``new`` source with ``nvcc -cubin
-Xptxas -v`` (each with its own include directory) for every ``--arch``, disassembles with
``cuobjdump -sass`` and prints per file and arch: registers old/new, spill stores/loads, whether
the SASS is identical (addresses and encodings stripped), and the instruction counts by opcode
of the innermost loop that issues the most MMA instructions (HMMA / IMMA / HGMMA...) -- the
k-loop of a GEMM mainloop -- with the opcodes whose count differs.

Cubins are cached under ``--cache`` by the SHA-256 of (source, include tree name, arch), so a
re-run only compiles what changed.  One nvcc at a time.

Output per file and arch: ``regs OLD/NEW spill ... sass IDENTICAL | same-mod-regs | differs
ins OLD/NEW loop OLD/NEW loop-same(mod regs) | loop-differs {opcode: new - old}``;
``--loop`` also prints a diff of the two mainloops.

Usage (old sources of the pre-builder tag, with their headers)::

    mkdir -p /tmp/old/src /tmp/old/inc
    git archive pre-builder backends/cuda/include | tar -x -C /tmp/old/inc
    for f in $(git ls-tree --name-only pre-builder:tests/backend/golden/gemm/ | grep ^sm80); do
        git show pre-builder:tests/backend/golden/gemm/$f > /tmp/old/src/$f; done
    python benchmarks/sass_compare_sm80.py --old-dir /tmp/old/src \\
        --old-inc /tmp/old/inc/backends/cuda/include [--arch sm_90a --arch sm_80] [--loop] \\
        sm80_fused_gelu.cu ...
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import re
import subprocess
import sys

CUOBJDUMP = os.environ.get("CUOBJDUMP", "/tmp/sm90cmp/cuobj/nvidia/cu13/bin/cuobjdump")


def compile_cubin(src_path: str, inc: str, arch: str, cache: str) -> tuple[str, str]:
    """(cubin path, ptxas -v log), cached by content."""
    text = open(src_path, "rb").read()
    h = hashlib.sha256(text + inc.encode() + arch.encode()).hexdigest()[:20]
    cub = os.path.join(cache, f"{h}.cubin")
    log = cub + ".log"
    if not os.path.exists(cub):
        cu = os.path.join(cache, f"{h}.cu")
        with open(cu, "wb") as f:
            f.write(text)
        r = subprocess.run(["nvcc", f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-I", inc,
                            "-o", cub, cu], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"nvcc failed on {src_path} ({arch}):\n{r.stderr[-3000:]}")
        with open(log, "w") as f:
            f.write(r.stderr + r.stdout)
    return cub, open(log).read()


def ptxas_stats(log: str) -> dict:
    """Registers / spill bytes / stack of the (last) kernel in a ptxas -v log."""
    out = {}
    m = re.findall(r"Used (\d+) registers", log)
    out["regs"] = int(m[-1]) if m else None
    m = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    out["spill"] = (int(m[-1][0]), int(m[-1][1])) if m else None
    m = re.findall(r"(\d+) bytes stack frame", log)
    out["stack"] = int(m[-1]) if m else None
    return out


_INS = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def sass(cubin: str) -> list[tuple[int, str]]:
    """[(address, instruction text)] of the cubin's code, encodings dropped."""
    r = subprocess.run([CUOBJDUMP, "-sass", cubin], capture_output=True, text=True, check=True)
    out = []
    for line in r.stdout.splitlines():
        m = _INS.match(line)
        if m:
            out.append((int(m.group(1), 16), m.group(2).strip()))
    return out


def opcode(ins: str) -> str:
    body = re.sub(r"^@!?U?P\w+\s+", "", ins)
    return body.split()[0] if body else ""


def normalize(ins: str) -> str:
    """Branch targets and labels are addresses: drop them so that a shifted program compares
    equal when only its length before the branch changed."""
    return re.sub(r"0x[0-9a-f]+|`\(\.L_x_\d+\)", "#", ins)


def _target(ins: str):
    m = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)", ins)
    return int(m.group(1), 16) if m else None


def inner_loop(code: list[tuple[int, str]]) -> list[str]:
    """The mainloop: backward-branch loops, overlapping ones merged (a software-pipelined
    k-loop is often two interleaved loops, one holding the copy issue), the merged range with
    the most MMA instructions (HMMA / IMMA / HGMMA)."""
    loops = []
    for addr, ins in code:
        t = _target(ins) if opcode(ins) == "BRA" else None
        if t is None or t > addr:
            continue
        loops.append([t, addr])
    loops.sort()
    merged = []
    for lo, hi in loops:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    best, key = [], None
    for lo, hi in merged:
        body = [x for a, x in code if lo <= a <= hi]
        k = sum(1 for x in body if "MMA" in opcode(x))
        if key is None or k > key:
            best, key = body, k
    return best


def canon(seq: list[str]) -> list[str]:
    """Registers renamed in order of first use (R, UR, P, UP separately): two streams that
    differ only in register allocation compare equal."""
    names: dict = {}

    def sub(m):
        r = m.group(0)
        if r in ("RZ", "URZ", "PT", "UPT"):
            return r
        kind = re.match(r"[A-Z]+", r).group(0)
        if r not in names:
            names[r] = f"{kind}{sum(1 for k in names if re.match(r'[A-Z]+', k).group(0) == kind)}"
        return names[r]
    return [re.sub(r"\b(?:U?R|U?P)(?:\d+|Z|T)\b", sub, normalize(x)) for x in seq]


def counts(ins: list[str]) -> collections.Counter:
    return collections.Counter(opcode(x).split(".")[0] for x in ins)


def compare(name: str, old_dir: str, old_inc: str, new_dir: str, new_inc: str, arch: str,
            cache: str, show_loop: bool = False) -> dict:
    oc, ol = compile_cubin(os.path.join(old_dir, name), old_inc, arch, cache)
    nc, nl = compile_cubin(os.path.join(new_dir, name), new_inc, arch, cache)
    so, sn = ptxas_stats(ol), ptxas_stats(nl)
    ao, an = sass(oc), sass(nc)
    same = [normalize(x) for _, x in ao] == [normalize(x) for _, x in an]
    same_mod_regs = same or canon([x for _, x in ao]) == canon([x for _, x in an])
    lo, ln = inner_loop(ao), inner_loop(an)
    co, cn = counts(lo), counts(ln)
    delta = {k: cn[k] - co[k] for k in sorted(set(co) | set(cn)) if cn[k] != co[k]}
    res = dict(name=name, arch=arch, regs=(so["regs"], sn["regs"]),
               spill=(so["spill"], sn["spill"]), stack=(so["stack"], sn["stack"]),
               sass_identical=same, sass_same_mod_regs=same_mod_regs,
               total=(len(ao), len(an)), loop=(len(lo), len(ln)),
               loop_same=canon(lo) == canon(ln),
               loop_delta=delta)
    if show_loop:
        res["loop_old"], res["loop_new"] = lo, ln
    return res


def _verdict(r) -> str:
    if r["sass_identical"]:
        return "IDENTICAL"
    return "same-mod-regs" if r["sass_same_mod_regs"] else "differs"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old-dir", required=True)
    ap.add_argument("--old-inc", required=True)
    ap.add_argument("--new-dir", default="tests/backend/golden/gemm")
    ap.add_argument("--new-inc", default="backends/cuda/include")
    ap.add_argument("--arch", action="append")
    ap.add_argument("--cache", default="/tmp/h2_sass/cache")
    ap.add_argument("--loop", action="store_true", help="print both inner loops")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    os.makedirs(a.cache, exist_ok=True)
    for name in a.files:
        for arch in a.arch or ["sm_90a", "sm_80"]:
            r = compare(name, a.old_dir, os.path.abspath(a.old_inc), a.new_dir,
                        os.path.abspath(a.new_inc), arch, a.cache, a.loop)
            print(f"{name} {arch}: regs {r['regs'][0]}/{r['regs'][1]} spill {r['spill'][0]}/"
                  f"{r['spill'][1]} stack {r['stack'][0]}/{r['stack'][1]} "
                  f"sass {_verdict(r)} "
                  f"ins {r['total'][0]}/{r['total'][1]} loop {r['loop'][0]}/{r['loop'][1]} "
                  f"{'loop-same(mod regs)' if r['loop_same'] else 'loop-differs'} "
                  f"{r['loop_delta']}",
                  flush=True)
            if a.loop:
                import difflib
                for line in difflib.unified_diff(r["loop_old"], r["loop_new"], "old", "new",
                                                 lineterm="", n=1):
                    print("   ", line)


if __name__ == "__main__":
    main()
