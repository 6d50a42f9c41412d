"""The version vkml reports is the one pyproject.toml declares."""

from __future__ import annotations

import tomllib
from pathlib import Path

import vkml
from vkml import config
from vkml.runtime.vulkan import kernel_cache

ROOT = Path(__file__).resolve().parent.parent


def test_version_agrees_with_pyproject():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert config.VERSION == declared
    assert vkml.version.vkml == declared
    # torch.__version__'s place holds the PyTorch release vkml follows, vkml's own as the local label
    assert str(vkml.__version__) == f"{vkml.version.PYTORCH_RELEASE}+vkml{declared}"
    assert kernel_cache.vkml_version().startswith(declared + "/")
