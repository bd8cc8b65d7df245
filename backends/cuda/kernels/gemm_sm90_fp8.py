"""FP8 configuration of the Hopper GEMM: scaled products of 8-bit (e4m3 / e5m2) operands.

The kernel is :func:`gemm_sm90.generate_source` itself; an FP8 configuration (``dtype`` "e4m3"
or "e5m2", ``dtype_b`` B's format when it differs) changes only

- the operands: 1-byte elements, so the GMMA smem atoms (defined on bits) give 128-element
  SW128 rows, ``tile_k`` = 128 (one 128-byte swizzle row), TMA boxes of ``uint8``; the
  descriptors' LBO / SBO come out of the same smem layouts (K-major SW128: SBO 1024 bytes);
- the MMA atom: ``wgmma.mma_async.m64n{N}k32.f32.{a}.{b}`` (``SM90_64xNx32_F32{A}{B}_SS_TN``),
  four k-steps of 32 elements per k-block.  8-bit wgmma reads K-major operands only: an
  MN-major A or B is refused naming the operand;
- the built-in epilogue (this module), ``scaling``:

  - "tensor": ``D = (scale_a[0] * scale_b[0]) * acc (+ bias[c])`` -- the scales are read from
    device memory (float32, one element each, as ``torch._scaled_mm``: no host sync);
  - "row": ``D[r, c] = scale_a[r] * scale_b[c] * acc[r, c] (+ bias[c])`` with ``scale_a``
    ``(M, 1)`` and ``scale_b`` ``(1, N)`` float32 (strides ``ld_sa_m`` / ``ld_sb_n``);
  - "block" (DeepGEMM's recipe): ``scale_a`` ``(M, ceil(K/128))`` (one per row and k-block,
    strides ``ld_sa_m``, ``ld_sa_k``), ``scale_b`` ``(ceil(N/128), ceil(K/128))`` (one per
    128x128 block of B, strides ``ld_sb_n``, ``ld_sb_k``).  Each k-block's wgmmas start a fresh
    accumulator set (``scale_d`` = 0); after they complete (``wait_group<0>``) the consumer
    promotes ``tot += acc * (scale_a[r, kb] * scale_b[c / 128, kb])`` in fp32 registers (two
    accumulator sets); the epilogue stores ``tot``.  The scales travel through the pipeline
    with the operands (``arch.sm90.block_scales``): the producer warpgroup's scale warps copy
    each k-block's scales into its stage, the consumers read them from shared memory before
    the wait.

  ``bias`` (a row vector of N elements of the output type, or a null pointer: none) is added
  after scaling; D is stored as bf16, f16 or f32 (``out_dtype``; f32: D and the bias are
  float32 arrays passed through the kernel's ``u16*`` parameters, paired stores need 8-byte
  aligned rows).  Rows and columns of every value come from the accumulator
  fragment (``row0_`` / ``col0_`` lowered from ``CLayout_64xN`` plus the fragment's offsets),
  as in the 16-bit built-in epilogue; D's offsets are lowered from :func:`d_layout` through IR.

Split-K (``split_k="fixup"``, per-tensor and row-wise, the built-in epilogue): the units of a
tile sum their k-ranges in fp32 (promoted or not) and the tile's last unit adds the splits'
partials in the fixed order 0, 1, ..., S-1 (``gemm_sm90_splitk.emit_fixup``) before this
epilogue scales the sum -- the scales and the bias stay on the device, read once per tile as
without a split, and the result is bit-identical run to run.  Decode problems, whose tiles
leave SMs idle, spread the weight's reads over every SM this way.

The kernel's builder gets the pieces of this module: :data:`PARAMS` (after the kernel's own
parameters), :func:`emit_promotion_init` / :func:`emit_k_block_tail` (the promoting mainloop's
second accumulator set and per-k-block tail) and :func:`emit_epilogue`, each emitting
builder statements.

Accumulation: FP8 wgmma is reported to keep fewer mantissa bits in its accumulator than
IEEE fp32 (DeepSeek-V3: about 14).  With ``promote`` (and always with "block") each 128-element
k-block is summed in a fresh accumulator set and added into a second fp32 set after its wgmmas
complete (CUTLASS's default FP8 mainloop, torch._scaled_mm's ``use_fast_accum=False``);
without it the "tensor" / "row" kernels keep one accumulator over all of K ("fast
accumulation": no wait per k-block, 128x256 tiles).  NumPy model
(``tests/backend/test_gemm_sm90_fp8.py``, 13-bit accumulator, N(0,1) data, K = 16384): one
accumulator 1.3e-2 relative-norm error, promoted 1.2e-4 (bf16 output rounding: 1.7e-3).
"""

from __future__ import annotations

