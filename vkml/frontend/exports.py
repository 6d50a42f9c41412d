"""``Export``: how users reach one public op. A face module that defines ops lists them in ``EXPORTS``;
vkml/frontend/public.py binds them (``vkml.<name>``, ``__all__``, ``Tensor.<name>``, ``Tensor.<name>_``).

This module imports nothing, so every face module can import it whatever its place in the import order.
"""

from __future__ import annotations

from typing import NamedTuple


class Export(NamedTuple):
    """One public name of an op defined in a face module.

    >>> Export("floor", method=True, inplace=True)  # vkml.floor, Tensor.floor, Tensor.floor_
    Export(name='floor', function=True, method=True, inplace=True, value=None)
    """

    name: str
    function: bool = True  # vkml.<name>, listed in vkml.__all__
    method: object = False  # Tensor.<name>: True for the function itself, or the method (a function or property)
    inplace: bool = False  # Tensor.<name>_: the method's result written into the tensor (mutation.inplace)
    value: object = None  # what vkml.<name> is, where it is not the module's attribute ``name``
