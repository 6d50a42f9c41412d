"""``torch.utils.model_zoo``: the older name of ``load_state_dict_from_url``, ``load_url``, which model files
of many repositories import (``import torch.utils.model_zoo as model_zoo``)."""

from __future__ import annotations

from ..hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]
