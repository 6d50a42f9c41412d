"""``vkml.__version__`` compares as ``torch.__version__`` does, so programs' version checks pick
the current API under ``import vkml as torch``."""

from __future__ import annotations

import operator

import pytest
from torch.torch_version import TorchVersion as TorchsVersion

import vkml
from vkml.frontend.version import TorchVersion

VERSIONS = [
    "2.13.0+cpu", "2.13.0", "2.13", "2.13.0+vkml0.1.0", "1.10.0a0", "1.10.0", "1.10.0rc1",
    "1.10.0.dev20210101", "1.10.0.post1", "2.0.0a0+git1234", "parrot", "1.9", "1.10", "2.1.0+cu121",
    "2.1.0+cu118", "v2.1", "1.2.1",
]  # fmt: skip
OTHERS = VERSIONS + [(2, 13), (1, 10), (2,), (2, 13, 1), (1, 2, 1), [1, 9]]
COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


def _outcome(version_class, version, method, other):
    try:
        return method(version_class(version), other)
    except Exception as error:  # noqa: BLE001  (the class is the outcome compared)
        return type(error)


@pytest.mark.parametrize("version", VERSIONS)
def test_comparisons_agree_with_torch_version(version):
    for other in OTHERS:
        for method in COMPARISONS:
            want = _outcome(TorchsVersion, version, method, other)
            got = _outcome(TorchVersion, version, method, other)
            assert got == want, (version, other, method)


def test_version_takes_the_current_api_branches():
    version = vkml.__version__
    assert isinstance(version, str) and version.startswith("2.")
    assert version >= "1.8" and version >= (2, 0) and not version < "2.0"
    assert int(version.split(".")[0]) >= 2
    assert hash(version) == hash(str(version)) and {version: 1}[str(version)] == 1
    assert vkml.version.__version__ is version
