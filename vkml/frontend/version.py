"""``torch.version`` and ``torch.__version__``: the PyTorch release whose behaviour vkml follows.

Programs read ``torch.__version__`` to choose between API generations (``if torch.__version__ >=
"1.8": torch.fft.rfft(...) else: torch.rfft(...)``, ``version.parse(torch.__version__)``,
``int(torch.__version__.split(".")[0]) >= 2``). vkml implements PyTorch's current API, so under
``import vkml as torch`` those checks must take the current branch: ``vkml.__version__`` is the
PyTorch release vkml is checked against, with vkml's own version as the local label
(``"2.13.0+vkml0.1.0"``, as PyTorch's wheels say ``"2.13.0+cpu"``). It compares with strings and
tuples as ``torch.torch_version.TorchVersion`` does. vkml's own version alone is
``vkml.version.vkml`` (pyproject.toml's).

>>> import vkml
>>> vkml.__version__ >= "2.0", vkml.__version__ >= (2, 1), vkml.__version__ < "10"
(True, True, True)
>>> vkml.version.cuda is None, vkml.version.vkml
(True, '0.1.0')
"""

from __future__ import annotations

import re

from ..config import VERSION as vkml

# The PyTorch release whose behaviour, names and errors vkml follows (the oracle its tests run).
PYTORCH_RELEASE = "2.13.0"

# PEP 440's grammar, the part programs meet: release, pre-release, post, dev and a local label.
_PEP440 = re.compile(
    r"^\s*v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d+)?)?"
    r"(?:[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d+))?"
    r"(?:[-_.]?(?P<dev>dev)[-_.]?(?P<dev_n>\d+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


class _InvalidVersion(ValueError):
    pass


def _sort_key(value) -> tuple:
    """packaging.version.Version's ordering key for ``value`` (a version string or a tuple of ints)."""
    if isinstance(value, (tuple, list)):
        value = ".".join(str(item) for item in value)
    if not isinstance(value, str):
        raise _InvalidVersion(value)
    matched = _PEP440.match(value)
    if matched is None:
        raise _InvalidVersion(value)
    release = tuple(int(part) for part in matched["release"].split("."))
    while len(release) > 1 and release[-1] == 0:  # "2.0" == "2.0.0"
        release = release[:-1]
    # Ranks stand for packaging's infinities: a bare dev release sorts before its pre-releases,
    # a final release after them; no post-release before any; no dev part after any.
    if matched["pre"]:
        pre = (1, _PRE_RANK[matched["pre"].lower()], int(matched["pre_n"] or 0))
    else:
        pre = (0,) if matched["dev"] and not matched["post"] else (2,)
    post = (1, int(matched["post"])) if matched["post"] else (0,)
    dev = (0, int(matched["dev_n"] or 0)) if matched["dev"] else (1,)
    if matched["local"]:
        segments = re.split(r"[-_.]", matched["local"].lower())
        local = (1, tuple((1, int(s), "") if s.isdigit() else (0, 0, s) for s in segments))
    else:
        local = (0,)
    return release, pre, post, dev, local


class TorchVersion(str):
    """A version string that compares with strings and tuples by PEP 440's rules, as PyTorch's does.

    A tuple reads as its items joined by dots; a string that is no version compares as a string.

    >>> TorchVersion("2.13.0+vkml0.1.0") > "2.9", TorchVersion("2.13.0") == (2, 13)
    (True, True)
    """

    __slots__ = ()

    def _compare(self, other, method: str):
        try:
            mine, theirs = _sort_key(str(self)), _sort_key(other)
        except _InvalidVersion:
            return getattr(str, method)(self, other)
        return getattr(mine, method)(theirs)

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")

    def __eq__(self, other):
        return self._compare(other, "__eq__")

    # ``!=`` stays str's, as in PyTorch's class (where "2.13.0" != "2.13" though they are ==).
    __hash__ = str.__hash__


__version__ = TorchVersion(f"{PYTORCH_RELEASE}+vkml{vkml}")

cuda = None  # no CUDA toolkit: vkml reaches NVIDIA GPUs through Vulkan
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"
