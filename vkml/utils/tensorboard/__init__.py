"""``torch.utils.tensorboard``: ``SummaryWriter`` writes TensorBoard event files from vkml tensors.

Like PyTorch's, it needs the ``tensorboard`` package (optional: ``pip install tensorboard``), which
provides the event-file writer and the summary protocol buffers; without it, importing this module
raises PyTorch's ImportError. What it writes is what PyTorch's writer writes for the same calls
(tests/test_tensorboard.py reads both back). ``add_graph`` (PyTorch traces the model with its JIT)
and the rarer media and projector methods raise NotImplementedError (docs/interop.md).

>>> from vkml.utils.tensorboard import SummaryWriter  # doctest: +SKIP
>>> with SummaryWriter("runs/exp1") as writer:  # doctest: +SKIP
...     writer.add_scalar("loss/train", 0.25, global_step=1)
"""

from __future__ import annotations

try:
    import tensorboard  # noqa: F401
except ImportError as missing:  # PyTorch's error, word for word
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above") from missing

from .writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
