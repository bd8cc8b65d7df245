"""The SM90 TMA warp-specialized epilogue (CUTLASS ``Sm90TmaWarpSpecialized<StagesC, StagesD,
FragmentSize, ReuseSmemC, DelayTmaStore>``), generated from an EVT tree and an accumulator
fragment.

Structure (``shared/seeds/004``):

- the CTA tile is divided into epilogue subtiles (``flat_divide(gD, EpilogueTile)``), visited
  n-outer, m-inner;
- a producer thread (``load``) TMA-loads each subtile of C (and of every ``AuxLoad``) into one of
  ``StagesC`` smem buffers, synchronised with the consumers by a full / empty mbarrier pair per
  stage (``producer_acquire`` = wait empty + ``arrive.expect_tx`` on full; TMA's complete_tx
  commits; ``consumer_wait`` = wait full; ``consumer_release`` = arrive empty);
- the consumer threads (``store``) wait for the stage, read C smem->registers, release the stage
  (unless ``ReuseSmemC``), run the EVT ``visit`` per accumulator value, write D registers->smem
  into one of ``StagesD`` buffers (``stmatrix`` when the fragment has the MMA 8x8 pattern and D
  is 16-bit), ``fence.proxy.async``, barrier, and one thread issues the TMA store
  (``cp.async.bulk.tensor`` + ``commit_group``; ``wait_group.read<StagesD-1>`` before a buffer
  is rewritten);
- ``ReuseSmemC``: D is written into the C stage it was computed from; the stage is released to
  the producer only after the TMA store has read it;
- ``DelayTmaStore``: the TMA store of subtile s is issued after subtile s+1 was computed.

Shared-memory buffers are row-major subtiles with the TMA swizzle ``Swizzle<B,4,3>`` on byte
addresses (``B = log2(row_bytes/16)``: 32, 64 or 128-byte rows), which makes the MMA-pattern
register<->smem accesses conflict-free (see ``tests/backend/test_epilogue_sm90.py``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from cute_py.epilogue import evt
from cute_py.errors import LaunchError
from cute_py.numeric import BYTES

from .fragment import AccFragment, bank_wavefronts
from .lower import (CTYPE, MATH_HELPERS, LoweredTree, atomic_reduce, lower_tree, reduce_combine,
                    reduce_identity_literal)

__all__ = ["EpilogueConfig", "Sm90Epilogue", "ParamSpec", "swizzle_offset", "dtype_bytes",
           "valid_option_combinations", "build_test_kernel_source"]

_BYTES = {t: BYTES[t] for t in evt.DTYPES}    # the epilogue's types; cute_py.numeric's table
#: how C / aux reach the consumer threads (``EpilogueConfig.load_path``)
LOAD_PATHS = ("tma", "direct")


def dtype_bytes(dtype: str) -> int:
    return _BYTES[dtype]


def swizzle_offset(row: int, col_byte: int, row_bytes: int) -> int:
    """Byte offset of (row, col_byte) in a row-major subtile with the TMA swizzle for
    ``row_bytes``-byte rows: ``Swizzle<B,4,3>`` with ``B = log2(row_bytes / 16)``.

    Law: for fixed ``row`` the map permutes 16-byte chunks within the 128-byte line, so it is a
    bijection on ``[0, rows * row_bytes)`` that keeps 16-byte vectors contiguous."""
    off = row * row_bytes + col_byte
    mask = row_bytes // 16 - 1
    return off ^ (((off >> 7) & mask) << 4)


@dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter the epilogue adds: ``kind`` is tmap (a 128-byte TMA descriptor for
    tensor ``tensor``), ptr (a device pointer to vector / scalar ``tensor``), mat (a device
    pointer to the row-major M x N matrix ``tensor``), ld (that matrix's row stride in elements,
    an int), float (a scalar) or int."""

    kind: str
    name: str
    ctype: str
    tensor: str = ""
    dtype: str = ""


