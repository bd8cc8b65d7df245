"""SM80-style GEMM: single-stage, pipelined (2-stage) and multistage (cp.async) mainloops.

``D[l] = alpha * A[l] @ B[l] + beta * C[l]`` with A ``(M, K)``, B ``(K, N)``, C/D ``(M, N)``
(N contiguous), generated as CUDA C through the :class:`~..builder.KernelBuilder` from a
:class:`GemmSm80Config` whose algebra objects (smem layouts, gmem->smem TiledCopies, the
TiledMMA and its ``make_tiled_copy_A/B`` ldmatrix copies; components in ``arch/sm80``) give
every address, lowered through ``lower.py``.  The three mainloops follow CUTLASS' ``MmaSingleStage``,
``MmaPipelined`` and ``MmaMultistage`` (the seed documents 000 and 002); the warp level follows
``MmaTensorOp`` (seed 001): fragments loaded with ``ldmatrix`` from swizzled shared memory,
``mma.sync.m16n8k16`` (f16, bf16) or ``m16n8k8`` (tf32, with the ``cvt.rna.tf32`` operand
transform) issued in serpentine order (vertical visit: n outer, m snakes).

Structure of one CTA (``T = 32 * WARPS_M * WARPS_N`` threads, tile ``BM x BN x BK``)::

    gmem --(TiledCopy partition, cp.async or ld/st.shared, zero-filled residues)--> smem[stage]
    smem --(make_tiled_copy_A/B ldmatrix[.trans] o Swizzle layout, XOR/ADD reduced)--> fa/fb[2]
    fa, fb --(mma.sync, serpentine)--> acc[MI][NI][4]
    acc --(alpha, beta*C, convert, 2-wide stores)--> D

``generate_source(cfg)`` returns the kernel text; :class:`GemmSm80` compiles (through
``compiler.compile_module``) and launches it; :func:`gemm_sm80` is the array-level entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from cute_py.errors import LaunchError, AtomError

from .. import ir
from ..builder import KernelBuilder

from ..arch.sm80 import address as sm80_address
from ..arch.sm80 import copy as sm80_copy
from ..arch.sm80 import ldmatrix as sm80_ldmatrix
from ..arch.sm80 import mma as sm80_mma
from ..arch.sm80 import pipeline as sm80_pipeline
from ..arch.sm80 import raster as sm80_raster
from ..arch.sm80 import smem as sm80_smem
from .gemm_sm80_maps import decompose_xor_add, log2i

__all__ = ["GemmSm80Config", "GemmSm80", "generate_source", "gemm_sm80", "MAINLOOPS",
           "kernel_name", "alignment_of", "plan_only", "precompile", "get_kernel",
           "with_epilogue", "epilogue_of"]

from .gemm_sm80_config import (MAINLOOPS, _OUT_TYPES, _MMA, GemmSm80Config, kernel_name,  # noqa: F401
                               epilogue_of, with_epilogue)


# ====================================================================================== codegen

class _Text:
    """Lines of C text (helpers placed before the kernel)."""

    def __init__(self):
        self.lines: list[str] = []
        self.ind = 0

    def __call__(self, text: str = ""):
        for line in text.split("\n"):
            self.lines.append(("  " * self.ind + line) if line else "")

    def block(self, head: str):
        outer = self

        class _B:
            def __enter__(self):
                outer(head + " {")
                outer.ind += 1

            def __exit__(self, *exc):
                outer.ind -= 1
                outer("}")
        return _B()

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class _Emitter:
    """Statements into the kernel's :class:`~..builder.KernelBuilder` (its indentation level
    and scoped blocks); ``e(text)`` appends C statements, ``e.block(head)`` opens a block."""

    def __init__(self, b):
        self.b = b

    def __call__(self, text: str = ""):
        for line in text.split("\n"):
            self.b.line(line)

    @property
    def ind(self) -> int:
        return self.b.level

    @ind.setter
    def ind(self, v: int) -> None:
        self.b.level = v

    def block(self, head: str):
        return self.b.block(head)

    def call(self, fn: str, *args, template=None):
        """A call into the PTX library (the name is checked against the headers)."""
        self.b.call(fn, *args, template=template)


def _fragment_plan(cfg: GemmSm80Config, operand: str, scalar: bool):
    """Strength-reduced fragment addresses: {item: (x, a)} in elements, or None.

    The addresses are the smem read copy's (``cfg.smem_read_copy``: ``make_tiled_copy_A/B`` of
    the TiledMMA) row coordinates composed with the smem layout, lowered to IR and evaluated
    for every thread (:func:`arch.sm80.ldmatrix.row_offsets`).  ldmatrix (``scalar=False``):
    item ``(kb, i)``, load i of k block kb; scalar 32-bit loads (tf32 MN-major): item
    ``(kb, i, j)``, register j of m-tile (A) or n-tile (B) i.  Each item's offset equals
    ``(base ^ x) + a`` for every thread, base = the item-(0, 0[, 0]) offset.
    """
    R, BK = cfg.rows(operand), cfg.tile[2]
    L = cfg.smem_layout(operand)
    tc = cfg.smem_read_copy(operand)
    offs = sm80_ldmatrix.row_offsets(tc, L, R, BK)
    T, n, KB = offs.shape
    B, M, _ = sm80_smem.swizzle_of(L)
    split = B + M if B else log2i(max(1, 16 // cfg.elem_bytes))
    regs = (4 if operand == "A" else 2) if scalar else 1
    base = offs[:, 0, 0]
    plan = {}
    for kb in range(KB):
        for load in range(n):
            item = (kb, load // regs, load % regs) if scalar else (kb, load)
            col = offs[:, load, kb]
            res = decompose_xor_add(lambda t: (int(col[t]), int(base[t])), range(T), split)
            if res is None:
                return None
            plan[item] = res
    return plan


def _fragment_exprs(cfg: GemmSm80Config, operand: str, scalar: bool):
    """{item: (r, k)} C expressions (in ``tid``) of every fragment load's row coordinate,
    lowered from the smem read copy (items as in :func:`_fragment_plan`); used when the
    swizzle does not strength-reduce to one XOR and one add."""
    R, BK = cfg.rows(operand), cfg.tile[2]
    tc = cfg.smem_read_copy(operand)
    n = sm80_ldmatrix.loads_per_kblock(tc)
    KB = BK // tc.tile_shape[1]
    regs = (4 if operand == "A" else 2) if scalar else 1
    out = {}
    for kb in range(KB):
        for load in range(n):
            item = (kb, load // regs, load % regs) if scalar else (kb, load)
            out[item] = tuple(f"({_render(x)})" for x in
                              sm80_ldmatrix.row_coord(tc, R, BK, _warp_tid(cfg), load, kb))
    return out


def _warp_tid(cfg: GemmSm80Config):
    """``tid`` as ``lane + 32 * (warp_m + WARPS_M * warp_n)`` over the kernel's variables (so
    lowered fragment addresses reuse ``lane``, ``warp_m`` and ``warp_n``)."""
    lane = ir.var("lane", 0, 31)
    wm = ir.var("warp_m", 0, cfg.warps[0] - 1)
    wn = ir.var("warp_n", 0, cfg.warps[1] - 1)
    return ir.add(lane, ir.mul(ir.add(wm, ir.mul(wn, cfg.warps[0])), 32))


def _register_bound(cfg: GemmSm80Config, T: int) -> bool:
    """One warp holds 128 or more accumulators in a 4-warp CTA: the kernel is at the register
    limit, and every value kept live across the k-loop risks a spill (see :func:`_lm_thread`,
    :meth:`_CopyPlan.c_coord`)."""
    MI, NI, _ = cfg.mma_iters
    return T == 128 and MI * NI * 4 >= 128


def _lm_thread(cfg: GemmSm80Config, T: int):
    """The thread index the ldmatrix row bases are lowered over: ``lane`` / ``warp_m`` /
    ``warp_n`` (the kernel's variables), which ptxas allocates best on the shipped tiles (up
    to 1.3x faster on the H100 than the same address over ``tid``: docs/performance.md,
    "Kernel builder port"); ``tid`` when the kernel is register-bound
    (:func:`_register_bound`), where the lane / warp form costs a register spill."""
    if _register_bound(cfg, T):
        return ir.var("tid", 0, T - 1)
    return _warp_tid(cfg)


def _render(node) -> str:
    from ..render import render_expr
    return render_expr(node)


def generate_source(cfg: GemmSm80Config) -> str:
    """CUDA C source of the kernel ``kernel_name(cfg)`` (``extern "C"``).

    Law: for every (M, N, K, L) with M, N, K >= 1, launched as :class:`GemmSm80` does, the
    kernel writes every D[l, m, n] = alpha * sum_k A[l,m,k] B[l,k,n] + beta * C[l,m,n]
    (fp32 accumulation, operands rounded to tf32 for ``dtype == "tf32"``) and nothing else.
    """
    cfg.check()
    BM, BN, BK = cfg.tile
    WM, WN = cfg.warp_tile
    MI, NI, KB = cfg.mma_iters
    T = cfg.threads
    eb = cfg.elem_bytes
    S = cfg.stages
    name = kernel_name(cfg)
    EA = "unsigned short" if eb == 2 else "unsigned int"
    EC, ebc = _OUT_TYPES[cfg.out_dtype]
    layA, layB = cfg.smem_layout("A"), cfg.smem_layout("B")
    cmA, cmB = _CopyPlan.of(cfg, "A"), _CopyPlan.of(cfg, "B")
    a_stage, b_stage = BM * BK * eb, BN * BK * eb
    tf32 = cfg.dtype == "tf32"
    scalarA = tf32 and cfg.a_major == "M"
    scalarB = tf32 and cfg.b_major == "N"
    planA = _fragment_plan(cfg, "A", scalarA) or _fragment_exprs(cfg, "A", scalarA)
    planB = _fragment_plan(cfg, "B", scalarB) or _fragment_exprs(cfg, "B", scalarB)

    epi = epilogue_of(cfg)
    b = KernelBuilder(name, threads=T, min_blocks=cfg.min_blocks, arch="sm80",
                      origin="cute_py.backends.cuda.kernels.gemm_sm80 (do not edit)",
                      description=name, includes=("cute_py/ptx_sm80.cuh",))
    b.helper(f"// tile {BM}x{BN}x{BK}, warps {cfg.warps[0]}x{cfg.warps[1]} (warp tile {WM}x{WN}, "
             f"{MI}x{NI} mma tiles, {KB} k blocks), {S} stage(s), mainloop {cfg.mainloop}\n"
             f"// smem A: {layA} [{cfg.major('A')}-major]\n"
             f"// smem B: {layB} [{cfg.major('B')}-major]\n"
             f"// copies: A {cmA.iterations}x{cmA.vec} elems/thread, "
             f"B {cmB.iterations}x{cmB.vec} elems/thread")
    if epi is not None:
        epi.emit_helpers(b)
    b.helper("using namespace cute_py::sm80;")
    b.helper(f"typedef {EA} EA;   // operand storage\ntypedef {EC} EC;   // C / D storage")
    b.helper(sm80_smem.offset_function(layA, "smem_off_A"))
    b.helper(sm80_smem.offset_function(layB, "smem_off_B"))
    chunk = _Text()
    _emit_chunk_helpers(chunk, eb, cfg.realign_a or cfg.realign_b)
    b.helper(chunk.text())
    # parameters: the order and types the host plans pack by position
    b.param("const EA* __restrict__", "A")
    b.param("const EA* __restrict__", "B")
    b.param("const EC *", "C")
    b.param("EC *", "D")
    dims = {nm: b.param("int", nm, 1, (1 << 31) - 1) for nm in ("M", "N", "K")}
    for nm in ("lda", "ldb", "ldc", "ldd", "batch_a", "batch_b", "batch_c", "batch_d"):
        b.param("long long", nm)
    b.param("float", "alpha")
    b.param("float", "beta")
    if epi is not None:
        epi.emit_params(b)
    e = _Emitter(b)
    e("extern __shared__ __align__(1024) unsigned char smem[];")
    e("const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;")
    e(f"const int warp_m = warp % {cfg.warps[0]}, warp_n = warp / {cfg.warps[0]};")
    e("const int g = lane >> 2, t4 = lane & 3;")
    e("(void)g; (void)t4;")
    sm80_raster.emit(b, dims["M"], dims["N"], BM, BN, cfg.raster)
    e("const long long bz = blockIdx.z;")
    # the batch: each matrix's layout over l, (L):(batch_x), at bz
    bz = ir.var("bz", 0, (1 << 31) - 1)
    e(" ".join(f"{x} += {b.expr(sm80_address.batch_offset(x, bz))};" for x in "ABDC"))
    # B's stages follow A's: A's stage layout one past its last stage
    e(f"const u32 sA = smem_u32(smem), sB = "
      f"{b.expr(sm80_address.stage_address('sA', S, a_stage, S))};")
    e(f"const int k_tiles = (K + {BK - 1}) / {BK};")

    # ---------------------------------------------------------------- copy setup
    # Iteration i of a thread's copies sits DR lines after iteration 0 (the copy map is affine
    # in i when cpl divides T); its smem offset then differs by a compile-time DS (checked for
    # every thread), so each operand keeps one pointer, one step and one smem offset.
    # (Any other tiled copy: copy i sits at compile-time (dr_i, dk_i) from copy 0 -- the Rest
    # modes of the partition are translations -- with a compile-time smem delta when the
    # swizzle allows, else the smem offset is recomputed.)
    affine, steps = {}, {}
    for op, cm, lay, ext, mn0, ld in (("A", cmA, layA, "M", "m0", "lda"),
                                      ("B", cmB, layB, "N", "n0", "ldb")):
        x = op.lower()
        steps[op] = _copy_steps(cm)
        aff = _copy_affine(cm)
        if steps[op] is None:
            raise AtomError("generate_source", "tile", f"operand {op}'s copies are not "
                            "translations of copy 0", actual=(cfg.tile, str(cm.tc.layout_tv)))
        DR, DS = aff if aff is not None else (None, None)
        affine[op] = aff
        r, k = cm.c_coord(0, divide=not _register_bound(cfg, T))
        if aff is not None:
            e(f"// {op}: gmem->smem thread map, {cm.iterations} iterations of {cm.vec} elements, "
              f"{DR} lines apart (+{'?' if DS is None else DS * eb} smem bytes)")
        else:
            e(f"// {op}: gmem->smem thread map, {cm.iterations} iterations of {cm.vec} elements "
              f"at (r, k) steps {[st[:2] for st in steps[op]]}")
            DR = 0
        e(f"const int {x}c_r = {r}, {x}c_k = {k};")
        # the thread's copy 0 in the stage: the smem layout's lowered device function
        # smem_off_X, in bytes.  (Inlined -- the layout lowered at (xc_r, xc_k) times eb, or
        # the layout scaled to bytes, Sw<B,M+log2(eb),S> o (strides * eb) -- the k-loop
        # compiles to other SASS on some tiles: NVVM optimizes the function before inlining
        # it.  The same holds for x_lm below and for the copies' smem_off_X(xc_r, xc_k + d)
        # of the MN-major unaligned tiles, arch/sm80/copy.py.)
        e(f"const u32 {x}c_s = smem_off_{op}({x}c_r, {x}c_k) * {eb};")
        if cm.major != "K" and aff is not None:
            e(f"const int {x}c_n = max(0, min({cm.vec}, {ext} - {mn0} - {x}c_r));")
        # the thread's copy 0 in the operand's gmem layout (address.gmem_layout), and the
        # gmem step of one copy iteration (DR lines of the strided mode)
        row0 = ir.var(mn0, 0, (1 << 31) - 1 - cm.R) + ir.var(f"{x}c_r", 0, cm.R - 1)
        g0 = sm80_address.gmem_terms(op, cm.major, row0, ir.var(f"{x}c_k", 0, BK - 1))
        b.decl("const EA*", f"{x}c_g", " + ".join([op] + [f"({b.expr(t)})" for t in g0]),
               hint=False)
        step = sm80_address.gmem_offset(op, cm.major, *((DR, 0) if cm.major == "K" else (0, DR)))
        b.decl("const long long", f"{x}c_step", step, hint=False)
        e(f"(void){x}c_step;")

    # ---------------------------------------------------------------- fragment setup
    b.decl("u32", f"fa[2][{MI}][4]", hint=False)
    b.decl("u32", f"fb[2][{NI}][2]", hint=False)
    b.decl("float", f"acc[{MI}][{NI}][4]", hint=False)
    with b.for_("i", 0, MI, unroll=True, hint=False):
        with b.for_("j", 0, NI, unroll=True, hint=False):
            with b.for_("v", 0, 4, unroll=True, hint=False):
                b.assign("acc[i][j][v]", "0.f")
    for op, plan, lay, major in (("A", planA, layA, cfg.a_major), ("B", planB, layB,
                                                                    cfg.b_major)):
        # the row (or element) this thread addresses in load 0 of k block 0, from the smem
        # read copy's partition (make_tiled_copy_A/B of the TiledMMA)
        rl, kl = sm80_ldmatrix.row_coord(cfg.smem_read_copy(op), cfg.rows(op), BK,
                                         _lm_thread(cfg, T), 0, 0)
        # the smem layout's device function at the ldmatrix row of this lane (see xc_s)
        e(f"const u32 {op.lower()}_lm = smem_off_{op}({_render(rl)}, {_render(kl)}) * {eb};"
          f"  // ldmatrix row address of this lane")

    # helper lambdas (emitted as macros-free inline code blocks via Python functions)
    issue = {op: sm80_copy.CopyIssue(op, cm.major, cm.vec, eb, st, affine[op],
                                     tuple(steps[op]), S, cfg.realign(op))
             for op, cm, st in (("A", cmA, a_stage), ("B", cmB, b_stage))}
    # the stage indices the mainloops name (IR variables of the stage layouts' coordinate)
    stage_ir = {"read_stage": ir.var("read_stage", 0, S - 1),
                "write_stage": ir.var("write_stage", 0, S - 1),
                "s": ir.var("s", 0, max(S - 2, 0)), "0": 0, "": 0}

    # the k-tile origins the mainloops copy (IR: the k coordinate of the gmem layouts)
    kt_max = ((1 << 31) - 1) // BK
    kbase_ir = {f"s * {BK}": ir.var("s", 0, max(S - 2, 0)) * BK,
                f"fetch * {BK}": ir.var("fetch", 0, kt_max) * BK,
                f"(kt + 1) * {BK}": (ir.var("kt", 0, kt_max - 1) + 1) * BK, "0": 0}

    def copy_issue(op: str, i: int, stage: str, kbase: str, asynchronous: bool,
                   reg: str | None = None):
        issue[op].emit(b, i, stage_ir[stage], kbase_ir[kbase], asynchronous, reg)

    def reg_store(op: str, i: int, stage: str, reg: str):
        issue[op].emit_store(b, i, stage_ir[stage], reg)

    def frag_addr(op: str, item, stage: str):
        """smem address of one fragment load: the stage layout's address
        (``address.stage_address``) plus ``(x_lm ^ x) + a`` from the plan (IR), or plus the
        smem layout's function at the lowered row coordinate when the swizzle does not
        strength-reduce."""
        sbase, st = ("sA", a_stage) if op == "A" else ("sB", b_stage)
        base = sm80_address.stage_address(sbase, S, st, stage_ir[stage])
        if isinstance(item[0], str):  # the smem layout's function (see xc_s) at the row
            return f"{b.expr(base)} + smem_off_{op}({item[0]}, {item[1]}) * {eb}"
        xo, ad = item
        # two lowered parts, added as the stage address + the in-stage offset (this grouping
        # keeps the mainloop's SASS: the flattened sum compiles to other instructions)
        off = ir.xor(sm80_address.smem_var(f"{op.lower()}_lm"), xo * eb) + ad * eb
        return f"{b.expr(base)} + ({b.expr(off)})"

    def load_frag(stage: str, kb: int, buf: int):
        # A
        if not scalarA:
            for mi in range(MI):
                addr = frag_addr("A", planA[(kb, mi)], stage)
                fn = "ldmatrix_x4" if cfg.a_major == "K" else "ldmatrix_x4_trans"
                e.call(fn, *(f"fa[{buf}][{mi}][{j}]" for j in range(4)), addr)
        else:  # tf32, M-major: scalar loads of the fragment elements
            for mi in range(MI):
                for j in range(4):
                    b.assign(f"fa[{buf}][{mi}][{j}]", b.call_expr(
                        "ld_shared_32", frag_addr("A", planA[(kb, mi, j)], stage)))
        if not scalarB:
            for i in range((NI + 1) // 2):
                addr = frag_addr("B", planB[(kb, i)], stage)
                tr = "" if cfg.b_major == "K" else "_trans"
                tiles = [t for t in (2 * i, 2 * i + 1) if t < NI]
                e.call(f"ldmatrix_x{2 * len(tiles)}{tr}",
                       *(f"fb[{buf}][{t}][{j}]" for t in tiles for j in range(2)), addr)
        else:
            for ni in range(NI):
                for j in range(2):
                    b.assign(f"fb[{buf}][{ni}][{j}]", b.call_expr(
                        "ld_shared_32", frag_addr("B", planB[(kb, ni, j)], stage)))
        if tf32:  # the tf32 operand transform, register by register
            for frag, n, regs in (("fa", MI, 4), ("fb", NI, 2)):
                with b.for_("i", 0, n, unroll=True) as i_:
                    with b.for_("j", 0, regs, unroll=True) as j_:
                        r = f"{frag}[{buf}][{b.expr(i_)}][{b.expr(j_)}]"
                        b.assign(r, b.call_expr("cvt_tf32", r))

    def warp_mma(buf: int):
        e("// warp MMA, serpentine (vertical visit): n outer, m reversed on odd n")
        with b.for_("ni", 0, NI, unroll=True) as ni:
            with b.for_("mm", 0, MI, unroll=True) as mm:
                n_, m_ = b.expr(ni), b.expr(mm)
                mi = b.decl("const int", "mi", f"({n_} & 1) ? ({MI - 1} - {m_}) : {m_}")
                e.call(_MMA[cfg.dtype], f"acc[{mi}][{n_}]", f"fa[{buf}][{mi}]", f"fb[{buf}][{n_}]")

    nwA, nwB = issue["A"].words, issue["B"].words

    # ---------------------------------------------------------------- mainloops
    if cfg.mainloop == "multistage":
        pipe = sm80_pipeline.Pipeline(S)
        ops = [("A", i) for i in range(cmA.iterations)] + [("B", i) for i in range(cmB.iterations)]
        parts = max(KB - 1, 1)
        per = math.ceil(len(ops) / parts)
        groups = [ops[p * per:(p + 1) * per] for p in range(parts)]
        # copies narrower than cp.async's 4 bytes are synchronous (ld + st.shared): register-
        # staged per part (CUTLASS MmaPipelined), see _staged_batches
        nw = {"A": nwA, "B": nwB}
        sync = {op: issue[op].synchronous for op in "AB"}
        batches = [_staged_batches([c for c in g if sync[c[0]]], nw,
                                   _staging_budget(cfg)) for g in groups]

        def staged(op: str, i: int) -> str:
            return f"g{op.lower()}{i}"

        def sync_loads(batch, kbase: str) -> None:
            for op, i in batch:
                copy_issue(op, i, "", kbase, False, staged(op, i))

        def sync_stores(batch, stage: str) -> None:
            for op, i in batch:
                reg_store(op, i, stage, staged(op, i))

        e(f"// Multistage: prologue fetches {S - 1} k-tiles with cp.async")
        with b.for_("s", 0, S - 1, unroll=True, hint=False):
            with e.block("if (s < k_tiles)"):
                for op, i in ops:
                    if not sync[op]:
                        copy_issue(op, i, "s", f"s * {BK}", True)
                for bt in _staged_batches([c for c in ops if sync[c[0]]], nw, 64):
                    e("u32 " + ", ".join(f"{staged(op, i)}[{nw[op]}]" for op, i in bt) + ";")
                    sync_loads(bt, f"s * {BK}")
                    sync_stores(bt, "s")
            pipe.emit_commit(b)
        pipe.emit_wait(b)
        b.sync_threads()
        e(f"int read_stage = 0, write_stage = {S - 1}, fetch = {S - 1};")
        load_frag("read_stage", 0, 0)
        span, now, inc_kb = _staging_schedule(batches, KB, S)

        def next_tile(kb: int) -> None:
            """Wait for the next k-tile's stage, barrier, and load its k block 0 fragments
            (into the other buffer, or buffer 0 when a k-tile is one k block)."""
            pipe.emit_wait(b)
            b.sync_threads()
            e(f"read_stage = (read_stage + 1 == {S}) ? 0 : read_stage + 1;")
            load_frag("read_stage", 0, (kb + 1) % 2 if KB > 1 else 0)

        def bump() -> None:
            e(f"write_stage = (write_stage + 1 == {S}) ? 0 : write_stage + 1;")
            e("++fetch;")

        with e.block("for (int kt = 0; kt < k_tiles; ++kt)"):
            for kb in range(KB):
                e(f"// k block {kb}")
                here = now[kb] + ([span[kb]] if kb in span else [])
                if here:
                    regs = [c for bt in here for c in bt]
                    e(f"// synchronous copies of k-tile fetch = kt + {S - 1} through registers, "
                      "loads issued before their shared stores")
                    e("u32 " + ", ".join(f"{staged(op, i)}[{nw[op]}]" for op, i in regs) + ";")
                # batches past the register budget: each loads, then stores
                for bt in now[kb]:
                    with e.block("if (fetch < k_tiles)"):
                        sync_loads(bt, f"fetch * {BK}")
                        sync_stores(bt, "write_stage")
                if kb in span:  # loads overlapping this k block's ldmatrix / mma
                    with e.block("if (fetch < k_tiles)"):
                        sync_loads(span[kb], f"fetch * {BK}")
                if kb < KB - 1:
                    load_frag("read_stage", kb + 1, (kb + 1) % 2)
                if kb < parts:
                    cp = [c for c in groups[kb] if not sync[c[0]]]
                    if cp or not batches[kb]:
                        e(f"// issue part {kb} of the copies of k-tile fetch = kt + {S - 1}")
                        with e.block("if (fetch < k_tiles)"):
                            for op, i in cp:
                                copy_issue(op, i, "write_stage", f"fetch * {BK}", True)
                    if kb == parts - 1 and kb not in span:
                        pipe.emit_commit(b)
                        if inc_kb == kb:
                            bump()
                if kb == KB - 1 and KB > 1:
                    next_tile(kb)
                warp_mma(kb % 2)
                if kb in span:
                    e("// the shared stores of the loads above")
                    with e.block("if (fetch < k_tiles)"):
                        sync_stores(span[kb], "write_stage")
                    if kb == parts - 1:
                        pipe.emit_commit(b)
                    if inc_kb == kb:
                        bump()
                if KB == 1:
                    # one k block: its fragments are in use until its mma, so the next k-tile's
                    # are loaded after it (into the same buffer)
                    next_tile(kb)
        e("// drain (only empty groups remain)")
        pipe.emit_drain(b)
    elif cfg.mainloop == "pipelined":
        e("// Pipelined (MmaPipelined): 2 smem stages, gmem fragment in registers")
        e(f"u32 ra[{cmA.iterations}][{nwA}], rb[{cmB.iterations}][{nwB}];")
        for i in range(cmA.iterations):
            copy_issue("A", i, "", "0", False, f"ra[{i}]")
        for i in range(cmB.iterations):
            copy_issue("B", i, "", "0", False, f"rb[{i}]")
        for i in range(cmA.iterations):
            reg_store("A", i, "0", f"ra[{i}]")
        for i in range(cmB.iterations):
            reg_store("B", i, "0", f"rb[{i}]")
        e("__syncthreads();")
        e("int read_stage = 0, write_stage = 1;")
        load_frag("read_stage", 0, 0)
        with e.block("for (int kt = 0; kt < k_tiles; ++kt)"):
            e("const bool more = kt + 1 < k_tiles;")
            for kb in range(KB):
                e(f"// k block {kb}")
                if kb == KB - 1:
                    with e.block("if (more)"):
                        for i in range(cmA.iterations):
                            reg_store("A", i, "write_stage", f"ra[{i}]")
                        for i in range(cmB.iterations):
                            reg_store("B", i, "write_stage", f"rb[{i}]")
                    e("__syncthreads();")
                    e("read_stage ^= 1; write_stage ^= 1;")
                load_frag("read_stage", (kb + 1) % KB, (kb + 1) % 2)
                if kb == 0:
                    with e.block("if (more)"):
                        for i in range(cmA.iterations):
                            copy_issue("A", i, "", f"(kt + 1) * {BK}", False, f"ra[{i}]")
                        for i in range(cmB.iterations):
                            copy_issue("B", i, "", f"(kt + 1) * {BK}", False, f"rb[{i}]")
                warp_mma(kb % 2)
    else:
        e("// Single stage (MmaSingleStage): gmem -> registers -> smem, sync, compute, sync")
        e(f"u32 ra[{cmA.iterations}][{nwA}], rb[{cmB.iterations}][{nwB}];")
        for i in range(cmA.iterations):
            copy_issue("A", i, "", "0", False, f"ra[{i}]")
        for i in range(cmB.iterations):
            copy_issue("B", i, "", "0", False, f"rb[{i}]")
        with e.block("for (int kt = 0; kt < k_tiles; ++kt)"):
            for i in range(cmA.iterations):
                reg_store("A", i, "0", f"ra[{i}]")
            for i in range(cmB.iterations):
                reg_store("B", i, "0", f"rb[{i}]")
            e("__syncthreads();")
            for kb in range(KB):
                load_frag("0", kb, 0)
                warp_mma(0)
            e("__syncthreads();")
            with e.block("if (kt + 1 < k_tiles)"):
                for i in range(cmA.iterations):
                    copy_issue("A", i, "", f"(kt + 1) * {BK}", False, f"ra[{i}]")
                for i in range(cmB.iterations):
                    copy_issue("B", i, "", f"(kt + 1) * {BK}", False, f"rb[{i}]")

    # ---------------------------------------------------------------- epilogue
    if epi is None:
        _emit_epilogue(e, cfg, WM, WN, MI, NI)
    else:
        from ..epilogue.sm80 import gemm_sm80_acc
        e("// Fused epilogue: its buffers reuse the mainloop's smem (cp.async drained above)")
        e.call("cp_async_wait", template="0")
        b.sync_threads()
        e("(void)alpha; (void)beta; (void)C; (void)D; (void)ldc; (void)ldd;")
        e("unsigned char* cute_epi_smem_base = smem;")
        epi.emit_init(b, "cute_epi_smem_base")
        e("const int cute_epi_m0 = m0, cute_epi_n0 = n0;")
        epi.emit_consumer(b, gemm_sm80_acc("acc", WM))
        epi.emit_consumer_tail(b)
    return b.source()


def _staging_budget(cfg: GemmSm80Config) -> int:
    """Registers (u32) a part's synchronous copies may hold across a k block's ldmatrix / mma:
    all of them (64) unless a warp holds 128 or more accumulators, where 16 keep the kernel
    free of spills (registers measured with ptxas on sm_80 / sm_90a)."""
    MI, NI, _ = cfg.mma_iters
    return 16 if MI * NI * 4 >= 128 else 64


def _staging_schedule(batches: list, KB: int, S: int):
    """Where each batch of register-staged copies goes in the k-tile loop.

    ``batches[p]``: the batches of part ``p`` (issued in k block ``p``).  Returns ``(span,
    now, inc_kb)``: ``span[kb]``, the batch loaded at the start of k block ``kb`` (before its
    ldmatrix) and stored after its mma; ``now[kb]``, batches loaded and stored at once at the
    start of ``kb``; ``inc_kb``, the k block after whose stores ``write_stage`` / ``fetch``
    advance.  A batch spans a k block before the last one, or the last one (after its barrier)
    when ``S >= 3``: the k-tile written is read ``S - 1`` iterations on, after one more barrier,
    and its stage's last reads were before the previous iteration's last barrier.  A part's
    batches past its first load and store at once (spreading them over the later k blocks
    spills on the register-bound tiles: ptxas, sm_90a, 128x128 w2x2 with A 1-wide)."""
    parts = len(batches)
    span, now = {}, {kb: [] for kb in range(KB)}

    def can(kb):
        return kb not in span and (kb < KB - 1 or S >= 3)

    for p, bts in enumerate(batches):
        if bts and can(p):
            span[p] = bts[0]
            bts = bts[1:]
        now[p].extend(bts)
    return span, now, max([parts - 1] + list(span))


def _staged_batches(copies, nw: dict, budget: int) -> list:
    """``copies`` ((op, i) of synchronous copies) cut into batches of at most ``budget``
    registers (``nw[op]`` per copy), in order; the first batch is the one kept across the
    k block's work.  Within a batch every load is issued before any shared store."""
    out, cur, used = [], [], 0
    for op, i in copies:
        if cur and used + nw[op] > budget:
            out.append(cur)
            cur, used = [], 0
        cur.append((op, i))
        used += nw[op]
    if cur:
        out.append(cur)
    return out


