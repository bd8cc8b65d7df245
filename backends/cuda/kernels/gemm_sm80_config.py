"""The SM80 GEMM configuration: what fixes one generated kernel, its algebra objects, its name.

:class:`GemmSm80Config` (frozen, hashable: the kernel-cache key) and the objects the kernel is
lowered from (``smem_layout``, ``gmem_copy``, ``tiled_mma``, ``smem_read_copy``: components of
``backends/cuda/arch/sm80``), :func:`kernel_name`, and the fused-epilogue attachment
(:func:`with_epilogue`, :func:`epilogue_of`).  The code generator is :mod:`.gemm_sm80`, the
shipped configurations and the heuristic are :mod:`.gemm_sm80_configs`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from cute_py.errors import AtomError

from ..arch.sm80 import copy as sm80_copy
from ..arch.sm80 import ldmatrix as sm80_ldmatrix
from ..arch.sm80 import mma as sm80_mma
from ..arch.sm80 import smem as sm80_smem
from .gemm_sm80_maps import DTYPES

__all__ = ["GemmSm80Config", "MAINLOOPS", "kernel_name", "with_epilogue", "epilogue_of"]

MAINLOOPS = ("singlestage", "pipelined", "multistage")
_OUT_TYPES = {"f16": ("unsigned short", 2), "bf16": ("unsigned short", 2), "f32": ("float", 4)}
_MMA = sm80_mma.WRAPPERS


@dataclass(frozen=True)
class GemmSm80Config:
    """Everything that fixes one generated kernel (frozen, hashable: the kernel-cache key).

    dtype       operand type: ``"f16"``, ``"bf16"`` or ``"tf32"`` (fp32 storage, tf32 math)
    out_dtype   C and D: ``"f16"``, ``"bf16"`` or ``"f32"``
    a_major     ``"K"`` (A row-major, k contiguous) or ``"M"`` (column-major)
    b_major     ``"K"`` (B column-major, k contiguous) or ``"N"`` (row-major)
    tile        threadblock tile ``(BM, BN, BK)``
    warps       warp layout ``(WARPS_M, WARPS_N)``; warp tile ``(BM/WARPS_M, BN/WARPS_N)``
    stages      shared-memory stages (1 single-stage, 2 pipelined, >= 3 multistage; multistage
                also accepts 2)
    mainloop    ``"singlestage"``, ``"pipelined"`` or ``"multistage"``
    vec_a/vec_b elements per global access of A / B (16 bytes when aligned; 1 = scalar)
    realign_a/realign_b  A's / B's copies are 16-byte vectors read from rows aligned only to
                their 16-bit element (odd pitch, odd offset): each reads the two aligned
                16-byte vectors holding it and the shared store shifts it into place
                (register-staged, ``ld_chunk_realign`` / ``st_chunk_realign``); needs
                ``vec * 2 == 16`` and a 16-bit dtype
    vec_c       elements per epilogue store (2 or 1)
    raster      CTA rasterization: tile-rows per group (L2 reuse)
    min_blocks  ``__launch_bounds__``' CTAs per SM (2 caps registers at 65536 / (2 * threads))
    epi         optional fused epilogue: an ``Sm80EpilogueConfig`` (or an SM90
                ``EpilogueConfig``) whose fragment is ``mma_sm80_fragment(*warps, *warp_tile)``
                and whose tile is ``(BM, BN)`` (:func:`with_epilogue` builds one); the kernel
                then runs its hooks (``backends/cuda/epilogue/sm80.py``) instead of the plain
                ``alpha * acc + beta * C`` epilogue, in the mainloop's (drained) smem
    """

    dtype: str = "f16"
    out_dtype: str = "f16"
    a_major: str = "K"
    b_major: str = "K"
    tile: tuple = (128, 128, 32)
    warps: tuple = (2, 2)
    stages: int = 4
    mainloop: str = "multistage"
    vec_a: int = 8
    vec_b: int = 8
    vec_c: int = 2
    raster: int = 8
    epi: object = None
    min_blocks: int = 1
    swizzle_a: object = "default"
    swizzle_b: object = "default"
    copy_a: object = None
    copy_b: object = None
    realign_a: bool = False
    realign_b: bool = False

    # ------------------------------------------------------------------ derived sizes
    @property
    def elem_bytes(self) -> int:
        return DTYPES[self.dtype][0]

    @property
    def mma_k(self) -> int:
        return DTYPES[self.dtype][1]

    @property
    def threads(self) -> int:
        return 32 * self.warps[0] * self.warps[1]

    @property
    def warp_tile(self) -> tuple[int, int]:
        return (self.tile[0] // self.warps[0], self.tile[1] // self.warps[1])

    @property
    def mma_iters(self) -> tuple[int, int, int]:
        """(MI, NI, KB): m16 tiles and n8 tiles per warp, k blocks per k-tile."""
        WM, WN = self.warp_tile
        return (WM // 16, WN // 8, self.tile[2] // self.mma_k)

    # ------------------------------------------------------------------ algebra objects
    def major(self, operand: str) -> str:
        """``"K"`` or ``"MN"``: the operand's contiguous mode."""
        return "K" if (self.a_major if operand == "A" else self.b_major) == "K" else "MN"

    def rows(self, operand: str) -> int:
        """R of the operand tile ``(R, BK)``: BM for A, BN for B."""
        return self.tile[0] if operand == "A" else self.tile[1]

    def vec(self, operand: str) -> int:
        return self.vec_a if operand == "A" else self.vec_b

    def realign(self, operand: str) -> bool:
        return self.realign_a if operand == "A" else self.realign_b

    def smem_layout(self, operand: str):
        """One stage of the operand in smem: ``Swizzle o tile_to_shape(atom, (R, BK))``."""
        return _smem_layout(self.rows(operand), self.tile[2], self.major(operand),
                            self.elem_bytes, self.swizzle(operand))

    def swizzle(self, operand: str):
        """``"default"`` (the SM80 swizzle), ``None`` (none) or ``(B, M, S)``."""
        return self.swizzle_a if operand == "A" else self.swizzle_b

    def copy_layouts(self, operand: str):
        """``None`` (the row-major thread layout) or ``(layout_tv shape, layout_tv stride,
        tile)`` of the gmem->smem tiled copy over ``(r, k)``."""
        return self.copy_a if operand == "A" else self.copy_b

    def gmem_copy(self, operand: str):
        """The gmem->smem TiledCopy of the operand (``cp.async`` in the multistage mainloop)."""
        if self.copy_layouts(operand) is not None:
            return _custom_copy(self.copy_layouts(operand), self.elem_bytes,
                                self.mainloop == "multistage")
        return _gmem_copy(self.rows(operand), self.tile[2], self.major(operand),
                          self.vec(operand), self.threads, self.elem_bytes,
                          self.mainloop == "multistage" and not self.realign(operand))

    def copy_ok(self, operand: str) -> bool:
        """Whether the generator's row-major tiled copy of ``vec`` values splits the tile."""
        R, BK = self.rows(operand), self.tile[2]
        if self.copy_layouts(operand) is not None:
            tc = self.gmem_copy(operand)
            return tc.num_threads == self.threads and (R * BK) % (self.threads * self.vec(operand)) == 0
        contiguous = BK if self.major(operand) == "K" else R
        v = self.vec(operand)
        return (contiguous % v == 0 and self.threads % (contiguous // v) == 0
                and (R * BK) % (self.threads * v) == 0)

    @property
    def tiled_mma(self):
        """The TiledMMA: the atom over ``warps``, each warp a contiguous warp tile."""
        return _tiled_mma(self.dtype, self.warps, self.tile[:2])

    def smem_read_copy(self, operand: str):
        """The smem->register TiledCopy (``make_tiled_copy_A/B`` of ldmatrix or 32-bit loads)."""
        return _smem_read_copy(self.dtype, self.warps, self.tile[:2], operand,
                               self.major(operand), self.elem_bytes)

    @property
    def smem_bytes(self) -> int:
        BM, BN, BK = self.tile
        return self.stages * (BM + BN) * BK * self.elem_bytes

    @property
    def flops_per_cta_tile(self) -> int:
        BM, BN, BK = self.tile
        return 2 * BM * BN * BK

    def check(self) -> "GemmSm80Config":
        """Raise :class:`AtomError` naming the field when the configuration cannot be built."""
        op = "GemmSm80Config"
        if self.dtype not in DTYPES:
            raise AtomError(op, "dtype", "is not supported", expected=sorted(DTYPES),
                            actual=self.dtype)
        if self.out_dtype not in _OUT_TYPES:
            raise AtomError(op, "out_dtype", "is not supported", expected=sorted(_OUT_TYPES),
                            actual=self.out_dtype)
        if self.a_major not in ("K", "M"):
            raise AtomError(op, "a_major", "must be 'K' or 'M'", actual=self.a_major)
        if self.b_major not in ("K", "N"):
            raise AtomError(op, "b_major", "must be 'K' or 'N'", actual=self.b_major)
        if self.mainloop not in MAINLOOPS:
            raise AtomError(op, "mainloop", "is not one of the mainloops",
                            expected=MAINLOOPS, actual=self.mainloop)
        BM, BN, BK = self.tile
        WM, WN = self.warp_tile
        if WM * self.warps[0] != BM or WN * self.warps[1] != BN or WM % 16 or WN % 16:
            raise AtomError(op, "warps", "must split the tile into warp tiles of multiples of "
                            "16x16", expected=f"divisors of {(BM, BN)}", actual=self.warps)
        if BK % self.mma_k or BK < 2 * self.mma_k and self.mainloop == "pipelined":
            raise AtomError(op, "tile", "BK must be a multiple of the mma k (and hold >= 2 k "
                            "blocks for the pipelined mainloop)", actual=self.tile)
        if any(x & (x - 1) for x in (BM, BN, BK)) or BK < 16 or BM < 16 or BN < 16:
            raise AtomError(op, "tile", "extents must be powers of two >= 16", actual=self.tile)
        want = {"singlestage": (1, 1), "pipelined": (2, 2), "multistage": (2, 8)}[self.mainloop]
        if not want[0] <= self.stages <= want[1]:
            raise AtomError(op, "stages", f"does not fit mainloop {self.mainloop!r}",
                            expected=f"{want[0]}..{want[1]}", actual=self.stages)
        if self.dtype == "tf32" and self.out_dtype != "f32":
            raise AtomError(op, "out_dtype", "tf32 GEMMs write f32", actual=self.out_dtype)
        eb = self.elem_bytes
        for name, vec in (("vec_a", self.vec_a), ("vec_b", self.vec_b)):
            if vec not in (1, 2, 4, 8) or vec * eb > 16:
                raise AtomError(op, name, "must be a power of two of at most 16 bytes",
                                actual=vec)
        for name, on, vec in (("realign_a", self.realign_a, self.vec_a),
                              ("realign_b", self.realign_b, self.vec_b)):
            if not isinstance(on, bool):
                raise AtomError(op, name, "must be a bool", actual=on)
            if on and (eb != 2 or vec * eb != 16):
                raise AtomError(op, name, "realigned copies are 16-byte vectors of a 16-bit "
                                "dtype", expected="vec * 2 == 16", actual=(self.dtype, vec))
        for operand in "AB":
            if not self.copy_ok(operand):
                raise AtomError(op, "tile", f"operand {operand}'s tile does not split evenly "
                                "over the threads", actual=(self.tile, self.threads))
        if self.vec_c not in (1, 2):
            raise AtomError(op, "vec_c", "must be 1 or 2", actual=self.vec_c)
        if self.smem_bytes > 227 * 1024:
            raise AtomError(op, "stages", "need more shared memory than a block can have",
                            expected="<= 232448 bytes", actual=self.smem_bytes)
        if self.min_blocks not in (1, 2, 3, 4):
            raise AtomError(op, "min_blocks", "must be 1..4", actual=self.min_blocks)
        if self.epi is not None:
            _check_epi(self)
        if (self.swizzle_a, self.swizzle_b, self.copy_a, self.copy_b) != ("default", "default",
                                                                          None, None):
            _check_composition(self)
        return self

    @property
    def launch_smem_bytes(self) -> int:
        """Dynamic smem of a launch: the mainloop's stages, or the fused epilogue's buffers
        where they are larger (the epilogue reuses the drained mainloop smem)."""
        if self.epi is None:
            return self.smem_bytes
        return max(self.smem_bytes, epilogue_of(self).smem_bytes)

    def with_alignment(self, vec_a: int, vec_b: int, vec_c: int) -> "GemmSm80Config":
        return replace(self, vec_a=vec_a, vec_b=vec_b, vec_c=vec_c)


@lru_cache(maxsize=None)
def _smem_layout(R, BK, major, eb, swizzle="default"):
    return sm80_smem.smem_layout(R, BK, major, eb, swizzle)


@lru_cache(maxsize=None)
def _custom_copy(key, eb, asynchronous):
    """A TiledCopy from its stored TV form ``(layout_tv shape, layout_tv stride, tile)``
    (C++ ``make_tiled_copy_impl``), with the copy atom of its vector."""
    from cute_py.atom.copy_atom import make_copy_atom
    from cute_py.atom.tiled_copy import make_tiled_copy_impl
    from cute_py.layout import make_layout, size
    shape, stride, tile = key
    tv = make_layout(shape, stride)
    vb = size(tv, 1) * eb
    op = sm80_copy.copy_op(vb, asynchronous and vb >= 4)
    return make_tiled_copy_impl(make_copy_atom(op, {2: "float16", 4: "float32"}[eb]), tv,
                                tuple(make_layout(x) for x in tile))


@lru_cache(maxsize=None)
def _gmem_copy(R, BK, major, vec, threads, eb, asynchronous):
    return sm80_copy.gmem_tiled_copy(R, BK, major, vec, threads, eb, asynchronous)


@lru_cache(maxsize=None)
def _tiled_mma(dtype, warps, tile_mn):
    return sm80_mma.tiled_mma(dtype, tuple(warps), tuple(tile_mn))


@lru_cache(maxsize=None)
def _smem_read_copy(dtype, warps, tile_mn, operand, major, eb):
    return sm80_ldmatrix.ldmatrix_copy(_tiled_mma(dtype, warps, tile_mn), operand, major, eb)


def _check_composition(cfg) -> None:
    """The hardware rules of a non-default composition (custom swizzles / copies)."""
    from ..arch.sm80 import copy as c
    for op in "AB":
        R, BK = cfg.rows(op), cfg.tile[2]
        L = cfg.smem_layout(op)
        name = f"copy_{op}"
        if cfg.vec(op) != cfg.gmem_copy(op).num_values:
            raise AtomError("GemmSm80Config", f"vec_{op.lower()}", "must be the copy's vector",
                            expected=cfg.gmem_copy(op).num_values, actual=cfg.vec(op))
        c.check_copy(cfg.gmem_copy(op), L, R, BK, cfg.major(op), cfg.elem_bytes, name,
                     asynchronous=cfg.mainloop == "multistage"
                     and cfg.vec(op) * cfg.elem_bytes >= 4 and not cfg.realign(op))
        sm80_ldmatrix.check_rows(cfg.smem_read_copy(op), L, R, BK, cfg.elem_bytes,
                                 f"smem_layout_{op}")


def _composition_key(cfg) -> str:
    """Kernel-name suffix of a non-default composition ('' for the generator's own)."""
    import hashlib
    out = ""
    for op, sw in (("a", cfg.swizzle_a), ("b", cfg.swizzle_b)):
        if sw != "default":
            out += f"_sw{op}" + ("0" if sw is None else "".join(str(x) for x in sw))
    for op, cp in (("a", cfg.copy_a), ("b", cfg.copy_b)):
        if cp is not None:
            out += f"_cp{op}" + hashlib.sha1(repr(cp).encode()).hexdigest()[:8]
    return out


def kernel_name(cfg: GemmSm80Config) -> str:
    BM, BN, BK = cfg.tile
    epi = "" if cfg.epi is None else f"_epi{epilogue_of(cfg).key()}"
    epi += "" if cfg.min_blocks == 1 else f"_b{cfg.min_blocks}"
    epi += _composition_key(cfg)
    return (f"gemm_sm80_{cfg.mainloop}_{cfg.dtype}_{cfg.out_dtype}_{cfg.a_major}{cfg.b_major}_"
            f"{BM}x{BN}x{BK}_w{cfg.warps[0]}x{cfg.warps[1]}_s{cfg.stages}_"
            f"v{cfg.vec_a}{cfg.vec_b}{cfg.vec_c}{_realign_key(cfg)}_r{cfg.raster}{epi}")


def _realign_key(cfg) -> str:
    """Kernel-name part of realigned copies: ``u`` + the operands that take them."""
    ops = "a" * cfg.realign_a + "b" * cfg.realign_b
    return f"u{ops}" if ops else ""


# ====================================================================================== fused epilogue

_EPI_CACHE: dict = {}


def epilogue_of(cfg: GemmSm80Config):
    """The :class:`~..epilogue.sm80.Sm80Epilogue` of ``cfg.epi`` (cached per epilogue config)."""
    from ..epilogue.sm80 import Sm80Epilogue, Sm80EpilogueConfig
    e = cfg.epi
    if e is None:
        return None
    hit = _EPI_CACHE.get(e)
    if hit is None:
        if not isinstance(e, Sm80EpilogueConfig):
            from ..epilogue.sm90 import EpilogueConfig
            if not isinstance(e, EpilogueConfig):
                raise AtomError("GemmSm80Config", "epi", "must be an Sm80EpilogueConfig or an "
                                "EpilogueConfig", actual=type(e).__name__)
        hit = _EPI_CACHE[e] = Sm80Epilogue(e)
    return hit


def _check_epi(cfg: GemmSm80Config) -> None:
    from ..epilogue.fragment import mma_sm80_fragment
    epi = epilogue_of(cfg)
    c = epi.cfg
    want = mma_sm80_fragment(cfg.warps[0], cfg.warps[1], *cfg.warp_tile)
    if c.fragment != want or (c.tile_m, c.tile_n) != cfg.tile[:2]:
        raise AtomError("GemmSm80Config", "epi", "fragment / tile must be the GEMM's "
                        "(use with_epilogue)", expected=(cfg.tile[:2], cfg.warps),
                        actual=(c.tile_m, c.tile_n))
    want_d = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}[cfg.out_dtype]
    if c.element_d != want_d:
        raise AtomError("GemmSm80Config", "epi", "element_d must be the GEMM's out_dtype",
                        expected=want_d, actual=c.element_d)


