"""Package discovery for the split tree: ``cute_py/`` plus ``backends/`` installed as ``cute_py.backends``.

pyproject's ``packages.find`` cannot discover packages under a renamed folder (it would find
``backends`` as a top-level package), so the package list is computed here; everything else is in
pyproject.toml.

The backend's native host path (``backends/cuda/native/hostpath.c``: a launch plan's
patch-and-launch step and gemm's cached call) is an optional extension: where no C compiler or
Python headers exist the install goes on without it and the same code runs in Python
(``cute_py.backends.cuda.hostpath``).
"""

from setuptools import Extension, find_namespace_packages, find_packages, setup

packages = find_packages(include=["cute_py", "cute_py.*"])
# find_namespace_packages: data-only folders (the CUDA headers under cuda/include) are packages too
packages += ["cute_py.backends"] + ["cute_py.backends." + p for p in find_namespace_packages(
    "backends", exclude=["*__pycache__*"])]

hostpath = Extension("cute_py.backends.cuda._hostpath", ["backends/cuda/native/hostpath.c"],
                     extra_compile_args=["-O2", "-std=c11"], optional=True)

setup(packages=packages, ext_modules=[hostpath])
