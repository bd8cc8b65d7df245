"""The gmem->smem tiled copy of an SM80 GEMM operand tile (``cp.async`` or vector loads).

A :class:`~cute_py.atom.tiled_copy.TiledCopy` over tile coordinates ``(r, k)`` of the ``(R, BK)``
operand tile (r = m for A, n for B).  :func:`gmem_tiled_copy` builds the row-major one the
generator ships (threads along the contiguous mode first, ``vec`` contiguous values each);
any other thread arrangement may be given to :func:`check_copy`.

Each thread's coordinates come from the TiledCopy's partition: ``tidfrg_S`` of the tile
``(R, BK)`` is ``(Thr, Frg, Rest) -> r + R*k``; iteration ``i`` of a thread is Rest index ``i``.
:func:`tile_coord` lowers it to IR (``r = idx % R``, ``k = idx // R``).

Law (tested): for every thread ``t``, iteration ``i`` and value ``v``, ``ir.evaluate`` of
:func:`tile_coord` equals the tile coordinate that ``tc.get_slice(t).partition_S`` of the tile
gives for ``(v, i)``; over all ``(t, i, v)`` the tile is covered exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cute_py.errors import AtomError

from ... import ir, lower
from . import address as _addr
from . import smem as _smem

__all__ = ["CP_ASYNC_BYTES", "gmem_tiled_copy", "partition", "iterations", "vector",
           "tile_coord", "coords", "check_copy", "copy_op", "CopyIssue"]

#: vector sizes ``cp.async`` moves (bytes)
CP_ASYNC_BYTES = (4, 8, 16)
_VT = {2: "float16", 4: "float32"}


def copy_op(vec_bytes: int, asynchronous: bool):
    """The copy atom's op: ``cp.async`` with zero-fill (``.cg`` for 16 bytes, ``.ca`` for 4/8)
    when ``asynchronous``, else a universal register copy of ``vec_bytes``."""
    from cute_py.atom.copy_traits import (SM80_CP_ASYNC_CACHEALWAYS_ZFILL,
                                          SM80_CP_ASYNC_CACHEGLOBAL_ZFILL, UniversalCopy)
    if asynchronous and vec_bytes == 16:
        return SM80_CP_ASYNC_CACHEGLOBAL_ZFILL(128)
    if asynchronous and vec_bytes in (4, 8):
        return SM80_CP_ASYNC_CACHEALWAYS_ZFILL(8 * vec_bytes)
    return UniversalCopy(8 * vec_bytes)


def gmem_tiled_copy(R: int, BK: int, major: str, vec: int, threads: int, elem_bytes: int,
                    asynchronous: bool = True):
    """The generator's tiled copy: ``cpl = contiguous/vec`` threads along the contiguous mode
    (``k`` when ``major == "K"``, ``r`` otherwise), ``threads/cpl`` lines, ``vec`` values."""
    from cute_py.atom.copy_atom import make_copy_atom
    from cute_py.atom.tiled_copy import make_tiled_copy
    from cute_py.layout import make_layout
    contiguous = BK if major == "K" else R
    if contiguous % vec or threads % max(1, contiguous // vec):
        raise AtomError("gmem_tiled_copy", "vec", "the contiguous mode does not split over the "
                        "threads", actual=(R, BK, major, vec, threads))
    cpl = contiguous // vec
    lines = threads // cpl
    atom = make_copy_atom(copy_op(vec * elem_bytes, asynchronous), _VT[elem_bytes])
    if major == "K":
        return make_tiled_copy(atom, make_layout((lines, cpl), (cpl, 1)), make_layout((1, vec)))
    return make_tiled_copy(atom, make_layout((cpl, lines), (1, cpl)), make_layout((vec, 1)))


def partition(tc, R: int, BK: int):
    """``(Thr, Frg, Rest) -> r + R*k``: the tiled copy's partition of the ``(R, BK)`` tile."""
    from cute_py.layout import make_layout
    tile = tc.tile_shape
    if R % tile[0] or BK % tile[1]:
        raise AtomError("gmem_tiled_copy", "tiled_copy", "its tile does not divide the operand "
                        "tile", expected=f"divisor of {(R, BK)}", actual=tile)
    return tc.tidfrg_S(make_layout((R, BK)))


