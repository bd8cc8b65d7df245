"""CUDA lowering of GEMM epilogues: EVT trees -> visit code, the SM90 TMA warp-specialized
epilogue emitter (:mod:`.sm90`), its SM80 cp.async variant (:mod:`.sm80`), and the runtime
pieces (TMA descriptors, a driver-API launcher) in :mod:`.runtime`."""

__all__ = ["lower", "fragment", "sm90", "sm80", "ptx"]