__all__ = ["FP8_DTYPES", "OUT_DTYPES", "FP8_OUT", "EPI_D", "epilogue_tree", "SCALINGS",
           "check", "PARAMS", "emit_promotion_loads",
           "emit_promotion", "promotes", "acc_sets", "serial_slabs", "emit_promotion_init",
           "emit_k_block_tail",
           "emit_producer_scales",
           "emit_consumer_setup", "emit_epi_prelude", "col_scale_layout", "emit_col_scale_setup",
           "emit_col_scale_load", "emit_col_scale_stage", "acc_expr", "emit_epilogue",
           "name_part",
           "scale_shapes", "check_scales", "scaling_of", "scale_layouts", "scale_offset",
           "d_layout", "d_offset"]

#: 8-bit input formats
FP8_DTYPES = ("e4m3", "e5m2")
#: output types of the FP8 built-in epilogue
OUT_DTYPES = ("bf16", "f16", "f32", "e4m3", "e5m2")
#: 8-bit output types: stored only by the TMA-store EVT epilogue (saturating conversion)
FP8_OUT = ("e4m3", "e5m2")
#: torch / CuPy dtype names of D (and the bias) per output type
OUT_ARRAY_DTYPES = {"bf16": ("bfloat16", "uint16"), "f16": ("float16",), "f32": ("float32",),
                    "e4m3": ("float8_e4m3fn", "uint8"), "e5m2": ("float8_e5m2", "uint8")}
#: the epilogue's element type of D per output type
EPI_D = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "e4m3": "float8_e4m3",
         "e5m2": "float8_e5m2"}
#: scaling modes: per-tensor, row-wise (per row of A / column of B), block-wise (1x128 A,
#: 128x128 B)
SCALINGS = ("tensor", "row", "block")
#: column pairs whose row-wise column scales the epilogue loads together (register budget:
#: 2 x this many floats beside the accumulators)
ROW_SCALE_BATCH = 8
#: K elements of one scale block (``scaling="block"``) and of one k-block of the kernel
BLOCK_K = 128


_I32 = (1 << 31) - 1


def epilogue_tree(bias=None, amax: bool = False, scale_result: bool = False):
    """The TMA-store epilogue's tree of ``scaled_mm`` (None: ``D = acc``): ``v = acc (+
    bias[n])`` (``bias``: the bias's dtype name, or None), with ``amax`` a
    ``ScalarReduction("amax", "absmax")`` of v (``amax[0] = max |v|``), with
    ``scale_result`` ``v * scale_result[0]`` (a pointer scalar) as the stored value.  The
    accumulators it reads are already scaled (:func:`acc_expr`)."""
    from cute_py.epilogue import evt
    v = evt.AccFetch()
    if bias:
        v = evt.add(v, evt.RowBroadcast("bias", bias))
    if amax:
        v = evt.ScalarReduction(v, "amax", "absmax")
    if scale_result:
        v = evt.multiply(v, evt.ScalarBroadcast("scale_result", ptr=True))
    return None if v == evt.AccFetch() else v


def scale_layouts(scaling: str):
    """``(SA, SB)``: the scale tensors as layouts over the problem's coordinates -- SA over A's
    ``(m, k)``, SB over B's ``(n, k)`` -- with the kernel's runtime extents and strides as
    symbols (``M``, ``N``, ``KB`` = ceil(K/128), ``NB``; ``ld_sa_m``, ``ld_sa_k``, ``ld_sb_n``,
    ``ld_sb_k``).  A scale shared by a block has stride 0 inside it (CuTe's broadcast layouts):

    - "tensor": ``(M, K):(0, 0)`` and ``(N, K):(0, 0)``;
    - "row": ``(M, K):(ld_sa_m, 0)`` and ``(N, K):(ld_sb_n, 0)``;
    - "block": ``(M, (128, KB)):(ld_sa_m, (0, ld_sa_k))`` and
      ``((128, NB), (128, KB)):((0, ld_sb_n), (0, ld_sb_k))``.

    Law (test): ``SA(m, k) == m * ld_sa_m + (k // 128) * ld_sa_k`` (block), i.e. the element
    ``scale_a[m, k // 128]``; ``SB(n, k)`` the element ``scale_b[n // 128, k // 128]``."""
    import cute_py as cute
    M, N, K, KB, NB, lam, lak, lbn, lbk = cute.symbols(
        "M N K KB NB ld_sa_m ld_sa_k ld_sb_n ld_sb_k")
    if scaling == "tensor":
        return cute.make_layout((M, K), (0, 0)), cute.make_layout((N, K), (0, 0))
    if scaling == "row":
        return cute.make_layout((M, K), (lam, 0)), cute.make_layout((N, K), (lbn, 0))
    return (cute.make_layout((M, (BLOCK_K, KB)), (lam, (0, lak))),
            cute.make_layout(((BLOCK_K, NB), (BLOCK_K, KB)), ((0, lbn), (0, lbk))))


def scale_offset(layout, row, k) -> str:
    """C text of ``layout(row, k)`` lowered through IR (``row``, ``k``: IR nodes or ints)."""
    import cute_py as cute
    from ..lower import crd2idx
    from ..render import render_expr
    return render_expr(crd2idx((row, k), cute.shape(layout), cute.stride(layout)))