def iterations(tc, R: int, BK: int) -> int:
    """Copies per thread (the Rest size)."""
    return (R * BK) // (tc.num_threads * tc.num_values)


def vector(tc) -> int:
    """Values per thread per copy (the atom's vector)."""
    return tc.num_values


def tile_coord(tc, R: int, BK: int, tid, i, v=0):
    """``(r, k)`` of value ``v`` of copy ``i`` of thread ``tid`` (IR nodes / ints)."""
    F = partition(tc, R, BK)
    idx = lower.layout_apply(F, (tid, v, i))
    return ir.mod(idx, R), ir.floordiv(idx, R)


def coords(tc, R: int, BK: int):
    """NumPy ``(r, k)`` arrays of shape ``(threads, iterations, vec)``: the lowered map
    evaluated over every thread, copy and value."""
    T, n, V = tc.num_threads, iterations(tc, R, BK), tc.num_values
    t = np.arange(T).reshape(T, 1, 1)
    i = np.arange(n).reshape(1, n, 1)
    v = np.arange(V).reshape(1, 1, V)
    tid, it, vv = ir.var("tid", 0, T - 1), ir.var("i", 0, n - 1), ir.var("v", 0, V - 1)
    r, k = tile_coord(tc, R, BK, tid, it, vv)
    env = {"tid": t, "i": i, "v": v}
    shape = (T, n, V)
    return (np.broadcast_to(ir.evaluate(r, env), shape),
            np.broadcast_to(ir.evaluate(k, env), shape))


def check_copy(tc, L, R: int, BK: int, major: str, elem_bytes: int, name: str = "copy",
               asynchronous: bool = True):
    """Raise :class:`AtomError` where the hardware forbids the copy ``tc`` into smem layout
    ``L``: a vector that is not 4/8/16 bytes (``cp.async``), values of one vector that are not
    contiguous in gmem (along the contiguous mode) or in smem, a vector not aligned to its size
    in smem, or a copy that does not cover the tile exactly once."""
    op = "make_gemm_sm80"
    V = tc.num_values
    vb = V * elem_bytes
    if asynchronous and vb not in CP_ASYNC_BYTES:
        raise AtomError(op, name, "cp.async moves 4, 8 or 16 bytes per thread",
                        expected=CP_ASYNC_BYTES, actual=vb)
    if (R * BK) % (tc.num_threads * V):
        raise AtomError(op, name, "does not split the tile evenly over its threads",
                        expected=f"a divisor of {R * BK} elements", actual=tc.num_threads * V)
    r, k = coords(tc, R, BK)
    lin = r + R * k
    if sorted(lin.reshape(-1).tolist()) != list(range(R * BK)):
        raise AtomError(op, name, "does not cover the operand tile exactly once",
                        actual=str(tc.layout_tv))
    contig = k if major == "K" else r
    other = r if major == "K" else k
    if not (np.all(contig == contig[:, :, :1] + np.arange(V)) and np.all(other == other[:, :, :1])):
        raise AtomError(op, name, "a thread's vector is not contiguous in global memory "
                        "(along the operand's contiguous mode)", actual=str(tc.layout_tv))
    rr, kk = ir.var("r", 0, R - 1), ir.var("k", 0, BK - 1)
    off = ir.evaluate(_smem.offset(L, rr, kk), {"r": r, "k": k})
    if not np.all(off == off[:, :, :1] + np.arange(V)):
        raise AtomError(op, name, "a thread's vector is not contiguous in the smem layout",
                        expected="V consecutive offsets", actual=str(L))
    if np.any((off[:, :, 0] * elem_bytes) % vb):
        raise AtomError(op, name, "a vector is not aligned to its size in shared memory",
                        expected=f"{vb}-byte aligned", actual=str(L))
    return tc