@dataclass(frozen=True)
class _CopyPlan:
    """One operand's gmem->smem tiled copy as the generator uses it: the TiledCopy, the smem
    layout, and each thread's tile coordinates lowered from the copy's partition."""

    tc: object
    L: object
    R: int
    BK: int
    major: str
    threads: int

    @staticmethod
    def of(cfg, operand):
        return _CopyPlan(cfg.gmem_copy(operand), cfg.smem_layout(operand), cfg.rows(operand),
                         cfg.tile[2], cfg.major(operand), cfg.threads)

    @property
    def vec(self) -> int:
        return sm80_copy.vector(self.tc)

    @property
    def iterations(self) -> int:
        return sm80_copy.iterations(self.tc, self.R, self.BK)

    def coord_ir(self, i):
        return sm80_copy.tile_coord(self.tc, self.R, self.BK, ir.var("tid", 0, self.threads - 1),
                                    i)

    def c_coord(self, i, divide: bool = True) -> tuple[str, str]:
        """C expressions (in ``tid``) of the (r, k) of copy ``i``'s first value.  ``divide``:
        ``/`` and ``%`` for the power-of-2 splits of ``tid`` (``render_expr(divide=True)``):
        spelled with ``>>`` / ``&``, NVVM rematerializes them, and every address derived from
        them, inside the k-loop (up to 84 more instructions per iteration, 1.2x the time on the
        H100: benchmarks/sass_compare_sm80.py).  A register-bound kernel keeps ``>>`` / ``&``:
        there the hoisted coordinates cost a 4-byte spill (outside the loop)."""
        from ..render import render_expr
        return tuple(f"({render_expr(x, divide=divide)})" for x in self.coord_ir(i))


