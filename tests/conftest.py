"""Shared test fixtures.

- ``requires_gpu``: a skip marker (``@requires_gpu``) and fixture for tests that need a CUDA GPU;
  tests marked ``@pytest.mark.gpu`` are skipped automatically when there is none.
- Hypothesis profiles: ``ci`` (modest ``max_examples``; selected when ``CI=true``) and ``dev``.
  Pick one with ``HYPOTHESIS_PROFILE=<name>``.
- Caches the tests write live under one per-user folder, ``$XDG_CACHE_HOME/cute_py`` (default
  ``~/.cache/cute_py``): compiled modules (``$CUTE_PY_CACHE_DIR`` overrides), the C++ oracle's
  builds in ``cpp_oracle/`` (``$CUTE_PY_ORACLE_CACHE`` overrides) and hypothesis' example
  database in ``hypothesis/`` (``$CUTE_PY_HYPOTHESIS_DB`` overrides). Nothing is written into
  the checkout except pytest's own ``.pytest_cache``.
"""

import os

import pytest

_CACHE_ROOT = os.path.join(os.environ.get("XDG_CACHE_HOME")
                           or os.path.join(os.path.expanduser("~"), ".cache"), "cute_py")

try:
    from hypothesis import HealthCheck, settings
    from hypothesis.configuration import set_hypothesis_home_dir

    # hypothesis' storage (example database, constants cache) out of the checkout
    set_hypothesis_home_dir(os.environ.get("CUTE_PY_HYPOTHESIS_DB")
                            or os.path.join(_CACHE_ROOT, "hypothesis"))
    settings.register_profile("ci", max_examples=50, deadline=None, derandomize=True,
                              suppress_health_check=[HealthCheck.too_slow], database=None)
    settings.register_profile("dev", max_examples=100, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    _profile = os.environ.get("HYPOTHESIS_PROFILE")
    if _profile is None:
        _profile = "ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev"
    settings.load_profile(_profile)
except ImportError:  # hypothesis is a test extra; tests that need it import it themselves
    pass


def _has_gpu() -> bool:
    try:
        from cute_py.backends.cuda.device import has_gpu
        return has_gpu()
    except Exception:
        return False


HAS_GPU = _has_gpu()

#: ``@requires_gpu`` on a test (or class) skips it cleanly when no CUDA GPU is present.
requires_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")


@pytest.fixture
def gpu():
    """Fixture form of ``requires_gpu``: skips the test without a GPU, else yields CuPy."""
    if not HAS_GPU:
        pytest.skip("needs a CUDA GPU")
    import cupy
    yield cupy


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    """An empty compile cache (memory + disk) for the duration of one test."""
    from cute_py.backends.cuda import compiler
    monkeypatch.setenv("CUTE_PY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUTE_PY_EXPECT_CACHED", raising=False)
    compiler.clear_memory_cache()
    yield tmp_path / "cache"
    compiler.clear_memory_cache()