def with_epilogue(cfg: GemmSm80Config, epi, *, vectorized: bool | None = None
                  ) -> GemmSm80Config:
    """See :func:`_with_epilogue`; memoised (building the SM80 fragment table takes ~20 ms and
    ``gemm_sm80(..., epilogue=...)`` calls this on every launch)."""
    try:
        return _with_epilogue_cached(cfg, epi, vectorized)
    except TypeError:            # an unhashable argument: build it (and let it raise) uncached
        return _with_epilogue(cfg, epi, vectorized=vectorized)


@lru_cache(maxsize=512)
def _with_epilogue_cached(cfg, epi, vectorized):
    return _with_epilogue(cfg, epi, vectorized=vectorized)


def _with_epilogue(cfg: GemmSm80Config, epi, *, vectorized: bool | None = None
                   ) -> GemmSm80Config:
    """``cfg`` with a fused epilogue: ``epi`` is an EVT tree (``cute_py.epilogue.evt``), an
    ``Sm80EpilogueConfig`` or an ``EpilogueConfig``; its fragment, tile and D type are set to
    ``cfg``'s (other fields such as ``stages_c`` are kept).  ``epi=None`` removes it.

    Law: ``with_epilogue(cfg, t).epi.fragment == mma_sm80_fragment(*cfg.warps,
    *cfg.warp_tile)`` and the kernel computes ``D = evaluate(t, A @ B, ...)``."""
    from cute_py.epilogue import evt
    from ..epilogue.fragment import mma_sm80_fragment
    from ..epilogue.sm80 import Sm80EpilogueConfig
    from ..epilogue.sm90 import EpilogueConfig
    if epi is None:
        return replace(cfg, epi=None)
    fr = mma_sm80_fragment(cfg.warps[0], cfg.warps[1], *cfg.warp_tile)
    ed = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}[cfg.out_dtype]
    if isinstance(epi, evt.Node):
        e = Sm80EpilogueConfig(epi, fr, cfg.tile[0], cfg.tile[1], element_d=ed)
    elif isinstance(epi, EpilogueConfig):
        e = Sm80EpilogueConfig.from_sm90(epi, fragment=fr, tile_m=cfg.tile[0],
                                         tile_n=cfg.tile[1], element_d=ed)
    elif isinstance(epi, Sm80EpilogueConfig):
        e = replace(epi, fragment=fr, tile_m=cfg.tile[0], tile_n=cfg.tile[1], element_d=ed)
    else:
        raise AtomError("with_epilogue", "epi", "must be an EVT tree, an Sm80EpilogueConfig "
                        "or an EpilogueConfig", actual=type(epi).__name__)
    if vectorized is not None:
        e = replace(e, vectorized=vectorized)
    return replace(cfg, epi=e)