def _copy_steps(cm: _CopyPlan):
    """[(dr_i, dk_i, ds_i)]: copy i of every thread is at tile coordinate (r + dr_i, k + dk_i)
    of its copy 0 and ds_i smem elements after it (None when that differs between threads);
    None when some copy is not a translation of copy 0 (evaluated from the lowered maps)."""
    import numpy as np
    r, k = sm80_copy.coords(cm.tc, cm.R, cm.BK)
    r, k = r[:, :, 0], k[:, :, 0]
    dr, dk = r - r[:, :1], k - k[:, :1]
    if not (np.all(dr == dr[:1]) and np.all(dk == dk[:1])):
        return None
    off = ir.evaluate(sm80_smem.offset(cm.L, ir.var("r", 0, cm.R - 1), ir.var("k", 0, cm.BK - 1)),
                      {"r": r, "k": k})
    ds = off - off[:, :1]
    return [(int(dr[0, i]), int(dk[0, i]),
             int(ds[0, i]) if np.all(ds[:, i] == ds[0, i]) else None) for i in range(r.shape[1])]


def _copy_affine(cm: _CopyPlan):
    """(DR, DS): copy i of every thread is DR lines (of the strided mode) and DS smem elements
    after copy 0 -- evaluated from the lowered partition and smem layout over all threads --
    or None when the map is not affine in i."""
    import numpy as np
    r, k = sm80_copy.coords(cm.tc, cm.R, cm.BK)
    r, k = r[:, :, 0], k[:, :, 0]
    n = r.shape[1]
    strided, other = (r, k) if cm.major == "K" else (k, r)
    DR = int(strided[0, 1] - strided[0, 0]) if n > 1 else cm.threads * cm.vec // (
        cm.BK if cm.major == "K" else cm.R)
    idx = np.arange(n)
    if not (np.all(strided == strided[:, :1] + DR * idx) and np.all(other == other[:, :1])):
        return None
    off = ir.evaluate(sm80_smem.offset(cm.L, ir.var("r", 0, cm.R - 1), ir.var("k", 0, cm.BK - 1)),
                      {"r": r, "k": k})
    d = off - off[:, :1]
    DS = int(d[0, 1]) if n > 1 else 0
    return DR, (DS if np.all(d == DS * idx) else None)


