"""The SM80 epilogue: the same EVT description as :mod:`.sm90`, for an ``mma.sync`` GEMM, with
``cp.async`` loads and 128-bit vector stores standing in for TMA.

There is no producer warp on SM80: every MMA thread is both producer and consumer.  Per output
tile (``cute_epi_m0``, ``cute_epi_n0``) the generated code

- stages the CTA's slice of every broadcast vector in smem as float (bounds-checked ``__ldg``);
- walks the epilogue subtiles (n-outer, m-inner).  The subtiles of C and of every ``AuxLoad``
  are copied global->smem with 16-byte ``cp.async`` (``src-size`` 0 zero-fills rows/chunks
  outside the problem) into ``StagesC`` buffers: ``StagesC - 1`` subtiles are in flight ahead
  of the one being computed (``cp.async.commit_group`` per subtile, ``wait_group<StagesC-1>``
  then a barrier before a stage is read) -- the commit / wait groups replace TMA + mbarrier;
- reads C / aux smem->registers in the accumulator's pattern, evaluates the lowered tree
  (``cute_epi_visit`` from :mod:`.lower`, the same function SM90 pastes), writes D (and every
  ``AuxStore``) registers->smem, barrier, then copies the subtile smem->global with predicated
  ``st.global.v4`` (16 bytes per thread and access);
- folds reductions exactly as SM90 does (registers, ``shfl.xor`` over the lanes sharing a
  row / column, one atomic per warp).

Subtiles.  An ``mma.sync`` accumulator splits the CTA tile among warps in M and N, so a subtile
that is contiguous in the CTA tile would hold a value for some warps and not for others.  The
epilogue therefore tiles each *warp period* (the fragment's per-thread extent: the warp tile for
``mma_sm80_fragment``, the whole tile for a wgmma accumulator): subtile (i, j) is rows
``[i*epi_m, (i+1)*epi_m)`` and columns ``[j*epi_n, (j+1)*epi_n)`` of every period block -- in
CuTe terms the tile's M mode is ``(epi_m, period_m/epi_m, tile_m/period_m)`` and the subtile is
the slice at the middle coordinate.  Its smem buffer is ``(tile_m/period_m*epi_m) x
(tile_n/period_n*epi_n)``, row-major; each buffer row is ``tile_n/period_n`` runs of ``epi_n``
elements that are contiguous in global memory, so the 16-byte vector accesses stay whole.

Shared-memory buffers carry a swizzle ``Sw<B,M,S>`` (CuTe's ``Swizzle``: ``o ^ ((o >> S) &
(((1 << B) - 1) << M))`` on byte offsets, ``M >= 4`` so 16-byte vectors stay whole) chosen per
buffer by the 32-bank model of :func:`.fragment.bank_wavefronts`: the first candidate (TMA's
``Swizzle<B,4,3>`` first) whose fragment accesses and 16-byte chunk accesses need the ideal
number of wavefronts, else the one needing fewest (:meth:`Sm80Epilogue.bank_report`).  A
buffer's byte layout is the ComposedLayout ``Sw<B,M,S> o 0 o (rows, cols):(row_bytes,
elem_bytes)`` (:meth:`Sm80Epilogue.staging`); it, the fragment's thread layouts and the chunk
walk are lowered to IR by :mod:`backends.cuda.arch.sm80.epilogue_maps`, and the consumer code is
emitted statement by statement into the kernel's ``KernelBuilder`` (:meth:`emit_consumer`;
``consumer_code`` is its text, for the standalone test kernel).

Residues.  With ``vectorized=True`` every matrix (C, aux, D) needs a 16-byte aligned base and
``ld * sizeof(T) % 16 == 0`` (so ``N * sizeof(D) % 16 == 0`` for packed rows): any M, N then
works (rows past M and 16-byte chunks past N are zero-filled / skipped).  ``vectorized=False``
loads and stores element by element with per-element predicates (any alignment, any N); the
smem path is the same.  :class:`Sm80EpilogueTestKernel` picks the variant per launch.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass, replace

from cute_py.epilogue import evt
from cute_py.errors import LaunchError, LayoutError
from cute_py.numeric import BYTES, C_STORAGE

from .. import ir, lower
from ..arch.sm80.epilogue_maps import (buffer_to_tile, chunk_coord, composed_apply,
                                       staging_layout, tile_to_buffer)
from ..arch.sm90.epilogue_maps import thread_offsets
from ..builder import KernelBuilder
from .fragment import AccFragment, bank_wavefronts, value_pairs
from .lower import (MATH_HELPERS, LoweredTree, atomic_reduce, lower_tree, reduce_combine,
                    reduce_identity_literal, emit_reduction_state)
from .sm90 import EpilogueConfig, ParamSpec

__all__ = ["Sm80EpilogueConfig", "Sm80Epilogue", "SmemSwizzle", "fragment_period",
           "gemm_sm80_acc", "build_sm80_test_kernel_source", "Sm80EpilogueTestKernel"]

# the epilogue's element types (evt.DTYPES), facts from cute_py.numeric's one table
_BYTES = {t: BYTES[t] for t in evt.DTYPES}
_CT = {t: C_STORAGE[t] for t in evt.DTYPES}

# the kernel's variables the consumer code reads (IR, with their bounds)
_I32 = (1 << 31) - 1
_SMEM_HI = 1 << 18
SMEM = ir.var("cute_epi_smem", 0, _SMEM_HI)


def _f32_vector(i, extent: int) -> ir.Node:
    """Byte offset of element ``i`` of a float row / column vector buffer of ``extent``
    values in smem: the layout ``(extent):(4)`` lowered at ``i``."""
    return lower.layout_apply((extent, 4), i)
M0 = ir.var("cute_epi_m0", 0, 1 << 30)
N0 = ir.var("cute_epi_n0", 0, 1 << 30)
MM = ir.var("M", 0, _I32)
NN = ir.var("N", 0, _I32)


# -- swizzles ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class SmemSwizzle:
    """A candidate swizzle of a staging buffer: CuTe's ``Swizzle<B, M, S>`` on byte offsets
    (``o ^ ((o >> S) & (((1<<B)-1) << M))``), evaluated by the algebra's own ``Swizzle``.

    Law (for ``S >= B``): an involution, so a bijection on every range of ``2**(M+B)``-aligned
    blocks; it changes bits ``[M, M+B)`` only, so ``2**M``-byte blocks stay contiguous."""

    bits: int
    base: int
    shift: int

    def __call__(self, off: int) -> int:
        return self.swizzle()(off)

    def swizzle(self):
        """The algebra object: ``cute_py.Swizzle(B, M, S)``."""
        from cute_py import Swizzle
        return Swizzle(self.bits, self.base, self.shift)

    def staging(self, rows: int, cols: int, elem_bytes: int):
        """The buffer's byte layout ``Sw<B,M,S> o 0 o (rows, cols):(row_bytes, elem_bytes)``
        (a ComposedLayout; :mod:`backends.cuda.arch.sm80.epilogue_maps`)."""
        return staging_layout(rows, cols, elem_bytes, self.bits, self.base, self.shift)

    def __str__(self) -> str:
        return f"Sw<{self.bits},{self.base},{self.shift}>"


def _swizzle_candidates(row_bytes: int, stage_bytes: int):
    """TMA's swizzle for the row size first, then every Sw<B,M,S> with M in {4,5} that stays
    inside the stage, then none."""
    out = []
    lb = min(3, max(0, (row_bytes // 16).bit_length() - 1))
    if lb:
        out.append(SmemSwizzle(lb, 4, 3))
    for m in (4, 5):
        for b in (1, 2, 3):
            for s in range(b, 7):
                sw = SmemSwizzle(b, m, s)
                if m + b <= 7 and stage_bytes % (1 << (m + s + b)) == 0 and sw not in out:
                    out.append(sw)
    out.append(SmemSwizzle(0, 4, 3))
    return out


def fragment_period(fr: AccFragment, axis: str, extent: int) -> int:
    """The smallest divisor ``p`` of ``extent`` such that every thread's values lie in the
    ``p``-block of its first value along ``axis`` (``'m'`` or ``'n'``): for
    ``mma_sm80_fragment`` the warp tile, for a wgmma accumulator 16 rows / the whole tile_n.

    Law: ``(thr(t) + val(v)) // p == thr(t) // p`` for every (t, v)."""
    thr, val = (fr.m_thr, fr.m_val) if axis == "m" else (fr.n_thr, fr.n_val)
    lo, hi = min(val), max(val)
    for p in range(1, extent + 1):
        if extent % p:
            continue
        if all((t + lo) // p == t // p and (t + hi) // p == t // p for t in thr):
            return p
    raise LayoutError("fragment_period", "fragment", f"values leave the tile along {axis}",
                      actual=extent)


def gemm_sm80_acc(name: str, warp_tile_m: int):
    """Accumulator naming of ``gemm_sm80``: value ``v`` of :func:`mma_sm80_fragment` (atoms
    m-fastest, 4 values each) is ``name[mi][ni][v % 4]`` with ``mi, ni = divmod``-ed atom index.
    Pass the result as ``consumer_code(acc=...)``."""
    am = warp_tile_m // 16

    def f(v: int) -> str:
        a = v // 4
        return f"{name}[{a % am}][{a // am}][{v % 4}]"
    return f


# -- configuration ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sm80EpilogueConfig:
    """Everything that fixes the generated SM80 epilogue (hashable: a kernel-cache key).

    ``epi_m``/``epi_n``: the subtile inside one warp period (default: the period's full height,
    and ``epi_n`` giving 128-byte smem rows of D, at least 8 columns).  ``stages_d`` D buffers
    (1 is enough when the tree loads C or aux: the barrier before reading a C stage also orders
    the D buffer's reuse).  ``vectorized``: 16-byte global accesses (see the module doc)."""

    tree: evt.Node
    fragment: AccFragment
    tile_m: int
    tile_n: int
    element_d: str = "float16"
    epi_m: int | None = None
    epi_n: int | None = None
    stages_c: int = 2
    stages_d: int = 1
    vectorized: bool = True

    @classmethod
    def from_sm90(cls, cfg: EpilogueConfig, **kw) -> "Sm80EpilogueConfig":
        """The SM80 config for an SM90 one (ReuseSmemC and DelayTmaStore have no SM80 form;
        the TMA-path hints ``prefetch_l2`` / ``l2_evict_first`` and ``load_path`` do not apply:
        SM80 consumers always load C / aux themselves, with ``cp.async``)."""
        if cfg.reuse_smem_c or cfg.delay_tma_store:
            raise LaunchError("Sm80Epilogue", "reuse_smem_c" if cfg.reuse_smem_c else
                              "delay_tma_store", "has no SM80 form (TMA-only option)",
                              expected=False, actual=True)
        base = dict(tree=cfg.tree, fragment=cfg.fragment, tile_m=cfg.tile_m, tile_n=cfg.tile_n,
                    element_d=cfg.element_d, stages_c=cfg.stages_c, stages_d=cfg.stages_d)
        base.update(kw)
        return cls(**base)


def _shfl_fold(op: str, x: str, mask: int) -> str:
    """``x`` combined with lane ``lane ^ mask``'s ``x`` (one butterfly step of a reduction)."""
    return reduce_combine(op, x, f"__shfl_xor_sync(0xffffffffu, {x}, {mask})")


class Sm80Epilogue:
    """The code pieces of one SM80 epilogue configuration, for a kernel to paste together.

    A kernel using it: declares ``params()`` in its signature (``param_decls()``); pastes
    ``prelude()`` at file scope; runs ``init_code(smem_ptr)`` once (``smem_ptr``: a 128-byte
    aligned ``unsigned char*`` with ``smem_bytes`` bytes; it may alias the mainloop's buffers if
    the kernel drains its ``cp.async`` groups and syncs the CTA first); per output tile runs
    ``emit_consumer(kb, acc)`` (or pastes ``consumer_code(acc)``) in all
    ``fragment.num_threads`` threads with ``tid`` (thread index), ``cute_epi_m0`` /
    ``cute_epi_n0`` (tile origin), ``M`` / ``N`` (problem size, ints) in scope; ends with
    ``consumer_tail_code()``.  Named barrier 1 is used among the threads.
    ``producer_code()`` is empty: the loads are issued by the same threads.
    """

    def __init__(self, cfg):
        if isinstance(cfg, EpilogueConfig):
            cfg = Sm80EpilogueConfig.from_sm90(cfg)
        if not isinstance(cfg, Sm80EpilogueConfig):
            raise LaunchError("Sm80Epilogue", "cfg", "must be an Sm80EpilogueConfig or an "
                              "EpilogueConfig", actual=type(cfg).__name__)
        self.cfg = cfg
        self.lt: LoweredTree = lower_tree(cfg.tree, conv="headers")
        fr = cfg.fragment
        self.nc = fr.num_threads
        self._check_basic()
        self.pm = fragment_period(fr, "m", cfg.tile_m)
        self.pn = fragment_period(fr, "n", cfg.tile_n)
        self.bm, self.bn = cfg.tile_m // self.pm, cfg.tile_n // self.pn   # period blocks
        db = _BYTES[cfg.element_d]
        em = cfg.epi_m or self.pm
        en = cfg.epi_n
        if en is None:
            en = max(8, 128 // (db * self.bn))
            while en > 8 and self.pn % en:
                en //= 2
            en = min(en, self.pn)
        self.epi_m, self.epi_n = em, en
        self._check_tile()
        self.rows_b, self.cols_b = self.bm * em, self.bn * en
        self.subtiles = [(i, j) for j in range(self.pn // en) for i in range(self.pm // em)]
        self.values = {s: self._values_in(*s) for s in self.subtiles}
        self._plan_smem()

    # -- checks ----------------------------------------------------------------------------
    def _matrices(self):
        """(role, name, dtype) of every matrix through smem: loads, D, aux stores."""
        out = [("load", n, dt) for n, dt in self.lt.loads]
        out.append(("store", "D", self.cfg.element_d))
        out += [("store", n, dt) for n, dt in self.lt.stores]
        return out

    def _check_basic(self):
        cfg, op, fr = self.cfg, "Sm80Epilogue", self.cfg.fragment
        if cfg.element_d not in _BYTES:
            raise LaunchError(op, "element_d", "is not a supported type",
                              expected=list(_BYTES), actual=cfg.element_d)
        if cfg.stages_c < 1 or cfg.stages_d < 1:
            raise LaunchError(op, "stages", "must be >= 1", actual=(cfg.stages_c, cfg.stages_d))
        if fr.num_threads % 32:
            raise LaunchError(op, "fragment", "needs whole warps", actual=fr.num_threads)
        coords = {fr.coord(t, v) for t in range(fr.num_threads) for v in range(fr.num_values)}
        if (len(coords) != cfg.tile_m * cfg.tile_n or len(coords) != fr.num_threads *
                fr.num_values or not all(0 <= m < cfg.tile_m and 0 <= n < cfg.tile_n
                                         for m, n in coords)):
            raise LaunchError(op, "fragment", "must cover the tile once",
                              expected=(cfg.tile_m, cfg.tile_n), actual=len(coords))

    def _check_tile(self):
        op, em, en = "Sm80Epilogue", self.epi_m, self.epi_n
        if self.pm % em or self.pn % en:
            raise LaunchError(op, "epilogue_tile", "must divide the fragment's warp period",
                              expected=f"divisors of {(self.pm, self.pn)}", actual=(em, en))
        for _, name, dt in self._matrices():
            if (en * _BYTES[dt]) % 16:
                raise LaunchError(op, "epi_n", f"gives {en * _BYTES[dt]}-byte runs for {name} "
                                  f"({dt}); 16-byte vectors need a multiple of 16",
                                  expected="epi_n * sizeof % 16 == 0", actual=en)

    def _values_in(self, i, j):
        fr, em, en = self.cfg.fragment, self.epi_m, self.epi_n
        out = []
        for v in range(fr.num_values):
            where = {((fr.m_thr[t] % self.pm + fr.m_val[v]) // em,
                      (fr.n_thr[t] % self.pn + fr.n_val[v]) // en)
                     for t in range(fr.num_threads)}
            if len(where) != 1:
                raise LayoutError("Sm80Epilogue", "epilogue_tile", "splits one accumulator "
                                  "value across subtiles depending on the thread; choose an "
                                  "EpilogueTile aligned to the MMA layout",
                                  actual=(self.epi_m, self.epi_n))
            if where.pop() == (i, j):
                out.append(v)
        return out

    # -- buffer coordinates --------------------------------------------------------------------
    def _brow(self, t, v, i):
        fr = self.cfg.fragment
        return (fr.m_thr[t] // self.pm) * self.epi_m + fr.m_thr[t] % self.pm + fr.m_val[v] \
            - i * self.epi_m

    def _bcol(self, t, v, j):
        fr = self.cfg.fragment
        return (fr.n_thr[t] // self.pn) * self.epi_n + fr.n_thr[t] % self.pn + fr.n_val[v] \
            - j * self.epi_n

    # -- shared memory -----------------------------------------------------------------------
    def _plan_smem(self):
        cfg = self.cfg
        off = 0
        self.buf = {}   # key -> (offset, bytes per stage, stages, dtype, swizzle)
        for role, name, dt in self._matrices():
            nbytes = self.rows_b * self.cols_b * _BYTES[dt]
            stages = cfg.stages_c if role == "load" else cfg.stages_d
            sw = self._choose_swizzle(dt, nbytes)
            self.buf[(role, name)] = (off, nbytes, stages, dt, sw)
            off += -(-nbytes * stages // 128) * 128
        for name, _ in self.lt.rows:
            self.buf[("row", name)] = (off, 4 * cfg.tile_n, 1, "float32", None)
            off += -(-4 * cfg.tile_n // 128) * 128
        for name, _ in self.lt.cols:
            self.buf[("col", name)] = (off, 4 * cfg.tile_m, 1, "float32", None)
            off += -(-4 * cfg.tile_m // 128) * 128
        self.smem_bytes = off

    def _chunk_geometry(self, dt):
        rb = self.cols_b * _BYTES[dt]
        cpr, cps = rb // 16, self.epi_n * _BYTES[dt] // 16
        total = self.rows_b * cpr
        return rb, cpr, cps, total, -(-total // self.nc)

    def _wavefronts(self, dt, sw):
        """(fragment wavefronts, ideal, chunk wavefronts, ideal) over all warps for subtile 0."""
        fr, b = self.cfg.fragment, _BYTES[dt]
        rb, cpr, _, total, iters = self._chunk_geometry(dt)
        s0 = self.subtiles[0]
        pairs, singles = value_pairs(fr, self.values[s0])
        fw = fi = 0
        for w0 in range(0, self.nc, 32):
            lanes = range(w0, w0 + 32)
            for grp, width in ((pairs, 2 * b), ([(v, v) for v in singles], b)):
                for v, _ in grp:
                    addrs = [sw(self._brow(t, v, s0[0]) * rb + self._bcol(t, v, s0[1]) * b)
                             for t in lanes]
                    fw += bank_wavefronts(addrs, width)
                    fi += max(1, 32 * width // 128)
        cw = ci = 0
        for it in range(iters):
            for w0 in range(0, self.nc, 32):
                cs = [c for c in (it * self.nc + t for t in range(w0, w0 + 32)) if c < total]
                if cs:
                    cw += bank_wavefronts([sw((c // cpr) * rb + (c % cpr) * 16) for c in cs], 16)
                    ci += -(-len(cs) // 8)
        return fw, fi, cw, ci

    def _choose_swizzle(self, dt, stage_bytes):
        rb = self.cols_b * _BYTES[dt]
        best = None
        for sw in _swizzle_candidates(rb, stage_bytes):
            fw, fi, cw, ci = self._wavefronts(dt, sw)
            if fw == fi and cw == ci:
                return sw
            if best is None or fw + cw < best[0]:
                best = (fw + cw, sw)
        return best[1]

    def bank_report(self) -> dict:
        """Per smem matrix buffer: the swizzle and the wavefronts of its register<->smem
        accesses (fragment pattern) and its 16-byte chunk accesses (cp.async / vector store),
        with the ideal counts, for every warp of subtile 0."""
        out = {}
        for (role, name), (_, _, _, dt, sw) in self.buf.items():
            if role in ("load", "store"):
                fw, fi, cw, ci = self._wavefronts(dt, sw)
                out[name] = {"swizzle": str(sw), "fragment": fw, "fragment_ideal": fi,
                             "chunks": cw, "chunks_ideal": ci}
        return out

    def r2s_wavefronts(self, dtype=None) -> dict:
        """Like :meth:`Sm90Epilogue.r2s_wavefronts`: the register->smem writes of D (all warps
        of subtile 0), ``{"wavefronts", "ideal", "instr"}``."""
        dt = dtype or self.cfg.element_d
        sw = self.buf[("store", "D")][4] if dt == self.cfg.element_d else \
            self._choose_swizzle(dt, self.rows_b * self.cols_b * _BYTES[dt])
        fw, fi, _, _ = self._wavefronts(dt, sw)
        return {"wavefronts": fw, "ideal": fi, "instr": f"st.shared.{16 * _BYTES[dt]}"}

    # -- parameters --------------------------------------------------------------------------
    def params(self) -> list[ParamSpec]:
        ps = []
        for role, name, dt in self._matrices():
            const = "const " if role == "load" else ""
            ps.append(ParamSpec("ptr", f"p_{name}", f"{const}{_CT[dt]}* __restrict__", name, dt))
            ps.append(ParamSpec("int", f"ld_{name}", "int", name, dt))
        for name, dt in list(self.lt.rows) + list(self.lt.cols) + list(self.lt.scalar_ptrs):
            ps.append(ParamSpec("ptr", f"p_{name}", f"const {_CT[dt]}* __restrict__", name, dt))
        for name in self.lt.scalars:
            ps.append(ParamSpec("float", f"s_{name}", "float", name, "float32"))
        for name, _, _ in self.lt.reductions:
            ps.append(ParamSpec("ptr", f"p_{name}", "float* __restrict__", name, "float32"))
        return ps

    def param_decls(self) -> str:
        return ",\n    ".join(f"{p.ctype} {p.name}" for p in self.params())

    # -- code pieces --------------------------------------------------------------------------
    def prelude(self) -> str:
        return "#include \"cute_py/ptx_sm80.cuh\"\nusing namespace cute_py;\n" + PRELUDE_SM80_EPI + MATH_HELPERS + "\n" + \
            self.lt.source

    def init_code(self, smem_ptr: str = "cute_epi_smem_base") -> str:
        """Declares ``cute_epi_smem`` (u32 shared address of ``smem_ptr``)."""
        return f"const u32 cute_epi_smem = (u32)__cvta_generic_to_shared({smem_ptr});"

    def producer_code(self) -> str:
        return "/* SM80 epilogue: loads are issued by the consumer threads (cp.async) */"

    # -- index maps (algebra -> IR) ----------------------------------------------------------
    def _tid(self):
        return ir.var("tid", 0, self.nc - 1)

    def _buf(self, key, stage):
        """Shared address (IR) of stage ``stage`` of buffer ``key``."""
        o, nb, _, _, _ = self.buf[key]
        return ir.add(SMEM, o + stage * nb)

    def staging(self, key):
        """The swizzled byte layout of buffer ``key`` (a ComposedLayout ``Sw o 0 o (rows_b,
        cols_b):(row_bytes, elem_bytes)``)."""
        _, _, _, dt, sw = self.buf[key]
        return sw.staging(self.rows_b, self.cols_b, _BYTES[dt])

    def _faddr(self, base, key, bm, bn, i, j, v):
        """Shared address (IR) of fragment value ``v`` of subtile ``(i, j)`` in buffer ``key``:
        ``base + staging(bm + dm, bn + dn)`` with the thread's buffer row / column ``bm`` /
        ``bn`` and the value's offset in the subtile."""
        fr = self.cfg.fragment
        dm, dn = fr.m_val[v] - i * self.epi_m, fr.n_val[v] - j * self.epi_n
        return ir.add(base, composed_apply(self.staging(key), (ir.add(bm, dm), ir.add(bn, dn))))

    @staticmethod
    def _bind(kb, ctype, name, node):
        """``ctype name = node;`` and the declared variable as IR (with ``node``'s bounds)."""
        kb.decl(ctype, name, node, hint=False)
        return ir.var(name, node.lo, node.hi)

    def _chunk_loop(self, kb, key, i, j, stage, body):
        """A loop over the 16-byte chunks of one subtile buffer: ``body(kb, dt, vec, name, ch)``
        emits the per-chunk statements; ``ch`` holds the IR variables ``sa`` (smem address),
        ``gm`` / ``gn`` (global coordinates), ``row_ok`` and ``go`` (element offset from
        ``p_<name>``)."""
        _, _, _, dt, sw = self.buf[key]
        name = key[1]
        rb, cpr, cps, total, iters = self._chunk_geometry(dt)
        vec = 16 // _BYTES[dt]
        tid = self._tid()
        with kb.for_("it_", 0, iters, unroll=1) as it:
            c = self._bind(kb, "const int", "c_", ir.add(tid, ir.mul(it, self.nc)))
            guard = kb.if_(ir.lt(c, total)) if total % self.nc else contextlib.nullcontext()
            with guard:
                if total % self.nc:
                    c = ir.var(c.args[0], c.lo, min(c.hi, total - 1))
                br, cc = chunk_coord(c, cpr, self.rows_b)
                br = self._bind(kb, "const int", "br_", br)
                cc = self._bind(kb, "const int", "cc_", cc)
                lm = buffer_to_tile(self.epi_m, self.pm, self.bm)
                ln = buffer_to_tile(self.epi_n, self.pn, self.bn, vec)
                gm = self._bind(kb, "const int", "gm_", ir.add(
                    ir.add(M0, lower.layout_apply(lm, br)), i * self.epi_m))
                gn = self._bind(kb, "const int", "gn_", ir.add(
                    ir.add(N0, lower.layout_apply(ln, cc)), j * self.epi_n))
                sa = self._bind(kb, "const u32", "sa_", ir.add(
                    self._buf(key, stage), composed_apply(self.staging(key),
                                                          (br, ir.mul(cc, vec)))))
                row_ok = self._bind(kb, "const bool", "row_ok_", ir.lt(gm, MM))
                # the matrix in global memory: (M, N):(ld_<name>, 1), row-major
                ld = ir.var(f"ld_{name}", 0, _I32)
                go = self._bind(kb, "const long long", "go_",
                                ir.select(row_ok, lower.layout_apply(
                                    ((MM, NN), (ld, 1)), (gm, gn)), 0))
                body(kb, dt, vec, name, dict(sa=sa, gm=gm, gn=gn, row_ok=row_ok, go=go))

    def _issue_loads(self, kb, s):
        """cp.async of subtile s of every loaded matrix into stage s % StagesC."""
        i, j = self.subtiles[s]
        for name, _ in self.lt.loads:
            def body(kb, dt, vec, name, ch):
                if self.cfg.vectorized:
                    ok = self._bind(kb, "const bool", "ok_",
                                    ir.land(ch["row_ok"], ir.lt(ch["gn"], NN)))
                    kb.call("cute_py::sm80::cp_async_pred_zfill", ch["sa"],
                            f"p_{name} + {kb.expr(ir.select(ok, ch['go'], 0))}", ok,
                            template="16")
                else:
                    n = kb.expr(ir.select(ch["row_ok"], self._valid(ch["gn"], vec), 0))
                    kb.stmt(f"cute_epi_ld_chunk_scalar(sa_, p_{name} + go_, {n});")
            self._chunk_loop(kb, ("load", name), i, j, s % self.cfg.stages_c, body)

    @staticmethod
    def _valid(gn, vec):
        """``max(0, min(vec, N - gn))``: the elements of a chunk at column ``gn`` inside N."""
        d = ir.sub(NN, gn)
        return ir.select(ir.lt(d, 0), 0, ir.select(ir.lt(d, vec), d, vec))

    def _store_chunks(self, kb, key, i, j, stage):
        def body(kb, dt, vec, name, ch):
            kb.decl("const uint4", "v_", kb.call_expr("cute_py::ld_shared_128", ch["sa"]),
                    hint=False)
            if self.cfg.vectorized:
                with kb.if_(ir.land(ch["row_ok"], ir.lt(ch["gn"], NN))):
                    kb.call("cute_py::st_global_128", f"p_{name} + go_", "v_")
            else:
                with kb.if_(ch["row_ok"]):
                    n = kb.expr(self._valid(ch["gn"], vec))
                    kb.stmt(f"cute_epi_st_chunk_scalar(p_{name} + go_, v_, {n});")
        self._chunk_loop(kb, key, i, j, stage, body)

    def _write_values(self, kb, key, stage, i, j, src, grp, bm, bn):
        """Registers -> smem: one value or an n-adjacent pair ``grp`` (2-wide store)."""
        dt = self.buf[key][3]
        a = self._faddr(self._buf(key, stage), key, bm, bn, i, j, grp[0])
        k = "f16" if dt == "float16" else "bf16"
        if len(grp) == 2:
            if dt == "float32":
                kb.call("st_shared_f32x2", a, src(grp[0]), src(grp[1]))
            else:
                kb.call("st_shared_32", a, kb.call_expr(f"pack_{k}x2", src(grp[0]), src(grp[1])))
        elif dt == "float32":
            kb.call("st_shared_f32", a, src(grp[0]))
        else:
            kb.call("st_shared_16", a, kb.call_expr(f"f32_to_{k}_bits", src(grp[0])))

    def _load_values(self, kb, grp, i, j, bm, bn, lbs):
        """smem -> registers of every loaded matrix (C, aux) for ``grp`` (``ld_<name>_<v>``)."""
        for name, dt in self.lt.loads:
            a = self._faddr(lbs[name], ("load", name), bm, bn, i, j, grp[0])
            v = grp[0]
            if len(grp) == 2:
                w = grp[1]
                if dt == "float32":
                    kb.decl("const float2", f"lp_{name}_{v}",
                            kb.call_expr("ld_shared_f32x2", a), hint=False)
                else:
                    k = "f16x2" if dt == "float16" else "bf16x2"
                    kb.decl("const float2", f"lp_{name}_{v}", kb.call_expr(
                        f"{k}_bits_to_f32x2", kb.call_expr("ld_shared_32", a)), hint=False)
                kb.stmt(f"const float ld_{name}_{v} = lp_{name}_{v}.x, "
                        f"ld_{name}_{w} = lp_{name}_{v}.y;")
            elif dt == "float32":
                kb.decl("const float", f"ld_{name}_{v}", kb.call_expr("ld_shared_f32", a),
                        hint=False)
            else:
                k = "f16" if dt == "float16" else "bf16"
                kb.decl("const float", f"ld_{name}_{v}", kb.call_expr(
                    f"{k}_bits_to_f32", kb.call_expr("ld_shared_16", a)), hint=False)

    def _visit_values(self, kb, grp, accx, reds, mt, nt):
        """``dv_<v> = cute_epi_visit(...)`` for each value of ``grp`` (same argument order as
        :meth:`LoweredTree.visit_params`)."""
        fr, lt = self.cfg.fragment, self.lt
        for v in grp:
            args = [accx(v)]
            args += [f"ld_{name}_{v}" for name, _ in lt.loads]
            args += [f"row_{name}_{fr.n_val[v]}" for name, _ in lt.rows]
            args += [f"col_{name}_{fr.m_val[v]}" for name, _ in lt.cols]
            args.append(kb.expr(ir.land(ir.lt(ir.add(ir.add(M0, mt), fr.m_val[v]), MM),
                                        ir.lt(ir.add(ir.add(N0, nt), fr.n_val[v]), NN))))
            args += [f"s_{name}" for name in lt.scalars]
            args += [f"s_{name}" for name, _ in lt.scalar_ptrs]
            for name, _ in lt.stores:
                kb.stmt(f"float st_{name}_{v};")
                args.append(f"st_{name}_{v}")
            for name, (kind, op) in reds.items():
                args.append({"scalar": f"red_{name}", "col": f"cr_{name}_{fr.m_val[v]}",
                             "row": f"rr_{name}_{fr.n_val[v]}"}[kind])
            kb.stmt(f"const float dv_{v} = cute_epi_visit({', '.join(args)});")

    def _gload(self, name, dt, idx, bound, kb):
        """``idx < bound ? p_name[idx] : 0`` as float (bounds-checked ``__ldg``)."""
        i = kb.expr(idx)
        v = f"__ldg(p_{name} + ({i}))"
        if dt != "float32":
            v = f"{'f16' if dt == 'float16' else 'bf16'}_bits_to_f32({v})"
        return f"({kb.expr(ir.lt(idx, bound))} ? {v} : 0.0f)"

    def consumer_code(self, acc="acc") -> str:
        """The statements of :meth:`emit_consumer` as text (for the standalone test kernel)."""
        kb = KernelBuilder("cute_epi_text", threads=1)
        kb.level = 0
        self.emit_consumer(kb, acc)
        return "\n".join(kb.lines)

    def emit_consumer(self, kb, acc="acc", bar_id=1, prefetched: bool = False) -> None:
        """Every thread (``tid`` in [0, num_threads)): the epilogue of one tile, statement by
        statement into ``kb``.  ``acc`` is the accumulator array's name (value ``v`` is
        ``acc[v]``) or a callable ``v -> C++ expression`` (e.g. :func:`gemm_sm80_acc` for
        ``gemm_sm80``'s ``acc[MI][NI][4]``).  Every address is lowered from the algebra: the
        fragment's thread layouts, the buffer's row / column maps and its ComposedLayout."""
        accx = acc if callable(acc) else (lambda v, a=acc: f"{a}[{v}]")
        cfg, fr, lt = self.cfg, self.cfg.fragment, self.lt
        sc, nc = cfg.stages_c, self.nc
        tid = self._tid()

        def bar():
            kb.call("named_barrier_sync", bar_id, nc)
        with kb.scope():
            kb.comment(f"SM80 epilogue: {cfg.tree}")
            lane = self._bind(kb, "const int", "cute_lane", ir.and_(tid, 31))
            mt, nt = thread_offsets(fr, tid)
            mt = self._bind(kb, "const int", "cute_mt", mt)
            nt = self._bind(kb, "const int", "cute_nt", nt)
            bm = self._bind(kb, "const int", "cute_bm", lower.layout_apply(
                tile_to_buffer(self.pm, self.epi_m, self.bm), mt))
            bn = self._bind(kb, "const int", "cute_bn", lower.layout_apply(
                tile_to_buffer(self.pn, self.epi_n, self.bn), nt))
            kb.stmt("(void)cute_lane; (void)cute_bm; (void)cute_bn;")
            for name, dt in lt.scalar_ptrs:
                x = f"p_{name}[0]"
                kb.decl("const float", f"s_{name}", x if dt == "float32" else
                        f"{'f16' if dt == 'float16' else 'bf16'}_bits_to_f32({x})", hint=False)
            reds, col_m = emit_reduction_state(kb, lt, fr)
            for kind, vecs, ext, org, bound in (("row", lt.rows, cfg.tile_n, N0, NN),
                                                ("col", lt.cols, cfg.tile_m, M0, MM)):
                for name, dt in vecs:
                    o = self.buf[(kind, name)][0]
                    with kb.for_("i_", tid, ext, step=nc) as i_:
                        kb.call("st_shared_f32", ir.add(ir.add(SMEM, o), _f32_vector(i_, ext)),
                                self._gload(name, dt, ir.add(org, i_), bound, kb))
            if (lt.rows or lt.cols) and not lt.loads:
                bar()    # with loads, the first C-stage barrier orders these writes
            nsub = len(self.subtiles)
            if lt.loads:     # prologue: StagesC - 1 subtiles in flight
                for p in range(sc - 1):
                    if p < nsub:
                        self._issue_loads(kb, p)
                    kb.call("cute_py::sm80::cp_async_commit")
            for s, (i, j) in enumerate(self.subtiles):
                self._emit_subtile(kb, s, i, j, accx, reds, mt, nt, bm, bn, bar)
            for name, (kind, op) in reds.items():
                if kind == "col":
                    masks = fr.shuffle_masks("m")
                    for m in col_m:
                        x = f"cr_{name}_{m}"
                        for mk in masks:
                            kb.assign(x, _shfl_fold(op, x, mk))
                        with kb.if_(ir.land(ir.eq(ir.and_(lane, sum(masks)), 0),
                                            ir.lt(ir.add(ir.add(M0, mt), m), MM))):
                            kb.stmt(atomic_reduce(op, f"p_{name} + "
                                                  f"{kb.expr(ir.add(ir.add(M0, mt), m))}", x))
                elif kind == "scalar":
                    x = f"red_{name}"
                    for mk in (1, 2, 4, 8, 16):
                        kb.assign(x, _shfl_fold(op, x, mk))
                    with kb.if_(ir.eq(lane, 0)):
                        kb.stmt(atomic_reduce(op, f"p_{name}", x))

    def _emit_subtile(self, kb, s, i, j, accx, reds, mt, nt, bm, bn, bar):
        cfg, fr, lt = self.cfg, self.cfg.fragment, self.lt
        sc, sd = cfg.stages_c, cfg.stages_d
        nsub = len(self.subtiles)
        vals = self.values[(i, j)]
        pairs, singles = value_pairs(fr, vals)
        with kb.scope():
            kb.comment(f"subtile ({i}, {j})")
            lbs = {}
            if lt.loads:
                # the stage refilled here was last read in subtile s-1, before its D barrier
                if s + sc - 1 < nsub:
                    self._issue_loads(kb, s + sc - 1)
                kb.call("cute_py::sm80::cp_async_commit")
                kb.call("cute_py::sm80::cp_async_wait", template=str(sc - 1))
                bar()
                for name, _ in lt.loads:
                    lbs[name] = self._bind(kb, "const u32", f"lb_{name}",
                                           self._buf(("load", name), s % sc))
            ns = sorted({fr.n_val[v] for v in vals})
            ms = sorted({fr.m_val[v] for v in vals})
            for name, _ in lt.rows:
                o = self.buf[("row", name)][0]
                for n in ns:
                    kb.decl("const float", f"row_{name}_{n}", kb.call_expr(
                        "ld_shared_f32",
                        ir.add(ir.add(SMEM, o), _f32_vector(ir.add(nt, n), cfg.tile_n))),
                        hint=False)
            for name, _ in lt.cols:
                o = self.buf[("col", name)][0]
                for m in ms:
                    kb.decl("const float", f"col_{name}_{m}", kb.call_expr(
                        "ld_shared_f32",
                        ir.add(ir.add(SMEM, o), _f32_vector(ir.add(mt, m), cfg.tile_m))),
                        hint=False)
            for name, (kind, op) in reds.items():
                if kind == "row":
                    for n in ns:
                        kb.decl("float", f"rr_{name}_{n}", reduce_identity_literal(op),
                                hint=False)
            if not lt.loads and s > 0 and sd == 1:
                bar()   # the D buffer's previous subtile has been stored by everyone
            for grp in [list(p) for p in pairs] + [[v] for v in singles]:
                self._load_values(kb, grp, i, j, bm, bn, lbs)
                self._visit_values(kb, grp, accx, reds, mt, nt)
                self._write_values(kb, ("store", "D"), s % sd, i, j, lambda v: f"dv_{v}", grp,
                                   bm, bn)
                for name, _ in lt.stores:
                    self._write_values(kb, ("store", name), s % sd, i, j,
                                       lambda v, name=name: f"st_{name}_{v}", grp, bm, bn)
            for name, (kind, op) in reds.items():
                if kind != "row":
                    continue
                masks = fr.shuffle_masks("n")
                for n in ns:
                    x = f"rr_{name}_{n}"
                    for mk in masks:
                        kb.assign(x, _shfl_fold(op, x, mk))
                    col = ir.add(ir.add(N0, nt), n)
                    with kb.if_(ir.land(ir.eq(ir.and_(ir.var("cute_lane", 0, 31), sum(masks)),
                                              0), ir.lt(col, NN))):
                        kb.stmt(atomic_reduce(op, f"p_{name} + {kb.expr(col)}", x))
            # all of D (and aux stores) in smem: barrier, smem -> global 16-byte stores
            bar()
            self._store_chunks(kb, ("store", "D"), i, j, s % sd)
            for name, _ in lt.stores:
                self._store_chunks(kb, ("store", name), i, j, s % sd)

    def consumer_tail_code(self) -> str:
        """After the last tile: no cp.async group is left in flight (the stores are
        synchronous ``st.global``); a kernel that reuses the smem afterwards syncs the CTA."""
        return "cute_py::sm80::cp_async_wait<0>();"

    # -- the collective protocol (backends/cuda/arch/common/epilogue.py) ------------------------
    # The kernel calls these with its KernelBuilder; the string methods above remain as thin
    # sources of the text (kept for the standalone test kernel and older callers).
    has_producer = False

    def emit_helpers(self, kb) -> None:
        kb.helper(f"// fused epilogue (backends/cuda/epilogue/sm80.py): {self.cfg.tree}\n"
                  + self.prelude())

    def emit_params(self, kb) -> None:
        for p in self.params():
            kb.param(p.ctype, p.name)

    def emit_init(self, kb, base: str) -> None:
        kb.decl("const u32", "cute_epi_smem", f"(u32)__cvta_generic_to_shared({base})", hint=False)

    def emit_region(self, kb, base: str) -> None:
        """One consumer (the whole CTA): the regions are the ones ``emit_init`` declared."""

    def emit_producer_state(self, kb) -> None:
        """No producer warp: the consumer threads issue the C / aux loads (cp.async)."""

    def emit_producer(self, kb) -> None:
        """No producer warp (see :meth:`emit_producer_state`)."""

    def emit_consumer_state(self, kb) -> None:
        """No state lives across tiles (one tile per CTA)."""

    def emit_prefetch(self, kb) -> None:
        """The loads are issued inside :meth:`emit_consumer`, after the mainloop drains."""

    def emit_consumer_tail(self, kb) -> None:
        kb.call("cp_async_wait", template="0")

    def key(self) -> str:
        c = self.cfg
        return hashlib.sha256(repr((c.tree, c.fragment, c.tile_m, c.tile_n, c.element_d,
                                    self.epi_m, self.epi_n, c.stages_c, c.stages_d,
                                    c.vectorized)).encode()).hexdigest()[:12]


PRELUDE_SM80_EPI = r"""
// element-wise fallbacks (any alignment): ``valid`` leading elements of a 16-byte chunk
__device__ __forceinline__ void cute_epi_ld_chunk_scalar(u32 sa, const unsigned short* p,
                                                         int valid) {
  u32 w[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const u32 lo = 2 * q < valid ? p[2 * q] : 0u, hi = 2 * q + 1 < valid ? p[2 * q + 1] : 0u;
    w[q] = lo | (hi << 16);
  }
  cute_py::st_shared_128(sa, make_uint4(w[0], w[1], w[2], w[3]));
}
__device__ __forceinline__ void cute_epi_ld_chunk_scalar(u32 sa, const float* p, int valid) {
  float w[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) w[q] = q < valid ? p[q] : 0.0f;
  cute_py::st_shared_128(sa, make_uint4(__float_as_uint(w[0]), __float_as_uint(w[1]),
                                 __float_as_uint(w[2]), __float_as_uint(w[3])));
}
__device__ __forceinline__ void cute_epi_st_chunk_scalar(unsigned short* p, uint4 v, int valid) {
  const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int e = 0; e < 8; ++e)
    if (e < valid) p[e] = static_cast<unsigned short>(w[e >> 1] >> (16 * (e & 1)));
}
__device__ __forceinline__ void cute_epi_st_chunk_scalar(float* p, uint4 v, int valid) {
  const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int e = 0; e < 4; ++e)
    if (e < valid) p[e] = __uint_as_float(w[e]);
}
"""


def build_sm80_test_kernel_source(epi: Sm80Epilogue, acc_dims=None) -> tuple[str, str]:
    """A standalone kernel that feeds a known accumulator (read from a float32 M x N array
    ``acc_g`` at the fragment's coordinates) through the full SM80 epilogue.  With
    ``acc_dims=(MI, NI)`` the accumulator is declared as ``gemm_sm80``'s ``float
    acc[MI][NI][4]`` and named through :func:`gemm_sm80_acc`.  Returns (source, name)."""
    cfg, fr = epi.cfg, epi.cfg.fragment
    name = f"cute_epi_sm80_test_{epi.key()}"
    nc = fr.num_threads
    if acc_dims is not None:
        mi, ni = acc_dims
        if 4 * mi * ni != fr.num_values:
            raise LaunchError("build_sm80_test_kernel_source", "acc_dims", "must hold the "
                              "fragment's values", expected=fr.num_values, actual=acc_dims)
        accx = gemm_sm80_acc("acc", 16 * mi)
        decl = f"float acc[{mi}][{ni}][4];"
    else:
        accx = (lambda v: f"acc[{v}]")
        decl = f"float acc[{fr.num_values}];"
    acc_lines = []
    for v in range(fr.num_values):
        acc_lines.append(
            f"  {{ const int gm = cute_epi_m0 + cute_mt0 + {fr.m_val[v]}, "
            f"gn = cute_epi_n0 + cute_nt0 + {fr.n_val[v]}; "
            f"{accx(v)} = (gm < M && gn < N) ? acc_g[(size_t)gm * N + gn] : 0.0f; }}")
    ind = "\n  "
    src = f"""// generated by cute_py.backends.cuda.epilogue.sm80 (standalone epilogue test kernel)
{epi.prelude()}
extern "C" __global__ void __launch_bounds__({nc}, 1) {name}(
    const float* __restrict__ acc_g, int M, int N,
    {epi.param_decls()})
{{
  extern __shared__ __align__(1024) unsigned char cute_smem_raw[];
  unsigned char* cute_epi_smem_base = cute_smem_raw;
  {epi.init_code().replace(chr(10), ind)}
  const int tid = threadIdx.x;
  const int cute_epi_m0 = blockIdx.y * {cfg.tile_m}, cute_epi_n0 = blockIdx.x * {cfg.tile_n};
  const int cute_mt0 = {fr.m_thr_expr}, cute_nt0 = {fr.n_thr_expr};
  {decl}
{chr(10).join(acc_lines)}
  {epi.consumer_code(accx).replace(chr(10), ind)}
  {epi.consumer_tail_code()}
}}
"""
    return src, name


def _ptr(a) -> int:
    return int(a.data.ptr) if hasattr(a, "data") and hasattr(a.data, "ptr") else \
        int(a.__cuda_array_interface__["data"][0])


class Sm80EpilogueTestKernel:
    """The standalone SM80 epilogue kernel for one config (both the vectorized and the
    element-wise variant, compiled on first use).  ``k(acc, D, **tensors)`` as
    :class:`.runtime.EpilogueTestKernel`: ``acc`` float32 M x N, ``D`` (float16 / uint16 bits
    for bfloat16 / float32), inputs as for ``evt.evaluate`` plus side outputs (reductions are
    reset to their identity first).  ``last_vectorized`` says which variant ran."""

    def __init__(self, cfg, arch: str = "sm_90a", acc_dims=None):
        if isinstance(cfg, EpilogueConfig):
            cfg = Sm80EpilogueConfig.from_sm90(cfg)
        self.cfg, self.arch, self.acc_dims = cfg, arch, acc_dims
        self.epi = Sm80Epilogue(cfg)
        self._built = {}
        self.last_vectorized = None

    def build(self, vectorized: bool):
        from ..compiler import compile_module
        if vectorized not in self._built:
            epi = Sm80Epilogue(replace(self.cfg, vectorized=vectorized))
            src, name = build_sm80_test_kernel_source(epi, self.acc_dims)
            self._built[vectorized] = [epi, src, name, compile_module(src, arch=self.arch), None]
        return self._built[vectorized]

    def __call__(self, acc, D, **tensors):
        import numpy as np
        from .runtime import _check_matrix, launch_typed
        cfg = self.cfg
        M, N = D.shape
        op = "Sm80EpilogueTestKernel"
        bound = evt.bind_arguments(cfg.tree, M, N, tensors, op=op, need_outputs=True)
        if tuple(acc.shape) != (M, N) or acc.dtype != np.float32:
            raise LaunchError(op, "acc", "must be float32 M x N", expected=(M, N),
                              actual=(tuple(acc.shape), str(acc.dtype)))
        mats = {}
        for role, name, dt in self.epi._matrices():
            a = D if name == "D" else bound[name]
            ld = _check_matrix(name, a, M, N, dt)
            mats[name] = (a, ld)
        vec = cfg.vectorized and all(_ptr(a) % 16 == 0 and (ld * a.itemsize) % 16 == 0
                                     and (N * a.itemsize) % 16 == 0 for a, ld in mats.values())
        entry = self.build(vec)
        epi, _, name, mod, kern = entry
        args = [("ptr", _ptr(acc)), ("int", M), ("int", N)]
        for p in epi.params():
            if p.kind == "int":
                args.append(("int", mats[p.tensor][1]))
            elif p.kind == "ptr" and p.tensor in mats:
                args.append(("ptr", _ptr(mats[p.tensor][0])))
            elif p.kind == "ptr":
                a = bound[p.tensor]
                role = cfg.tree.signature[p.tensor][0]
                if role.split(":")[0] in ("row_reduce", "col_reduce", "scalar_reduce"):
                    a.fill(evt.reduction_identity(role.split(":")[1]))
                args.append(("ptr", _ptr(a)))
            else:
                args.append(("float", float(bound[p.tensor])))
        if kern is None:
            kern = entry[4] = mod.get_function(name)
        grid = (-(-N // cfg.tile_n), -(-M // cfg.tile_m), 1)
        launch_typed(kern, grid, (cfg.fragment.num_threads, 1, 1), max(epi.smem_bytes, 16), args)
        self.last_vectorized = vec
        return D
