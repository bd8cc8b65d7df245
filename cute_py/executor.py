"""A NumPy reference executor for TiledMMA and TiledCopy — thread by thread, as the hardware does.

:func:`execute_tiled_mma` runs a GEMM tile the way a kernel built from a TiledMMA does:

1. every thread ``t`` takes ``ThrMMA = mma.get_slice(t)`` and gathers its register fragments
   ``partition_A(A)``, ``partition_B(B)`` (shape ``(MMA, MMA_M|N, MMA_K)``) and zeroed
   accumulators ``partition_fragment_C``;
2. for each ``k`` block and each ``(m, n)`` block, every atom instance (the ``ThrV`` threads that
   share a ``(ThrM, ThrN, ThrK)`` coordinate of ``thr_layout_vmnk``) executes
   :func:`execute_mma_atom`: the atom's A/B tiles are assembled from its threads' registers
   through the atom's ``layout_A``/``layout_B`` (every holder must agree), multiplied, and each
   thread receives its accumulators through ``layout_C``;
3. the accumulators scatter back through ``partition_C(D)`` (threads that differ only in ThrK
   hold partial sums over K; they are reduced, as a kernel's split-K reduction would).

Law (tested for every atom, several atom layouts and permutations): the result equals
``C + A @ B.T`` (``A`` is M x K, ``B`` is N x K: CuTe's "TN" convention), with the inputs
rounded to the atom's input type.

:func:`execute_tiled_copy` moves a tile thread by thread: each atom instance collects its
threads' source values (``partition_S``), places them at the atom's abstract positions
(``ValLayoutSrc``) and hands them to the destination threads/values that name the same position
(``ValLayoutDst``), which store them through ``partition_D``. Law: every element of the tile is
written exactly once, with the source value of the same coordinate.
"""

from __future__ import annotations

from .atom.mma_atom import MMA_Atom
from .atom.tiled_copy import TiledCopy
from .atom.tiled_mma import TiledMMA
from .layout import layout_table
from .errors import AtomError
from . import int_tuple as it
from .layout import Layout

__all__ = ["ptx_fragment_coord", "execute_mma_atom", "execute_tiled_mma", "execute_tiled_copy", "round_to_type",
           "thread_fragments", "MMATrace", "CopyResult"]


def _np():
    import numpy as np
    return np


def round_to_type(x, type_name: str):
    """Round a float array to an element type's precision (float16, bfloat16, tfloat32 or
    float32), returned as float64."""
    np = _np()
    x = np.asarray(x, dtype=np.float64)
    if type_name == "float16":
        return x.astype(np.float16).astype(np.float64)
    if type_name in ("bfloat16", "tfloat32"):
        keep = 16 if type_name == "bfloat16" else 13     # mantissa bits dropped from fp32
        f = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        half = np.uint64(1 << (keep - 1))
        f = ((f + half - np.uint64(1) + ((f >> np.uint64(keep)) & np.uint64(1))) >>
             np.uint64(keep)) << np.uint64(keep)                      # round to nearest even
        return f.astype(np.uint32).view(np.float32).astype(np.float64)
    if type_name == "float32":
        return x.astype(np.float32).astype(np.float64)
    return x


# ---------------------------------------------------------------------------------------------
# The PTX ISA's fragment maps, written from the PTX documentation (independent of CuTe's layouts)


