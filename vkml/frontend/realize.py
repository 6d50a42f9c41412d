"""``vkml.realize(*tensors)`` and ``vkml.set_eager``."""

from __future__ import annotations

from ..graph import build as lazy
from ..schedule import scheduler as schedule


def realize(*tensors):
    """Compute several tensors together: one submission per device for all of them.

    >>> import vkml
    >>> a = vkml.ones(3); b = a + 1; c = a * 3
    >>> _ = vkml.realize(b, c)
    """
    if len(tensors) == 1:  # the usual call, without a generator
        schedule.realize(tensors[0].node)
        return tensors[0]
    schedule.realize(*(t.node for t in tensors))
    return tensors


def set_eager(enabled: bool = True) -> None:
    """Run every op as soon as it is called (also ``VKML_EAGER=1``): errors surface at their op."""
    lazy._eager_override = bool(enabled)