def d_layout():
    """D as a layout over the kernel's ``(m, n, l)`` (row-major rows of ``ldd`` elements,
    batches ``ldl_d`` apart; the same for the float32 output)."""
    import cute_py as cute
    M, N, L, ldd, ldl = cute.symbols("M N L ldd ldl_d")
    return cute.make_layout((M, N, L), (ldd, 1, ldl))


def d_offset(row, col, batch=0) -> str:
    """C text of ``D(row, col, batch)`` (elements) lowered through IR (``row``, ``col``,
    ``batch``: IR nodes or ints)."""
    import cute_py as cute
    from ..lower import crd2idx
    from ..render import render_expr
    L = d_layout()
    return render_expr(crd2idx((row, col, batch), cute.shape(L), cute.stride(L)))


def is_fp8(cfg) -> bool:
    return cfg.dtype in FP8_DTYPES


def name_part(cfg) -> str:
    """The element-type part of the kernel name, e.g. ``e4m3e5m2_bf16_row``."""
    return (f"{cfg.dtype}{cfg.dtype_b or cfg.dtype}_{cfg.out_dtype}_{cfg.scaling}"
            + ("p" if cfg.promote else ""))


def check(cfg, op: str = "Sm90GemmConfig") -> None:
    """The rules of an FP8 configuration (``LaunchError`` naming the field)."""
    from cute_py.errors import LaunchError
    if (cfg.dtype_b or cfg.dtype) not in FP8_DTYPES:
        raise LaunchError(op, "dtype_b", "must be an 8-bit format with an 8-bit A",
                          expected=FP8_DTYPES, actual=cfg.dtype_b)
    if cfg.tile_k != BLOCK_K:
        raise LaunchError(op, "tile_k", "must be 128 for 8-bit operands (one 128-byte swizzle "
                          "row of 1-byte elements)", expected=BLOCK_K, actual=cfg.tile_k)
    for nm in ("a_major", "b_major"):
        if getattr(cfg, nm) != "K":
            raise LaunchError(op, nm, f"8-bit wgmma reads operand {nm[0].upper()} K-major only "
                              "(no transpose): pass a K-contiguous operand", expected="K",
                              actual=getattr(cfg, nm))
    if tuple(cfg.smem_swizzle) != (3, 3):
        raise LaunchError(op, "smem_swizzle", "8-bit operands use the SW128 atoms",
                          expected=(3, 3), actual=cfg.smem_swizzle)
    if cfg.out_dtype not in OUT_DTYPES:
        raise LaunchError(op, "out_dtype", "is not an output type of the FP8 GEMM",
                          expected=OUT_DTYPES, actual=cfg.out_dtype)
    if cfg.scaling not in SCALINGS:
        raise LaunchError(op, "scaling", "is not an FP8 scaling mode", expected=SCALINGS,
                          actual=cfg.scaling)
    if cfg.epi is not None:
        _check_epi(op, cfg)
    elif cfg.out_dtype in FP8_OUT:
        raise LaunchError(op, "out_dtype", "an 8-bit D is stored by the TMA-store EVT epilogue "
                          "(give the configuration an epi)", actual=cfg.out_dtype)
    if cfg.splits and (cfg.split_k != "fixup" or cfg.scaling == "block"
                       or cfg.epi is not None):
        raise LaunchError(op, "split_k", "8-bit operands split K with 'fixup' only (the tile's "
                          "last unit sums the splits and runs the FP8 built-in epilogue on the "
                          "sum), per-tensor or row-wise scaling, no epi",
                          expected="fixup", actual=(cfg.split_k, cfg.scaling,
                                                    cfg.epi is not None))
    for nm, bad in (("transpose_d", cfg.transpose_d), ("has_c", cfg.has_c)):
        if bad:
            raise LaunchError(op, nm, "is not available with 8-bit operands (the FP8 built-in "
                              "epilogue scales, adds the bias and stores D)",
                              actual=getattr(cfg, nm))
    if cfg.promote and cfg.scaling == "block":
        raise LaunchError(op, "promote", "block scaling always promotes (leave promote False)",
                          expected=False, actual=True)
    if cfg.scaling == "block" or cfg.promote:
        slabs = _wg_slabs(cfg)
        serial = serial_slabs(cfg)              # one slab's k-block set
        # the k-block set (every slab's, or one slab's) and the promoted sums (every slab's)
        if ((1 + slabs) if serial else 2 * slabs) * cfg.tile_n // 2 > 192:
            raise LaunchError(op, "tile", "promotion keeps a k-block accumulator set beside "
                              "the promoted sums: at most 192 accumulators per thread (128x192, "
                              "256x128)", actual=(cfg.tile_m, cfg.tile_n))
        if serial and (cfg.schedule != "cooperative" or cfg.stream_k or cfg.splits):
            arg = "stream_k" if cfg.stream_k else ("split_k" if cfg.splits else "schedule")
            raise LaunchError(op, arg, "promoted tiles whose warpgroups take their "
                              "64-row slabs in turn (256 x more than 96) run the cooperative "
                              "schedule, without stream-K or split-K", expected="cooperative",
                              actual=(cfg.schedule, cfg.tile_m, bool(cfg.stream_k),
                                      cfg.split_k))


