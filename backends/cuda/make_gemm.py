"""Compose a GEMM from algebra objects: one entry point for both kernel families.

``make_gemm(tiled_mma, tile_mnk, ...)`` takes a :class:`cute_py.atom.TiledMMA` and the CTA tile
and picks the family from the MMA atom: an SM80 ``mma.sync`` atom gives the SM80 kernel
(``cp.async`` + ``ldmatrix`` mainloops, :func:`~.kernels.gemm_sm80_compose.make_gemm_sm80`), an
SM90 ``wgmma`` atom the Hopper kernel (TMA + mbarrier pipeline + ``wgmma``, warp-specialized,
:func:`~.kernels.gemm_sm90_compose.make_gemm_sm90`).  The optional objects — the shared-memory
layouts, the gmem->smem copies — are checked against what the hardware allows (an
:class:`~cute_py.errors.AtomError` names the object and the rule) and the kernel is generated
from them.  The result is a frozen :class:`ComposedGemm`: its configuration, its CUDA source, its
objects (``describe()``), a readable report (``report()``), and a callable that runs it on
torch tensors or CuPy arrays through ``cute_py.gemm``'s launch path (plans cached by shapes and
strides; the caller's stream).

Law: ``make_gemm(**g.describe())`` (the objects given back, with the same tile and options)
builds the same configuration as ``g``.
"""

from __future__ import annotations

from dataclasses import dataclass

from cute_py.errors import AtomError

__all__ = ["make_gemm", "ComposedGemm"]

_OP = "make_gemm"


def _arch_of(tiled_mma) -> int:
    atom = getattr(tiled_mma, "atom", None)
    arch = getattr(atom, "arch", None)
    if arch not in (80, 90):
        raise AtomError(_OP, "tiled_mma", "must be a TiledMMA of an SM80 mma.sync or an SM90 "
                        "wgmma atom", expected="make_tiled_mma(SM80_... or SM90_..., ...)",
                        actual=getattr(atom, "name", type(tiled_mma).__name__))
    return arch


def _major(value, arg):
    if value in ("K", "k"):
        return "K"
    if value in ("MN", "M", "N", "mn"):
        return "MN"
    raise AtomError(_OP, arg, "must be 'K' or 'MN'", expected=("K", "MN"), actual=value)


@dataclass(frozen=True)
class ComposedGemm:
    """A GEMM built from algebra objects (see the module docstring).

    ``g(A, B, C=None, alpha=1, beta=0, *, out=None, stream=None)`` computes
    ``alpha * A @ B + beta * C`` with this kernel (``A`` ``(M, K)``, ``B`` ``(K, N)``, optionally
    batched; the operands' majors must be the configuration's: ``a_major="K"`` is a row-major A,
    ``b_major="K"`` a K-contiguous B such as ``W.T``)."""

    config: object
    arch: int

    @property
    def source(self) -> str:
        """The generated CUDA source."""
        if self.arch == 90:
            from .kernels.gemm_sm90 import generate_source
        else:
            from .kernels.gemm_sm80 import generate_source
        return generate_source(self.config)

    @property
    def name(self) -> str:
        if self.arch == 90:
            return self.config.name
        from .kernels.gemm_sm80 import kernel_name
        return kernel_name(self.config)

    def describe(self):
        """The configuration's algebra objects (TiledMMA, smem layouts, copies)."""
        if self.arch == 90:
            from .kernels.gemm_sm90_compose import describe
            d = describe(self.config)
            return {k: getattr(d, k) for k in ("tiled_mma", "smem_layout_A", "smem_layout_B",
                                                "copy_A", "copy_B")}
        from .kernels.gemm_sm80_compose import describe
        return describe(self.config)

    def report(self) -> str:
        """Objects, resources and (SM80) the bank-conflict account of one stage."""
        if self.arch == 80:
            from .kernels.gemm_sm80_compose import report
            return report(self.config)
        c = self.config
        d = self.describe()
        return "\n".join([
            f"{c.name}: {c.schedule}, {c.stages} stages, {c.consumer_wgs} consumer warpgroup(s), "
            f"cluster {c.cluster_m}x{c.cluster_n}, {c.smem_bytes()} smem bytes",
            f"tiled_mma: {d['tiled_mma'].atom.name}",
            f"smem_layout_A: {d['smem_layout_A']}",
            f"smem_layout_B: {d['smem_layout_B']}",
            f"copy_A: TMA box {getattr(d['copy_A'], 'box', None)}",
            f"copy_B: TMA box {getattr(d['copy_B'], 'box', None)}",
            "shared-memory operands are read by TMA and wgmma through the swizzle the GMMA "
            "layout names: no bank conflicts by construction"])

    def compile(self, arch: str | None = None):
        """Compile the source (NVRTC; no GPU needed) and return the module's resources
        (registers, spills) for the kernel."""
        from .compiler import compile_module
        arch = arch or ("sm_90a" if self.arch == 90 else "sm_80")
        mod = compile_module(self.source, arch=arch, options=())
        return mod.resources_for(self.name)

    def __call__(self, A, B, C=None, alpha=1.0, beta=0.0, *, out=None, stream=None):
        from cute_py.gemm import gemm
        return gemm(A, B, C, alpha, beta, out=out, stream=stream, config=self.config,
                    backend="sm90" if self.arch == 90 else "sm80")


