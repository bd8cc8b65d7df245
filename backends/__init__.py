"""cute_py's code-generation backends (installed as ``cute_py.backends``).

Import-light on purpose: importing this package imports neither CuPy nor NVRTC. The CUDA
backend lives in :mod:`cute_py.backends.cuda`; its pipeline stages are one module each::

    ir.py        expression IR for index maps (simplified, hash-consed)
    lower.py     layouts (shape:stride, static or sympy) applied to IR  ->  IR
    render.py    IR  ->  CUDA C, through a per-op table
    compiler.py  CUDA C  ->  CUBIN (NVRTC / nvcc), one cache (memory + disk)
    launch.py    argument checking and kernel launch through CuPy
    kernels/     kernels built from layouts: tiled copies / transposes (copy.py), GEMMs
"""

__all__ = ["cuda"]
