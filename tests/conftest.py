"""Shared pytest configuration: an isolated kernel cache and hypothesis profiles.

Nothing op-specific belongs here; fixtures for one area live beside that area's tests.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# "ci" (the default): no per-example deadline, since timings on a shared 2-core machine with a
# software Vulkan driver say nothing about the code; few enough examples to keep the suite short.
settings.register_profile(
    "ci", deadline=None, max_examples=50, print_blob=True, derandomize=True
)  # CI: same examples every run
# "thorough": for a deliberate bug hunt, `HYPOTHESIS_PROFILE=thorough make test`.
settings.register_profile("thorough", deadline=None, max_examples=2000, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_CACHE_DIR_KEY = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    # Set here rather than in a fixture: a module that reads VKML_CACHE_DIR on import may be
    # imported while tests are collected, before any fixture runs.
    cache_dir = Path(tempfile.mkdtemp(prefix="vkml-test-cache-"))
    config.stash[_CACHE_DIR_KEY] = cache_dir
    os.environ["VKML_CACHE_DIR"] = str(cache_dir)


def pytest_unconfigure(config: pytest.Config) -> None:
    cache_dir = config.stash.get(_CACHE_DIR_KEY, None)
    if cache_dir is not None:
        shutil.rmtree(cache_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def vkml_cache_dir(pytestconfig: pytest.Config) -> Path:
    """The kernel-cache folder this test session uses in place of the user's own."""
    return pytestconfig.stash[_CACHE_DIR_KEY]


@pytest.fixture(scope="session")
def gpu():
    """The best Vulkan device: lavapipe in CI (make test installs it as root), the H200 on the GPU machine."""
    import vkml

    assert vkml.vulkan_device_reports(), "no Vulkan device: install lavapipe (make test does, as root)"
    return vkml.best_device()


@pytest.fixture
def cpu_tuning():
    """Set the CPU device's kernel tuning for one test (``cpu_tuning(t)``); the default comes back afterwards."""
    import vkml
    from vkml.kernels import tuning as kernels_tuning

    cpu = vkml.device("cpu")
    yield lambda tuning: kernels_tuning.set_tuning(cpu, tuning)
    kernels_tuning.set_tuning(cpu, None)
