"""GEMM epilogues: Epilogue Visitor Trees (EVT) — the fusion description — and their reference
semantics.  Pure Python; the CUDA lowering lives in ``cute_py.backends.cuda.epilogue``."""

from . import evt
from .evt import *  # noqa: F401,F403
from .evt import __all__ as _evt_all

__all__ = ["evt"] + list(_evt_all)