#: The FP8 kernel's parameters after the 16-bit kernel's (scales, bias, scale strides), in the
#: order the host plans (``scaled_mm_api``, ``Sm90Gemm.plan``) pack them
PARAMS = (("const float* __restrict__", "scale_a"), ("const float* __restrict__", "scale_b"),
          ("const u16* __restrict__", "bias"), ("long long", "ld_sa_m"),
          ("long long", "ld_sa_k"), ("long long", "ld_sb_n"), ("long long", "ld_sb_k"))


def _rows(maps):
    """Distinct row offsets of a thread's values and, per value, the index into them."""
    fr = maps.frag
    rows = sorted(set(fr.m_val))
    return rows, [rows.index(m) for m in fr.m_val]


def _nblocks(cfg, maps):
    """Distinct B-scale entries (column chunks of ``BlockScaleStages.chunk``, each inside one
    128-column block) of a thread's values and, per value, the index into them."""
    import math
    fr = maps.frag
    chunk = math.gcd(cfg.tile_n, BLOCK_K)
    nbs = sorted(set(n // chunk for n in fr.n_val))
    return nbs, [nbs.index(n // chunk) for n in fr.n_val]


def _acc(maps, v, name="acc", serial: bool = False):
    """Accumulator ``v`` of the thread's fragment in ``name`` (``acc[slab][value]``);
    ``serial``: in the one-slab k-block set of a kernel taking its slabs in turn
    (:func:`serial_slabs`)."""
    nacc = maps.frag.num_values // maps.slabs
    return f"{name}[{0 if serial else v // nacc}][{v % nacc}]"


def _wg_slabs(cfg) -> int:
    """64-row slabs of a consumer warpgroup's share of the tile (at least one)."""
    return max(1, cfg.tile_m // cfg.mma_wgs // 64)


def serial_slabs(cfg) -> bool:
    """A promoting kernel whose warpgroups own more than one 64-row slab and whose two full
    accumulator sets would pass 192 per thread (``slabs * tile_n > 192``: 256x128) keeps one
    k-block accumulator set and takes the slabs in turn (each slab's wgmmas,
    ``wait_group<0>``, its promotion into ``tot_[slab]``): ``acc`` holds ``tile_n / 2`` values
    and ``tot_`` ``slabs * tile_n / 2``, so a 256x128 tile needs 192 accumulators per thread,
    as a 128x192 one with two full sets (DeepGEMM's 256-row tiles keep their accumulators
    so)."""
    slabs = _wg_slabs(cfg)
    return promotes(cfg) and slabs > 1 and slabs * cfg.tile_n > 192


def acc_sets(cfg, maps) -> int:
    """Slabs of the k-block accumulator set ``acc``: 1 for :func:`serial_slabs`, else one per
    slab."""
    return 1 if serial_slabs(cfg) else maps.slabs


def emit_promotion_loads(kb, cfg, maps) -> None:
    """Block scaling: read the current stage's scales (``arch.sm90.block_scales``: the
    producer copied them into the stage's slot) into ``sa_[i]`` for each distinct row of the
    thread and ``sb_[i]`` for each 128-column block of its values (declared by
    :func:`emit_promotion_init`)."""
    from .. import ir
    from ..arch.sm90.wgmma import accumulator_origin
    rows, _ = _rows(maps)
    nbs, _ = _nblocks(cfg, maps)
    tid = ir.var("tid", 0, 128 * cfg.mma_wgs - 1)
    m, _n = accumulator_origin(cfg.tile_n, cfg.mma_wgs, cfg.tile_m // cfg.mma_wgs, tid)
    cfg.block_scales().emit_consumer_loads(kb, ir.var("idx", 0, cfg.stages - 1), m, rows, nbs)


def emit_producer_scales(kb, cfg, idx, fb, k0, wait, ahead=None, k_end=None) -> None:
    """Block scaling, a scale warp's k-block ``k0`` (its first K index, IR): the scales'
    loads into registers (``emit_producer_loads``; with ``ahead``, this turn's from the
    previous turn's prefetch and the next turn's -- ``ahead`` k-blocks on, before ``k_end``
    -- issued now: :meth:`~backends.cuda.arch.sm90.block_scales.BlockScaleStages.
    emit_producer_turn`), ``wait(kb)`` (the stage's empty wait), their stores into stage
    ``idx``'s slot and the lanes' arrivals on its full barrier ``fb``
    (``emit_producer_stores``; the layouts of :func:`scale_layouts`)."""
    SA, SB = scale_layouts("block")
    bs = cfg.block_scales()
    if ahead is None:
        bs.emit_producer_loads(kb, SA, SB, k0)
    else:
        bs.emit_producer_turn(kb, SA, SB, k0, ahead, k_end)
    wait(kb)
    bs.emit_producer_stores(kb, idx, fb)


def emit_promotion(kb, cfg, maps, slab: int | None = None) -> None:
    """After the k-block's wgmmas completed: ``tot += acc * sa * sb`` (block scaling;
    ``promote``: ``tot += acc``), one statement per accumulator (``slab``: that slab's only,
    :func:`serial_slabs`)."""
    nv = maps.frag.num_values
    nacc = nv // maps.slabs
    vs = range(nv) if slab is None else range(slab * nacc, (slab + 1) * nacc)
    ser = serial_slabs(cfg)
    if cfg.scaling != "block":
        for v in vs:
            kb.assign(_acc(maps, v, "tot_"), _acc(maps, v, serial=ser), "+=")
        return
    _, ri = _rows(maps)
    _, ni = _nblocks(cfg, maps)
    for v in vs:
        kb.assign(_acc(maps, v, "tot_"),
                  f"{_acc(maps, v, serial=ser)} * (sa_[{ri[v]}] * sb_[{ni[v]}])",
                  "+=")


def promotes(cfg) -> bool:
    """Each k-block summed in a fresh accumulator set and promoted into ``tot_`` ("block"
    scaling, or ``promote``)."""
    return is_fp8(cfg) and (cfg.scaling == "block" or cfg.promote)


def emit_promotion_init(kb, cfg, maps, emit_origin) -> None:
    """Before a tile's mainloop (promoting kernels): the thread's accumulator origin
    ``row0_`` / ``col0_`` (``emit_origin(kb)`` declares them), the second accumulator set
    ``tot_`` set to zero and (block scaling) the registers of one k-block's scales."""
    emit_origin(kb)
    nacc = maps.frag.num_values // maps.slabs
    kb.decl("float", f"tot_[{maps.slabs}][{nacc}]", hint=False)
    if cfg.scaling == "block":
        rows, _ = _rows(maps)
        nbs, _ = _nblocks(cfg, maps)
        for nm, n in (("sa", len(rows)), ("sb", len(nbs))):
            kb.decl("float", f"{nm}_[{n}]", hint=False)
    with kb.for_("j", 0, maps.slabs, unroll=True, hint=False) as j:
        with kb.for_("i", 0, nacc, unroll=True, hint=False) as i:
            kb.assign(f"tot_[{kb.expr(j)}][{kb.expr(i)}]", "0.0f")


def emit_k_block_tail(kb, cfg, maps, release, slab: int | None = None) -> None:
    """After a k-block's ``wgmma_commit_group`` (promoting kernels): ``wgmma_wait_group<0>``,
    the accumulators' operand fence, the stage's release (``release(kb)``: the pipeline's
    consumer release of the current stage) and the promotion into ``tot_``.  (Block scaling
    read the k-block's scales out of its stage before the wgmmas, :func:`emit_promotion_loads`
    as the k-block's head: read after them, the loads queued behind the wgmmas' shared-memory
    reads and the promotion waited for them.)  ``slab``: after that slab's group
    (:func:`serial_slabs`): the stage is released after the last slab's, and the slab's sums
    are fenced after their promotion, so the promotion stays ahead of the next slab's wgmmas
    (sunk behind them, it keeps the k-block set alive beside the next slab's and the
    consumer spills: 420 bytes at 256x128)."""
    if cfg.scaling != "block" and slab in (None, 0):
        kb.comment("promotion: tot_ += acc after the k-block's wgmmas")
    kb.call("wgmma_wait_group", template="0")
    with kb.for_("j", 0, acc_sets(cfg, maps), unroll=True, hint=False) as j:
        kb.call("wgmma_fence_operands", f"acc[{kb.expr(j)}]")
    if slab is None or slab == maps.slabs - 1:
        release(kb)
    emit_promotion(kb, cfg, maps, slab)
    if slab is not None:
        kb.call("wgmma_fence_operands", f"tot_[{slab}]")


def _check_epi(op, cfg) -> None:
    """An FP8 configuration with the TMA-store EVT epilogue (``epi``): the tree reads the
    scaled products (:func:`acc_expr`); D of the configuration's output type."""
    from cute_py.errors import LaunchError
    want = EPI_D[cfg.out_dtype]
    if cfg.epi.element_d != want:
        raise LaunchError(op, "epi", "its element_d must be the FP8 output type",
                          expected=want, actual=cfg.epi.element_d)


def emit_epi_prelude(kb, cfg, maps, pingpong: bool = False) -> None:
    """Before the TMA-store epilogue of a tile: for row-wise scales, the thread's origin
    ``row0_`` / ``col0_`` (unless the promoting mainloop declared it), its rows' scales
    ``rs_`` (zero past M) and the tile's column scales staged in shared memory
    (:func:`emit_col_scale_stage`)."""
    if cfg.scaling != "row":
        return
    from .gemm_sm90_store import emit_origin
    if not promotes(cfg):
        emit_origin(kb, cfg)
    _emit_row_scales(kb, maps)
    emit_col_scale_stage(kb, cfg, pingpong)


# Row-wise column scales through shared memory.  Read where each value is used, every value
# paid a global load, a bound check and 64-bit address arithmetic: 870 more instructions per
# thread per 128x192 tile than per-tensor scaling, 1.7-2 us per tile (docs/performance.md,
# "FP8 GEMM", v24).  Instead the threads that share a tile (all consumers; one warpgroup in
# ping-pong) load its ``tile_n`` column scales once, one or two per thread, at the tile's
# start (in flight during the mainloop), and before the epilogue meet at a named barrier (5,
# ping-pong 5 + warpgroup) -- every thread has then read the previous tile's scales --, store
# them into the buffer, meet again and read them with shared loads at constant offsets.

def _col_scale_group(cfg, pingpong: bool) -> tuple:
    """``(G, R)``: the consumer threads sharing a tile's column scales and the scales each
    of them loads (``ceil(tile_n / G)``)."""
    G = 128 if pingpong else 128 * cfg.consumer_wgs
    return G, -(-cfg.tile_n // G)


def col_scale_layout(cfg, pingpong: bool):
    """The shared buffer of the tile's column scales: ``(tile_n, regions) : (1, tile_n)``
    over (column within the tile, the warpgroup owning it in ping-pong; one region
    otherwise) -> float offset.  Law: an injective map onto ``[0, cfg.col_scale_bytes / 4)``."""
    import cute_py as cute
    regions = cfg.consumer_wgs if pingpong else 1
    return cute.make_layout((cfg.tile_n, regions), (1, cfg.tile_n))


def _col_scale_index(cfg, pingpong: bool, col, region=0) -> str:
    """C text of the float offset of ``(col, region)`` in :func:`col_scale_layout`."""
    return scale_offset(col_scale_layout(cfg, pingpong), col, region)


def emit_col_scale_setup(kb, cfg, region: str, pingpong: bool) -> None:
    """Once per consumer thread: ``csb_``, the column-scale buffer of this thread's tiles
    (generic pointer ``region`` to the configuration's ``col_scale_bytes``, at
    :func:`col_scale_layout`'s ``(0, cw)`` in ping-pong)."""
    from .. import ir
    off = _col_scale_index(cfg, pingpong, 0, ir.var("cw", 0, cfg.consumer_wgs - 1)
                           if pingpong else 0)
    kb.decl("float* const", "csb_", f"reinterpret_cast<float*>({region})"
            + ("" if off == "0" else f" + {off}"), hint=False)


def emit_col_scale_load(kb, cfg, pingpong: bool) -> None:
    """At the tile's start: ``cs_pre_[j]``, the scale of the tile's column ``tid + j * G``
    (``G`` threads share the tile; zero past N or the tile)."""
    from .. import ir
    _, SB = scale_layouts("row")
    G, R = _col_scale_group(cfg, pingpong)
    c_ = ir.var("c", 0, _I32)
    kb.decl("float", f"cs_pre_[{R}]", hint=False)
    for j in range(R):
        with kb.scope():
            kb.decl("const int", "j", f"tid + {j * G}", hint=False)
            kb.decl("const int", "c", f"n_blk * {cfg.tile_n} + j", hint=False)
            kb.assign(f"cs_pre_[{j}]", f"j < {cfg.tile_n} && c < N ? "
                      f"__ldg(scale_b + {scale_offset(SB, c_, 0)}) : 0.0f")


def emit_col_scale_stage(kb, cfg, pingpong: bool) -> None:
    """Before the epilogue: the group's named barrier (the previous tile's reads done),
    ``cs_pre_`` into the buffer, the barrier again, and ``ncol_``, this thread's first
    column within the tile (the epilogue reads column ``ncol_ + n`` of the buffer:
    :func:`acc_expr`)."""
    from .. import ir
    G, R = _col_scale_group(cfg, pingpong)
    tn = cfg.tile_n
    bar = ("5u + (u32)cw" if pingpong else "5u", f"{G}u")
    kb.call("named_barrier_sync", *bar)
    for j in range(R):
        with kb.scope():
            kb.decl("const int", "j", f"tid + {j * G}", hint=False)
            with kb.if_(f"j < {tn}"):
                idx = _col_scale_index(cfg, pingpong, ir.var("j", 0, G * R - 1))
                kb.assign(f"csb_[{idx}]", f"cs_pre_[{j}]")
    kb.call("named_barrier_sync", *bar)
    kb.decl("const int", "ncol_", f"col0_ - n_blk * {tn}", hint=False)


def _emit_row_scales(kb, maps) -> None:
    """``rs_[i]``: the row-wise scale of each distinct row of the thread's values (zero past
    M), from ``scale_a``'s layout."""
    from .. import ir
    SA, _ = scale_layouts("row")
    rows, _ = _rows(maps)
    r_ = ir.var("r", 0, _I32)
    kb.decl("float", f"rs_[{len(rows)}]", hint=False)
    for i, m in enumerate(rows):
        with kb.scope():
            kb.decl("const int", "r", f"row0_ + {m}", hint=False)
            kb.assign(f"rs_[{i}]", f"r < M ? __ldg(scale_a + {scale_offset(SA, r_, 0)}) : 0.0f")


def acc_expr(cfg, maps, v: int, src: str) -> str:
    """The scaled product the epilogue tree reads for value ``v`` of the thread's accumulators
    ``src`` (``tot_`` promoted, else ``acc``): per tensor ``s_ * a`` (``s_``:
    :func:`emit_consumer_setup`); row-wise ``a * rs_[row] * csb_[ncol_ + n]`` (the thread's
    row scales and the tile's staged column scales: :func:`emit_epi_prelude`); block scaling
    ``a`` itself (its scales are applied in the promotion)."""
    a = _acc(maps, v, src)
    if cfg.scaling == "tensor":
        return f"s_ * {a}"
    if cfg.scaling == "row":
        from .. import ir
        _, ri = _rows(maps)
        col = ir.var("ncol_", 0, cfg.tile_n - 1) + maps.frag.n_val[v]
        return f"({a} * rs_[{ri[v]}] * csb_[{_col_scale_index(cfg, False, col)}])"
    return a


def emit_consumer_setup(kb, cfg) -> None:
    """Once per consumer thread, before its tile loop: the per-tensor scale ``s_ =
    scale_a[0] * scale_b[0]`` (the same for every tile: loaded in each tile's epilogue, its
    global latency stood between the tile's last MMA and its first store)."""
    if cfg.scaling == "tensor":
        kb.decl("const float", "s_", "__ldg(scale_a) * __ldg(scale_b)", hint=False)


def emit_epilogue(kb, cfg, maps, emit_origin=None) -> None:
    """The FP8 built-in epilogue: scale, add the bias, convert, predicated stores.
    ``emit_origin(kb)`` declares ``row0_`` / ``col0_`` (None when the promoting kernel declared
    them before its mainloop)."""
    f16, f32 = cfg.out_dtype == "f16", cfg.out_dtype == "f32"
    pack1 = "f32_to_f16_bits" if f16 else "f32_to_bf16_bits"
    pack2 = "pack_f16x2" if f16 else "pack_bf16x2"
    unpack = "f16_bits_to_f32" if f16 else "bf16_bits_to_f32"
    from .. import ir
    if emit_origin is not None:
        emit_origin(kb)
    l_off = d_offset(0, 0, ir.var("l_", 0, _I32))      # the tile's batch
    if f32:     # D (and the bias) are float32 arrays behind the kernel's u16 pointers
        kb.decl("float*", "Dl_", f"reinterpret_cast<float*>(D) + {l_off}", hint=False)
        kb.decl("const float*", "bias_", "reinterpret_cast<const float*>(bias)", hint=False)
    else:
        kb.decl("u16*", "Dl_", f"D + {l_off}", hint=False)
    row0, cc = ir.var("row0_", 0, _I32), ir.var("cc_", 0, _I32)
    src = "tot_" if promotes(cfg) else "acc"
    rows, ri = _rows(maps)
    if cfg.scaling == "row":
        _, SB = scale_layouts("row")
        _emit_row_scales(kb, maps)
    fr = maps.frag
    # values sharing a column pair share its column scales and bias values: loaded once per
    # column pair (the pairs visited column by column)
    pairs = sorted(range(0, fr.num_values, 2), key=lambda v: (fr.n_val[v], fr.m_val[v]))
    b_load = "__ldg(bias_ + {c})" if f32 else unpack + "(bias[{c}])"
    groups = {}
    for v in pairs:
        groups.setdefault(fr.n_val[v], []).append(v)
    if cfg.scaling == "row":
        kb.decl("float", f"cs_[{2 * ROW_SCALE_BATCH}]", hint=False)
    for gi, (no, vs) in enumerate(groups.items()):
        if cfg.scaling == "row" and gi % ROW_SCALE_BATCH == 0:
            # the column scales of the next ROW_SCALE_BATCH column pairs loaded together, all
            # in flight at once (one pair's loads between the stores exposed each latency)
            for j, nj in enumerate(list(groups)[gi:gi + ROW_SCALE_BATCH]):
                for h in (0, 1):
                    col = ir.var("col0_", 0, _I32) + nj + h
                    kb.assign(f"cs_[{2 * j + h}]", f"col0_ + {nj + h} < N ? __ldg(scale_b + "
                              f"{scale_offset(SB, col, 0)}) : 0.0f")
        with kb.scope():
            kb.decl("const int", "cc_", f"col0_ + {no}", hint=False)
            if cfg.scaling == "row":
                j = gi % ROW_SCALE_BATCH
                kb.decl("const float", "cs0_", f"cs_[{2 * j}]", hint=False)
                kb.decl("const float", "cs1_", f"cs_[{2 * j + 1}]", hint=False)
            kb.decl("const float", "b0_", f"bias != nullptr && cc_ < N ? "
                    f"{b_load.format(c='cc_')} : 0.0f", hint=False)
            kb.decl("const float", "b1_", f"bias != nullptr && cc_ + 1 < N ? "
                    f"{b_load.format(c='cc_ + 1')} : 0.0f", hint=False)
            for v in vs:
                mo = fr.m_val[v]
                a0, a1 = _acc(maps, v, src), _acc(maps, v + 1, src)
                with kb.if_(f"row0_ + {mo} < M"):
                    if cfg.scaling == "tensor":
                        x0, x1 = f"s_ * {a0}", f"s_ * {a1}"
                    elif cfg.scaling == "row":
                        x0, x1 = f"{a0} * rs_[{ri[v]}] * cs0_", f"{a1} * rs_[{ri[v]}] * cs1_"
                    else:
                        x0, x1 = a0, a1
                    kb.decl("const float", "x0", f"{x0} + b0_", hint=False)
                    kb.decl("const float", "x1", f"{x1} + b1_", hint=False)
                    kb.decl("float*" if f32 else "u16*", "dp",
                            f"Dl_ + {d_offset(row0 + mo, cc)}", hint=False)
                    if cfg.vec2:
                        with kb.if_("cc_ + 1 < N"):
                            if f32:
                                kb.assign("*reinterpret_cast<float2*>(dp)", "make_float2(x0, x1)")
                            else:
                                kb.assign("*reinterpret_cast<u32*>(dp)", f"{pack2}(x0, x1)")
                        with kb.else_("cc_ < N"):
                            kb.assign("dp[0]", "x0" if f32 else f"{pack1}(x0)")
                    else:
                        with kb.if_("cc_ < N"):
                            kb.assign("dp[0]", "x0" if f32 else f"{pack1}(x0)")
                        with kb.if_("cc_ + 1 < N"):
                            kb.assign("dp[1]", "x1" if f32 else f"{pack1}(x1)")


def scale_shapes(scaling: str, M: int, N: int, K: int) -> tuple:
    """The ``(scale_a, scale_b)`` shapes of a scaling mode for an ``M x N x K`` problem."""
    kb = -(-K // BLOCK_K)
    return {"tensor": ((), ()), "row": ((M, 1), (1, N)),
            "block": ((M, kb), (-(-N // BLOCK_K), kb))}[scaling]


def scaling_of(sa_shape, sb_shape, M: int, N: int, K: int) -> str | None:
    """The scaling mode whose scale shapes these are (a one-element scale of any rank counts
    as per-tensor), or None."""
    sa, sb = tuple(sa_shape), tuple(sb_shape)
    one = lambda s: all(x == 1 for x in s)     # noqa: E731
    if one(sa) and one(sb) and len(sa) <= 2 and len(sb) <= 2:
        return "tensor"
    for mode in ("row", "block"):
        if (sa, sb) == scale_shapes(mode, M, N, K):
            return mode
    return None


def check_scales(op, cfg, M, N, K, scale_a, scale_b, bias) -> tuple:
    """Checks the scale / bias metadata of an ``M x N x K`` FP8 problem against ``cfg.scaling``
    and returns the kernel's scale strides ``(ld_sa_m, ld_sa_k, ld_sb_n, ld_sb_k)``
    (elements).  ``LaunchError`` naming ``scale_a`` / ``scale_b`` / ``bias``."""
    from cute_py.errors import LaunchError
    want = scale_shapes(cfg.scaling, M, N, K)
    st = []
    for nm, X, shape in (("scale_a", scale_a, want[0]), ("scale_b", scale_b, want[1])):
        if X is None:
            raise LaunchError(op, nm, "is required (float32 device tensor)", expected=shape)
        if X.dtype != "float32":
            raise LaunchError(op, nm, "must be float32", expected="float32", actual=X.dtype)
        if cfg.scaling == "tensor":
            if any(x != 1 for x in X.shape):
                raise LaunchError(op, nm, "per-tensor scaling takes one element",
                                  expected=(), actual=X.shape)
            st += [0, 0]
            continue
        if tuple(X.shape) != shape:
            raise LaunchError(op, nm, f"has the wrong shape for {cfg.scaling}-wise scaling",
                              expected=shape, actual=X.shape)
        s0, s1 = X.strides
        st += [s0 if X.shape[0] > 1 else 0, s1 if X.shape[1] > 1 else 0]
    if cfg.scaling == "row":       # (M, 1): stride along M; (1, N): stride along N
        st = [st[0], 0, st[3], 0]
    if bias is not None:
        # an 8-bit D takes a 16- or 32-bit bias (added before the conversion)
        ok = ("bfloat16", "float16", "float32") if cfg.out_dtype in FP8_OUT else \
            OUT_ARRAY_DTYPES[cfg.out_dtype]
        if bias.dtype not in ok:
            raise LaunchError(op, "bias", "must have the output dtype (bfloat16, float16 or "
                              "float32 for an 8-bit D)", expected=ok[0], actual=bias.dtype)
        if tuple(bias.shape) != (N,) or bias.strides[-1] != 1:
            raise LaunchError(op, "bias", "must be a contiguous vector of N elements",
                              expected=(N,), actual=(bias.shape, bias.strides))
    return tuple(st)