def _emit_chunk_helpers(e: _Text, eb: int, realign: bool = False) -> None:
    if eb == 2:
        e("""// gmem chunk of VEC 16-bit elements -> registers; n < VEC elements valid (rest zero)
template <int VEC> CUTE_PY_DEVICE void ld_chunk(u32* v, const unsigned short* p, int n) {
  if (n == VEC) {
    if (VEC == 8) { const uint4 t = *reinterpret_cast<const uint4*>(p); v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w; }
    else if (VEC == 4) { const uint2 t = *reinterpret_cast<const uint2*>(p); v[0] = t.x; v[1] = t.y; }
    else if (VEC == 2) { v[0] = *reinterpret_cast<const u32*>(p); }
    else { v[0] = p[0]; }
  } else {
    #pragma unroll
    for (int w = 0; w < (VEC + 1) / 2; ++w) {
      const u32 lo = (2 * w < n) ? p[2 * w] : 0u;
      const u32 hi = (2 * w + 1 < n) ? p[2 * w + 1] : 0u;
      v[w] = lo | (hi << 16);
    }
  }
}""")
    else:
        e("""// gmem chunk of VEC 32-bit elements -> registers; n < VEC elements valid (rest zero)
template <int VEC> CUTE_PY_DEVICE void ld_chunk(u32* v, const unsigned int* p, int n) {
  if (n == VEC) {
    if (VEC == 4) { const uint4 t = *reinterpret_cast<const uint4*>(p); v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w; }
    else if (VEC == 2) { const uint2 t = *reinterpret_cast<const uint2*>(p); v[0] = t.x; v[1] = t.y; }
    else { v[0] = p[0]; }
  } else {
    #pragma unroll
    for (int w = 0; w < VEC; ++w) v[w] = (w < n) ? p[w] : 0u;
  }
}""")
    e("""template <int BYTES> CUTE_PY_DEVICE void st_chunk(u32 addr, const u32* v) {
  if (BYTES == 16) st_shared_128(addr, make_uint4(v[0], v[1], v[2], v[3]));
  else if (BYTES == 8) sts64(addr, v[0], v[1]);
  else if (BYTES == 4) st_shared_32(addr, v[0]);
  else st_shared_16(addr, static_cast<u16>(v[0]));
}""")
    if realign:
        e("""// a 16-byte chunk at an address aligned only to its 16-bit element (rows of odd pitch):
// w[0..7] the two aligned 16-byte vectors holding it (the second read only when the chunk
// reaches into it), w[8] its byte offset in them; a ragged chunk (n < VEC): its elements,
// zero-filled, at offset 0
template <int VEC> CUTE_PY_DEVICE void ld_chunk_realign(u32* w, const unsigned short* p, int n) {
  if (n == VEC) {
    const unsigned long long a = reinterpret_cast<unsigned long long>(p);
    const uint4* q = reinterpret_cast<const uint4*>(a & ~15ull);
    const uint4 lo = q[0];
    uint4 hi = make_uint4(0u, 0u, 0u, 0u);
    if (a & 15ull) hi = q[1];
    w[0] = lo.x; w[1] = lo.y; w[2] = lo.z; w[3] = lo.w;
    w[4] = hi.x; w[5] = hi.y; w[6] = hi.z; w[7] = hi.w;
    w[8] = static_cast<u32>(a & 15ull);
  } else {
    ld_chunk<VEC>(w, p, n);
    w[4] = w[5] = w[6] = w[7] = 0u;
    w[8] = 0u;
  }
}
// the 16 bytes at byte offset w[8] of w[0..7] -> shared memory (selects by 8 and 4 bytes, then
// a funnel shift by the 2-byte rest)
template <int BYTES> CUTE_PY_DEVICE void st_chunk_realign(u32 addr, const u32* w) {
  const u32 off = w[8];
  const u32 sh = (off & 3u) * 8u;
  u32 u[6], x[5];
  #pragma unroll
  for (int j = 0; j < 6; ++j) u[j] = (off & 8u) ? w[j + 2] : w[j];
  #pragma unroll
  for (int j = 0; j < 5; ++j) x[j] = (off & 4u) ? u[j + 1] : u[j];
  st_shared_128(addr, make_uint4(__funnelshift_r(x[0], x[1], sh), __funnelshift_r(x[1], x[2], sh),
                                 __funnelshift_r(x[2], x[3], sh), __funnelshift_r(x[3], x[4], sh)));
}""")


