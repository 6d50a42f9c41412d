"""``torch.utils.data._utils``: the private path older programs import the collate functions from
(``from torch.utils.data._utils.collate import default_collate``)."""

from . import collate

__all__ = ["collate"]
