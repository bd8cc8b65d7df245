"""Vector accesses shared by the copy kernels (:mod:`.copy`, :mod:`.tiled_copy`).

Element and vector C types by width, and the statements of one vector access emitted into a
:class:`~backends.cuda.builder.KernelBuilder`: a 16-byte global access is a call into the PTX
library (``ld_global_128`` / ``st_global_128``, checked against the headers), a narrower one a
plain typed access; :func:`pack` / :func:`unpack` move between scalars and one vector.

Law: ``unpack(E, V, pack(E, V, xs), i) == xs[i]`` for element ``i`` of the vector (element 0 in
the lowest bytes), so a gather packed here stores the bytes a scalar loop would.
"""

from __future__ import annotations

__all__ = ["ETYPE", "VTYPE", "load", "store", "pack", "unpack", "guarded"]

#: element bytes -> C type of one element
ETYPE = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}
#: vector bytes -> C type of one vector
VTYPE = {1: "u8", 2: "u16", 4: "u32", 8: "u64", 16: "u128"}


def load(kb, vbytes: int, ptr: str, off) -> str:
    """C expression reading a ``vbytes``-wide vector at ``ptr + off`` (``off`` an IR node)."""
    addr = f"{ptr} + {kb.expr(off)}"
    if vbytes == 16:
        return kb.call_expr("ld_global_128", addr)
    return f"*reinterpret_cast<const {VTYPE[vbytes]}*>({addr})"


def store(kb, vbytes: int, ptr: str, off, val: str) -> None:
    """Emit the store of vector ``val`` (``vbytes`` wide) at ``ptr + off``."""
    addr = f"{ptr} + {kb.expr(off)}"
    if vbytes == 16:
        kb.call("st_global_128", addr, val)
    else:
        kb.stmt(f"*reinterpret_cast<{VTYPE[vbytes]}*>({addr}) = {val}")


def guarded(kb, pred):
    """A context emitting its statements under ``pred`` (no branch when it is constant true)."""
    if pred.is_const and pred.value:
        return _Unguarded()
    return kb.if_(pred)


class _Unguarded:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def pack(E: int, vb: int, names) -> str:
    """C expression packing ``vb`` scalars of ``E`` bytes (``names``) into one vector of
    ``vb * E`` bytes (u8/u16/u32/u64/u128, element 0 in the lowest bytes)."""
    nbytes = vb * E
    if vb == 1:
        return names[0]
    if nbytes == 2:  # two bytes
        return f"(u16)((u32){names[0]} | ((u32){names[1]} << 8))"
    words = []  # 32-bit words, lowest first
    if E >= 4:
        for n in names:
            words += [n] if E == 4 else [f"(u32){n}", f"(u32)({n} >> 32)"]
    else:
        per = 4 // E
        for w in range(nbytes // 4):
            parts = [f"(u32){names[w * per]}"] + [
                f"((u32){names[w * per + i]} << {8 * E * i})" for i in range(1, per)]
            words.append(" | ".join(parts))
    if nbytes == 4:
        return words[0]
    if nbytes == 8:
        return f"((u64)({words[1]}) << 32) | (u64)({words[0]})"
    return f"make_uint4({', '.join(words)})"


def unpack(E: int, V: int, name: str, i: int) -> str:
    """C expression of element ``i`` (``E`` bytes) of vector ``name`` (``V`` elements)."""
    et, nbytes = ETYPE[E], V * E
    if V == 1:
        return name
    if nbytes == 16:
        comps = ["x", "y", "z", "w"]
        if E == 8:
            return f"(((u64){name}.{comps[2 * i + 1]} << 32) | (u64){name}.{comps[2 * i]})"
        w, r = divmod(i * E, 4)
        word = f"{name}.{comps[w]}"
        return word if E == 4 else f"({et})({word} >> {8 * r})"
    return f"({et})({name} >> {8 * E * i})"
