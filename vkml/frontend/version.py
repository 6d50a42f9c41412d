"""``torch.version``: the version strings environment reports print; vkml builds for no CUDA or ROCm.

>>> import vkml
>>> vkml.version.cuda is None, vkml.version.__version__ == vkml.__version__
(True, True)
"""

from __future__ import annotations

from ..config import VERSION as __version__  # noqa: F401  (torch.version.__version__)

cuda = None  # no CUDA toolkit: vkml reaches NVIDIA GPUs through Vulkan
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"
