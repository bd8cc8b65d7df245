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
- ``store_warp``: one thread of a store warp issues the TMA stores.  Each staging buffer has a
  full / empty mbarrier pair: the consumers wait for it to be empty, write, fence and arrive
  on full (every thread); the store warp waits for full, stores, and releases the previous
  buffer after ``wait_group.read<1>``.  The consumers never wait for one another or for a
  store, which is what a barrier per subtile made them do (docs/performance.md, "FP8 GEMM",
  v14).

Shared-memory buffers are row-major subtiles with the TMA swizzle ``Swizzle<B,4,3>`` on byte
addresses (``B = log2(row_bytes/16)``: 32, 64 or 128-byte rows), which makes the MMA-pattern
register<->smem accesses conflict-free (see ``tests/backend/test_epilogue_sm90.py``).
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from cute_py.epilogue import evt
from cute_py.errors import LaunchError
from cute_py.numeric import BYTES

from .. import ir
from ..arch.sm90.epilogue_maps import (composed_apply, staging_layout, subtile_origin_ir,
                                       subtile_origins, thread_offsets)
from ..builder import KernelBuilder
from ..ir import Node
from .fragment import AccFragment, bank_wavefronts, value_pairs
from .lower import (MATH_HELPERS, LoweredTree, atomic_reduce, lower_tree, reduce_combine,
                    reduce_identity_literal, emit_reduction_state)

__all__ = ["EpilogueConfig", "Sm90Epilogue", "ParamSpec", "swizzle_offset", "dtype_bytes",
           "FP8_D_TYPES",
           "valid_option_combinations", "build_test_kernel_source"]

_BYTES = {t: BYTES[t] for t in evt.DTYPES}    # the epilogue's types; cute_py.numeric's table
#: 8-bit floats D may be stored in (saturating round-to-nearest-even of the tree's value): the
#: FP8 GEMM's output for the next layer; never a type of the tree's inputs
FP8_D_TYPES = ("float8_e4m3", "float8_e5m2")
_BYTES.update({t: BYTES[t] for t in FP8_D_TYPES})
_FP8_KIND = {"float8_e4m3": "e4m3", "float8_e5m2": "e5m2"}
#: how C / aux reach the consumer threads (``EpilogueConfig.load_path``)
LOAD_PATHS = ("tma", "direct")


def dtype_bytes(dtype: str) -> int:
    return _BYTES[dtype]


_I32 = (1 << 31) - 1
_SMEM_HI = 1 << 18
# the names the kernel provides to the collective (arch/common/epilogue.py): the region's shared
# addresses, the tile origin and the problem size, as IR variables
SMEM = ir.var("cute_epi_smem", 0, _SMEM_HI)
FULL = ir.var("cute_epi_full", 0, _SMEM_HI)
EMPTY = ir.var("cute_epi_empty", 0, _SMEM_HI)
SFULL = ir.var("cute_epi_sfull", 0, _SMEM_HI)
SEMPTY = ir.var("cute_epi_sempty", 0, _SMEM_HI)
M0 = ir.var("cute_epi_m0", 0, 1 << 30)
N0 = ir.var("cute_epi_n0", 0, 1 << 30)
MM = ir.var("M", 0, _I32)
NN = ir.var("N", 0, _I32)


