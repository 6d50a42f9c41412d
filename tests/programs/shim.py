"""The import lines of the programs in this folder: PyTorch's, or vkml's in their place.

A program here starts with ``from shim import torch, nn, F, optim, lr_scheduler, DataLoader,
TensorDataset`` where a PyTorch user writes

    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.optim as optim
    from torch.optim import lr_scheduler
    from torch.utils.data import DataLoader, TensorDataset
    import torch.distributions as distributions  # (as `distributions`, for the RL programs)

and a vkml user writes the same with ``vkml`` for ``torch``. Everything after the imports is
ordinary PyTorch code. ``PROGRAMS_BACKEND=torch`` picks PyTorch; anything else picks vkml.
"""

from __future__ import annotations

import os

BACKEND = "torch" if os.environ.get("PROGRAMS_BACKEND") == "torch" else "vkml"

if BACKEND == "torch":
    import torch
    import torch.distributions as distributions
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.optim as optim
    from torch.optim import lr_scheduler
    from torch.utils.data import DataLoader, TensorDataset
else:
    import vkml as torch
    import vkml.distributions as distributions
    import vkml.nn as nn
    import vkml.nn.functional as F
    import vkml.optim as optim
    from vkml.optim import lr_scheduler
    from vkml.utils.data import DataLoader, TensorDataset

__all__ = ["BACKEND", "DataLoader", "F", "distributions", "TensorDataset", "lr_scheduler", "nn", "optim", "torch"]
