"""Shared-memory bank-conflict and vectorisation analysis of copies — on the CPU, before a kernel.

Model (NVIDIA shared memory, sm_80/sm_90): 32 banks of 4 bytes; bank of byte address ``a`` is
``(a // 4) % 32``. A warp-wide instruction is served in *phases*; a phase is one wavefront when
no bank holds two different 4-byte words (threads reading the same word are broadcast), else as
many wavefronts as the most-loaded bank has distinct words. Phases:

* ``ldmatrix`` / ``stmatrix`` ``.xN``: one phase per 8x8 matrix — the 8 rows of 16 bytes whose
  addresses threads ``8j .. 8j+7`` supply;
* a vectorised access of ``W`` bytes per thread (``st.shared`` / ``ld.shared`` / ``cp.async``
  from a ``UniversalCopy``/``cp.async`` TiledCopy): phases of ``128 / max(W, 4)`` consecutive
  threads (8 threads for 128-bit, 16 for 64-bit, the whole warp for 32 bits and below).

The ideal is one wavefront per 128 bytes moved in a phase; ``conflicts = wavefronts - ideal``.

:func:`copy_bank_conflicts` takes a TiledCopy, the shared-memory layout of the tile
(``coord -> element offset``, a Layout or a swizzled ComposedLayout) and the side of the copy
that is shared memory; it enumerates every instruction every warp issues over the whole tile
and reports per-instruction wavefronts. :func:`vector_width` gives the widest vector a
gmem<->smem copy can use between two layouts (``max_common_vector`` and alignment, swizzles
included).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import int_tuple as it
from .algebra import max_common_vector
from .atom.tiled_copy import TiledCopy
from .composed import as_position_independent_swizzle_layout
from .errors import AtomError
from .layout import Layout, layout_table

__all__ = ["bank_of", "phase_wavefronts", "BankReport", "InstructionAccess",
           "copy_bank_conflicts", "vector_width", "NUM_BANKS", "BANK_BYTES"]

NUM_BANKS = 32
BANK_BYTES = 4


def bank_of(byte_addr: int) -> int:
    """``(byte_addr // 4) % 32``."""
    return (byte_addr // BANK_BYTES) % NUM_BANKS


def phase_wavefronts(accesses) -> int:
    """Wavefronts of one phase: ``accesses`` is a list of ``(byte_address, nbytes)``. Law: the
    most-loaded bank's number of distinct 4-byte words (>= 1 when anything is accessed)."""
    words_per_bank: dict = {}
    for addr, nbytes in accesses:
        for w in range(addr // BANK_BYTES, (addr + nbytes - 1) // BANK_BYTES + 1):
            words_per_bank.setdefault(w % NUM_BANKS, set()).add(w)
    if not words_per_bank:
        return 0
    return max(len(s) for s in words_per_bank.values())


@dataclass(frozen=True)
class InstructionAccess:
    """One warp-wide instruction: ``warp``, ``call`` (its index in the warp's sequence),
    ``phases`` (lists of ``(byte_addr, nbytes)``), ``wavefronts`` and ``ideal``."""

    warp: int
    call: int
    phases: tuple
    wavefronts: int
    ideal: int

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal


@dataclass(frozen=True)
class BankReport:
    """Result of :func:`copy_bank_conflicts`. ``instructions`` (every warp instruction),
    ``wavefronts``/``ideal`` totals, ``conflict_free``; ``str()`` summarises with the worst
    instruction's banks."""

    copy_name: str
    side: str
    smem_layout: str
    elem_bits: int
    instructions: tuple

    @property
    def wavefronts(self) -> int:
        return sum(i.wavefronts for i in self.instructions)

    @property
    def ideal(self) -> int:
        return sum(i.ideal for i in self.instructions)

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal

    @property
    def conflict_free(self) -> bool:
        return self.wavefronts == self.ideal

    @property
    def max_wavefronts_per_instruction(self) -> int:
        return max(i.wavefronts for i in self.instructions)

    @property
    def ideal_per_instruction(self) -> int:
        return max(i.ideal for i in self.instructions)

    def __str__(self):
        n = len(self.instructions)
        worst = max(self.instructions, key=lambda i: i.conflicts)
        lines = [f"bank conflicts of {self.copy_name} ({self.side} side in shared memory) over "
                 f"{self.smem_layout}, {self.elem_bits}-bit elements:",
                 f"  {n} warp instructions, {self.wavefronts} wavefronts (ideal {self.ideal}), "
                 f"{self.conflicts} extra: "
                 + ("conflict-free" if self.conflict_free else
                    f"{self.max_wavefronts_per_instruction} wavefronts per instruction where "
                    f"{self.ideal_per_instruction} would do "
                    f"({self.max_wavefronts_per_instruction / self.ideal_per_instruction:.0f}x)")]
        ph = worst.phases[0]
        lines.append(f"  worst: warp {worst.warp} call {worst.call}: phase 0 banks "
                     f"{[bank_of(a) for a, _n in ph]}")
        return "\n".join(lines)


def _offsets(L, n):
    if isinstance(L, Layout):
        return layout_table(L)
    return [L(i) for i in range(n)]


def _smem_layout(x):
    """A Tensor's layout; a GMMA atom (``Sw o smem_ptr[b] o L``) in its element form."""
    x = getattr(x, "layout", x) if not isinstance(x, Layout) and hasattr(x, "data") else x
    return as_position_independent_swizzle_layout(x)


def copy_bank_conflicts(tiled_copy, smem_layout, side: str | None = None, elem_bits=None,
                        base_byte: int = 0, byte_swizzle=None) -> BankReport:
    """Per-instruction shared-memory wavefronts of ``tiled_copy`` over a shared-memory tile.

    ``smem_layout``: ``coord -> element offset`` of the whole tile (shape a multiple of the
    copy's tile; a Layout or a swizzled ComposedLayout in element units). ``side``: ``"S"``
    when the copy reads shared memory (ldmatrix, ``ld.shared``), ``"D"`` when it writes it
    (stmatrix, ``st.shared``, ``cp.async``); default from the atom. ``elem_bits`` defaults to
    the atom's value type. ``byte_swizzle`` (a Swizzle) is applied to the final byte addresses
    (``Swizzle(3,4,3)`` on bytes == ``Swizzle(3,3,3)`` on fp16 element offsets). A GMMA layout
    atom (``Sw o smem_ptr[b] o L``) is read in its element form. Every warp's every instruction
    over the tile is enumerated."""
    if not isinstance(tiled_copy, TiledCopy):
        raise AtomError("copy_bank_conflicts", "tiled_copy", "must be a TiledCopy", actual=repr(tiled_copy))
    atom = tiled_copy.atom
    op = atom.op
    if side is None:
        side = "S" if op.src_space == "smem" else "D" if op.dst_space == "smem" else None
        if side is None:
            raise AtomError("copy_bank_conflicts", "side", "must be given ('S' or 'D') for "
                            f"{op.name}, which does not name a shared-memory side")
    if side not in ("S", "D"):
        raise AtomError("copy_bank_conflicts", "side", "must be 'S' or 'D'", actual=side)
    smem_layout = _smem_layout(smem_layout)
    ebits = elem_bits or atom.value_bits
    ebytes = ebits // 8
    shape = smem_layout.shape
    if not isinstance(shape, tuple):
        shape = (shape,)
    flat_shape = tuple(it.product(s) for s in shape)
    for i, t in enumerate(tiled_copy.tile_shape):
        if i >= len(flat_shape) or flat_shape[i] % t:
            raise AtomError("copy_bank_conflicts", "smem_layout", "shape must be a multiple of "
                            "the copy's tile", expected=tiled_copy.tile_shape, actual=flat_shape)
    size = it.product(flat_shape)
    smem_off = _offsets(smem_layout, size)
    ref = Layout(flat_shape)                       # coord -> 1-D coordinate index
    VA = atom.num_val_src if side == "S" else atom.num_val_dst
    T = tiled_copy.size()
    per_thread = []
    for t in range(T):
        lay, off = tiled_copy.get_slice(t).partition_layout(ref, side)
        per_thread.append([smem_off[off + j] for j in layout_table(lay)])
    ncalls = len(per_thread[0]) // VA
    matrix = op.kind in ("ldmatrix", "stmatrix")
    vec_bytes = VA * ebytes
    insts = []
    for w in range((T + 31) // 32):
        threads = list(range(32 * w, min(32 * w + 32, T)))
        for c in range(ncalls):
            acc = {}
            for t in threads:
                offs = per_thread[t][c * VA:(c + 1) * VA]
                if matrix:
                    # each thread's 8 (or 16 / 32 for .x2/.x4 via values) contiguous b16 rows
                    rows = [offs[i:i + 8 * 16 // ebits] for i in range(0, len(offs), 8 * 16 // ebits)]
                    acc[t] = [(r[0] * ebytes, 16) for r in rows]
                    for r in rows:
                        if [o - r[0] for o in r] != list(range(len(r))):
                            raise AtomError("copy_bank_conflicts", "smem_layout",
                                            f"is not contiguous over the 16-byte rows {op.name} "
                                            f"needs (thread {t}: offsets {r})")
                else:
                    start = offs[0]
                    if [o - start for o in offs] != list(range(len(offs))):
                        raise AtomError("copy_bank_conflicts", "smem_layout",
                                        f"is not contiguous over the {vec_bytes}-byte vectors "
                                        f"{op.name} moves (thread {t}: offsets {offs[:8]})")
                    acc[t] = [(start * ebytes, vec_bytes)]
            phases = []
            if matrix:
                nmat = int(op.ptx.split(".x")[1][0])
                phases = _ldsm_phases(acc, threads, nmat)
            else:
                per_phase = max(1, 128 // max(vec_bytes, 4))
                for p in range(0, len(threads), per_phase):
                    phases.append([a for t in threads[p:p + per_phase] for a in acc[t]])
            if byte_swizzle is not None:
                phases = [[(byte_swizzle(base_byte + a) - base_byte, n) for a, n in ph] for ph in phases]
            wf = sum(phase_wavefronts([(base_byte + a, n) for a, n in ph]) for ph in phases)
            ideal = sum(max(1, -(-sum(n for _a, n in ph) // 128)) for ph in phases)
            insts.append(InstructionAccess(w, c, tuple(tuple(ph) for ph in phases), wf, ideal))
    desc = str(smem_layout) + (f" with {byte_swizzle} on byte addresses" if byte_swizzle else "")
    return BankReport(op.name, side, desc, ebits, tuple(insts))


def _ldsm_phases(acc, threads, nmat):
    """Phases of ldmatrix/stmatrix: the CuTe src (ldmatrix) / dst (stmatrix) layouts give each
    thread ``nmat`` 16-byte rows in the x4 case (one 16-byte row per thread per matrix); the
    hardware takes matrix j's row r from thread ``8j + r``."""
    rows = {}
    for t in threads:
        for (a, n) in acc[t]:
            rows.setdefault(t, []).append((a, n))
    phases = []
    first = threads[0]
    for j in range(nmat):
        ph = []
        for r in range(8):
            t = first + 8 * j + r
            lst = rows.get(t) or rows[first + r]
            ph.append(lst[0])
        phases.append(ph)
    return phases


def vector_width(a, b, elem_bits: int, max_bits: int = 128) -> int:
    """The widest vector (in bits, a power of two, at most ``max_bits``) a copy between layouts
    ``a`` and ``b`` (``coord -> element offset``; either may be swizzled) can move per thread:
    the number of elements both keep contiguous and aligned, times ``elem_bits``. For plain
    layouts it is ``max_common_vector(a, b) * elem_bits`` rounded down to a power of two."""
    for name, v in (("elem_bits", elem_bits), ("max_bits", max_bits)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise AtomError("vector_width", name, "must be a positive int", actual=repr(v))
    a, b = _smem_layout(a), _smem_layout(b)
    for name, v in (("a", a), ("b", b)):
        if not (isinstance(v, Layout) or hasattr(v, "layout_b")):
            raise AtomError("vector_width", name, "must be a Layout or a swizzled layout",
                            actual=repr(v))
    if isinstance(a, Layout) and isinstance(b, Layout):
        n = max_common_vector(a, b)
    else:
        size = a.size()
        if not isinstance(size, int) or size > 1 << 24 or b.size() != size:
            raise AtomError("vector_width", "a", "a swizzled pair must have the same static "
                            "size, at most 2**24 elements", actual=(size, b.size()))
        oa, ob = _offsets(a, size), _offsets(b, size)
        inv = {o: i for i, o in enumerate(oa)}          # a's offset -> domain index
        n = 1
        while n * 2 * elem_bits <= max_bits and size % (n * 2) == 0:
            m = n * 2
            ok = True
            for o in range(0, max(oa) + 1, m):
                if o not in inv:
                    continue
                i0 = inv[o]
                if ob[i0] % m:
                    ok = False
                    break
                for j in range(1, m):
                    ij = inv.get(o + j)
                    if ij is None or ob[ij] != ob[i0] + j:
                        ok = False
                        break
                if not ok:
                    break
            if not ok:
                break
            n = m
    n = 1 << (max(n, 1).bit_length() - 1)
    return min(n * elem_bits, max_bits)
