"""kernels/vector_access.py: the vector C text both copy generators emit.

Law: ``unpack(E, V, pack(E, V, xs), i) == xs[i]`` (element 0 in the lowest bytes), checked by
compiling the C expressions on the host (g++) for every element width and vector length; 16-byte
accesses go through the PTX library (checked calls)."""

import shutil
import subprocess

import pytest

from backends.cuda import ir
from backends.cuda.builder import KernelBuilder
from backends.cuda.kernels.vector_access import ETYPE, VTYPE, load, pack, store, unpack

_PRELUDE = r"""
#include <cstdio>
typedef unsigned char u8; typedef unsigned short u16; typedef unsigned int u32;
typedef unsigned long long u64;
struct u128 { u32 x, y, z, w; };
static u128 make_uint4(u32 x, u32 y, u32 z, u32 w) { return u128{x, y, z, w}; }
int main() {
  int bad = 0;
"""


def _cases():
    for E in (1, 2, 4, 8):
        for V in (1, 2, 4, 8, 16):
            if V * E <= 16:
                yield E, V


def test_pack_then_unpack_is_identity(tmp_path):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    body = []
    for n, (E, V) in enumerate(_cases()):
        et, vt = ETYPE[E], VTYPE[V * E]
        names = [f"x{n}_{i}" for i in range(V)]
        for i, nm in enumerate(names):  # distinct bytes in every element
            val = sum(((0x11 * (i + 1) + 3 * b) & 0xFF) << (8 * b) for b in range(E))
            body.append(f"  const {et} {nm} = ({et}){val}ULL;")
        body.append(f"  const {vt} p{n} = {pack(E, V, names)};")
        for i, nm in enumerate(names):
            body.append(f"  if (({et})({unpack(E, V, f'p{n}', i)}) != {nm}) {{ "
                        f"printf(\"E=%d V=%d i=%d\\n\", {E}, {V}, {i}); ++bad; }}")
    src = tmp_path / "t.cpp"
    src.write_text(_PRELUDE + "\n".join(body) + "\n  return bad;\n}\n")
    exe = tmp_path / "t"
    subprocess.run([cxx, "-O0", "-o", str(exe), str(src)], check=True, capture_output=True)
    r = subprocess.run([str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_16_byte_accesses_are_library_calls():
    kb = KernelBuilder("k", threads=32, origin="test")
    off = ir.thread_idx(32) * 4
    assert load(kb, 16, "src", off) == "ld_global_128(src + tid * 4)"
    assert load(kb, 8, "src", off) == "*reinterpret_cast<const u64*>(src + tid * 4)"
    store(kb, 16, "dst", off, "v")
    store(kb, 4, "dst", off, "w")
    assert kb.lines[-2:] == ["  st_global_128(dst + tid * 4, v);",
                             "  *reinterpret_cast<u32*>(dst + tid * 4) = w;"]