def make_gemm(tiled_mma, tile_mnk, *, smem_layout_A=None, smem_layout_B=None, copy_A=None,
              copy_B=None, stages=None, mainloop=None, schedule=None, cluster_m=1,
              epilogue=None, a_major="K", b_major="K", out_dtype=None,
              cluster_n=1) -> ComposedGemm:
    """A :class:`ComposedGemm` from algebra objects (see the module docstring).

    SM80 only: ``mainloop`` (``"multistage"`` default, ``"pipelined"``, ``"singlestage"``).
    SM90 only: ``schedule`` (``"cooperative"`` default, ``"pingpong"``), ``cluster_m`` /
    ``cluster_n`` (CTAs of a cluster along M / N, 1 or 2 each: B's tile multicast to the
    ``cluster_m`` CTAs sharing it, A's to the ``cluster_n``; ``copy_A`` / ``copy_B`` are then
    the TMA boxes of one CTA's slice), ``epilogue`` (an epilogue configuration).
    ``stages``: default 3 (SM80) or as many as fit (SM90).  ``a_major`` / ``b_major``: ``"K"`` or ``"MN"``."""
    arch = _arch_of(tiled_mma)
    am, bm = _major(a_major, "a_major"), _major(b_major, "b_major")
    if arch == 80:
        for arg, val in (("schedule", schedule), ("epilogue", epilogue)):
            if val is not None:
                raise AtomError(_OP, arg, "is an SM90 option (the tiled MMA is an SM80 atom)",
                                actual=val)
        for nm, v in (("cluster_m", cluster_m), ("cluster_n", cluster_n)):
            if v != 1:
                raise AtomError(_OP, nm, "is an SM90 option (the tiled MMA is an SM80 atom)",
                                actual=v)
        from .kernels.gemm_sm80_compose import make_gemm_sm80
        cfg = make_gemm_sm80(tiled_mma, tuple(tile_mnk), stages=3 if stages is None else stages,
                             mainloop=mainloop or "multistage", a_major="K" if am == "K" else "M",
                             b_major="K" if bm == "K" else "N", out_dtype=out_dtype,
                             smem_layout_A=smem_layout_A, smem_layout_B=smem_layout_B,
                             copy_A=copy_A, copy_B=copy_B)
        return ComposedGemm(cfg, 80)
    if mainloop is not None:
        raise AtomError(_OP, "mainloop", "is an SM80 option (the tiled MMA is an SM90 wgmma "
                        "atom; its kernel is the warp-specialized TMA pipeline)", actual=mainloop)
    from .kernels.gemm_sm90_compose import make_gemm_sm90
    cfg = make_gemm_sm90(tiled_mma, tuple(tile_mnk), smem_layout_A=smem_layout_A,
                         smem_layout_B=smem_layout_B, copy_A=copy_A, copy_B=copy_B,
                         stages=stages, schedule=schedule or "cooperative", cluster_m=cluster_m,
                         cluster_n=cluster_n,
                         epilogue=epilogue, a_major=am, b_major=bm, out_dtype=out_dtype)
    return ComposedGemm(cfg, 90)