def swizzle_offset(row: int, col_byte: int, row_bytes: int) -> int:
    """Byte offset of (row, col_byte) in a row-major subtile with the TMA swizzle for
    ``row_bytes``-byte rows: the staging layout
    (:func:`~backends.cuda.arch.sm90.epilogue_maps.staging_layout`, ``Swizzle<B,4,3>`` with
    ``B = log2(row_bytes / 16)``) of one-byte elements, evaluated.

    Law: for fixed ``row`` the map permutes 16-byte chunks within the 128-byte line, so it is a
    bijection on ``[0, rows * row_bytes)`` that keeps 16-byte vectors contiguous."""
    return staging_layout(row + 1, row_bytes, 1)((row, col_byte))


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
    batched: bool = dataclasses.field(default=False, repr=False)
    #                               D is (L, M, N): TMA stores take the tile's batch ``l_`` as
    #                               a third coordinate (trees with tensor inputs / outputs other
    #                               than D are refused: their loads and stores stay 2-D)
    store_warp: bool = dataclasses.field(default=False, repr=False)
    #                               a warp of the GEMM's producer warpgroup issues the D / aux
    #                               TMA stores: the consumers hand each subtile's staging buffer
    #                               over through a full / empty mbarrier pair (no named barrier
    #                               and no store wait in their epilogue; stages_d = the subtile
    #                               count stages whole tiles).  Cooperative kernels only.

    @property
    def epilogue_tile(self) -> tuple[int, int]:
        em = self.epi_m or self.tile_m
        en = self.epi_n or max(8, 64 // _BYTES[self.element_d])
        if not self.epi_n:
            while en > 8 and self.tile_n % en:
                en //= 2        # e.g. an 8-bit D in a 160-wide tile: 32-column subtiles
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
    """One epilogue configuration as an epilogue collective
    (:class:`~backends.cuda.arch.common.epilogue.EpilogueCollective`): its ``emit_*`` methods
    emit into the kernel's :class:`~backends.cuda.builder.KernelBuilder`.

    A kernel using it: ``emit_params`` after its own parameters; ``emit_init`` (all threads,
    thread 0 initialises the barriers) then syncs the CTA; ``emit_producer_state`` /
    ``emit_consumer_state`` once; per output tile ``emit_producer`` in one producer thread and
    ``emit_prefetch`` + ``emit_consumer(kb, acc)`` in every consumer thread (``tid`` = consumer
    thread index, ``cute_epi_m0``/``cute_epi_n0`` = tile origin, ``M``/``N`` = problem size);
    ends with ``emit_consumer_tail``.  Named barrier ``bar_id`` (1 by default) is used among
    the consumer threads.  Every address is IR lowered from the algebra objects of
    :mod:`backends.cuda.arch.sm90.epilogue_maps`.

    The text methods (``prelude``, ``init_code``, ``consumer_code``, ...) render the same
    statements as C text for kernels that still paste text.
    """

    def __init__(self, cfg: EpilogueConfig):
        self.cfg = cfg
        self.lt: LoweredTree = lower_tree(cfg.tree, conv="headers")
        self.direct = cfg.load_path == "direct"
        self._check()
        em, en = cfg.epilogue_tile
        self.epi_m, self.epi_n = em, en
        self.nc = cfg.fragment.num_threads
        # the subtiles (n-outer, m-inner) and their origins: flat_divide(tile, epilogue tile)
        div = subtile_origins(cfg.tile_m, cfg.tile_n, em, en)
        self.subtiles = [ij for ij, _ in div]
        self.origins = [o for _, o in div]
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
        if cfg.element_d in FP8_D_TYPES and (cfg.reuse_smem_c or cfg.batched):
            raise LaunchError(op, "element_d", "an 8-bit D is staged apart from C and stored "
                              "2-D (no reuse_smem_c, no batched D)", actual=cfg.element_d)
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
        roles = [r.split(":")[0] for r, _ in cfg.tree.signature.values()]
        if cfg.batched and (any(r != "scalar" for r in roles) or cfg.l2_evict_first):
            raise LaunchError(op, "batched", "a batched D takes trees of the accumulator and "
                              "scalars only (no C / aux / vector tensors), without L2 hints",
                              actual=str(cfg.tree))
        if cfg.store_warp and (cfg.reuse_smem_c or cfg.delay_tma_store):
            raise LaunchError(op, "store_warp", "stages D apart from C and issues every store "
                              "itself (no reuse_smem_c, no delay_tma_store)", expected=False,
                              actual=(cfg.reuse_smem_c, cfg.delay_tma_store))
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
        self.store_bar_offset = off + (16 * cfg.stages_c if self.tma_loads else 16)
        self.smem_bytes = self.store_bar_offset + 16 * self.store_barriers
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
        cache-policy operand (``l2_evict_first``), passed as :attr:`_pol_args`."""
        return "_hint" if self.cfg.l2_evict_first else ""


    # -- index maps (algebra -> IR) ----------------------------------------------------------
    def _buf(self, key, stage) -> Node:
        """Shared address (IR) of stage ``stage`` (IR or int) of buffer ``key``."""
        o, nb, _, _ = self.buf[key]
        return ir.add(ir.add(SMEM, o), ir.mul(stage, nb))

    def _staging(self, dtype):
        """The swizzled byte layout of one subtile of a ``dtype`` buffer (a ComposedLayout)."""
        return staging_layout(self.epi_m, self.epi_n, _BYTES[dtype])

    def _addr(self, buf: Node, m_local, n_local, dtype) -> Node:
        """``buf + staging(m_local, n_local)``: element (m_local, n_local) of a subtile buffer."""
        return ir.add(buf, composed_apply(self._staging(dtype), (m_local, n_local)))

    def _tid(self) -> Node:
        return ir.var("tid", 0, self.nc - 1)

    def _thread(self, kb) -> tuple:
        """``(mt, nt)``: the thread's offsets in the CTA tile (IR from the fragment's thread
        layouts), bound to ``cute_mt`` / ``cute_nt`` in ``kb``."""
        mt, nt = thread_offsets(self.cfg.fragment, self._tid())
        kb.let(mt, "cute_mt")
        kb.let(nt, "cute_nt")
        return mt, nt

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

    # -- the collective protocol (backends/cuda/arch/common/epilogue.py) -----------------------
    def emit_helpers(self, kb) -> None:
        kb.helper(MATH_HELPERS + "\n" + self.lt.source)

    def emit_params(self, kb) -> None:
        for p in self.params():
            kb.param(p.ctype, p.name)

    def emit_region(self, kb, base: str = "cute_epi_smem_base") -> None:
        """Declares ``cute_epi_smem`` (u32 shared address of this epilogue's region) and its C
        barrier arrays ``cute_epi_full`` / ``cute_epi_empty``.  A kernel running several
        instances (one per ping-pong warpgroup) declares each in its own scope."""
        kb.decl("const u32", "cute_epi_smem",
                f"static_cast<u32>(__cvta_generic_to_shared({base}))", hint=False)
        kb.decl("const u32", "cute_epi_full", ir.add(SMEM, self.bar_offset), hint=False)
        kb.decl("const u32", "cute_epi_empty", ir.add(FULL, 8 * self.cfg.stages_c), hint=False)
        if self.cfg.store_warp:     # the D staging buffers' full / empty barriers
            kb.decl("const u32", "cute_epi_sfull", ir.add(SMEM, self.store_bar_offset),
                    hint=False)
            kb.decl("const u32", "cute_epi_sempty", ir.add(SFULL, 8 * self.store_barriers),
                    hint=False)

    def emit_init(self, kb, base: str = "cute_epi_smem_base") -> None:
        """:meth:`emit_region`, then thread 0 initialises the barriers.  The caller syncs the
        CTA afterwards.  ``base`` is a 1024-aligned ``char*``."""
        cfg = self.cfg
        empty_count = 1 if cfg.reuse_smem_c else self.nc // 32
        self.emit_region(kb, base)
        if self.tma_loads or cfg.store_warp:
            with kb.if_("threadIdx.x == 0"):
                if self.tma_loads:
                    for s in range(cfg.stages_c):
                        kb.call("mbarrier_init", ir.add(FULL, 8 * s), 1)
                        kb.call("mbarrier_init", ir.add(EMPTY, 8 * s), empty_count)
                if cfg.store_warp:      # full: every consumer thread; empty: the store warp
                    st = self.staging
                    for s in range(st.barriers):
                        kb.call("mbarrier_init", ir.add(SFULL, 8 * s), st.full_arrive_count)
                        kb.call("mbarrier_init", ir.add(SEMPTY, 8 * s), st.empty_arrive_count)
                kb.call("fence_mbarrier_init")

    def emit_producer_state(self, kb) -> None:
        kb.decl("int", "cute_epi_p_idx", 0, hint=False)
        kb.decl("u32", "cute_epi_p_phase", 1, hint=False)

    def emit_consumer_state(self, kb) -> None:
        kb.decl("int", "cute_epi_c_idx", 0, hint=False)
        kb.decl("u32", "cute_epi_c_phase", 0, hint=False)
        kb.decl("int", "cute_epi_d_idx", 0, hint=False)
        if self.cfg.store_warp:     # producer start state: the first pass finds them empty
            kb.decl("u32", "cute_epi_d_phase", "1u", hint=False)

    def _subtile_coords(self, s) -> tuple:
        """Global (x = column, y = row) of subtile ``s`` (IR) of the tile at (cute_epi_m0,
        cute_epi_n0), from the flat_divide of the tile by the epilogue tile."""
        mo, no = subtile_origin_ir(self.cfg.tile_m, self.cfg.tile_n, self.epi_m, self.epi_n, s)
        return ir.add(N0, no), ir.add(M0, mo)

    def emit_producer(self, kb) -> None:
        """One thread: TMA-loads every subtile of C / aux of tile (cute_epi_m0, cute_epi_n0)."""
        if not self.tma_loads:
            kb.comment("epilogue: the consumers load C / aux directly" if self.lt.loads else
                       "epilogue: nothing to load")
            return
        cfg = self.cfg
        nsub = len(self.subtiles)
        if cfg.prefetch_l2 and nsub > cfg.stages_c:
            # The producer reaches a tile right after the previous tile's epilogue freed the
            # C stages, i.e. while the consumers start this tile's mainloop: ask TMA to bring
            # the subtiles that cannot be staged yet into L2 now, so their loads during the
            # epilogue hit L2 instead of waiting on HBM (cp.async.bulk.prefetch.tensor).
            with kb.for_("cute_s", cfg.stages_c, nsub) as s:
                x, y = self._subtile_coords(s)
                for name, _ in self.lt.loads:
                    kb.call("tma_prefetch_l2_2d", f"&tmap_{name}", x, y)
        p_idx = ir.var("cute_epi_p_idx", 0, cfg.stages_c - 1)
        with kb.for_("cute_s", 0, nsub) as s:
            x, y = self._subtile_coords(s)
            full = kb.let(ir.add(FULL, ir.mul(p_idx, 8)), "full_")
            kb.call("mbarrier_wait_parity", ir.add(EMPTY, ir.mul(p_idx, 8)), "cute_epi_p_phase")
            kb.call("mbarrier_arrive_expect_tx", full, f"{self.load_bytes}u")
            for name, _ in self.lt.loads:
                kb.call(f"tma_load_2d{self._ef}", self._buf(("load", name), p_idx),
                        f"&tmap_{name}", full, x, y, *self._pol_args)
            kb.stmt(f"if (++cute_epi_p_idx == {cfg.stages_c}) "
                    "{ cute_epi_p_idx = 0; cute_epi_p_phase ^= 1u; }")

    @property
    def _pol_args(self) -> tuple:
        """The trailing policy argument of a ``_hint`` wrapper call (none without a hint)."""
        return ("l2_policy_evict_first()",) if self.cfg.l2_evict_first else ()

    # -- direct C / aux loads -------------------------------------------------------------------
    def _emit_direct_bases(self, kb, mt, nt) -> None:
        """Per tensor and distinct row offset of the fragment: the thread's row pointer
        (``cute_dr_<name>_<m>``, at the thread's first column) and the columns left in that row
        (``cute_drn_<name>_<m>``, 0 when the row is outside the problem); for quad loads the
        same at the first column of the lane's 8-column group (``cute_dq_`` / ``cute_dqn_``)
        and whether the matrix allows 16-byte loads (``cute_dv_<name>``).  Every load is then a
        row pointer plus an immediate column offset."""
        fr = self.cfg.fragment
        qn = ir.add(nt, ir.mul(ir.and_(self._tid(), 3), 6))   # lane q of a quad: column 8q
        for name, dt in self.lt.loads:
            ct = "float" if dt == "float32" else "unsigned short"
            ld = ir.var(f"ld_{name}", 0, _I32)
            groups = [self._load_groups(s, dt) for s in self.subtiles]
            q_rows = {m for quads, _ in groups for m, _, _ in quads}
            p_rows = {fr.m_val[v] for _, heads in groups for v in heads}
            if q_rows:   # 16-byte loads need a 16-byte aligned matrix with 16-byte rows
                kb.decl("const bool", f"cute_dv_{name}",
                        f"((reinterpret_cast<size_t>(p_{name}) | ((size_t)ld_{name} * 2u)) "
                        f"& 15u) == 0", hint=False)
            for m in sorted(q_rows | p_rows):
                r = ir.add(ir.add(M0, mt), m)
                for tag, col in (("r", nt), ("q", qn)):
                    if m in (p_rows if tag == "r" else q_rows):
                        c = ir.add(N0, col)
                        kb.decl(f"const {ct}* const", f"cute_d{tag}_{name}_{m}",
                                f"p_{name} + {kb.expr(ir.add(ir.mul(r, ld), c))}", hint=False)
                        kb.decl("const int", f"cute_d{tag}n_{name}_{m}",
                                ir.select(ir.lt(r, MM), ir.sub(NN, c), 0), hint=False)

    def _emit_direct_loads(self, kb, s: int) -> None:
        """Loads of subtile ``s``'s C / aux values into their registers (``cq_<name>_<v>``, one
        per pair of adjacent values or per single value)."""
        fr, sub = self.cfg.fragment, self.subtiles[s]
        singles = self.groups[sub][1]
        for name, dt in self.lt.loads:
            fn = f"ld_global_pair{'32' if dt == 'float32' else '16'}{self._ef}"
            quads, rest = self._load_groups(sub, dt)
            for m, n, run in quads:
                kb.call(f"ld_global_quad16{self._ef}", f"cute_dq_{name}_{m}",
                        f"cute_dqn_{name}_{m}", f"cute_dv_{name}",
                        *[f"cq_{name}_{v}" for v in run], *self._pol_args, template=str(n))
            for v in rest:
                n, rem = fr.n_val[v], ir.var(f"cute_drn_{name}_{fr.m_val[v]}", -_I32, _I32)
                if v in singles:          # in bounds iff rem > n
                    rem = ir.select(ir.lt(rem, n + 1), rem, n + 1)
                kb.assign(f"cq_{name}_{v}", kb.call_expr(
                    fn, f"cute_dr_{name}_{fr.m_val[v]}", rem, *self._pol_args,
                    template=str(n)))

    def _gload(self, kb, name, dt, idx: Node, bound: Node) -> str:
        """A broadcast vector's element ``idx`` as float (0 past ``bound``)."""
        i = kb.expr(idx)
        v = f"__ldg(p_{name} + ({i}))"
        if dt != "float32":
            v = kb.call_expr("f16_bits_to_f32" if dt == "float16" else "bf16_bits_to_f32", v)
        return f"({kb.expr(ir.lt(idx, bound))} ? {v} : 0.0f)"

    def emit_prefetch(self, kb) -> None:
        """Loads a tile's epilogue inputs that do not depend on the accumulators: the tile's
        slices of the bias-like broadcast vectors (``cb_<name>_<i>``, element ``tid + i *
        threads``), the device-pointer scalars (``s_<name>``) and, on the direct path, C / aux:
        declares their registers and row pointers and issues the loads of the first
        ``direct_ahead`` subtiles.  A kernel emits it into every consumer thread after
        ``cute_epi_m0`` / ``cute_epi_n0`` are known and before the tile's mainloop, and then
        calls ``emit_consumer(..., prefetched=True)``: the loads are in flight while the
        accumulators are computed instead of starting the epilogue with a memory round trip
        (docs/performance.md, "Epilogue", v3).  Otherwise ``emit_consumer`` issues it itself."""
        tid = self._tid()
        for kind, name, dt, _, length, bound, origin in self._vector_slices():
            for i in range(-(-length // self.nc)):
                idx = ir.add(ir.add(origin, tid), i * self.nc)
                kb.decl("const float", f"cb_{name}_{i}", self._gload(kb, name, dt, idx, bound),
                        hint=False)
        for name, dt in self.lt.scalar_ptrs:
            v = f"p_{name}[0]"
            if dt != "float32":
                v = kb.call_expr("f16_bits_to_f32" if dt == "float16" else "bf16_bits_to_f32", v)
            kb.decl("const float", f"s_{name}", v, hint=False)
        if not (self.direct and self.lt.loads):
            return
        for name, dt in self.lt.loads:
            ty = "float2" if dt == "float32" else "u32"
            regs = [f"cq_{name}_{v}" for sub in self.subtiles for v in self._direct_heads(sub)]
            kb.stmt(f"{ty} {', '.join(regs)};")
        mt, nt = self._thread(kb)
        self._emit_direct_bases(kb, mt, nt)
        for s in range(min(self.cfg.direct_ahead, len(self.subtiles))):
            self._emit_direct_loads(kb, s)

    # -- consumer ------------------------------------------------------------------------------
    def emit_consumer(self, kb, acc="acc", bar_id=1, prefetched: bool = False) -> None:
        """Every consumer thread (``tid`` in [0, num_threads)): the store loop of one tile.

        ``acc``: the accumulator array's name (value ``v`` is ``acc[v]``) or a function giving
        the C expression of value ``v`` (e.g. for a ``[slabs][n]`` array).  ``bar_id``: the
        named barrier the consumer threads synchronise on (int or C text).  ``prefetched``: the
        kernel already ran :meth:`emit_prefetch` for this tile."""
        cfg, fr, lt = self.cfg, self.cfg.fragment, self.lt
        acc_of = acc if callable(acc) else (lambda v, a=acc: f"{a}[{v}]")
        tid = self._tid()
        if not prefetched:
            self.emit_prefetch(kb)
        lane = ir.and_(tid, 31)
        kb.let(lane, "cute_lane")
        mt, nt = self._thread(kb)
        reds, col_m = emit_reduction_state(kb, lt, fr)
        if lt.rows or lt.cols:   # stage the tile's slice of every broadcast vector in smem
            if cfg.store_warp:
                # no barrier ends the previous tile's epilogue: wait until it read its slices
                kb.call("named_barrier_sync", bar_id, self.nc)
            for kind, name, dt, o, length, bound, origin in self._vector_slices():
                for i in range(-(-length // self.nc)):
                    j = ir.add(tid, i * self.nc)
                    a = ir.add(ir.add(SMEM, o), ir.mul(j, 4))
                    if (i + 1) * self.nc <= length:
                        kb.call("st_shared_f32", a, f"cb_{name}_{i}")
                    else:
                        with kb.if_(ir.lt(j, length)):
                            kb.call("st_shared_f32", a, f"cb_{name}_{i}")
            kb.call("named_barrier_sync", bar_id, self.nc)
        reuse_lag = min(1, cfg.stages_c - 1)
        if cfg.reuse_smem_c:
            kb.decl("int", "cute_epi_prev_c", -1, hint=False)
        if cfg.delay_tma_store:
            kb.stmt("int cute_epi_pend_d = -1, cute_epi_pend_x = 0, cute_epi_pend_y = 0;")
        c_idx = ir.var("cute_epi_c_idx", 0, cfg.stages_c - 1)
        for s, (sm, sn) in enumerate(self.subtiles):
            vals = self.values[(sm, sn)]
            m_org, n_org = self.origins[s]
            with kb.scope():
                kb.comment(f"subtile ({sm}, {sn})")
                x, y = ir.add(N0, n_org), ir.add(M0, m_org)
                pairs, singles = self.groups[(sm, sn)]
                # -- direct C / aux: issue subtile s + ahead's loads, unpack subtile s's registers
                if lt.loads and self.direct:
                    if s + cfg.direct_ahead < len(self.subtiles):
                        self._emit_direct_loads(kb, s + cfg.direct_ahead)
                    for name, dt in lt.loads:
                        for _, _, run in self._load_groups((sm, sn), dt)[0]:
                            kb.call("quad_transpose_u32", *[f"cq_{name}_{v}" for v in run],
                                    ir.and_(tid, 3))

                        def word(v, pair, name=name, dt=dt):
                            r = f"cq_{name}_{v}"
                            return r if pair else f"{r}.x" if dt == "float32" else \
                                f"(unsigned short)({r} & 0xffffu)"
                        self._emit_values(kb, name, dt, pairs, singles, word)
                # -- C / aux loads: wait, smem -> registers, release
                elif lt.loads:
                    kb.call("mbarrier_wait_parity", ir.add(FULL, ir.mul(c_idx, 8)),
                            "cute_epi_c_phase")
                    for name, dt in lt.loads:
                        lb = kb.let(self._buf(("load", name), c_idx), f"lb_{name}")
                        lbv = ir.var(lb, 0, _SMEM_HI)

                        def word(v, pair, name=name, dt=dt, lbv=lbv):
                            a = self._addr(lbv, ir.add(mt, fr.m_val[v] - m_org),
                                           ir.add(nt, fr.n_val[v] - n_org), dt)
                            fn = {(True, True): "ld_shared_f32x2", (True, False): "ld_shared_32",
                                  (False, True): "ld_shared_f32",
                                  (False, False): "ld_shared_16"}[(pair, dt == "float32")]
                            return kb.call_expr(fn, a)
                        self._emit_values(kb, name, dt, pairs, singles, word)
                    if cfg.reuse_smem_c:
                        kb.decl("const int", "cute_epi_this_c", "cute_epi_c_idx", hint=False)
                    else:
                        kb.stmt("__syncwarp();")
                        with kb.if_(ir.eq(lane, 0)):
                            kb.call("mbarrier_arrive", ir.add(EMPTY, ir.mul(c_idx, 8)))
                    kb.stmt(f"if (++cute_epi_c_idx == {cfg.stages_c}) "
                            "{ cute_epi_c_idx = 0; cute_epi_c_phase ^= 1u; }")
                # -- broadcasts
                ns = sorted({fr.n_val[v] for v in vals})
                ms = sorted({fr.m_val[v] for v in vals})
                for name, dt in lt.rows:
                    o = self.buf[("row", name)][0]
                    for n in ns:
                        kb.decl("const float", f"row_{name}_{n}", kb.call_expr(
                            "ld_shared_f32", ir.add(ir.add(SMEM, o), ir.mul(ir.add(nt, n), 4))),
                            hint=False)
                for name, dt in lt.cols:
                    o = self.buf[("col", name)][0]
                    for m in ms:
                        kb.decl("const float", f"col_{name}_{m}", kb.call_expr(
                            "ld_shared_f32", ir.add(ir.add(SMEM, o), ir.mul(ir.add(mt, m), 4))),
                            hint=False)
                for name, (kind, op) in reds.items():
                    if kind == "row":
                        for n in ns:
                            kb.decl("float", f"rr_{name}_{n}", reduce_identity_literal(op),
                                    hint=False)
                # -- visit
                for v in vals:
                    args = [acc_of(v)]
                    args += [f"ld_{name}_{v}" for name, _ in lt.loads]
                    args += [f"row_{name}_{fr.n_val[v]}" for name, _ in lt.rows]
                    args += [f"col_{name}_{fr.m_val[v]}" for name, _ in lt.cols]
                    args.append(kb.expr(ir.land(
                        ir.lt(ir.add(ir.add(M0, mt), fr.m_val[v]), MM),
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
                # -- row reductions: shuffle over the lanes of one column, atomics
                for name, (kind, op) in reds.items():
                    if kind != "row":
                        continue
                    masks = fr.shuffle_masks("n")
                    for n in ns:
                        _emit_lane_reduce(kb, name, op, f"rr_{name}_{n}", masks, lane,
                                          ir.add(ir.add(N0, nt), n), NN)
                # -- registers -> smem -> TMA store
                self._emit_store_phase(kb, s, pairs, singles, bar_id, x, y)
        self._emit_tile_end(kb, reds, col_m, reuse_lag)

    def _emit_values(self, kb, name, dt, pairs, singles, word) -> None:
        """``ld_<name>_<v>`` (float) for the subtile's values from the expressions of their raw
        words: ``word(v, True)`` of a pair (a float2 for float32, else packed 16-bit halves in
        a u32) and ``word(v, False)`` of a single value (a float, else an unsigned short)."""
        k = {"float16": "f16", "bfloat16": "bf16"}.get(dt)
        for v, w in pairs:
            x = word(v, True)
            kb.decl("const float2", f"lp_{name}_{v}",
                    x if dt == "float32" else kb.call_expr(f"{k}x2_bits_to_f32x2", x), hint=False)
            kb.stmt(f"const float ld_{name}_{v} = lp_{name}_{v}.x, "
                    f"ld_{name}_{w} = lp_{name}_{v}.y;")
        for v in singles:
            x = word(v, False)
            kb.decl("const float", f"ld_{name}_{v}",
                    x if dt == "float32" else kb.call_expr(f"{k}_bits_to_f32", x), hint=False)

    def _emit_write_values(self, kb, buf: Node, dtype, src, pairs, singles, s) -> None:
        """Registers -> one smem subtile buffer (subtile ``s``). ``src(v)`` is the float
        expression of v.  ``stmatrix``: lane ``8q + r`` addresses row ``r`` of the ``q``-th
        8x8 block of the group, at the warp's origin (the thread layouts at the warp's first
        lane) plus the block's value offsets."""
        fr = self.cfg.fragment
        m_org, n_org = self.origins[s]
        k = _FP8_KIND.get(dtype) or ("f16" if dtype == "float16" else "bf16")
        tid = self._tid()
        if self._use_stmatrix(dtype, pairs):
            with kb.scope():
                wm, wn = thread_offsets(fr, ir.mul(ir.shr(tid, 5), 32))
                lane = ir.and_(tid, 31)
                q = ir.var(kb.let(ir.shr(lane, 3), "q_"), 0, 3)
                row = ir.and_(tid, 7)
                for g in range(0, len(pairs), 4):
                    grp = pairs[g:g + 4]
                    mv = [fr.m_val[p[0]] - m_org for p in grp]
                    nv = [fr.n_val[p[0]] - n_org for p in grp]
                    sel_m = ir.select(ir.eq(q, 0), mv[0], ir.select(
                        ir.eq(q, 1), mv[1], ir.select(ir.eq(q, 2), mv[2], mv[3])))
                    sel_n = ir.select(ir.eq(q, 0), nv[0], ir.select(
                        ir.eq(q, 1), nv[1], ir.select(ir.eq(q, 2), nv[2], nv[3])))
                    a = self._addr(buf, ir.add(ir.add(wm, sel_m), row), ir.add(wn, sel_n), dtype)
                    kb.call("stmatrix_x4", a, *[kb.call_expr(f"pack_{k}x2", src(v), src(w))
                                                for v, w in grp])
            return
        mt, nt = self._thread(kb)
        for v, w in pairs:
            a = self._addr(buf, ir.add(mt, fr.m_val[v] - m_org), ir.add(nt, fr.n_val[v] - n_org),
                           dtype)
            if _BYTES[dtype] == 4:
                kb.call("st_shared_f32x2", a, src(v), src(w))
            elif _BYTES[dtype] == 1:    # two adjacent 8-bit values: one 16-bit store
                kb.call("st_shared_16", a, kb.call_expr(f"pack_{k}x2", src(v), src(w)))
            else:
                kb.call("st_shared_32", a, kb.call_expr(f"pack_{k}x2", src(v), src(w)))
        for v in singles:
            a = self._addr(buf, ir.add(mt, fr.m_val[v] - m_org), ir.add(nt, fr.n_val[v] - n_org),
                           dtype)
            if _BYTES[dtype] == 4:
                kb.call("st_shared_f32", a, src(v))
            elif _BYTES[dtype] == 1:
                kb.call("st_shared_8", a, kb.call_expr(f"f32_to_{k}_bits", src(v)))
            else:
                kb.call("st_shared_16", a, kb.call_expr(f"f32_to_{k}_bits", src(v)))

    def _emit_issue_stores(self, kb, stage, x, y, d_from_c=False, commit=True) -> None:
        dbuf = self._buf(("load", "C") if d_from_c else ("store", "D"), stage)
        if self.cfg.batched:      # (N, M, L) descriptor: the tile's batch is the third coordinate
            kb.call("tma_store_3d", "&tmap_D", dbuf, x, y, "l_")
        else:
            kb.call(f"tma_store_2d{self._ef}", "&tmap_D", dbuf, x, y, *self._pol_args)
        for name, _ in self.lt.stores:
            kb.call(f"tma_store_2d{self._ef}", f"&tmap_{name}", self._buf(("store", name), stage),
                    x, y, *self._pol_args)
        if commit:
            kb.call("bulk_commit_group")

    def _emit_store_phase(self, kb, s, pairs, singles, bar_id, x, y) -> None:
        cfg, nc = self.cfg, self.nc
        tid0 = ir.eq(self._tid(), 0)
        if cfg.reuse_smem_c:
            lag = min(1, cfg.stages_c - 1)
            this_c = ir.var("cute_epi_this_c", 0, cfg.stages_c - 1)
            prev_c = ir.var("cute_epi_prev_c", -1, cfg.stages_c - 1)
            kb.call("named_barrier_sync", bar_id, nc)   # all reads of this C stage are done
            self._emit_write_values(kb, self._buf(("load", "C"), this_c), cfg.element_d,
                                    lambda v: f"dv_{v}", pairs, singles, s)
            kb.call("fence_proxy_async_shared")
            kb.call("named_barrier_sync", bar_id, nc)
            with kb.if_(tid0):
                self._emit_issue_stores(kb, this_c, x, y, d_from_c=True)
                if lag == 0:
                    kb.call("bulk_wait_group_read", template="0")
                    kb.call("mbarrier_arrive", ir.add(EMPTY, ir.mul(this_c, 8)))
                else:
                    kb.call("bulk_wait_group_read", template="1")
                    with kb.if_(ir.le(0, prev_c)):
                        kb.call("mbarrier_arrive", ir.add(EMPTY, ir.mul(prev_c, 8)))
            if lag:
                kb.assign("cute_epi_prev_c", "cute_epi_this_c")
            return
        d_idx = ir.var("cute_epi_d_idx", 0, cfg.stages_d - 1)
        if self.whole_tile:
            # the tile's staging is one buffer handed to the store warp: wait until the last
            # tile's stores have read it, write every subtile, fence, arrive once
            if s == 0:
                kb.call("mbarrier_wait_parity", SEMPTY, "cute_epi_d_phase")
            self._emit_staged_values(kb, s, pairs, singles, s)
            if s == len(self.subtiles) - 1:
                kb.call("fence_proxy_async_shared")
                kb.call("mbarrier_arrive", SFULL)
                kb.assign("cute_epi_d_phase", "1u", "^=")
            return
        if cfg.store_warp:
            # hand the buffer to the store warp: wait until its last stores have read it,
            # write, make the writes visible to the async proxy, arrive (no CTA-wide barrier)
            kb.call("mbarrier_wait_parity", ir.add(SEMPTY, ir.mul(d_idx, 8)), "cute_epi_d_phase")
            self._emit_staged_values(kb, d_idx, pairs, singles, s)
            kb.call("fence_proxy_async_shared")
            kb.call("mbarrier_arrive", ir.add(SFULL, ir.mul(d_idx, 8)))
            kb.stmt(f"if (++cute_epi_d_idx == {cfg.stages_d}) "
                    "{ cute_epi_d_idx = 0; cute_epi_d_phase ^= 1u; }")
            return
        if cfg.delay_tma_store:
            self._emit_pending_store(kb)
        with kb.if_(tid0):
            kb.call("bulk_wait_group_read", template=str(cfg.stages_d - 1))
        kb.call("named_barrier_sync", bar_id, nc)
        self._emit_staged_values(kb, d_idx, pairs, singles, s)
        kb.call("fence_proxy_async_shared")
        kb.call("named_barrier_sync", bar_id, nc)
        if cfg.delay_tma_store:
            kb.stmt(f"cute_epi_pend_d = cute_epi_d_idx; cute_epi_pend_x = {kb.expr(x)}; "
                    f"cute_epi_pend_y = {kb.expr(y)};")
        else:
            with kb.if_(tid0):
                self._emit_issue_stores(kb, d_idx, x, y)
        kb.stmt(f"if (++cute_epi_d_idx == {cfg.stages_d}) cute_epi_d_idx = 0;")

    def _emit_staged_values(self, kb, d_idx, pairs, singles, s) -> None:
        """D's values (and every AuxStore's) of subtile ``s`` into staging buffer ``d_idx``."""
        self._emit_write_values(kb, self._buf(("store", "D"), d_idx), self.cfg.element_d,
                                lambda v: f"dv_{v}", pairs, singles, s)
        for name, dt in self.lt.stores:
            self._emit_write_values(kb, self._buf(("store", name), d_idx), dt,
                                    lambda v, name=name: f"st_{name}_{v}", pairs, singles, s)

    @property
    def staging(self):
        """The D staging handed to the store warp (``store_warp``; else None): the
        :class:`cute_py.pipeline.StoreStaging` whose barrier counts, handover unit and read
        lag the kernel is emitted from (and :class:`~cute_py.pipeline.StoreStagingModel`
        checks)."""
        if not self.cfg.store_warp:
            return None
        from cute_py.pipeline import StoreStaging
        return StoreStaging(self.cfg.stages_d, self.nc, len(self.subtiles))

    @property
    def whole_tile(self) -> bool:
        """``store_warp`` with a buffer per subtile (``stages_d`` = the subtile count): the
        tile's staging is handed over as one buffer (one mbarrier pair, one bulk group)."""
        return self.staging is not None and self.staging.whole

    @property
    def store_barriers(self) -> int:
        """mbarrier pairs of the D staging (``store_warp``)."""
        return self.staging.barriers if self.cfg.store_warp else 0

    def emit_store_warp_state(self, kb) -> None:
        """The store warp's staging state (``store_warp``): the next buffer, its phase and the
        buffer whose stores were issued last (released once they have read it)."""
        kb.decl("u32", "cute_epi_s_phase", "0u", hint=False)
        if not self.whole_tile:
            kb.decl("int", "cute_epi_s_idx", 0, hint=False)
            kb.decl("int", "cute_epi_s_prev", -1, hint=False)

    def emit_store_warp(self, kb) -> None:
        """One thread, tile (cute_epi_m0, cute_epi_n0): per subtile, wait for its staging
        buffer to be full, issue its TMA stores (one bulk group), then release the buffer of
        the previous group once that group has read it (``bulk_wait_group_read<1>``; with one
        buffer, this group's).  Law: a buffer is written only after the stores of its
        previous contents have read it, and stored only after every consumer thread wrote
        and fenced it."""
        S = self.cfg.stages_d
        if self.whole_tile:
            # one buffer of the whole tile: wait, every subtile's stores, release once read
            kb.call("mbarrier_wait_parity", SFULL, "cute_epi_s_phase")
            for s, (sm, sn) in enumerate(self.subtiles):
                m_org, n_org = self.origins[s]
                kb.comment(f"subtile ({sm}, {sn})")
                self._emit_issue_stores(kb, s, ir.add(N0, n_org), ir.add(M0, m_org),
                                        commit=False)
            kb.call("bulk_commit_group")
            kb.call("bulk_wait_group_read", template=str(self.staging.read_lag))
            kb.call("mbarrier_arrive", SEMPTY)
            kb.assign("cute_epi_s_phase", "1u", "^=")
            return
        idx = ir.var("cute_epi_s_idx", 0, S - 1)
        prev = ir.var("cute_epi_s_prev", 0, S - 1)
        for s, (sm, sn) in enumerate(self.subtiles):
            m_org, n_org = self.origins[s]
            kb.comment(f"subtile ({sm}, {sn})")
            kb.call("mbarrier_wait_parity", ir.add(SFULL, ir.mul(idx, 8)), "cute_epi_s_phase")
            self._emit_issue_stores(kb, idx, ir.add(N0, n_org), ir.add(M0, m_org))
            lag = self.staging.read_lag
            kb.call("bulk_wait_group_read", template=str(lag))
            if lag == 0:
                kb.call("mbarrier_arrive", ir.add(SEMPTY, ir.mul(idx, 8)))
            else:
                with kb.if_("cute_epi_s_prev >= 0"):
                    kb.call("mbarrier_arrive", ir.add(SEMPTY, ir.mul(prev, 8)))
                kb.assign("cute_epi_s_prev", "cute_epi_s_idx")
            kb.stmt(f"if (++cute_epi_s_idx == {S}) {{ cute_epi_s_idx = 0; "
                    "cute_epi_s_phase ^= 1u; }")

    def emit_store_warp_tail(self, kb) -> None:
        """After the store warp's last tile: wait until every TMA store has finished."""
        kb.call("bulk_wait_group", template="0")

    def _emit_pending_store(self, kb) -> None:
        """DelayTmaStore: issue the TMA store of the previous subtile (if any)."""
        pend = ir.var("cute_epi_pend_d", -1, self.cfg.stages_d - 1)
        with kb.if_(ir.land(ir.eq(self._tid(), 0), ir.le(0, pend))):
            self._emit_issue_stores(kb, pend, "cute_epi_pend_x", "cute_epi_pend_y")

    def _emit_tile_end(self, kb, reds, col_m, reuse_lag) -> None:
        cfg, fr = self.cfg, self.cfg.fragment
        tid = self._tid()
        lane = ir.and_(tid, 31)
        if cfg.delay_tma_store:
            self._emit_pending_store(kb)
        if cfg.reuse_smem_c and reuse_lag:
            prev_c = ir.var("cute_epi_prev_c", -1, cfg.stages_c - 1)
            with kb.if_(ir.land(ir.eq(tid, 0), ir.le(0, prev_c))):
                kb.call("bulk_wait_group_read", template="0")
                kb.call("mbarrier_arrive", ir.add(EMPTY, ir.mul(prev_c, 8)))
        mt, _ = thread_offsets(fr, tid)
        for name, (kind, op) in reds.items():
            if kind == "col":
                masks = fr.shuffle_masks("m")
                for m in col_m:
                    _emit_lane_reduce(kb, name, op, f"cr_{name}_{m}", masks, lane,
                                      ir.add(ir.add(M0, mt), m), MM)
            elif kind == "scalar":
                xr = f"red_{name}"
                for mk in (1, 2, 4, 8, 16):
                    kb.stmt(f"{xr} = {reduce_combine(op, xr, f'__shfl_xor_sync(0xffffffffu, {xr}, {mk})')};")
                with kb.if_(ir.eq(lane, 0)):
                    kb.stmt(atomic_reduce(op, f"p_{name}", xr))

    def emit_consumer_tail(self, kb) -> None:
        """After the last tile: wait until every TMA store has finished (``store_tail``; with
        ``store_warp`` the store warp waits for its own)."""
        if self.cfg.store_warp:
            return
        with kb.if_(ir.eq(self._tid(), 0)):
            kb.call("bulk_wait_group", template="0")

    # -- the same pieces as C text (kernels that paste text; kept during the transition) --------
    def _text(self, emit, *args, **kw) -> str:
        kb = KernelBuilder("cute_epi_text", threads=1)
        kb.level = 0
        emit(kb, *args, **kw)
        return "\n".join(kb.lines)

    def prelude(self) -> str:
        return MATH_HELPERS + "\n" + self.lt.source

    def param_decls(self) -> str:
        return ",\n    ".join(f"{p.ctype} {p.name}" for p in self.params())

    def region_decls(self, smem_ptr: str = "cute_epi_smem_base") -> str:
        return self._text(self.emit_region, smem_ptr)

    def init_code(self, smem_ptr: str = "cute_epi_smem_base") -> str:
        return self._text(self.emit_init, smem_ptr)

    def producer_state_decls(self) -> str:
        return self._text(self.emit_producer_state).replace("\n", " ")

    def consumer_state_decls(self) -> str:
        return self._text(self.emit_consumer_state).replace("\n", " ")

    def producer_code(self) -> str:
        return self._text(self.emit_producer)

    def prefetch_code(self) -> str:
        return self._text(self.emit_prefetch)

    def consumer_code(self, acc="acc", bar_id=1, prefetched: bool = False) -> str:
        return self._text(self.emit_consumer, acc, bar_id, prefetched)

    def consumer_tail_code(self) -> str:
        return self._text(self.emit_consumer_tail)


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

    def _vector_slices(self):
        """``(kind, name, dtype, smem offset, length, bound, origin)`` of every broadcast vector:
        the tile's slice of it is staged in smem (as float) by the consumers."""
        out = []
        for kind, vecs, length, bound, origin in (
                ("row", self.lt.rows, self.cfg.tile_n, NN, N0),
                ("col", self.lt.cols, self.cfg.tile_m, MM, M0)):
            for name, dt in vecs:
                out.append((kind, name, dt, self.buf[(kind, name)][0], length, bound, origin))
        return out

    def _pairs(self, vals):
        return value_pairs(self.cfg.fragment, vals)

    def _use_stmatrix(self, dtype, pairs) -> bool:
        fr = self.cfg.fragment
        return (_BYTES[dtype] == 2 and fr.mma_warp_pattern() and len(pairs) % 4 == 0
                and all(fr.n_val[p[0]] % 8 == 0 for p in pairs))

    # -- analysis ----------------------------------------------------------------------------
    def r2s_wavefronts(self, dtype=None) -> dict:
        """Bank-conflict analysis of the register->smem writes of D for warp 0 of subtile 0:
        ``{"wavefronts": n, "ideal": n}`` summed over the instructions (per the smem model of
        :func:`bank_wavefronts`), with the byte offsets of the staging layout."""
        dtype = dtype or self.cfg.element_d
        fr = self.cfg.fragment
        s0 = self.subtiles[0]
        m_org, n_org = self.origins[0]
        pairs, singles = self.groups[s0]
        stage = self._staging(dtype)
        total = ideal = 0
        lanes = range(32)
        if self._use_stmatrix(dtype, pairs):
            for g in range(0, len(pairs), 4):
                grp = pairs[g:g + 4]
                for q, (v, _) in enumerate(grp):   # one 8x8 matrix = 8 rows of 16 bytes
                    addrs = [stage((fr.m_thr[r * 4] + fr.m_val[v] - m_org,
                                    fr.n_thr[0] + fr.n_val[v] - n_org)) for r in range(8)]
                    total += bank_wavefronts(addrs, 16)
                    ideal += 1
            return {"wavefronts": total, "ideal": ideal, "instr": "stmatrix.x4"}
        width = 2 * _BYTES[dtype]
        for v, _ in pairs:
            addrs = [stage((fr.m_thr[t] + fr.m_val[v] - m_org, fr.n_thr[t] + fr.n_val[v] - n_org))
                     for t in lanes]
            total += bank_wavefronts(addrs, width)
            ideal += max(1, 32 * width // 128)
        return {"wavefronts": total, "ideal": ideal, "instr": f"st.shared.{8 * width}"}

    def key(self) -> str:
        late = ("store_warp",) if self.cfg.store_warp else ()    # earlier keys unchanged
        return hashlib.sha256(repr((self.cfg.tree, self.cfg.fragment, self.cfg.tile_m,
                                    self.cfg.tile_n, self.cfg.element_d, self.cfg.epilogue_tile,
                                    self.cfg.stages_c, self.cfg.stages_d, self.cfg.reuse_smem_c,
                                    self.cfg.delay_tma_store, self.cfg.prefetch_l2,
                                    self.cfg.l2_evict_first, self.cfg.load_path,
                                    self.cfg.direct_ahead, self.cfg.direct_vector) + late
                                   ).encode()).hexdigest()[:12]

#: no longer needed: the staging swizzle is lowered into every address (kept, empty, for
#: kernels that still paste ``prelude() + SWZ_HELPER``)
SWZ_HELPER = ""


def _emit_lane_reduce(kb, name, op, xr, masks, lane, index, bound) -> None:
    """Combine ``xr`` over the lanes of ``masks`` (butterfly ``__shfl_xor_sync`` steps), then
    the first of those lanes adds it into ``p_<name>[index]`` (``index < bound``) atomically."""
    for mk in masks:
        kb.stmt(f"{xr} = {reduce_combine(op, xr, f'__shfl_xor_sync(0xffffffffu, {xr}, {mk})')};")
    with kb.if_(ir.land(ir.eq(ir.and_(lane, sum(masks)), 0), ir.lt(index, bound))):
        kb.stmt(atomic_reduce(op, f"p_{name} + {kb.expr(index)}", xr))


def build_test_kernel_source(epi: Sm90Epilogue) -> tuple[str, str]:
    """A standalone kernel that feeds a known accumulator (read from a float32 M x N array
    ``acc_g`` with the fragment's layout) through the full epilogue: producer warp + consumer
    threads, smem stages, TMA loads and stores.  Returns (source, kernel name).  A ``batched``
    epilogue is refused (its stores take the GEMM tile's batch ``l_``; the test kernel's D is
    one M x N matrix)."""
    cfg, fr = epi.cfg, epi.cfg.fragment
    if cfg.batched:
        raise LaunchError("build_test_kernel_source", "batched", "the standalone test kernel "
                          "stores one M x N matrix; a batched epilogue runs inside the GEMM",
                          expected=False, actual=True)
    name = f"cute_epi_sm90_test_{epi.key()}"
    nc = fr.num_threads
    kb = KernelBuilder(name, threads=nc + (64 if cfg.store_warp else 32), min_blocks=1,
                       arch="sm90a",
                       origin="cute_py.backends.cuda.epilogue.sm90",
                       description="standalone epilogue test kernel")
    kb.param("const float* __restrict__", "acc_g")
    kb.param("int", "M")
    kb.param("int", "N")
    epi.emit_params(kb)
    epi.emit_helpers(kb)
    kb.stmt("extern __shared__ unsigned char cute_smem_raw[];")
    kb.decl("unsigned char*", "cute_epi_smem_base",
            "reinterpret_cast<unsigned char*>((reinterpret_cast<size_t>(cute_smem_raw) + 1023) "
            "& ~static_cast<size_t>(1023))", hint=False)
    epi.emit_init(kb, "cute_epi_smem_base")
    kb.sync_threads()
    kb.decl("const int", "bid_y", "blockIdx.y", hint=False)
    kb.decl("const int", "bid", "blockIdx.x", hint=False)
    kb.decl("const int", "cute_epi_m0", ir.mul(ir.block_idx((1 << 30) // cfg.tile_m, "y"),
                                               cfg.tile_m), hint=False)
    kb.decl("const int", "cute_epi_n0", ir.mul(ir.block_idx((1 << 30) // cfg.tile_n),
                                               cfg.tile_n), hint=False)
    if cfg.store_warp:
        with kb.if_(f"threadIdx.x >= {nc + 32}"):
            kb.comment("the store warp")
            with kb.if_("(threadIdx.x & 31) == 0"):
                epi.emit_store_warp_state(kb)
                epi.emit_store_warp(kb)
                epi.emit_store_warp_tail(kb)
    with (kb.else_(f"threadIdx.x >= {nc}") if cfg.store_warp else kb.if_(f"threadIdx.x >= {nc}")):
        epi.emit_producer_state(kb)
        with kb.if_("(threadIdx.x & 31) == 0"):
            epi.emit_producer(kb)
    with kb.else_():
        kb.decl("const int", "tid", "threadIdx.x", hint=False)
        epi.emit_consumer_state(kb)
        mt, nt = thread_offsets(fr, ir.var("tid", 0, nc - 1))
        kb.let(mt, "cute_mt0")
        kb.let(nt, "cute_nt0")
        kb.stmt(f"float acc[{fr.num_values}];")
        for v in range(fr.num_values):
            gm = ir.add(ir.add(M0, mt), fr.m_val[v])
            gn = ir.add(ir.add(N0, nt), fr.n_val[v])
            kb.stmt(f"acc[{v}] = ({kb.expr(ir.land(ir.lt(gm, MM), ir.lt(gn, NN)))}) ? "
                    f"acc_g[{kb.expr(ir.add(ir.mul(gm, NN), gn))}] : 0.0f;")
        epi.emit_consumer(kb)
        epi.emit_consumer_tail(kb)
    return kb.source(), name
