"""The address maps of an SM80 GEMM's operands, as layouts lowered to IR.

- :func:`gmem_layout`: operand A (B) in global memory as a layout over ``(m, k)`` (``(n, k)``)
  with the runtime extents and leading dimension as symbols: ``(M, K):(lda, 1)`` K-major,
  ``(M, K):(1, lda)`` M-major (``N`` / ``ldb`` for B).  Element offsets from the operand's
  (batch-adjusted) pointer.
- :func:`output_layout`: C / D over ``(m, n)``, ``(M, N):(ldc, 1)`` / ``(M, N):(ldd, 1)``.
- :func:`batch_layout`: a matrix over the batch index, ``(L):(batch_x)``.
- :func:`accumulator_tile_layout`: the origin of MMA tile ``mi`` of warp ``warp_m`` in the
  CTA tile, ``(WARPS_M, MI):(WM, 16)`` (``(WARPS_N, NI):(WN, 8)`` along N).
- :func:`stage_layout`: the stages of an operand in shared memory, ``(stages):(stage_bytes)``,
  byte offsets from ``sA`` / ``sB`` (as the Hopper mainloop's ``Mainloop.stage_layout``).
- :func:`iteration_layout`: a thread's copies of one k-tile, ``(iterations):(step)`` with the
  step a symbol (the kernel's ``ac_step`` / ``bc_step``, itself ``gmem_layout`` at ``(DR, 0)``
  or ``(0, DR)``).

:func:`gmem_offset`, :func:`stage_address` and :func:`iteration_offset` lower them at IR
coordinates through :func:`~...lower.layout_apply`, with the symbols bound to the kernel's
variables (:func:`symbols`).

Law (tested): ``ir.evaluate`` of each lowered map equals the layout object's own value at
every coordinate (``tests/backend/test_sm80_address.py``).
"""

from __future__ import annotations

from ... import ir, lower

__all__ = ["accumulator_tile_layout", "layout_terms", "batch_layout", "batch_offset",
           "gmem_layout", "gmem_terms", "output_layout", "output_offset", "stage_layout",
           "iteration_layout", "symbols", "gmem_offset", "stage_address", "iteration_offset",
           "smem_var"]

_I32 = (1 << 31) - 1
_I64 = (-(1 << 63), (1 << 63) - 1)
_U32 = (1 << 32) - 1


def _names(op: str) -> tuple[str, str]:
    return ("M", "lda") if op == "A" else ("N", "ldb")


def gmem_layout(op: str, major: str):
    """Operand ``op`` ("A" / "B") in global memory over ``(row, k)``: ``(R, K):(ld, 1)`` when
    ``major == "K"``, else ``(R, K):(1, ld)`` (R = M / N, ld = lda / ldb, symbols)."""
    import cute_py as cute
    ext, ld = _names(op)
    R, K, LD = cute.symbols(f"{ext} K {ld}")
    return cute.make_layout((R, K), (LD, 1) if major == "K" else (1, LD))


def output_layout(name: str):
    """C or D (``name``) in global memory over ``(m, n)``: ``(M, N):(ldc, 1)`` /
    ``(M, N):(ldd, 1)`` (row-major, symbols)."""
    import cute_py as cute
    M, N, ld = cute.symbols(f"M N ld{name.lower()}")
    return cute.make_layout((M, N), (ld, 1))


def output_offset(name: str, m, n) -> ir.Node:
    """``output_layout(name)(m, n)`` as IR (``ldc`` / ``ldd`` the kernel's ``long long``)."""
    ld = f"ld{name.lower()}"
    return lower.layout_apply(output_layout(name), (m, n), {ld: ir.var(ld, *_I64)})


def batch_layout(name: str):
    """Matrix ``name`` (A, B, C, D) over the batch index: ``(L):(batch_<name>)``."""
    import cute_py as cute
    L, st = cute.symbols(f"L batch_{name.lower()}")
    return cute.make_layout(L, st)