_I64 = (-(1 << 63), (1 << 63) - 1)


def _emit_epilogue(e: _Emitter, cfg: GemmSm80Config, WM: int, WN: int, MI: int, NI: int):
    from ..render import render_expr
    b = e.b
    out = cfg.out_dtype
    e("// Epilogue: D = alpha * acc + beta * C, converted, 2-wide stores where aligned")
    if out == "f32":
        load1, store1 = "C[o]", "D[o] = {v};"
        load2 = "const float2 c2 = *reinterpret_cast<const float2*>(C + o); c0 = c2.x; c1 = c2.y;"
        store2 = "*reinterpret_cast<float2*>(D + o) = make_float2(v0, v1);"
    else:
        cv = "f16_bits_to_f32" if out == "f16" else "bf16_bits_to_f32"
        pk = "pack_f16x2" if out == "f16" else "pack_bf16x2"
        to = "f32_to_f16_bits" if out == "f16" else "f32_to_bf16_bits"
        load1, store1 = f"{cv}(C[o])", f"D[o] = {to}({{v}});"
        load2 = (f"const u32 c2 = *reinterpret_cast<const u32*>(C + o); "
                 f"c0 = {cv}(static_cast<u16>(c2 & 0xffffu)); c1 = {cv}(static_cast<u16>(c2 >> 16));")
        store2 = f"*reinterpret_cast<u32*>(D + o) = {pk}(v0, v1);"
    (m0e, n0e), (m1e, n1e) = sm80_mma.accumulator_c_exprs(cfg.dtype)
    e("// accumulator (m, n) of c{2h}, c{2h+1}: lowered from the MMA atom's layout_C")
    for nm, x in (("cm0", m0e), ("cn0", n0e), ("cm1", m1e), ("cn1", n1e)):
        b.decl("const int", nm, x, hint=False)
    b.decl("const bool", "use_c", "beta != 0.f", hint=False)
    # the accumulator's tile coordinate: the CTA origin, the warp's MMA tile
    # (address.accumulator_tile_layout) and the value's (m, n) in the MMA atom
    wm, wn = cfg.warps
    tm = sm80_address.layout_terms(sm80_address.accumulator_tile_layout(wm, MI, WM, 16),
                                   (ir.var("warp_m", 0, wm - 1), ir.var("mi", 0, MI - 1)))
    tn = sm80_address.layout_terms(sm80_address.accumulator_tile_layout(wn, NI, WN, 8),
                                   (ir.var("warp_n", 0, wn - 1), ir.var("ni", 0, NI - 1)))
    m_at = " + ".join(["m0"] + [render_expr(t) for t in tm] + ["(h ? cm1 : cm0)"])
    n_at = " + ".join(["n0"] + [render_expr(t) for t in tn] + ["(h ? cn1 : cn0)"])
    # C's and D's offsets: their gmem layouts (address.output_layout) at (m, n)
    m_, n_ = ir.var("m", 0, (1 << 31) - 1), ir.var("n", 0, (1 << 31) - 1)
    oc, od = (render_expr(sm80_address.output_offset(x, m_, n_)) for x in ("C", "D"))

    def add_c(v: str, o: str) -> None:
        """``v += beta * C[o]`` when C is read (``o``: C's offset, bound to the name ``o``
        the load text uses)."""
        with b.if_("use_c"):
            b.decl("const long long", "o", o, hint=False)
            b.assign(v, f"beta * {load1}", "+=")

    with b.for_("mi", 0, MI, unroll=True, hint=False):
        with b.for_("h", 0, 2, unroll=True, hint=False):
            b.decl("const int", "m", m_at, hint=False)
            with b.if_("m >= M"):
                b.stmt("continue")
            with b.for_("ni", 0, NI, unroll=True, hint=False):
                b.decl("const int", "n", n_at, hint=False)
                b.decl("const long long", "oc", oc, hint=False)
                b.decl("const long long", "o", od, hint=False)
                b.decl("float", "v0", "alpha * acc[mi][ni][2 * h]", hint=False)
                b.decl("float", "v1", "alpha * acc[mi][ni][2 * h + 1]", hint=False)
                if cfg.vec_c == 2:
                    with b.if_("n + 1 < N"):
                        with b.if_("use_c"):
                            b.decl("float", "c0", hint=False)
                            b.decl("float", "c1", hint=False)
                            with b.scope():
                                b.decl("const long long", "o", "oc", hint=False)
                                b.stmt(load2)
                            b.assign("v0", "beta * c0", "+=")
                            b.assign("v1", "beta * c1", "+=")
                        b.stmt(store2)
                    with b.else_("n < N"):
                        add_c("v0", "oc")
                        b.stmt(store1.format(v="v0"))
                else:
                    with b.if_("n < N"):
                        add_c("v0", "oc")
                        b.stmt(store1.format(v="v0"))
                        with b.if_("n + 1 < N"):
                            # (m, n + 1): the offsets plus the layouts' n stride
                            add_c("v1", render_expr(ir.var("oc", *_I64) +
                                                    sm80_address.output_offset("C", 0, 1)))
                            with b.scope():     # o2 first: `o = o + 1` would read itself
                                b.decl("const long long", "o2", render_expr(
                                    ir.var("o", *_I64) + sm80_address.output_offset("D", 0, 1)),
                                       hint=False)
                                with b.scope():
                                    b.decl("const long long", "o", "o2", hint=False)
                                    b.stmt(store1.format(v="v1"))


