"""``torch.utils.data._utils.collate``: ``default_collate`` and ``default_convert`` (vkml/utils/data/collate.py).

>>> from vkml.utils.data._utils.collate import default_collate
>>> default_collate([(1, 2.0), (3, 4.0)])[0].tolist()
[1, 3]
"""

from ..collate import default_collate, default_convert

__all__ = ["default_collate", "default_convert"]