def batch_offset(name: str, l) -> ir.Node:
    """``batch_layout(name)(l)`` as IR (``batch_x`` the kernel's ``long long``)."""
    st = f"batch_{name.lower()}"
    return lower.layout_apply(batch_layout(name), l, {st: ir.var(st, *_I64)})


def accumulator_tile_layout(warps: int, iters: int, warp_extent: int, atom_extent: int):
    """Where a warp's MMA tile starts in the CTA tile along M (or N): ``(warps, iters) :
    (warp_extent, atom_extent)`` over ``(warp_m, mi)`` (``(warp_n, ni)``)."""
    import cute_py as cute
    return cute.make_layout((warps, iters), (warp_extent, atom_extent))


def layout_terms(layout, coord) -> list:
    """The offsets of ``layout``'s top-level modes at the congruent ``coord`` (IR, in mode
    order, zero terms kept out): their sum is ``layout(coord)``; a kernel that adds them one
    by one keeps the grouping (and the SASS) of a hand-written sum."""
    terms = [lower.layout_apply(layout[i], c) for i, c in enumerate(coord)]
    return [t for t in terms if not (t.is_const and t.value == 0)]


def stage_layout(stages: int, stage_bytes: int):
    """``(stages):(stage_bytes)``: byte offset of each stage of an operand's smem buffer."""
    import cute_py as cute
    return cute.make_layout(stages, stage_bytes)


def iteration_layout(op: str, iterations: int):
    """``(iterations):(xc_step)``: the gmem offset of a thread's copy ``i`` from its copy 0
    (``xc_step`` = the kernel's variable holding ``gmem_layout`` at one iteration's step)."""
    import cute_py as cute
    step = cute.symbols(f"{op.lower()}c_step")
    return cute.make_layout(iterations, step)


def symbols(op: str) -> dict:
    """The kernel's variables for the layouts' symbols (``M``/``N``/``K`` int parameters,
    ``lda``/``ldb`` and the copy step ``long long``)."""
    ext, ld = _names(op)
    return {ext: ir.var(ext, 1, _I32), "K": ir.var("K", 1, _I32), ld: ir.var(ld, *_I64),
            f"{op.lower()}c_step": ir.var(f"{op.lower()}c_step", *_I64)}


def gmem_offset(op: str, major: str, row, k) -> ir.Node:
    """``gmem_layout(op, major)(row, k)`` as IR (``row``, ``k``: IR nodes or ints)."""
    return lower.layout_apply(gmem_layout(op, major), (row, k), symbols(op))


def gmem_terms(op: str, major: str, row, k) -> list:
    """The offsets of ``gmem_layout(op, major)``'s two modes at ``row`` and ``k`` (IR, zero
    terms dropped): their sum is :func:`gmem_offset`.  The kernel adds them to the pointer one
    by one (``A + (row term) + (k term)``), the grouping whose SASS the mainloop keeps."""
    lay = gmem_layout(op, major)
    terms = [lower.layout_apply(lay[i], c, symbols(op)) for i, c in enumerate((row, k))]
    return [t for t in terms if not (t.is_const and t.value == 0)]


def iteration_offset(op: str, iterations: int, i) -> ir.Node:
    """``iteration_layout(op, iterations)(i)`` as IR."""
    return lower.layout_apply(iteration_layout(op, iterations), i, symbols(op))


def smem_var(name: str) -> ir.Node:
    """A u32 shared-memory address held in the C variable ``name``."""
    return ir.var(name, 0, _U32)


def stage_address(base: str, stages: int, stage_bytes: int, stage) -> ir.Node:
    """The u32 shared address of stage ``stage`` (IR node or int) of the buffer at ``base``:
    ``base + stage_layout(stages, stage_bytes)(stage)``."""
    return smem_var(base) + lower.layout_apply(stage_layout(stages, stage_bytes), stage)
