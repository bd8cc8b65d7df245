"""Package discovery for the split tree: ``cute_py/`` plus ``backends/`` installed as ``cute_py.backends``.

pyproject's ``packages.find`` cannot discover packages under a renamed folder (it would find
``backends`` as a top-level package), so the package list is computed here; everything else is in
pyproject.toml.
"""

from setuptools import find_namespace_packages, find_packages, setup

packages = find_packages(include=["cute_py", "cute_py.*"])
# find_namespace_packages: data-only folders (the CUDA headers under cuda/include) are packages too
packages += ["cute_py.backends"] + ["cute_py.backends." + p for p in find_namespace_packages(
    "backends", exclude=["*__pycache__*"])]

setup(packages=packages)