def ptx_fragment_coord(atom: MMA_Atom, which: str, thr: int, i: int):
    """The ``(row, col)`` of element ``i`` of thread ``thr``'s ``which`` fragment as the PTX ISA
    documents it ("Matrix fragments for mma.m16n8k16 / m16n8k8 / wgmma.m64nNk16"): A -> (m, k),
    B -> (k, n), C/D -> (m, n). ``None`` when the PTX has no per-thread map for that operand
    (wgmma operands in shared memory, the FMA). ``groupID = lane >> 2``, ``tig = lane % 4``."""
    name = atom.name
    lane = thr % 32
    g, q = lane >> 2, lane % 4
    if name.startswith("SM80_16x8x16"):
        if which == "A":
            return (g + 8 * ((i // 2) % 2), 2 * q + (i % 2) + 8 * (i // 4))
        if which == "B":
            return (2 * q + (i % 2) + 8 * (i // 2), g)
        return (g + 8 * (i // 2), 2 * q + (i % 2))
    if name == "SM80_16x8x8_F32TF32TF32F32_TN":
        if which == "A":
            return (g + 8 * (i % 2), q + 4 * (i // 2))
        if which == "B":
            return (q + 4 * i, g)
        return (g + 8 * (i // 2), 2 * q + (i % 2))
    if name.startswith("SM80_16x8x8"):
        if which == "A":
            return (g + 8 * (i // 2), 2 * q + (i % 2))
        if which == "B":
            return (2 * q + i, g)
        return (g + 8 * (i // 2), 2 * q + (i % 2))
    if name.startswith("SM90_64x"):
        w = thr // 32
        if which == "C":
            return (16 * w + g + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * q + (i % 2))
        if which == "A" and atom.a_source == "rmem":
            return (16 * w + g + 8 * ((i // 2) % 2), 2 * q + (i % 2) + 8 * (i // 4))
        return None
    return None


def _ptx_table(atom, which):
    """``[thr, val] -> column-major index`` from the PTX maps, or ``None``."""
    np = _np()
    M, N, K = atom.shape_mnk
    T = atom.thr_id.size()
    L = {"A": atom.layout_A, "B": atom.layout_B, "C": atom.layout_C}[which]
    V = L.size() // T
    tab = np.zeros((T, V), dtype=np.int64)
    for t in range(T):
        for i in range(V):
            rc = ptx_fragment_coord(atom, which, t, i)
            if rc is None:
                return None
            r, c = rc
            tab[t, i] = {"A": r + M * c, "B": c + N * r, "C": r + M * c}[which]
    return tab


_PTX_TABLES: dict = {}


def _table(atom, which, semantics):
    np = _np()
    T = atom.thr_id.size()
    if semantics == "ptx":
        key = (atom, which)
        if key not in _PTX_TABLES:
            _PTX_TABLES[key] = _ptx_table(atom, which)
        if _PTX_TABLES[key] is not None:
            return _PTX_TABLES[key]
    L = {"A": atom.layout_A, "B": atom.layout_B, "C": atom.layout_C}[which]
    return np.asarray(layout_table(L)).reshape(-1, T).T


# ---------------------------------------------------------------------------------------------
# One atom


def execute_mma_atom(atom: MMA_Atom, a_frags, b_frags, c_frags=None, semantics="ptx"):
    """The atom's hardware semantics: ``a_frags[v]`` (``b_frags[v]``, ``c_frags[v]``) are the
    registers of atom thread ``v`` in the order of the atom's ``layout_A`` (``B``, ``C``) values.
    Returns the D registers ``d_frags[v][i] = sum_k A[m,k] * B[n,k] + C[m,n]`` with
    ``(m, n) = layout_C(v, i)``. Raises :class:`AtomError` when two threads holding the same A or
    B element disagree (a partition that does not match the atom)."""
    np = _np()
    M, N, K = atom.shape_mnk
    T = atom.thr_id.size()
    A = _assemble(_table(atom, "A", semantics), a_frags, M * K, T, "A", atom).reshape(K, M).T
    B = _assemble(_table(atom, "B", semantics), b_frags, N * K, T, "B", atom).reshape(K, N).T
    Dt = A @ B.T
    Ctab = _table(atom, "C", semantics)                               # [thr, val] -> m + M*n
    d = Dt.T.reshape(-1)[Ctab]
    if c_frags is not None:
        d = d + np.asarray(c_frags, dtype=np.float64).reshape(T, -1)
    return d


def _assemble(tab, frags, extent, T, name, atom):
    np = _np()
    frags = np.asarray(frags, dtype=np.float64).reshape(T, -1)
    if tab.shape != frags.shape:
        raise AtomError("execute_mma_atom", f"{name.lower()}_frags", f"do not match the atom's "
                        f"{name} layout", expected=tab.shape, actual=frags.shape)
    out = np.full(extent, np.nan)
    out[tab.reshape(-1)] = frags.reshape(-1)
    back = out[tab]
    if not np.array_equal(back, frags, equal_nan=True):
        bad = np.argwhere(back != frags)[0]
        raise AtomError("execute_mma_atom", f"{name.lower()}_frags", f"threads holding the same "
                        f"{name} element disagree (thread {bad[0]}, value {bad[1]} of {atom.name})")
    if np.isnan(out).any():
        raise AtomError("execute_mma_atom", f"{name.lower()}_frags", f"leave {name} elements unset")
    return out


# ---------------------------------------------------------------------------------------------
# Partitions as index arrays (fast gathers from flat NumPy memory)


def _index_array(layout, offset):
    np = _np()
    return offset + np.asarray(layout_table(layout), dtype=np.int64).reshape(
        it.product_each(layout.shape) if isinstance(layout.shape, tuple) else (layout.size(),),
        order="F")


def thread_fragments(tiled_mma: TiledMMA, which: str, shape, layout=None):
    """For every thread, the flat indices (into a tensor of ``shape`` with ``layout``, default
    compact column-major) of its ``partition_<which>`` (``(MMA, MMA_M|N, MMA_K|N)`` arrays)."""
    L = layout if layout is not None else Layout(tuple(shape))
    out = []
    for t in range(tiled_mma.size()):
        lay, off = tiled_mma.get_slice(t).partition_layout(L, which)
        out.append(_index_array(lay, off))
    return out


class MMATrace:
    """What :func:`execute_tiled_mma` did: ``calls`` (atom calls), ``frags`` (per-thread A, B
    and C index arrays), ``d`` (the result)."""

    def __init__(self):
        self.calls = 0
        self.frags = {}
        self.d = None


def execute_tiled_mma(tiled_mma: TiledMMA, A, B, C=None, trace: MMATrace | None = None,
                      semantics: str = "ptx"):
    """``D = C + A @ B.T`` computed thread by thread through ``tiled_mma`` (see the module doc).

    ``A`` is ``M x K``, ``B`` is ``N x K`` (K-major "TN", CuTe's convention), ``C`` ``M x N``
    (default 0); M, N, K must be multiples of ``tiled_mma.tile_shape``. Returns a float64 array.
    """
    np = _np()
    if not isinstance(tiled_mma, TiledMMA):
        raise AtomError("execute_tiled_mma", "tiled_mma", "must be a TiledMMA", actual=repr(tiled_mma))
    A = np.asarray(A)
    B = np.asarray(B)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise AtomError("execute_tiled_mma", "A, B", "must be M x K and N x K",
                        actual=(A.shape, B.shape))
    M, K = A.shape
    N = B.shape[0]
    tM, tN, tK = tiled_mma.tile_shape
    if M % tM or N % tN or K % tK:
        raise AtomError("execute_tiled_mma", "A, B", "extents must be multiples of the tile",
                        expected=f"multiples of (M,N,K) = ({tM},{tN},{tK})", actual=(M, N, K))
    atom = tiled_mma.atom
    Af = round_to_type(A, atom.a_type).reshape(-1, order="F")   # column-major flat memory
    Bf = round_to_type(B, atom.b_type).reshape(-1, order="F")
    if C is not None:
        C = np.asarray(C, dtype=np.float64)
        if C.shape != (M, N):
            raise AtomError("execute_tiled_mma", "C", "must be M x N", expected=(M, N),
                            actual=C.shape)
    Cf = (np.zeros(M * N) if C is None else C.reshape(-1, order="F"))
    fa = thread_fragments(tiled_mma, "A", (M, K))
    fb = thread_fragments(tiled_mma, "B", (N, K))
    fc = thread_fragments(tiled_mma, "C", (M, N))
    T = tiled_mma.size()
    # registers: every thread's fragments as arrays
    ra = [Af[i] for i in fa]
    rb = [Bf[i] for i in fb]
    rc = [np.zeros(i.shape) for i in fc]
    vmnk = tiled_mma.thr_layout_vmnk
    ThrV = it.product(vmnk.shape[0])
    ThrM, ThrN, ThrK = (it.product(vmnk.shape[i]) for i in (1, 2, 3))
    calls = 0
    for tk in range(ThrK):
        for tm in range(ThrM):
            for tn in range(ThrN):
                thr = [vmnk((v, tm, tn, tk)) for v in range(ThrV)]
                _, RM, RK = ra[thr[0]].shape
                RN = rb[thr[0]].shape[1]
                for k in range(RK):
                    for m in range(RM):
                        for n in range(RN):
                            d = execute_mma_atom(
                                atom, [ra[t][:, m, k] for t in thr], [rb[t][:, n, k] for t in thr],
                                [rc[t][:, m, n] for t in thr], semantics)
                            calls += 1
                            for v, t in enumerate(thr):
                                rc[t][:, m, n] = d[v]
    # write back through partition_C (threads differing only in ThrK hold partial sums)
    Df = Cf.copy()
    for t in range(T):
        np.add.at(Df, fc[t].reshape(-1), rc[t].reshape(-1))
    D = Df.reshape((M, N), order="F")
    if trace is not None:
        trace.calls = calls
        trace.frags = {"A": fa, "B": fb, "C": fc}
        trace.d = D
    return D


# ---------------------------------------------------------------------------------------------
# Copies


class CopyResult:
    """What :func:`execute_tiled_copy` did: ``dst`` (the destination array), ``writes`` (how many
    times each destination element was written), ``atom_calls``."""

    def __init__(self, dst, writes, atom_calls):
        self.dst = dst
        self.writes = writes
        self.atom_calls = atom_calls

    @property
    def each_once(self) -> bool:
        return bool((self.writes == 1).all())


def execute_tiled_copy(tiled_copy: TiledCopy, src, dst=None, src_layout=None, dst_layout=None):
    """Copy ``src`` (an array of the tile's extent, or larger multiples) into ``dst`` thread by
    thread through ``tiled_copy``. ``src_layout``/``dst_layout`` (default: column-major over the
    array's shape) say where coordinate ``(m, n)`` lives in the flat memory — e.g. a swizzled
    shared-memory layout. Returns a :class:`CopyResult`; law: ``dst`` equals ``src`` coordinate
    by coordinate and ``writes == 1`` everywhere."""
    np = _np()
    if not isinstance(tiled_copy, TiledCopy):
        raise AtomError("execute_tiled_copy", "tiled_copy", "must be a TiledCopy", actual=repr(tiled_copy))
    src = np.asarray(src)
    shape = src.shape
    for i, s in enumerate(tiled_copy.tile_shape):
        if i >= len(shape) or shape[i] % s:
            raise AtomError("execute_tiled_copy", "src", "extents must be multiples of the tile",
                            expected=tiled_copy.tile_shape, actual=shape)
    Ls = src_layout if src_layout is not None else Layout(tuple(shape))
    Ld = dst_layout if dst_layout is not None else Layout(tuple(shape))
    sflat = np.zeros(_cosize(Ls), dtype=src.dtype)
    coords = np.asarray(layout_table_any(Ls))
    sflat[coords] = src.reshape(-1, order="F")
    dflat = np.zeros(_cosize(Ld), dtype=src.dtype)
    writes = np.zeros(_cosize(Ld), dtype=np.int64)
    atom = tiled_copy.atom
    AT = tiled_copy.atom_num_thr
    T = tiled_copy.size()
    sidx, didx = [], []
    for t in range(T):
        s = tiled_copy.get_slice(t)
        ls, os_ = s.partition_layout(Ls, "S")
        ld, od = s.partition_layout(Ld, "D")
        sidx.append(_flat_idx(ls, os_))
        didx.append(_flat_idx(ld, od))
    # atom element positions: (thr, val) -> element index in the atom's abstract order
    src_pos = np.asarray(layout_table(atom.val_layout_src)).reshape(-1, AT).T
    dst_pos = np.asarray(layout_table(atom.val_layout_dst)).reshape(-1, AT).T
    VS, VD = src_pos.shape[1], dst_pos.shape[1]
    calls = 0
    for r in range(T // AT):
        thr = [a + AT * r for a in range(AT)]
        nrep = sidx[thr[0]].shape[0] // VS      # FrgX x Rest blocks, src order
        for x in range(nrep):
            buf = {}
            for a, t in enumerate(thr):
                vals = sflat[sidx[t][x * VS:(x + 1) * VS]]
                for v in range(VS):
                    buf[int(src_pos[a, v])] = vals[v]
            for a, t in enumerate(thr):
                for v in range(VD):
                    j = didx[t][x * VD + v]
                    dflat[j] = buf[int(dst_pos[a, v])]
                    writes[j] += 1
            calls += 1
    out = dflat[np.asarray(layout_table_any(Ld))].reshape(shape, order="F")
    w = writes[np.asarray(layout_table_any(Ld))].reshape(shape, order="F")
    if dst is not None:
        dst[...] = out
    return CopyResult(out, w, calls)


def _cosize(L):
    return max(layout_table_any(L)) + 1


def layout_table_any(L) -> list:
    """``[L(i) for i in range(size(L))]`` for a Layout (fast) or any layout-like (e.g. swizzled)."""
    if isinstance(L, Layout):
        return layout_table(L)
    return [L(i) for i in range(L.size())]


def _flat_idx(L, off):
    """Flat memory indices of a partition ``(CPY, CPY_M, CPY_N, ...)`` in colexicographic order."""
    np = _np()
    return off + np.asarray(layout_table_any(L), dtype=np.int64)