# ====================================================================================== host

def alignment_of(ptr: int, ld: int, contiguous_extent: int, elem_bytes: int,
                 batch_stride: int = 0, max_bytes: int = 16) -> int:
    """Largest vector (elements) such that every chunk start is aligned to its size.

    Chunk starts are ``ptr + i*ld + j*vec (+ l*batch_stride)`` in elements; the contiguous
    extent itself may be ragged (the tail chunk is zero-filled)."""
    vec = max_bytes // elem_bytes
    while vec > 1:
        vb = vec * elem_bytes
        if ptr % vb == 0 and (ld * elem_bytes) % vb == 0 and (batch_stride * elem_bytes) % vb == 0:
            break
        vec //= 2
    return vec


class GemmSm80:
    """One compiled configuration: ``GemmSm80(cfg)(A, B, C, D, alpha, beta)`` on CuPy arrays.

    Arrays are (L, rows, cols) CuPy views; A's and B's major must match the config (``a_major
    = "K"`` means A's k stride is 1), D (and C) must have unit n stride.  The object holds the
    compiled module (``compile_module`` cache) and the loaded function.
    """

    def __init__(self, cfg: GemmSm80Config, arch: str | None = None):
        self.cfg = cfg.check()
        self.name = kernel_name(cfg)
        self.source = generate_source(cfg)
        self._arch = arch
        self._module = None
        self._func = None

    def compile(self, arch: str | None = None):
        from ..compiler import compile_module
        return compile_module(self.source, arch=arch or self._arch, options=())

    @property
    def spec(self):
        """The kernel as a frozen :class:`~cute_py.backends.cuda.kernel.KernelSpec`."""
        from ..kernel import KernelSpec
        return KernelSpec(self.source, self.name, None, (self.cfg.threads, 1, 1),
                          smem=self.cfg.launch_smem_bytes, arch=self._arch)

    @property
    def function(self):
        if self._func is None:
            from ..compiler import build_kernel
            self._func = build_kernel(self.spec)
            self._module = self._func.module
        return self._func

    def grid(self, M: int, N: int, L: int) -> tuple[int, int, int]:
        BM, BN, _ = self.cfg.tile
        return (((M + BM - 1) // BM) * ((N + BN - 1) // BN), 1, L)

    def __call__(self, A, B, C, D, alpha: float = 1.0, beta: float = 0.0, stream=None,
                 epi_args=None):
        """Launch on (L, rows, cols) views.  With a fused epilogue (``cfg.epi``), ``epi_args``
        are the tree's bound tensors (``evt.bind_arguments``; D row-major (M, N), L == 1) and
        ``C``/``alpha``/``beta`` are unused unless the tree names them."""
        import numpy as np
        from ..launch import launch
        cfg = self.cfg
        L, M, K = A.shape
        N = B.shape[2]
        eb = cfg.elem_bytes
        sa = [s // eb for s in A.strides]
        sb = [s // eb for s in B.strides]
        sd = [s // D.itemsize for s in D.strides]
        sc = [s // C.itemsize for s in C.strides]
        lda = sa[1] if cfg.a_major == "K" else sa[2]
        ldb = sb[2] if cfg.b_major == "K" else sb[1]
        args = (A, B, C, D, np.int32(M), np.int32(N), np.int32(K), np.int64(lda),
                np.int64(ldb), np.int64(sc[1]), np.int64(sd[1]), np.int64(sa[0]),
                np.int64(sb[0]), np.int64(sc[0]), np.int64(sd[0]), np.float32(alpha),
                np.float32(beta))
        if cfg.epi is not None:
            args = args + tuple(_epi_launch_args(cfg, D, epi_args or {}))
        launch(self.function, self.grid(M, N, L), (cfg.threads, 1, 1), args,
               smem=cfg.launch_smem_bytes, stream=stream)
        return D

    def plan(self, L: int, M: int, N: int, K: int, lds, batches, device: int):
        """A :class:`~cute_py.backends.cuda.kernel.LaunchPlan` of the plain kernel (no fused
        epilogue) for ``(L, M, K) @ (L, K, N)``: the parameters of :meth:`__call__` in its
        order, the pointers patched per call (roles ``A``, ``B``, ``D``, ``C``), ``alpha`` /
        ``beta`` per-call scalars.  ``lds``: the leading dimensions ``(lda, ldb, ldc, ldd)``
        and ``batches`` the batch strides ``(A, B, C, D)``, in elements."""
        from ..kernel import make_plan
        if self.cfg.epi is not None:
            raise LaunchError("GemmSm80.plan", "cfg", "plans take the plain kernel (no fused "
                              "epilogue)", actual=self.name)
        params = [("u64", None, r) for r in "ABCD"]
        params += [("i32", v, None) for v in (M, N, K)]
        params += [("i64", v, None) for v in tuple(lds) + tuple(batches)]
        params += [("f32", None, "$alpha"), ("f32", None, "$beta")]
        return make_plan(self.function, device, self.grid(M, N, L), (self.cfg.threads, 1, 1),
                         self.cfg.launch_smem_bytes, params, ("A", "B", "D", "C"),
                         ("alpha", "beta"))


def _ptr_of(a) -> int:
    return int(a.data.ptr)


def _epi_launch_args(cfg: GemmSm80Config, D, bound: dict) -> list:
    """The fused epilogue's kernel arguments, in ``params()`` order (reductions reset)."""
    import numpy as np
    from cute_py.epilogue import evt
    epi = epilogue_of(cfg)
    tree = epi.cfg.tree
    D2 = D[0] if D.ndim == 3 else D
    mats = {}
    for role, name, dt in epi._matrices():
        a = D2 if name == "D" else bound[name]
        mats[name] = (a, a.strides[0] // a.itemsize)
    out = []
    for p in epi.params():
        if p.kind == "int":
            out.append(np.int32(mats[p.tensor][1]))
        elif p.kind == "ptr" and p.tensor in mats:
            out.append(np.uint64(_ptr_of(mats[p.tensor][0])))
        elif p.kind == "ptr":
            a = bound[p.tensor]
            role = tree.signature[p.tensor][0]
            if role.split(":")[0] in ("row_reduce", "col_reduce", "scalar_reduce"):
                a.fill(evt.reduction_identity(role.split(":")[1]))
            out.append(np.uint64(_ptr_of(a)))
        else:
            out.append(np.float32(bound[p.tensor]))
    return out


_KERNELS: dict = {}


def get_kernel(cfg: GemmSm80Config) -> GemmSm80:
    k = _KERNELS.get(cfg)
    if k is None:
        k = _KERNELS[cfg] = GemmSm80(cfg)
    return k


_DT_NAMES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}


def _dtype_name(arr, label: str | None = None) -> str:
    name = str(arr.dtype)
    if label == "bf16" and name in ("uint16", "int16", "bfloat16"):
        return "bf16"
    if name not in _DT_NAMES:
        raise LaunchError("gemm_sm80", "dtype", "is not supported",
                          expected=sorted(_DT_NAMES), actual=name)
    return _DT_NAMES[name]


def gemm_sm80(A, B, C=None, D=None, alpha: float = 1.0, beta: float = 0.0, *,
              config: GemmSm80Config | None = None, mainloop: str | None = None,
              stream=None, bf16: bool = False, epilogue=None, epilogue_args=None):
    """``D = alpha * A @ B + beta * C`` on CuPy arrays with the SM80 kernels.

    A ``(M, K)`` or ``(L, M, K)``, B ``(K, N)`` or ``(L, K, N)``, each with a unit stride in
    one of its two matrix modes (any major); C (optional) and D ``(M, N)``/``(L, M, N)`` with a
    unit stride in either mode.  ``config`` fixes tile/warps/stages/mainloop (its dtype, majors
    and alignment are filled in from the arrays); otherwise :func:`default_config` picks one.
    Returns D (allocated, row-major, dtype of C or of A when not given).  CuPy has no
    bfloat16: pass bf16 data as uint16 bit patterns with ``bf16=True`` (C/D then hold bf16
    bits too when they are 16-bit).

    ``epilogue`` (an EVT tree, ``Sm80EpilogueConfig`` or ``EpilogueConfig``) fuses
    ``D = tree(acc = A @ B, ...)`` into the kernel; ``epilogue_args`` maps the tree's names to
    arrays / numbers as for ``evt.evaluate`` (plus side outputs); a tree input named ``C`` /
    ``alpha`` / ``beta`` not given there is taken from the arguments.  D must then be a 2-D
    row-major (M, N) array (L == 1).  Law: ``D == evaluate(tree, A @ B, **args)`` within the
    dtype's rounding.
    """
    import cupy as cp
    op = "gemm_sm80"
    squeeze = A.ndim == 2
    if A.ndim not in (2, 3) or B.ndim != A.ndim:
        raise LaunchError(op, "A", "must be 2-D (M, K) or 3-D (L, M, K) like B",
                          actual=(A.shape, B.shape))
    if squeeze:
        A, B = A[None], B[None]
        C = None if C is None else C[None]
        D = None if D is None else D[None]
    L, M, K = A.shape
    if B.shape[0] != L or B.shape[1] != K:
        raise LaunchError(op, "B", "shape does not match A", expected=(L, K, "N"),
                          actual=B.shape)
    N = B.shape[2]
    if D is not None and D.ndim != 3:
        raise LaunchError(op, "D", "must have A's rank", actual=D.shape)
    if min(M, N, K) < 1:
        raise LaunchError(op, "A", "needs M, N, K >= 1", actual=(M, N, K))
    if epilogue is not None:
        return _gemm_sm80_fused(A, B, C, D, alpha, beta, config, mainloop, stream, bf16,
                                epilogue, epilogue_args or {}, squeeze)
    lab = "bf16" if bf16 else None
    da, db = _dtype_name(A, lab), _dtype_name(B, lab)
    if da != db:
        raise LaunchError(op, "B", "dtype must equal A's", expected=A.dtype, actual=B.dtype)
    dtype = "tf32" if da == "f32" else da
    out_np = C.dtype if C is not None else (D.dtype if D is not None else A.dtype)
    if D is None:
        D = cp.empty((L, M, N), dtype=out_np)
    if C is None:
        C, beta = D, 0.0
    for nm, X in (("C", C), ("D", D)):
        if X.shape != (L, M, N):
            raise LaunchError(op, nm, "has the wrong shape", expected=(L, M, N), actual=X.shape)
    if C.dtype != D.dtype:
        raise LaunchError(op, "C", "dtype must equal D's", expected=D.dtype, actual=C.dtype)
    out = _dtype_name(D, lab)
    # D column-major (unit m stride): compute D^T = B^T A^T instead.
    if D.strides[2] != D.itemsize and D.strides[1] == D.itemsize:
        if C is not D and C.strides[1] != C.itemsize:
            C = cp.ascontiguousarray(C.transpose(0, 2, 1)).transpose(0, 2, 1)
        gemm_sm80(B.transpose(0, 2, 1), A.transpose(0, 2, 1), C.transpose(0, 2, 1),
                  D.transpose(0, 2, 1), alpha, beta, config=config, mainloop=mainloop,
                  stream=stream, bf16=bf16)
        return D[0] if squeeze else D
    if D.strides[2] != D.itemsize:
        raise LaunchError(op, "D", "needs a unit stride in one of its matrix modes",
                          actual=D.strides)
    if C is not D and C.strides[2] != C.itemsize:
        C = cp.ascontiguousarray(C)
    A, B, base, va, vb = _operand_plan(A, B, config, mainloop, dtype, out, op)
    ec = D.itemsize
    cfg = plain_config(base, va, vb, [(X.data.ptr, X.strides[1] // ec, X.strides[0] // ec)
                                      for X in (C, D)], ec)
    if _PLAN_ONLY:
        _PLAN_ONLY[-1].append(cfg)
        return D[0] if squeeze else D
    get_kernel(cfg)(A, B, C, D, alpha, beta, stream=stream)
    return D[0] if squeeze else D


def _operand_plan(A, B, config, mainloop, dtype, out, op):
    """A and B (``(L, M, K)`` / ``(L, K, N)``) with a unit stride in K or in M / N (else a
    K-major copy), the base configuration (``config`` or the heuristic's, unaligned when a
    16-byte vector does not fit) with their majors and types, and the vector widths."""
    import cupy as cp
    eb = A.itemsize

    def unit_stride(X, unit_k_mode):
        """X itself when it has a unit stride in a matrix mode, else a K-major copy."""
        other = 1 if unit_k_mode == 2 else 2
        if eb in (X.strides[unit_k_mode], X.strides[other]):
            return X
        return (cp.ascontiguousarray(X) if unit_k_mode == 2 else
                cp.ascontiguousarray(X.transpose(0, 2, 1)).transpose(0, 2, 1))
    A = unit_stride(A, 2)
    B = unit_stride(B, 1)
    if A.data.ptr % eb or B.data.ptr % eb:
        raise LaunchError(op, "A", "pointers must be element-aligned")
    base, va, vb = operand_config(A.data.ptr, [x // eb for x in A.strides], B.data.ptr,
                                  [x // eb for x in B.strides], A.shape[1], B.shape[2],
                                  A.shape[2], eb, config, mainloop, dtype, out)
    return A, B, base, va, vb


def operand_config(pa: int, sa, pb: int, sb, M: int, N: int, K: int, eb: int, config,
                   mainloop, dtype: str, out: str):
    """``(base, vec_a, vec_b)`` for A ``(L, M, K)`` at byte address ``pa`` with element
    strides ``sa`` and B ``(L, K, N)`` (``pb``, ``sb``), each with a unit stride in one of its
    matrix modes (K first): the configuration (``config`` or :func:`default_config`'s, unaligned
    when a 16-byte vector does not fit) with the operands' majors and types, and the widest
    global vectors their alignment allows."""
    from .gemm_sm80_configs import default_config
    a_major = "K" if sa[2] == 1 else "M"
    b_major = "K" if sb[1] == 1 else "N"
    vec_a = alignment_of(pa // eb, sa[1 if a_major == "K" else 2], 0, eb, sa[0])
    vec_b = alignment_of(pb // eb, sb[2 if b_major == "K" else 1], 0, eb, sb[0])
    base = config or default_config(M, N, K, dtype=dtype, out_dtype=out, a_major=a_major,
                                    b_major=b_major, mainloop=mainloop,
                                    aligned=min(vec_a, vec_b) >= 16 // eb)
    base = replace(base, dtype=dtype, out_dtype=out, a_major=a_major, b_major=b_major)
    return base, min(vec_a, 16 // eb), min(vec_b, 16 // eb)


def plain_config(base: GemmSm80Config, vec_a: int, vec_b: int, outputs,
                 itemsize: int) -> GemmSm80Config:
    """The plain kernel's configuration: ``base`` with the operands' vectors, paired C / D
    stores (``vec_c = 2``) when every ``(ptr, ld, batch)`` of ``outputs`` (byte address,
    element strides) has a 2-element aligned base and even strides, vectors shrunk until each
    copy map splits evenly (:func:`_fit_vectors`)."""
    vc = 2 if all(not (p % (2 * itemsize) or ld % 2 or bt % 2) for p, ld, bt in outputs) else 1
    return realigned(_fit_vectors(replace(base, vec_a=vec_a, vec_b=vec_b, vec_c=vc)))


def realigned(cfg: GemmSm80Config) -> GemmSm80Config:
    """``cfg`` with realigned 16-byte copies (``realign_a`` / ``realign_b``) for each 16-bit
    operand whose copies fell to single elements (rows aligned only to the element: odd
    pitch or offset), where the tile splits into 16-byte copies: two aligned vector loads and
    a shift per 8 elements instead of 8 element loads and stores."""
    if cfg.elem_bytes != 2:
        return cfg
    for x in "ab":
        if getattr(cfg, f"vec_{x}") == 1:
            cand = replace(cfg, **{f"vec_{x}": 8, f"realign_{x}": True})
            if cand.copy_ok(x.upper()):
                cfg = cand
    return cfg


def _gemm_sm80_fused(A, B, C, D, alpha, beta, config, mainloop, stream, bf16, epilogue,
                     args, squeeze):
    """gemm_sm80 with a fused epilogue (A, B already (L, ., .))."""
    import cupy as cp
    from cute_py.epilogue import evt
    from ..epilogue.sm80 import Sm80EpilogueConfig
    from ..epilogue.sm90 import EpilogueConfig
    op = "gemm_sm80"
    L, M, K = A.shape
    N = B.shape[2]
    if L != 1:
        raise LaunchError(op, "epilogue", "fused epilogues need L == 1", actual=L)
    if not isinstance(epilogue, (evt.Node, Sm80EpilogueConfig, EpilogueConfig)):
        raise LaunchError(op, "epilogue", "must be an EVT tree, an Sm80EpilogueConfig or an "
                          "EpilogueConfig", actual=type(epilogue).__name__)
    tree = epilogue if isinstance(epilogue, evt.Node) else epilogue.tree
    sig = tree.signature
    args = dict(args)
    if "C" in sig and "C" not in args and C is not None:
        args["C"] = C[0] if C.ndim == 3 else C
    for nm, v in (("alpha", alpha), ("beta", beta)):
        if nm in sig and sig[nm][0] == "scalar" and nm not in args:
            args[nm] = v
    lab = "bf16" if bf16 else None
    da, db = _dtype_name(A, lab), _dtype_name(B, lab)
    if da != db:
        raise LaunchError(op, "B", "dtype must equal A's", expected=A.dtype, actual=B.dtype)
    dtype = "tf32" if da == "f32" else da
    ed = getattr(epilogue, "element_d", None) or ("bfloat16" if bf16 else
                                                  {"f16": "float16", "bf16": "bfloat16",
                                                   "tf32": "float32"}[dtype])
    np_d = {"float16": cp.float16, "bfloat16": cp.uint16, "float32": cp.float32}[ed]
    if D is None:
        D = cp.empty((1, M, N), dtype=np_d)
    D2 = D[0] if D.ndim == 3 else D
    if D2.shape != (M, N) or D2.strides[1] != D2.itemsize:
        raise LaunchError(op, "D", "must be a row-major (M, N) matrix with a fused epilogue",
                          expected=(M, N), actual=(D2.shape, D2.strides))
    out = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}[ed]
    bound = evt.bind_arguments(tree, M, N, args, op=op, need_outputs=True)
    mats = [D2] + [bound[n] for n, (role, _) in sig.items()
                   if role in ("src", "aux_load", "aux_store")]
    for n, (role, _) in sig.items():
        a = bound[n]
        if role in ("src", "aux_load", "aux_store") and a.shape[-1] > 1 and \
                a.strides[-1] != a.itemsize:
            raise LaunchError(op, n, "must be a row-major (M, N) matrix (unit column stride) "
                              "with a fused epilogue", expected=(M, N),
                              actual=(a.shape, a.strides))
    vec = all(_ptr_of(a) % 16 == 0 and a.strides[0] % 16 == 0 and (N * a.itemsize) % 16 == 0
              for a in mats)
    A, B, base, va, vb = _operand_plan(A, B, config, mainloop, dtype, out, op)
    cfg = realigned(replace(base, vec_a=va, vec_b=vb, vec_c=2, epi=None))
    cfg = with_epilogue(_fit_vectors(cfg), epilogue,
                        vectorized=bool(vec and getattr(epilogue, "vectorized", True)))
    if _PLAN_ONLY:
        _PLAN_ONLY[-1].append(cfg)
        return D[0] if squeeze and D.ndim == 3 else D
    D3 = D if D.ndim == 3 else D[None]
    get_kernel(cfg)(A, B, D3, D3, 1.0, 0.0, stream=stream, epi_args=bound)
    return D[0] if squeeze and D.ndim == 3 else D


_PLAN_ONLY: list = []


class plan_only:
    """Context manager: ``gemm_sm80`` records the configs it would launch instead of launching
    (used to compile every needed kernel in parallel before a test or benchmark run)."""

    def __enter__(self):
        _PLAN_ONLY.append([])
        return _PLAN_ONLY[-1]

    def __exit__(self, *exc):
        _PLAN_ONLY.pop()


def _compile_one(args):
    cfg, arch = args
    from ..compiler import compile_module
    mod = compile_module(generate_source(cfg), arch=arch)
    r = mod.resources_for(kernel_name(cfg))
    return kernel_name(cfg), r.registers, r.spills


def precompile(configs, arch: str | None = None, processes: int | None = None):
    """Compile ``configs`` (into the compile cache) in a process pool; returns
    [(kernel name, registers, spill bytes)]."""
    import multiprocessing as mp
    import os
    from ..compiler import normalize_arch
    arch = normalize_arch(arch)
    todo = sorted(set(configs), key=kernel_name)
    procs = processes or min(len(todo), os.cpu_count() or 1) or 1
    if procs <= 1:
        return [_compile_one((c, arch)) for c in todo]
    with mp.get_context("spawn").Pool(procs) as pool:
        return pool.map(_compile_one, [(c, arch) for c in todo])


def _fit_vectors(cfg: GemmSm80Config) -> GemmSm80Config:
    """Shrink vec_a / vec_b until each copy map splits evenly (tiny tiles, wide vectors)."""
    while not cfg.copy_ok("A") and cfg.vec_a > 1:
        cfg = replace(cfg, vec_a=cfg.vec_a // 2)
    while not cfg.copy_ok("B") and cfg.vec_b > 1:
        cfg = replace(cfg, vec_b=cfg.vec_b // 2)
    return cfg