@dataclass(frozen=True)
class EpilogueConfig:
    """Everything that fixes the generated epilogue (hashable: a kernel-cache key).

    ``epi_m``/``epi_n`` default to the whole tile height and 64 bytes of D per row.

    ``load_path``: how C and ``AuxLoad`` tensors reach the consumers.  ``"tma"`` (CUTLASS's
    structure): a producer thread TMA-loads each subtile into one of ``stages_c`` smem buffers
    behind full / empty mbarriers.  ``"direct"``: every consumer thread loads its own fragment
    values from global memory into registers (predicated 32-bit pair loads, zero outside the
    problem), ``direct_ahead`` subtiles ahead of the one it computes; a kernel that calls
    :meth:`Sm90Epilogue.prefetch_code` before a tile's mainloop has the first ``direct_ahead``
    subtiles in flight during the mainloop.  No C smem, no producer, no C barriers: the loads
    do not queue behind the mainloop's TMA traffic (see docs/performance.md, "Epilogue", v2).
    ``direct_vector`` (direct path, 16-bit C / aux, MMA accumulator fragments): each lane of a
    quad loads one 16-byte 8-column group and a 4x4 shuffle transpose inside the quad gives
    every lane its pairs: a quarter of the memory requests ("Epilogue", v3); groups crossing N and
    matrices that are not 16-byte aligned fall back to pair loads at run time.
    ``stages_c``, ``reuse_smem_c`` and ``prefetch_l2`` are TMA-path options.
    """

    tree: evt.Node
    fragment: AccFragment
    tile_m: int
    tile_n: int
    element_d: str = "float16"
    epi_m: int | None = None
    epi_n: int | None = None
    stages_c: int = 2
    stages_d: int = 2
    reuse_smem_c: bool = False
    delay_tma_store: bool = False
    prefetch_l2: bool = False    # producer warms L2 with the tile's C / aux (measured: slower)
    l2_evict_first: bool = False  # C / aux loads and D / aux stores hint L2 evict_first: the
    #                               streamed epilogue tensors do not displace operand panels
    load_path: str = "tma"       # "direct": consumer threads load C / aux into registers
    direct_ahead: int = 4         # direct: subtiles of C / aux in flight (issued before the
    #                               tile's mainloop by a kernel that calls prefetch_code)
    direct_vector: bool = True    # direct: 16-byte quad loads + shuffle transpose where possible

    @property
    def epilogue_tile(self) -> tuple[int, int]:
        em = self.epi_m or self.tile_m
        en = self.epi_n or max(8, 64 // _BYTES[self.element_d])
        return em, min(en, self.tile_n)


def valid_option_combinations(has_c: bool, c_bytes: int, d_bytes: int, has_aux_store: bool):
    """Every (stages_c, stages_d, reuse_smem_c, delay_tma_store) the emitter accepts for small
    stage counts (1..3 C stages, 1..2 D stages)."""
    out = []
    for sc in (1, 2, 3):
        for sd in (1, 2):
            for reuse in (False, True):
                for delay in (False, True):
                    if reuse and (not has_c or c_bytes != d_bytes or delay or has_aux_store):
                        continue
                    if not has_c and sc != 1:
                        continue
                    out.append((sc, sd, reuse, delay))
    return out


class Sm90Epilogue:
    """The code pieces of one epilogue configuration, for a kernel to paste together.

    A kernel using it: declares ``params()`` in its signature; calls ``init_code()`` from one
    thread then syncs the CTA; declares ``producer_state_decls()`` / ``consumer_state_decls()``
    once; per output tile runs ``producer_code()`` in one producer thread and
    ``consumer_code(acc)`` in every consumer thread (``tid`` = consumer thread index,
    ``cute_epi_m0``/``cute_epi_n0`` = tile origin, ``M``/``N`` = problem size); ends with
    ``consumer_tail_code()``.  Named barrier 1 (``consumer_code``'s ``bar_id``) is used among
    the consumer threads.
    """

    def __init__(self, cfg: EpilogueConfig):
        self.cfg = cfg
        self.lt: LoweredTree = lower_tree(cfg.tree, conv="headers")
        self.direct = cfg.load_path == "direct"
        self._check()
        em, en = cfg.epilogue_tile
        self.epi_m, self.epi_n = em, en
        self.nc = cfg.fragment.num_threads
        self.subtiles = [(m, n) for n in range(cfg.tile_n // en) for m in range(cfg.tile_m // em)]
        self.values = {s: cfg.fragment.values_in(s[0] * em, (s[0] + 1) * em, s[1] * en,
                                                 (s[1] + 1) * en) for s in self.subtiles}
        # per subtile: (pairs of adjacent values, single values)
        self.groups = {s: self._pairs(self.values[s]) for s in self.subtiles}
        # per subtile: (quads, other heads) for the direct path's 16-bit loads
        self.quads = {s: self._quads(s) for s in self.subtiles}
        self._plan_smem()

    # -- checks ----------------------------------------------------------------------------
    def _check(self):
        cfg, op = self.cfg, "Sm90Epilogue"
        em, en = cfg.epilogue_tile
        if cfg.element_d not in _BYTES:
            raise LaunchError(op, "element_d", "is not a supported type",
                              expected=list(_BYTES), actual=cfg.element_d)
        if cfg.tile_m % em or cfg.tile_n % en:
            raise LaunchError(op, "epilogue_tile", "must divide the CTA tile",
                              expected=f"divisors of {(cfg.tile_m, cfg.tile_n)}", actual=(em, en))
        if em > 256:
            raise LaunchError(op, "epi_m", "exceeds the TMA box limit", expected="<= 256",
                              actual=em)
        if cfg.load_path not in LOAD_PATHS:
            raise LaunchError(op, "load_path", "is not a C / aux load path",
                              expected=LOAD_PATHS, actual=cfg.load_path)
        if self.direct:
            for opt in ("reuse_smem_c", "prefetch_l2"):
                if getattr(cfg, opt):
                    raise LaunchError(op, opt, "needs load_path='tma' (C staged in smem by TMA)",
                                      expected=False, actual=True)
            if not isinstance(cfg.direct_ahead, int) or cfg.direct_ahead < 1:
                raise LaunchError(op, "direct_ahead", "must be an int >= 1",
                                  actual=cfg.direct_ahead)
        tma_loads = [] if self.direct else list(self.lt.loads)
        for name, dt in [("D", cfg.element_d)] + tma_loads + list(self.lt.stores):
            rb = en * _BYTES[dt]
            if rb not in (32, 64, 128):
                raise LaunchError(op, "epi_n", f"gives {rb}-byte rows for {name} ({dt}); the "
                                  "TMA swizzle needs 32, 64 or 128", expected="32|64|128",
                                  actual=rb)
        if cfg.stages_c < 1 or cfg.stages_d < 1:
            raise LaunchError(op, "stages", "must be >= 1", actual=(cfg.stages_c, cfg.stages_d))
        if cfg.reuse_smem_c:
            loads = dict(self.lt.loads)
            if "C" not in loads:
                raise LaunchError(op, "reuse_smem_c", "needs a tree that reads C (SrcFetch)",
                                  expected="SrcFetch in tree", actual=str(cfg.tree))
            if _BYTES[loads["C"]] != _BYTES[cfg.element_d]:
                raise LaunchError(op, "reuse_smem_c", "needs C and D of one element size",
                                  expected=cfg.element_d, actual=loads["C"])
            if cfg.delay_tma_store:
                raise LaunchError(op, "delay_tma_store", "cannot be combined with reuse_smem_c",
                                  expected=False, actual=True)
            if self.lt.stores:
                raise LaunchError(op, "reuse_smem_c", "is not supported with AuxStore nodes",
                                  actual=[n for n, _ in self.lt.stores])

    # -- shared memory -----------------------------------------------------------------------
    def _plan_smem(self):
        em, en, cfg = self.epi_m, self.epi_n, self.cfg
        off = 0
        self.buf = {}      # name -> (offset, bytes per stage, stages, dtype)

        def add(key, dtype, stages):
            nonlocal off
            nbytes = em * en * _BYTES[dtype]
            self.buf[key] = (off, nbytes, stages, dtype)
            off += -(-nbytes * stages // 1024) * 1024

        for name, dt in self.tma_loads:
            add(("load", name), dt, cfg.stages_c)
        if not cfg.reuse_smem_c:
            add(("store", "D"), cfg.element_d, cfg.stages_d)
        for name, dt in self.lt.stores:
            add(("store", name), dt, cfg.stages_d)
        # broadcast vectors: the CTA's slice staged once per tile as float (CUTLASS stages
        # Sm90RowBroadcast in smem too)
        for name, _ in self.lt.rows:
            self.buf[("row", name)] = (off, 4 * cfg.tile_n, 1, "float32")
            off += -(-4 * cfg.tile_n // 128) * 128
        for name, _ in self.lt.cols:
            self.buf[("col", name)] = (off, 4 * cfg.tile_m, 1, "float32")
            off += -(-4 * cfg.tile_m // 128) * 128
        off = -(-off // 8) * 8
        self.bar_offset = off
        self.smem_bytes = off + (16 * cfg.stages_c if self.tma_loads else 16)
        self.load_bytes = sum(em * en * _BYTES[dt] for _, dt in self.tma_loads)

    @property
    def tma_loads(self) -> tuple:
        """The (name, dtype) of the tensors the producer TMA-loads (none on the direct path)."""
        return () if self.direct else tuple(self.lt.loads)

    @property
    def has_producer(self) -> bool:
        """Whether the kernel must run :meth:`producer_code` in a producer thread."""
        return bool(self.tma_loads)

    @property
    def _ef(self) -> str:
        """Suffix of the TMA / direct load and TMA store wrappers: ``_hint`` = with an L2
        cache-policy operand (``l2_evict_first``), passed as :attr:`_pol`."""
        return "_hint" if self.cfg.l2_evict_first else ""

    @property
    def _pol(self) -> str:
        """The trailing policy argument of a ``_hint`` wrapper call (empty without a hint)."""
        return ", l2_policy_evict_first()" if self.cfg.l2_evict_first else ""

    def _buf_expr(self, key, stage_expr):
        o, nb, _, _ = self.buf[key]
        return f"(cute_epi_smem + {o}u + ({stage_expr}) * {nb}u)"

    # -- parameters --------------------------------------------------------------------------
    def params(self) -> list[ParamSpec]:
        ps = []
        for name, dt in self.lt.loads:
            if self.direct:
                ct = "float" if dt == "float32" else "unsigned short"
                ps.append(ParamSpec("mat", f"p_{name}", f"const {ct}* __restrict__", name, dt))
                ps.append(ParamSpec("ld", f"ld_{name}", "int", name, dt))
            else:
                ps.append(ParamSpec("tmap", f"tmap_{name}",
                                    "const __grid_constant__ TmaDescriptor", name, dt))
        ps.append(ParamSpec("tmap", "tmap_D", "const __grid_constant__ TmaDescriptor", "D",
                            self.cfg.element_d))
        for name, dt in self.lt.stores:
            ps.append(ParamSpec("tmap", f"tmap_{name}", "const __grid_constant__ TmaDescriptor",
                                name, dt))
        for name, dt in list(self.lt.rows) + list(self.lt.cols) + list(self.lt.scalar_ptrs):
            ct = "float" if dt == "float32" else "unsigned short"
            ps.append(ParamSpec("ptr", f"p_{name}", f"const {ct}* __restrict__", name, dt))
        for name in self.lt.scalars:
            ps.append(ParamSpec("float", f"s_{name}", "float", name, "float32"))
        for name, _, _ in self.lt.reductions:
            ps.append(ParamSpec("ptr", f"p_{name}", "float* __restrict__", name, "float32"))
        return ps

    def param_decls(self) -> str:
        return ",\n    ".join(f"{p.ctype} {p.name}" for p in self.params())

    # -- code pieces --------------------------------------------------------------------------
    def prelude(self) -> str:
        return MATH_HELPERS + "\n" + self.lt.source

    def region_decls(self, smem_ptr: str = "cute_epi_smem_base") -> str:
        """Declares ``cute_epi_smem`` (u32 shared address of this epilogue's region) and its C
        barrier arrays ``cute_epi_full`` / ``cute_epi_empty``.  A kernel running several
        instances (one per ping-pong warpgroup) declares each in its own scope."""
        return "\n".join([f"const u32 cute_epi_smem = static_cast<u32>(__cvta_generic_to_shared({smem_ptr}));",
                          f"const u32 cute_epi_full = cute_epi_smem + {self.bar_offset}u;",
                          f"const u32 cute_epi_empty = cute_epi_full + "
                          f"{8 * self.cfg.stages_c}u;"])

    def init_code(self, smem_ptr: str = "cute_epi_smem_base") -> str:
        """:meth:`region_decls`, then thread 0 initialises the barriers.  The caller syncs the
        CTA afterwards.  ``smem_ptr`` is a 1024-aligned ``char*``."""
        cfg = self.cfg
        empty_count = 1 if cfg.reuse_smem_c else self.nc // 32
        lines = [self.region_decls(smem_ptr)]
        if self.tma_loads:
            lines.append("if (threadIdx.x == 0) {")
            for s in range(cfg.stages_c):
                lines.append(f"  mbarrier_init(cute_epi_full + {8 * s}u, 1);")
                lines.append(f"  mbarrier_init(cute_epi_empty + {8 * s}u, {empty_count});")
            lines.append("  fence_mbarrier_init();")
            lines.append("}")
        return "\n".join(lines)

    def producer_state_decls(self) -> str:
        return "int cute_epi_p_idx = 0; u32 cute_epi_p_phase = 1;"

    def consumer_state_decls(self) -> str:
        return ("int cute_epi_c_idx = 0; u32 cute_epi_c_phase = 0; "
                "int cute_epi_d_idx = 0;")

    def producer_code(self) -> str:
        """One thread: TMA-loads every subtile of C / aux of tile (cute_epi_m0, cute_epi_n0)."""
        if not self.tma_loads:
            return ("/* epilogue: the consumers load C / aux directly */" if self.lt.loads else
                    "/* epilogue: nothing to load */")
        cfg, em, en = self.cfg, self.epi_m, self.epi_n
        lines = []
        if cfg.prefetch_l2 and len(self.subtiles) > cfg.stages_c:
            # The producer reaches a tile right after the previous tile's epilogue freed the
            # C stages, i.e. while the consumers start this tile's mainloop: ask TMA to bring
            # the subtiles that cannot be staged yet into L2 now, so their loads during the
            # epilogue hit L2 instead of waiting on HBM (cp.async.bulk.prefetch.tensor).
            lines += [f"for (int cute_s = {cfg.stages_c}; cute_s < {len(self.subtiles)}; "
                      "++cute_s) {",
                      f"  const int cute_em = cute_s % {cfg.tile_m // em}, "
                      f"cute_en = cute_s / {cfg.tile_m // em};"]
            for name, _ in self.lt.loads:
                lines.append(f"  tma_prefetch_l2_2d(&tmap_{name}, "
                             f"cute_epi_n0 + cute_en * {en}, cute_epi_m0 + cute_em * {em});")
            lines.append("}")
        lines += [f"for (int cute_s = 0; cute_s < {len(self.subtiles)}; ++cute_s) {{",
                 f"  const int cute_em = cute_s % {cfg.tile_m // em}, "
                 f"cute_en = cute_s / {cfg.tile_m // em};",
                 "  const u32 full_ = cute_epi_full + 8u * cute_epi_p_idx;",
                 "  mbarrier_wait_parity(cute_epi_empty + 8u * cute_epi_p_idx, cute_epi_p_phase);",
                 f"  mbarrier_arrive_expect_tx(full_, {self.load_bytes}u);"]
        for name, _ in self.lt.loads:
            lines.append(f"  tma_load_2d{self._ef}("
                         f"{self._buf_expr(('load', name), 'cute_epi_p_idx')}, &tmap_{name}, "
                         f"full_, cute_epi_n0 + cute_en * {en}, cute_epi_m0 + cute_em * {em}"
                         f"{self._pol});")
        lines += [f"  if (++cute_epi_p_idx == {cfg.stages_c}) "
                  "{ cute_epi_p_idx = 0; cute_epi_p_phase ^= 1u; }", "}"]
        return "\n".join(lines)

    # -- direct C / aux loads -------------------------------------------------------------------
    def _quads(self, sub):
        """``([(m, n, (v0, v1, v2, v3))], rest)``: the subtile's pairs that 16-byte quad loads
        cover — in one fragment row ``m``, heads at columns n, n+8, n+16, n+24 (n a multiple of
        8, each lane of a quad holding columns 2q, 2q+1 of every 8-column group, so lane q can
        load group q and the quad transposes) — and the remaining heads (pair loads)."""
        fr, (pairs, singles) = self.cfg.fragment, self.groups[sub]
        heads = [p[0] for p in pairs]
        ok = (self.direct and self.cfg.direct_vector and fr.mma_warp_pattern()
              and all(fr.n_thr[t - t % 32] % 8 == 0 for t in range(fr.num_threads)))
        if not ok:
            return [], heads + singles
        quads, used = [], set()
        at = {(fr.m_val[v], fr.n_val[v]): v for v in heads}
        for v in sorted(heads, key=lambda v: (fr.m_val[v], fr.n_val[v])):
            m, n = fr.m_val[v], fr.n_val[v]
            run = [at.get((m, n + 8 * j)) for j in range(4)]
            if v in used or n % 8 or None in run or used & set(run):
                continue
            quads.append((m, n, tuple(run)))
            used |= set(run)
        return quads, [v for v in heads if v not in used] + singles

    def _load_groups(self, sub, dt):
        """``(quads, heads)`` of subtile ``sub`` for a C / aux tensor of type ``dt``: 16-byte
        quad loads for 16-bit tensors (where the fragment allows), pair / single loads for the
        remaining heads (all of them for float32)."""
        return self.quads[sub] if _BYTES[dt] == 2 else ([], self._direct_heads(sub))

    def _direct_heads(self, sub) -> list[int]:
        """The values of subtile ``sub`` that own a register ``cq_<name>_<v>``: the first of
        each pair, then the singles."""
        pairs, singles = self.groups[sub]
        return [p[0] for p in pairs] + singles

    def _direct_base_lines(self, mt: str, nt: str) -> list[str]:
        """Per tensor and distinct row offset of the fragment: the thread's row pointer
        (``cute_dr_<name>_<m>``, at the thread's first column) and the columns left in that row
        (``cute_drn_<name>_<m>``, 0 when the row is outside the problem); for quad loads the
        same at the first column of the lane's 8-column group (``cute_dq_`` / ``cute_dqn_``)
        and whether the matrix allows 16-byte loads (``cute_dv_<name>``).  Every load is then a
        row pointer plus an immediate column offset."""
        fr, out = self.cfg.fragment, []
        for name, dt in self.lt.loads:
            ct = "float" if dt == "float32" else "unsigned short"
            groups = [self._load_groups(s, dt) for s in self.subtiles]
            q_rows = {m for quads, _ in groups for m, _, _ in quads}
            p_rows = {fr.m_val[v] for _, heads in groups for v in heads}
            if q_rows:   # 16-byte loads need a 16-byte aligned matrix with 16-byte rows
                out.append(f"const bool cute_dv_{name} = ((reinterpret_cast<size_t>(p_{name}) | "
                           f"((size_t)ld_{name} * 2u)) & 15u) == 0;")
            qn = f"{nt} + 6 * (tid & 3)"     # lane q of a quad: group q's first column
            for m in sorted(q_rows | p_rows):
                r = f"cute_epi_m0 + {mt} + {m}"
                for tag, col in (("r", nt), ("q", qn)):
                    if m in (p_rows if tag == "r" else q_rows):
                        out.append(f"const {ct}* const cute_d{tag}_{name}_{m} = p_{name} + "
                                   f"(size_t)({r}) * ld_{name} + (cute_epi_n0 + {col});")
                        out.append(f"const int cute_d{tag}n_{name}_{m} = ({r}) < M ? N - "
                                   f"(cute_epi_n0 + {col}) : 0;")
        return out

    def _direct_load_lines(self, s: int) -> list[str]:
        """Loads of subtile ``s``'s C / aux values into their registers (``cq_<name>_<v>``, one
        per pair of adjacent values or per single value)."""
        fr, sub = self.cfg.fragment, self.subtiles[s]
        singles = self.groups[sub][1]
        out = []
        for name, dt in self.lt.loads:
            fn = f"ld_global_pair{'32' if dt == 'float32' else '16'}{self._ef}"
            quads, rest = self._load_groups(sub, dt)
            for m, n, run in quads:
                regs = ", ".join(f"cq_{name}_{v}" for v in run)
                out.append(f"ld_global_quad16{self._ef}<{n}>(cute_dq_{name}_{m}, "
                           f"cute_dqn_{name}_{m}, cute_dv_{name}, {regs}{self._pol});")
            for v in rest:
                n, rem = fr.n_val[v], f"cute_drn_{name}_{fr.m_val[v]}"
                if v in singles:          # in bounds iff rem > n
                    rem = f"min({rem}, {n + 1})"
                out.append(f"cq_{name}_{v} = {fn}<{n}>(cute_dr_{name}_{fr.m_val[v]}, {rem}"
                           f"{self._pol});")
        return out

    def _vector_slices(self):
        """``(kind, name, dtype, smem offset, length, bound, origin)`` of every broadcast vector:
        the tile's slice of it is staged in smem (as float) by the consumers."""
        out = []
        for kind, vecs, length, bound, origin in (
                ("row", self.lt.rows, self.cfg.tile_n, "N", "cute_epi_n0"),
                ("col", self.lt.cols, self.cfg.tile_m, "M", "cute_epi_m0")):
            for name, dt in vecs:
                out.append((kind, name, dt, self.buf[(kind, name)][0], length, bound, origin))
        return out

    def prefetch_code(self) -> str:
        """Loads a tile's epilogue inputs that do not depend on the accumulators: the tile's
        slices of the bias-like broadcast vectors (``cb_<name>_<i>``, element ``tid + i *
        threads``), the device-pointer scalars (``s_<name>``) and, on the direct path, C / aux:
        declares their registers and row pointers and issues the loads of the first
        ``direct_ahead`` subtiles.  A kernel pastes it into every consumer thread after
        ``cute_epi_m0`` / ``cute_epi_n0`` are known and before the tile's mainloop, and then
        calls ``consumer_code(..., prefetched=True)``: the loads are in flight while the
        accumulators are computed instead of starting the epilogue with a memory round trip
        (docs/performance.md, "Epilogue", v3).  Otherwise ``consumer_code`` issues it itself."""
        L = []
        for kind, name, dt, _, length, bound, origin in self._vector_slices():
            for i in range(-(-length // self.nc)):
                idx = f"{origin} + tid + {i * self.nc}"
                L.append(f"const float cb_{name}_{i} = {self._gload(name, dt, idx, bound)};")
        for name, dt in self.lt.scalar_ptrs:
            L.append(f"const float s_{name} = "
                     + ("p_{0}[0]".format(name) if dt == "float32" else
                        f"{'f16' if dt == 'float16' else 'bf16'}_bits_to_f32(p_{name}[0])")
                     + ";")
        if not (self.direct and self.lt.loads):
            return "\n".join(L)
        fr = self.cfg.fragment
        for name, dt in self.lt.loads:
            ty = "float2" if dt == "float32" else "u32"
            regs = [f"cq_{name}_{v}" for sub in self.subtiles for v in self._direct_heads(sub)]
            L.append(f"{ty} {', '.join(regs)};")
        L += self._direct_base_lines(f"({fr.m_thr_expr})", f"({fr.n_thr_expr})")
        for s in range(min(self.cfg.direct_ahead, len(self.subtiles))):
            L += self._direct_load_lines(s)
        return "\n".join(L)

    def _value_lines(self, name, dt, pairs, singles, word) -> list[str]:
        """``ld_<name>_<v>`` (float) for the subtile's values from the expressions of their raw
        words: ``word(v, True)`` of a pair (a float2 for float32, else packed 16-bit halves in
        a u32) and ``word(v, False)`` of a single value (a float, else an unsigned short)."""
        out = []
        k = {"float16": "f16", "bfloat16": "bf16"}.get(dt)
        for v, w in pairs:
            x = word(v, True)
            out.append(f"const float2 lp_{name}_{v} = "
                       + (x if dt == "float32" else f"{k}x2_bits_to_f32x2({x})") + ";")
            out.append(f"const float ld_{name}_{v} = lp_{name}_{v}.x, "
                       f"ld_{name}_{w} = lp_{name}_{v}.y;")
        for v in singles:
            x = word(v, False)
            out.append(f"const float ld_{name}_{v} = "
                       + (x if dt == "float32" else f"{k}_bits_to_f32({x})") + ";")
        return out

    # value grouping within a subtile
    def _pairs(self, vals):
        fr = self.cfg.fragment
        thr_even = all(n % 2 == 0 for n in fr.n_thr)
        used, pairs, singles = set(), [], []
        for v in vals:
            if v in used:
                continue
            w = next((w for w in vals if w not in used and w != v and fr.m_val[w] == fr.m_val[v]
                      and fr.n_val[w] == fr.n_val[v] + 1), None)
            if thr_even and fr.n_val[v] % 2 == 0 and w is not None:
                pairs.append((v, w))
                used |= {v, w}
            else:
                singles.append(v)
                used.add(v)
        return pairs, singles

    def _use_stmatrix(self, dtype, pairs) -> bool:
        fr = self.cfg.fragment
        return (_BYTES[dtype] == 2 and fr.mma_warp_pattern() and len(pairs) % 4 == 0
                and all(fr.n_val[p[0]] % 8 == 0 for p in pairs))

    def _addr(self, buf, m_local, n_local, dtype):
        rb = self.epi_n * _BYTES[dtype]
        return (f"({buf} + cute_epi_swz<{rb}>({m_local}, ({n_local}) * {_BYTES[dtype]}))")

    def consumer_code(self, acc="acc", bar_id: int = 1, prefetched: bool = False) -> str:
        """Every consumer thread (``tid`` in [0, num_threads)): the store loop of one tile.

        ``acc``: the accumulator array's name (value ``v`` is ``acc[v]``) or a function giving
        the C expression of value ``v`` (e.g. for a ``[slabs][n]`` array).  ``bar_id``: the
        named barrier the consumer threads synchronise on.  ``prefetched``: the kernel already
        ran :meth:`prefetch_code` for this tile."""
        cfg, fr, lt = self.cfg, self.cfg.fragment, self.lt
        acc_of = acc if callable(acc) else (lambda v, a=acc: f"{a}[{v}]")
        em, en = self.epi_m, self.epi_n
        L = [] if prefetched else [x for x in self.prefetch_code().split("\n") if x]
        L += [f"const int cute_lane = tid & 31;",
             f"const int cute_mt = {fr.m_thr_expr};",
             f"const int cute_nt = {fr.n_thr_expr};"]
        reds = {n: (k, o) for n, k, o in lt.reductions}
        col_m = sorted({fr.m_val[v] for v in range(fr.num_values)})
        for name, (kind, op) in reds.items():
            ident = reduce_identity_literal(op)
            if kind == "scalar":
                L.append(f"float red_{name} = {ident};")
            elif kind == "col":
                L += [f"float cr_{name}_{m} = {ident};" for m in col_m]
        if lt.rows or lt.cols:   # stage the tile's slice of every broadcast vector in smem
            for kind, name, dt, o, length, bound, origin in self._vector_slices():
                for i in range(-(-length // self.nc)):
                    st = (f"st_shared_f32(cute_epi_smem + {o}u + 4u * (tid + {i * self.nc}), "
                          f"cb_{name}_{i});")
                    L.append(st if (i + 1) * self.nc <= length else
                             f"if (tid + {i * self.nc} < {length}) {st}")
            L.append(f"named_barrier_sync({bar_id}, {self.nc});")
        reuse_lag = min(1, cfg.stages_c - 1)
        if cfg.reuse_smem_c:
            L.append("int cute_epi_prev_c = -1;")
        if cfg.delay_tma_store:
            L.append("int cute_epi_pend_d = -1, cute_epi_pend_x = 0, cute_epi_pend_y = 0;")
        for s, (sm, sn) in enumerate(self.subtiles):
            vals = self.values[(sm, sn)]
            L.append(f"{{ // subtile ({sm}, {sn})")
            B = []
            B.append(f"const int cute_sm0 = cute_epi_m0 + {sm * em}, "
                     f"cute_sn0 = cute_epi_n0 + {sn * en};")
            B.append(f"const int cute_lm = cute_mt - {sm * em}, cute_ln = cute_nt - {sn * en};")
            pairs, singles = self.groups[(sm, sn)]
            # -- direct C / aux: issue subtile s + ahead's loads, unpack subtile s's registers
            if lt.loads and self.direct:
                if s + cfg.direct_ahead < len(self.subtiles):
                    B += self._direct_load_lines(s + cfg.direct_ahead)
                for name, dt in lt.loads:
                    for _, _, run in self._load_groups((sm, sn), dt)[0]:
                        B.append("quad_transpose_u32("
                                 + ", ".join(f"cq_{name}_{v}" for v in run) + ", cute_lane & 3);")
                    def word(v, pair, name=name, dt=dt):
                        r = f"cq_{name}_{v}"
                        return r if pair else f"{r}.x" if dt == "float32" else \
                            f"(unsigned short)({r} & 0xffffu)"
                    B += self._value_lines(name, dt, pairs, singles, word)
            # -- C / aux loads: wait, smem -> registers, release
            elif lt.loads:
                B.append("mbarrier_wait_parity(cute_epi_full + 8u * cute_epi_c_idx, "
                         "cute_epi_c_phase);")
                for name, dt in lt.loads:
                    buf = self._buf_expr(("load", name), "cute_epi_c_idx")
                    B.append(f"const u32 lb_{name} = {buf};")
                    def word(v, pair, name=name, dt=dt):
                        a = self._addr(f"lb_{name}", f"cute_lm + {fr.m_val[v]}",
                                       f"cute_ln + {fr.n_val[v]}", dt)
                        ld = {(True, True): "ld_shared_f32x2", (True, False): "ld_shared_32",
                              (False, True): "ld_shared_f32",
                              (False, False): "ld_shared_16"}[(pair, dt == "float32")]
                        return f"{ld}({a})"
                    B += self._value_lines(name, dt, pairs, singles, word)
                if cfg.reuse_smem_c:
                    B.append("const int cute_epi_this_c = cute_epi_c_idx;")
                else:
                    B.append("__syncwarp();")
                    B.append("if (cute_lane == 0) mbarrier_arrive(cute_epi_empty + 8u * "
                             "cute_epi_c_idx);")
                B.append(f"if (++cute_epi_c_idx == {cfg.stages_c}) "
                         "{ cute_epi_c_idx = 0; cute_epi_c_phase ^= 1u; }")
            # -- broadcasts
            ns = sorted({fr.n_val[v] for v in vals})
            ms = sorted({fr.m_val[v] for v in vals})
            for name, dt in lt.rows:
                o = self.buf[("row", name)][0]
                for n in ns:
                    B.append(f"const float row_{name}_{n} = "
                             f"ld_shared_f32(cute_epi_smem + {o}u + 4u * (cute_nt + {n}));")
            for name, dt in lt.cols:
                o = self.buf[("col", name)][0]
                for m in ms:
                    B.append(f"const float col_{name}_{m} = "
                             f"ld_shared_f32(cute_epi_smem + {o}u + 4u * (cute_mt + {m}));")
            for name, (kind, op) in reds.items():
                if kind == "row":
                    B += [f"float rr_{name}_{n} = {reduce_identity_literal(op)};" for n in ns]
            # -- visit
            for v in vals:
                args = [acc_of(v)]
                args += [f"ld_{name}_{v}" for name, _ in lt.loads]
                args += [f"row_{name}_{fr.n_val[v]}" for name, _ in lt.rows]
                args += [f"col_{name}_{fr.m_val[v]}" for name, _ in lt.cols]
                args.append(f"(cute_epi_m0 + cute_mt + {fr.m_val[v]} < M) && "
                            f"(cute_epi_n0 + cute_nt + {fr.n_val[v]} < N)")
                args += [f"s_{name}" for name in lt.scalars]
                args += [f"s_{name}" for name, _ in lt.scalar_ptrs]
                for name, _ in lt.stores:
                    B.append(f"float st_{name}_{v};")
                    args.append(f"st_{name}_{v}")
                for name, (kind, op) in reds.items():
                    args.append({"scalar": f"red_{name}", "col": f"cr_{name}_{fr.m_val[v]}",
                                 "row": f"rr_{name}_{fr.n_val[v]}"}[kind])
                B.append(f"const float dv_{v} = cute_epi_visit({', '.join(args)});")
            # -- row reductions: shuffle over the lanes of one column, atomics
            for name, (kind, op) in reds.items():
                if kind != "row":
                    continue
                masks = fr.shuffle_masks("n")
                for n in ns:
                    x = f"rr_{name}_{n}"
                    for mk in masks:
                        B.append(f"{x} = {reduce_combine(op, x, f'__shfl_xor_sync(0xffffffffu, {x}, {mk})')};")
                    cond = f"(cute_lane & {sum(masks)}) == 0 && cute_epi_n0 + cute_nt + {n} < N"
                    B.append(f"if ({cond}) {atomic_reduce(op, f'p_{name} + cute_epi_n0 + cute_nt + {n}', x)}")
            # -- registers -> smem -> TMA store
            B += self._store_phase(s, pairs, singles, bar_id)
            L += ["  " + b for b in B]
            L.append("}")
        L += self._tile_end(reds, col_m, reuse_lag)
        return "\n".join(L)

    def _gload(self, name, dt, idx, bound):
        if dt == "float32":
            v = f"__ldg(p_{name} + ({idx}))"
        else:
            k = "f16" if dt == "float16" else "bf16"
            v = f"{k}_bits_to_f32(__ldg(p_{name} + ({idx})))"
        return f"(({idx}) < {bound} ? {v} : 0.0f)"

    def _write_values(self, buf, dtype, src, pairs, singles):
        """Registers -> one smem subtile buffer. ``src(v)`` is the float expression of v."""
        fr = self.cfg.fragment
        B = []
        bytes_ = _BYTES[dtype]
        if bytes_ == 2:
            k = "f16" if dtype == "float16" else "bf16"
        if self._use_stmatrix(dtype, pairs):
            B.append("{ const int wm_ = cute_lm - (cute_lane >> 2), "
                     "wn_ = cute_ln - 2 * (cute_lane & 3), q_ = cute_lane >> 3;")
            for g in range(0, len(pairs), 4):
                grp = pairs[g:g + 4]
                mv = [fr.m_val[p[0]] for p in grp]
                nv = [fr.n_val[p[0]] for p in grp]
                sel_m = f"(q_ == 0 ? {mv[0]} : q_ == 1 ? {mv[1]} : q_ == 2 ? {mv[2]} : {mv[3]})"
                sel_n = f"(q_ == 0 ? {nv[0]} : q_ == 1 ? {nv[1]} : q_ == 2 ? {nv[2]} : {nv[3]})"
                a = self._addr(buf, f"wm_ + {sel_m} + (cute_lane & 7)", f"wn_ + {sel_n}", dtype)
                regs = ", ".join(f"pack_{k}x2({src(v)}, {src(w)})" for v, w in grp)
                B.append(f"  stmatrix_x4({a}, {regs});")
            B.append("}")
            return B
        for v, w in pairs:
            a = self._addr(buf, f"cute_lm + {fr.m_val[v]}", f"cute_ln + {fr.n_val[v]}", dtype)
            if bytes_ == 4:
                B.append(f"st_shared_f32x2({a}, {src(v)}, {src(w)});")
            else:
                B.append(f"st_shared_32({a}, pack_{k}x2({src(v)}, {src(w)}));")
        for v in singles:
            a = self._addr(buf, f"cute_lm + {fr.m_val[v]}", f"cute_ln + {fr.n_val[v]}", dtype)
            if bytes_ == 4:
                B.append(f"st_shared_f32({a}, {src(v)});")
            else:
                B.append(f"st_shared_16({a}, f32_to_{k}_bits({src(v)}));")
        return B

    def _issue_stores(self, stage_expr, x, y, d_from_c=False):
        lines = []
        dbuf = (self._buf_expr(("load", "C"), stage_expr) if d_from_c
                else self._buf_expr(("store", "D"), stage_expr))
        lines.append(f"tma_store_2d{self._ef}(&tmap_D, {dbuf}, {x}, {y}{self._pol});")
        for name, _ in self.lt.stores:
            lines.append(f"tma_store_2d{self._ef}(&tmap_{name}, "
                         f"{self._buf_expr(('store', name), stage_expr)}, {x}, {y}{self._pol});")
        lines.append("bulk_commit_group();")
        return lines

    def _store_phase(self, s, pairs, singles, bar_id=1):
        cfg, nc = self.cfg, self.nc
        B = []
        bar = f"named_barrier_sync({bar_id}, {nc});"
        if cfg.reuse_smem_c:
            lag = min(1, cfg.stages_c - 1)
            B.append(bar)   # all reads of this C stage are done
            buf = self._buf_expr(("load", "C"), "cute_epi_this_c")
            B += self._write_values(buf, cfg.element_d, lambda v: f"dv_{v}", pairs, singles)
            B += ["fence_proxy_async_shared();", bar, "if (tid == 0) {"]
            B += ["  " + x for x in self._issue_stores("cute_epi_this_c", "cute_sn0", "cute_sm0",
                                                        d_from_c=True)]
            if lag == 0:
                B += ["  bulk_wait_group_read<0>();",
                      "  mbarrier_arrive(cute_epi_empty + 8u * cute_epi_this_c);"]
            else:
                B += ["  bulk_wait_group_read<1>();",
                      "  if (cute_epi_prev_c >= 0) "
                      "mbarrier_arrive(cute_epi_empty + 8u * cute_epi_prev_c);"]
            B.append("}")
            if lag:
                B.append("cute_epi_prev_c = cute_epi_this_c;")
            return B
        if cfg.delay_tma_store:
            B += ["if (tid == 0 && cute_epi_pend_d >= 0) {"]
            B += ["  " + x for x in self._issue_stores("cute_epi_pend_d", "cute_epi_pend_x",
                                                        "cute_epi_pend_y")]
            B.append("}")
        B.append(f"if (tid == 0) bulk_wait_group_read<{cfg.stages_d - 1}>();")
        B.append(bar)
        B += self._write_values(self._buf_expr(("store", "D"), "cute_epi_d_idx"), cfg.element_d,
                                lambda v: f"dv_{v}", pairs, singles)
        for name, dt in self.lt.stores:
            B += self._write_values(self._buf_expr(("store", name), "cute_epi_d_idx"), dt,
                                    lambda v, name=name: f"st_{name}_{v}", pairs, singles)
        B += ["fence_proxy_async_shared();", bar]
        if cfg.delay_tma_store:
            B.append("cute_epi_pend_d = cute_epi_d_idx; cute_epi_pend_x = cute_sn0; "
                     "cute_epi_pend_y = cute_sm0;")
        else:
            B.append("if (tid == 0) {")
            B += ["  " + x for x in self._issue_stores("cute_epi_d_idx", "cute_sn0", "cute_sm0")]
            B.append("}")
        B.append(f"if (++cute_epi_d_idx == {cfg.stages_d}) cute_epi_d_idx = 0;")
        return B

    def _tile_end(self, reds, col_m, reuse_lag):
        cfg, fr = self.cfg, self.cfg.fragment
        L = []
        if cfg.delay_tma_store:
            L.append("if (tid == 0 && cute_epi_pend_d >= 0) {")
            L += ["  " + x for x in self._issue_stores("cute_epi_pend_d", "cute_epi_pend_x",
                                                        "cute_epi_pend_y")]
            L.append("}")
        if cfg.reuse_smem_c and reuse_lag:
            L += ["if (tid == 0 && cute_epi_prev_c >= 0) {", "  bulk_wait_group_read<0>();",
                  "  mbarrier_arrive(cute_epi_empty + 8u * cute_epi_prev_c);", "}"]
        for name, (kind, op) in reds.items():
            if kind == "col":
                masks = fr.shuffle_masks("m")
                for m in col_m:
                    x = f"cr_{name}_{m}"
                    for mk in masks:
                        L.append(f"{x} = {reduce_combine(op, x, f'__shfl_xor_sync(0xffffffffu, {x}, {mk})')};")
                    cond = f"(cute_lane & {sum(masks)}) == 0 && cute_epi_m0 + cute_mt + {m} < M"
                    L.append(f"if ({cond}) {atomic_reduce(op, f'p_{name} + cute_epi_m0 + cute_mt + {m}', x)}")
            elif kind == "scalar":
                x = f"red_{name}"
                for mk in (1, 2, 4, 8, 16):
                    L.append(f"{x} = {reduce_combine(op, x, f'__shfl_xor_sync(0xffffffffu, {x}, {mk})')};")
                L.append(f"if (cute_lane == 0) {atomic_reduce(op, f'p_{name}', x)}")
        return L

    def consumer_tail_code(self) -> str:
        """After the last tile: wait until every TMA store has finished (``store_tail``)."""
        return "if (tid == 0) bulk_wait_group<0>();"

    # -- analysis ----------------------------------------------------------------------------
    def r2s_wavefronts(self, dtype=None) -> dict:
        """Bank-conflict analysis of the register->smem writes of D for warp 0 of subtile 0:
        ``{"wavefronts": n, "ideal": n}`` summed over the instructions (per the smem model of
        :func:`bank_wavefronts`)."""
        dtype = dtype or self.cfg.element_d
        fr = self.cfg.fragment
        s0 = self.subtiles[0]
        pairs, singles = self.groups[s0]
        rb = self.epi_n * _BYTES[dtype]
        total = ideal = 0
        lanes = range(32)
        if self._use_stmatrix(dtype, pairs):
            for g in range(0, len(pairs), 4):
                grp = pairs[g:g + 4]
                for q, (v, _) in enumerate(grp):   # one 8x8 matrix = 8 rows of 16 bytes
                    addrs = [swizzle_offset(fr.m_thr[r * 4] + fr.m_val[v] - s0[0] * self.epi_m,
                                            (fr.n_thr[0] + fr.n_val[v] - s0[1] * self.epi_n)
                                            * _BYTES[dtype], rb) for r in range(8)]
                    total += bank_wavefronts(addrs, 16)
                    ideal += 1
            return {"wavefronts": total, "ideal": ideal, "instr": "stmatrix.x4"}
        width = 2 * _BYTES[dtype]
        for v, _ in pairs:
            addrs = [swizzle_offset(fr.m_thr[t] + fr.m_val[v] - s0[0] * self.epi_m,
                                    (fr.n_thr[t] + fr.n_val[v] - s0[1] * self.epi_n)
                                    * _BYTES[dtype], rb) for t in lanes]
            total += bank_wavefronts(addrs, width)
            ideal += max(1, 32 * width // 128)
        return {"wavefronts": total, "ideal": ideal, "instr": f"st.shared.{8 * width}"}

    def key(self) -> str:
        return hashlib.sha256(repr((self.cfg.tree, self.cfg.fragment, self.cfg.tile_m,
                                    self.cfg.tile_n, self.cfg.element_d, self.cfg.epilogue_tile,
                                    self.cfg.stages_c, self.cfg.stages_d, self.cfg.reuse_smem_c,
                                    self.cfg.delay_tma_store, self.cfg.prefetch_l2,
                                    self.cfg.l2_evict_first, self.cfg.load_path,
                                    self.cfg.direct_ahead, self.cfg.direct_vector)
                                   ).encode()).hexdigest()[:12]


SWZ_HELPER = r"""
template <int RB> __device__ __forceinline__ u32 cute_epi_swz(int row, int colb) {
  // TMA swizzle Swizzle<log2(RB/16), 4, 3> on the byte offset of a row-major subtile
  const u32 off = static_cast<u32>(row * RB + colb);
  return off ^ (((off >> 7) & (RB / 16 - 1)) << 4);
}
"""


def build_test_kernel_source(epi: Sm90Epilogue) -> tuple[str, str]:
    """A standalone kernel that feeds a known accumulator (read from a float32 M x N array
    ``acc_g`` with the fragment's layout) through the full epilogue: producer warp + consumer
    threads, smem stages, TMA loads and stores.  Returns (source, kernel name)."""
    cfg, fr = epi.cfg, epi.cfg.fragment
    name = f"cute_epi_sm90_test_{epi.key()}"
    nc = fr.num_threads
    acc_lines = []
    for v in range(fr.num_values):
        acc_lines.append(
            f"  {{ const int gm = cute_epi_m0 + cute_mt0 + {fr.m_val[v]}, "
            f"gn = cute_epi_n0 + cute_nt0 + {fr.n_val[v]}; "
            f"acc[{v}] = (gm < M && gn < N) ? acc_g[(size_t)gm * N + gn] : 0.0f; }}")
    src = f"""// generated by cute_py.backends.cuda.epilogue.sm90 (standalone epilogue test kernel)
#include "cute_py/prelude.cuh"
using namespace cute_py;
{epi.prelude()}
{SWZ_HELPER}
extern "C" __global__ void __launch_bounds__({nc + 32}, 1) {name}(
    const float* __restrict__ acc_g, int M, int N,
    {epi.param_decls()})
{{
  extern __shared__ unsigned char cute_smem_raw[];
  unsigned char* cute_epi_smem_base = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<size_t>(cute_smem_raw) + 1023) & ~static_cast<size_t>(1023));
  {epi.init_code().replace(chr(10), chr(10) + '  ')}
  __syncthreads();
  const int cute_epi_m0 = blockIdx.y * {cfg.tile_m}, cute_epi_n0 = blockIdx.x * {cfg.tile_n};
  if (threadIdx.x >= {nc}) {{
    {epi.producer_state_decls()}
    if ((threadIdx.x & 31) == 0) {{
      {epi.producer_code().replace(chr(10), chr(10) + '      ')}
    }}
  }} else {{
    const int tid = threadIdx.x;
    {epi.consumer_state_decls()}
    const int cute_mt0 = {fr.m_thr_expr}, cute_nt0 = {fr.n_thr_expr};
    float acc[{fr.num_values}];
{chr(10).join(acc_lines)}
    {epi.consumer_code().replace(chr(10), chr(10) + '    ')}
    {epi.consumer_tail_code()}
  }}
}}
"""
    return src, name
