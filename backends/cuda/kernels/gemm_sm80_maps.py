"""Index maps of the SM80 GEMM: shared-memory layouts, thread maps, fragment maps.

Every map the generated kernel uses is defined here once, as a small value that evaluates
numerically (for tests and the CPU shadow of the data flow) and renders to CUDA C:

* :class:`SmemLayout` -- one stage of an operand tile in shared memory, CuTe's
  ``composition(Swizzle<B,M,S>, tile_to_shape(atom, (R, BK)))`` with the SM80 atoms
  ``(8,W):(W,1)`` (K-major) or ``(W,8):(1,W)`` (MN-major), W = 128 bytes of elements (or less).
* :class:`CopyMap` -- the gmem->smem tiled copy: thread ``t``, iteration ``i`` -> the tile
  coordinate of a chunk of ``vec`` contiguous elements (a row-major thread layout
  ``(T/cpl, cpl)`` with values ``(1, vec)`` along the contiguous mode, as
  ``make_tiled_copy(atom, thr_layout, val_layout)``).
* :func:`ldmatrix_coord` -- the (mn, k) row address each lane hands to ``ldmatrix`` (x4, or
  x2 for the last odd n-tile) for operands A and B, K-major (non-transposed) and MN-major
  (``.trans``); :func:`fragment_coord` -- the element each lane holds in the mma.sync
  fragments (the PTX ISA's fragment tables); :func:`accumulator_coord` -- the C fragment.
* :func:`decompose_xor_add` -- strength reduction of a swizzled address: the offset of fragment
  ``(kb, i)`` equals ``(base ^ x) + a`` for compile-time ``x`` and ``a``, checked for every
  lane and warp; the kernel then costs one XOR and one add per ``ldmatrix``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DTYPES", "SmemLayout", "CopyMap", "ldmatrix_coord", "fragment_coord",
           "accumulator_coord", "accumulator_c_exprs", "decompose_xor_add", "log2i"]

#: operand type -> (element bytes, mma k, C storage type)
DTYPES = {
    "f16": (2, 16, "unsigned short"),
    "bf16": (2, 16, "unsigned short"),
    "tf32": (4, 8, "float"),
}


def log2i(x: int) -> int:
    """log2 of a power of two (raises ValueError otherwise)."""
    if x <= 0 or x & (x - 1):
        raise ValueError(f"{x} is not a power of two")
    return x.bit_length() - 1


@dataclass(frozen=True)
class SmemLayout:
    """One stage of an operand tile ``(R, BK)`` (R = BM for A, BN for B) in shared memory.

    ``major`` is ``"K"`` (k contiguous) or ``"MN"``.  Law: ``self(r, k)`` equals CuTe's
    ``composition(Swizzle<B,M,S>, tile_to_shape(atom, (R, BK)))(r, k)`` with
    ``atom = (8,W):(W,1)`` (K-major) or ``(W,8):(1,W)`` (MN-major), where
    ``W = min(extent of the contiguous mode, 128 bytes)``, ``M = log2(16 / elem_bytes)``,
    ``B = log2(W * elem_bytes / 16)``, ``S = 3``: a bijection of the tile onto
    ``[0, R*BK)`` in which the eight 16-byte rows of every ``ldmatrix`` land in distinct banks.
    """

    R: int
    BK: int
    major: str
    elem_bytes: int

    @property
    def W(self) -> int:
        contiguous = self.BK if self.major == "K" else self.R
        return min(contiguous, 128 // self.elem_bytes)

    @property
    def swizzle(self) -> tuple[int, int, int]:
        M = log2i(16 // self.elem_bytes)
        B = log2i(max(1, self.W * self.elem_bytes // 16))
        return (B, M, 3)

    @property
    def size(self) -> int:
        return self.R * self.BK

    @property
    def shape_stride(self):
        """The unswizzled tile_to_shape layout as nested (shape, stride)."""
        W, R, BK = self.W, self.R, self.BK
        if self.major == "K":
            return (((8, R // 8), (W, BK // W)), ((W, 8 * W), (1, R * W)))
        return (((W, R // W), (8, BK // 8)), ((1, 8 * W), (W, 8 * R)))

    def linear(self, r: int, k: int) -> int:
        W, R = self.W, self.R
        if self.major == "K":
            return r * W + (k % W) + (k // W) * (R * W)
        return (r % W) + (r // W) * (8 * W) + (k % 8) * W + (k // 8) * (8 * R)

    def swz(self, o: int) -> int:
        B, M, S = self.swizzle
        mask = ((1 << B) - 1) << (M + S)
        return o ^ ((o & mask) >> S)

    def __call__(self, r: int, k: int) -> int:
        return self.swz(self.linear(r, k))

    def cute(self):
        """The same layout as a cute_py object: ``composition(Swizzle, tile_to_shape(atom, .))``."""
        from cute_py.algebra import composition, tile_to_shape
        from cute_py.layout import make_layout
        from cute_py.swizzle import Swizzle
        B, M, S = self.swizzle
        W = self.W
        atom = (make_layout((8, W), (W, 1)) if self.major == "K"
                else make_layout((W, 8), (1, W)))
        return composition(Swizzle(B, M, S), tile_to_shape(atom, (self.R, self.BK)))

    def lowered(self):
        """``self.cute()`` applied to coordinates ``(r, k)`` as a backend IR node, or None when
        the algebra / IR modules are unavailable."""
        try:
            from cute_py.backends.cuda import ir, lower
            from cute_py.composed import get_swizzle_portion, get_nonswizzle_portion
            L = self.cute()
            r = ir.var("r", 0, self.R - 1)
            k = ir.var("k", 0, self.BK - 1)
            return lower.swizzle_apply(lower.layout_apply(get_nonswizzle_portion(L), (r, k)),
                                       get_swizzle_portion(L))
        except ImportError:
            return None

    def c_function(self, name: str) -> str:
        """A CUDA ``__device__`` function ``int name(int r, int k)`` computing ``self(r, k)``.

        The body is the algebra's layout lowered through the backend IR (``lower.layout_apply``
        + ``lower.swizzle_apply``, rendered by ``render.render_expr``); without those modules, the
        same formula written by hand."""
        W, R = self.W, self.R
        B, M, S = self.swizzle
        (shp, std) = self.shape_stride
        doc = (f"// Sw<{B},{M},{S}> o ({shp[0]},{shp[1]}):({std[0]},{std[1]})".replace(" ", ""))
        node = self.lowered()
        if node is not None:
            from cute_py.backends.cuda.render import render_expr
            return (f"{doc}  [lowered from cute_py.algebra]\n"
                    f"CUTE_PY_DEVICE int {name}(int r, int k) {{\n"
                    f"  return {render_expr(node)};\n}}\n")
        mask = ((1 << B) - 1) << M
        if self.major == "K":
            lin = f"r * {W} + (k & {W - 1}) + (k >> {log2i(W)}) * {R * W}"
        else:
            lin = (f"(r & {W - 1}) + (r >> {log2i(W)}) * {8 * W} + (k & 7) * {W} "
                   f"+ (k >> 3) * {8 * R}")
        return (f"{doc}\nCUTE_PY_DEVICE int {name}(int r, int k) {{\n"
                f"  const int o = {lin};\n"
                f"  return o ^ ((o >> {S}) & {mask});\n}}\n")


@dataclass(frozen=True)
class CopyMap:
    """Thread map of the gmem->smem copy of one operand tile ``(R, BK)``.

    Chunks of ``vec`` elements run along the contiguous mode (``BK`` when ``major == "K"``,
    ``R`` otherwise); chunk ``c = t + i*T`` (thread ``t``, iteration ``i``) sits at strided
    index ``c // cpl`` and contiguous index ``(c % cpl) * vec``, ``cpl`` chunks per line.
    Law: over all (t, i) the chunks cover the tile exactly once.
    """

    R: int
    BK: int
    major: str
    vec: int
    threads: int

    @property
    def contiguous(self) -> int:
        return self.BK if self.major == "K" else self.R

    @property
    def cpl(self) -> int:
        return self.contiguous // self.vec

    @property
    def iterations(self) -> int:
        return (self.R * self.BK // self.vec) // self.threads

    def valid(self) -> bool:
        return (self.contiguous % self.vec == 0
                and (self.R * self.BK // self.vec) % self.threads == 0
                and self.iterations >= 1)

    def coord(self, t: int, i: int) -> tuple[int, int]:
        """(mn, k) tile coordinate of the first element of thread t's chunk i."""
        c = t + i * self.threads
        s, cc = c // self.cpl, (c % self.cpl) * self.vec
        return (s, cc) if self.major == "K" else (cc, s)

    def c_coord(self, t: str, i: int) -> tuple[str, str]:
        c = f"({t} + {i * self.threads})"
        s = f"({c} / {self.cpl})"
        cc = f"(({c} % {self.cpl}) * {self.vec})"
        return (s, cc) if self.major == "K" else (cc, s)


