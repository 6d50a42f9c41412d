"""``torch.hub``'s checkpoint downloads, which model files copied from torchvision and other repositories
import at their top (``from torch.hub import load_state_dict_from_url``): ``load_state_dict_from_url``,
``download_url_to_file``, ``get_dir`` and ``set_dir``, caching files where PyTorch caches them
(``$TORCH_HOME/hub/checkpoints``, default ``~/.cache/torch/hub/checkpoints``) so both libraries share
a download. A checkpoint is read by ``vkml.load`` (PyTorch's ``.pth`` files included). Loading hub
repositories' code (``torch.hub.load``) is not provided.

>>> import vkml
>>> vkml.hub.get_dir().endswith("hub")
True
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request
from typing import Any

from .frontend.serialization import load

__all__ = ["download_url_to_file", "get_dir", "load_state_dict_from_url", "set_dir"]

# a file name's "-<sha256 prefix>." part, as torchvision names its weights (resnet18-f37072fd.pth)
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")

_hub_dir: str | None = None


def get_dir() -> str:
    """The hub's cache folder: ``set_dir``'s, else ``$TORCH_HOME/hub`` (``$XDG_CACHE_HOME/torch/hub``,
    ``~/.cache/torch/hub``), as ``torch.hub.get_dir``."""
    if _hub_dir is not None:
        return _hub_dir
    cache_home = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return os.path.join(os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(cache_home, "torch"))), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Make ``d`` the hub's cache folder."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download ``url`` to the file ``dst`` (through a temporary file beside it, moved in when complete);
    ``hash_prefix``: the start of the content's SHA-256, checked, as ``torch.hub.download_url_to_file``."""
    request = urllib.request.Request(url, headers={"User-Agent": "vkml.hub"})
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    sha256 = hashlib.sha256()
    with urllib.request.urlopen(request) as response, tempfile.NamedTemporaryFile(delete=False, dir=folder) as out:
        try:
            while chunk := response.read(1 << 20):
                out.write(chunk)
                sha256.update(chunk)
            out.close()
            if hash_prefix is not None and not sha256.hexdigest().startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{sha256.hexdigest()}")')
            shutil.move(out.name, dst)
        finally:
            if os.path.exists(out.name):
                os.remove(out.name)


def load_state_dict_from_url(
    url: str,
    model_dir: str | None = None,
    map_location=None,
    progress: bool = True,
    check_hash: bool = False,
    file_name: str | None = None,
    weights_only: bool = False,
) -> Any:
    """The object saved at ``url``, downloaded once into ``model_dir`` (default ``get_dir()/checkpoints``)
    and read by ``vkml.load`` with ``map_location`` and ``weights_only``, as
    ``torch.hub.load_state_dict_from_url``. ``check_hash``: the file name's ``-<sha256 prefix>.`` part must
    match the download."""
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urllib.parse.urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached_file, match.group(1) if match else None, progress=progress)
    return load(cached_file, map_location=map_location, weights_only=weights_only)
