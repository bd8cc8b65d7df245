"""The CUDA backend: index maps -> expression IR -> CUDA C -> NVRTC -> driver launch.

Nothing heavy is imported here; import the stage you need::

    from cute_py.backends.cuda.compiler import compile_module
    from cute_py.backends.cuda.launch import launch, TensorSpec, ScalarSpec
    from cute_py.backends.cuda.kernels.copy import copy
"""

import os as _os

__all__ = ["INCLUDE_DIR"]

#: Folder holding the static CUDA prelude (``cute_py/prelude.cuh`` and the PTX wrappers).
INCLUDE_DIR = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "include")