# ------------------------------------------------------------------------------ emission


@dataclass(frozen=True)
class CopyIssue:
    """The statements one operand's gmem->smem copies emit (residue predicates included).

    The kernel keeps, per operand (prefix ``x`` = ``a``/``b``), the thread's tile coordinate
    of copy 0 (``xc_r``, ``xc_k``, lowered from the partition), its smem byte offset
    ``xc_s``, a gmem pointer ``xc_g`` and, for an affine copy, ``xc_step`` / ``xc_n``.
    ``affine``: ``(DR, DS)`` (copy i is ``i*DR`` lines and ``i*DS`` smem elements on) or None;
    ``steps``: per copy ``(dr, dk, ds)`` (used when not affine).

    Ragged M / N / K: copy ``i`` reads ``n`` of its ``vec`` elements -- 0 when its line is past
    the extent of the strided mode, else what is left of the contiguous mode (at most ``vec``);
    ``cp.async`` zero-fills the rest (``src-size``), the register path fills zeros.

    ``realign``: the source is aligned only to its element (rows of odd pitch): a copy of a
    whole 16-byte vector loads the two aligned 16-byte vectors that hold it plus its byte
    offset in them (:attr:`words` registers, ``ld_chunk_realign``), and the shared store shifts
    it into place (``st_chunk_realign``); a ragged copy loads its elements one by one.  The
    staged words are the raw loads, so the shift waits for them only at the store.
    """

    op: str
    major: str
    vec: int
    elem_bytes: int
    stage_bytes: int
    affine: object
    steps: tuple
    stages: int = 1
    realign: bool = False

    @property
    def x(self) -> str:
        return self.op.lower()

    @property
    def ld(self) -> str:
        return "lda" if self.op == "A" else "ldb"

    @property
    def ext(self) -> tuple[str, str]:
        return ("M", "m0") if self.op == "A" else ("N", "n0")

    @property
    def sbase(self) -> str:
        return "sA" if self.op == "A" else "sB"

    @property
    def synchronous(self) -> bool:
        """The copy is narrower than ``cp.async``'s 4 bytes: a register load and a shared
        store (the mainloop stages it through registers)."""
        return self.vec * self.elem_bytes < 4 or self.realign

    @property
    def words(self) -> int:
        """u32 registers one staged copy holds: its vector, or for a realigned copy the two
        aligned 16-byte vectors and the byte offset."""
        return 9 if self.realign else max(1, self.vec * self.elem_bytes // 4)

    def smem_delta(self, i: int):
        """Bytes from the thread's copy 0 to its copy ``i`` in the stage when the same for
        every thread (evaluated from the smem layout), else None."""
        if self.affine is None:
            ds = self.steps[i][2]
            return None if ds is None else ds * self.elem_bytes
        DS = self.affine[1]
        return None if DS is None else i * DS * self.elem_bytes

    def smem_at(self, i: int) -> str:
        """``smem_off_X`` (the smem layout's lowered device function) of copy ``i``'s
        coordinate, in bytes: the byte offset in the stage when :meth:`smem_delta` is None."""
        x, eb, op = self.x, self.elem_bytes, self.op
        if self.affine is None:
            dr, dk, _ = self.steps[i]
            return f"smem_off_{op}({x}c_r + {dr}, {x}c_k + {dk}) * {eb}"
        DR, _ = self.affine
        if self.major == "K":
            return f"smem_off_{op}({x}c_r + {i * DR}, {x}c_k) * {eb}"
        return f"smem_off_{op}({x}c_r, {x}c_k + {i * DR}) * {eb}"

    def smem_dst(self, b, i: int, stage) -> str:
        """C text of the u32 shared address copy ``i`` writes in stage ``stage`` (IR node or
        int): the stage layout's address (:func:`address.stage_address`) plus the thread's
        byte offset ``xc_s`` and the copy's constant delta, as one IR expression; or, when the
        delta differs between threads, plus the ``smem_off_X`` call (:meth:`smem_at`)."""
        base = _addr.stage_address(self.sbase, self.stages, self.stage_bytes, stage)
        d = self.smem_delta(i)
        if d is not None:
            return b.expr(base + _addr.smem_var(f"{self.x}c_s") + d)
        return f"{b.expr(base)} + {self.smem_at(i)}"

    def count_and_source(self, b, i: int, kbase) -> tuple[str, str]:
        """``(n, src)``: the elements copy ``i`` reads at k-tile origin ``kbase`` (IR node or
        int) and from where: ``xc_g`` plus copy ``i``'s offset from copy 0 (the iteration
        layout at ``i``, or the gmem layout at the copy's ``(dr, dk)``) plus the gmem layout
        at ``(0, kbase)`` (:mod:`.address`)."""
        x, vec = self.x, self.vec
        ext, mn0 = self.ext
        kb = f"({b.expr(kbase)})"
        if self.affine is None:
            dr, dk, _ = self.steps[i]
            delta = _addr.gmem_offset(self.op, self.major, dr, dk)
            if self.major == "K":
                n = (f"(({mn0} + {x}c_r + {dr} < {ext}) ? "
                     f"max(0, min({vec}, K - {kb} - {x}c_k - {dk})) : 0)")
            else:
                n = (f"(({kb} + {x}c_k + {dk} < K) ? "
                     f"max(0, min({vec}, {ext} - {mn0} - {x}c_r - {dr})) : 0)")
        else:
            DR, _ = self.affine
            delta = _addr.iteration_offset(self.op, len(self.steps), i)
            if self.major == "K":
                n = (f"(({mn0} + {x}c_r + {i * DR} < {ext}) ? "
                     f"max(0, min({vec}, K - {kb} - {x}c_k)) : 0)")
            else:
                n = f"(({kb} + {x}c_k + {i * DR} < K) ? {x}c_n : 0)"
        src = f"{x}c_g"
        for term in (delta, _addr.gmem_offset(self.op, self.major, 0, kbase)):
            if not (term.is_const and term.value == 0):
                src += f" + ({b.expr(term)})"
        return n, src

    def emit(self, b, i: int, stage: str, kbase: str, asynchronous: bool,
             reg: str | None = None) -> None:
        """Copy ``i`` of k-tile ``kbase``: ``cp.async`` with zero-fill into ``stage``
        (``asynchronous``; element copies below 4 bytes), or a load into registers ``reg``."""
        eb, vb, op = self.elem_bytes, self.vec * self.elem_bytes, self.op
        n, src = self.count_and_source(b, i, kbase)
        dst = self.smem_dst(b, i, stage)
        if asynchronous and vb >= 4:
            cp = b.call_expr("cp_async_zfill", dst, f"n ? {src} : {op}", f"n * {eb}",
                             template=str(vb))
            b.line(f"{{ const int n = {n}; {cp}; }}")
        elif asynchronous:  # narrower than cp.async's 4 bytes: synchronous element copy
            b.line(f"{{ const int n = {n}; u32 v[{self.words}]; {self._load('v', src)}; "
                   f"{self._store(dst, 'v')}; }}")
        else:  # register-staged: load into reg
            b.line(f"{{ const int n = {n}; {self._load(reg, src)}; }}")

    def _load(self, reg: str, src: str) -> str:
        fn = "ld_chunk_realign" if self.realign else "ld_chunk"
        return f"{fn}<{self.vec}>({reg}, n ? {src} : {self.op}, n)"

    def _store(self, dst: str, reg: str) -> str:
        fn = "st_chunk_realign" if self.realign else "st_chunk"
        return f"{fn}<{self.vec * self.elem_bytes}>({dst}, {reg})"

    def emit_store(self, b, i: int, stage: str, reg: str) -> None:
        """Registers ``reg`` (copy ``i``) into ``stage`` of shared memory."""
        b.line(self._store(self.smem_dst(b, i, stage), reg) + ";")