def ldmatrix_coord(operand: str, major: str, elem_bytes: int, lane: int) -> tuple[int, int]:
    """(mn, k) of the 16-byte row whose address ``lane`` gives to ``ldmatrix`` (x4).

    Relative to the fragment's origin (mn tile of 16, k block of one mma).  The K-major forms
    are non-transposed loads (also for fp32/tf32: an 8x8 b16 matrix is 8 rows x 4 floats); the
    MN-major forms are ``.trans`` loads of 16-bit data.  Register j of the x4 load holds
    matrix j: for A ``(m0-7,k0-7) (m8-15,k0-7) (m0-7,k8-15) (m8-15,k8-15)`` (k halves are 4 floats
    for tf32) = the a0..a3 registers of m16n8k16; for B ``(n0-7,k-lo) (n0-7,k-hi) (n8-15,k-lo)
    (n8-15,k-hi)`` = b0,b1 of n-tile 2i and b0,b1 of n-tile 2i+1.
    """
    ch = 16 // elem_bytes  # elements per 16-byte row
    if operand == "A":
        if major == "K":
            return (lane % 16, (lane // 16) * ch)
        return (8 * ((lane // 8) % 2), lane % 8 + 8 * (lane // 16))
    if major == "K":
        return (lane % 8 + 8 * (lane // 16), ((lane // 8) % 2) * ch)
    return (8 * (lane // 16), lane % 8 + 8 * ((lane // 8) % 2))


def fragment_coord(operand: str, mma_k: int, lane: int, reg: int, half: int) -> tuple[int, int]:
    """(mn, k) of element ``half`` (0/1; always 0 for tf32) of register ``reg`` of ``lane``.

    PTX ISA fragment tables: m16n8k16 f16/bf16 A ``a{2j+h}``: row ``g + 8*(j%2)``, col
    ``2t + h + 8*(j//2)``; B ``b{2j+h}``: k ``2t + h + 8*j``, n ``g``.  m16n8k8 tf32 A ``a_j``:
    row ``g + 8*(j%2)``, col ``t + 4*(j//2)``; B ``b_j``: k ``t + 4*j``, n ``g``.
    (g = lane // 4, t = lane % 4.)
    """
    g, t = lane // 4, lane % 4
    if mma_k == 16:
        if operand == "A":
            return (g + 8 * (reg % 2), 2 * t + half + 8 * (reg // 2))
        return (g, 2 * t + half + 8 * reg)
    if operand == "A":
        return (g + 8 * (reg % 2), t + 4 * (reg // 2))
    return (g, t + 4 * reg)


def accumulator_coord(lane: int, idx: int) -> tuple[int, int]:
    """(m, n) of accumulator ``c{idx}`` of an m16n8 tile: ``(g + 8*(idx//2), 2t + idx%2)``."""
    g, t = lane // 4, lane % 4
    return (g + 8 * (idx // 2), 2 * t + idx % 2)


def accumulator_c_exprs(dtype: str):
    """C expressions (in ``lane``) of the (m, n) of accumulator pairs ``c{2h}, c{2h+1}``, h = 0, 1.

    Lowered from the MMA atom's ``layout_C`` (``(thr, val) -> m + 16 n``) through the backend IR:
    ``m = layout_C(lane, 2h) % 16``, ``n = layout_C(lane, 2h) / 16``; checks that ``c{2h+1}`` is
    the next column.  Without the algebra / IR modules, the PTX table written by hand.
    Law: ``eval(expr, lane=l) == accumulator_coord(l, 2h)`` for every lane.
    """
    try:
        from cute_py.atom import mma_traits_sm80 as t
        from cute_py.backends.cuda import ir, lower
        from cute_py.backends.cuda.render import render_expr
    except ImportError:
        return [("(lane >> 2)", "((lane & 3) * 2)"), ("((lane >> 2) + 8)", "((lane & 3) * 2)")]
    atom = (t.SM80_16x8x8_F32TF32TF32F32_TN() if dtype == "tf32"
            else t.SM80_16x8x16_F32F16F16F32_TN())
    L = atom.layout_C
    for lane in range(32):
        for h in range(2):
            i0, i1 = L((lane, 2 * h)), L((lane, 2 * h + 1))
            if (i1 % 16, i1 // 16) != (i0 % 16, i0 // 16 + 1):
                raise ValueError("accumulator pairs are not adjacent columns")
    lane = ir.var("lane", 0, 31)
    out = []
    for h in range(2):
        idx = lower.layout_apply(L, (lane, 2 * h))
        out.append((f"({render_expr(ir.mod(idx, 16))})", f"({render_expr(ir.floordiv(idx, 16))})"))
    return out


def decompose_xor_add(f, lanes, split_bit: int):
    """Find compile-time ``x < 2**split_bit`` and ``a`` with ``f(l) == (f0(l) ^ x) + a``.

    ``f`` maps a lane key to ``(offset, base_offset)``.  Returns ``(x, a)`` or ``None`` when no
    such pair holds for every key in ``lanes``.
    """
    lo = (1 << split_bit) - 1
    xs, adds = set(), set()
    for key in lanes:
        d, b = f(key)
        xs.add((d & lo) ^ (b & lo))
        adds.add((d & ~lo) - (b & ~lo))
        if len(xs) > 1 or len(adds) > 1:
            return None
    return xs.pop(), adds.pop()
