"""Progress bars with tqdm's interface: ``progress_bar(iterable, total=..., desc=...)`` is
``tqdm.tqdm`` when tqdm is installed, else vkml's one-line ``Bar`` on stderr.

vkml itself shows one while a realize compiles many new kernels (``VKML_PROGRESS``, see
vkml/config.py); the examples and ``python -m vkml.demo`` use it for their training loops.
"""

from ..runtime.progress import Bar, progress_bar

__all__ = ["Bar", "progress_bar"]
