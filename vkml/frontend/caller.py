"""Where a warning raised inside vkml should point: the innermost caller outside the package.

A public function may be reached through wrappers (autocast, ``out=``, Tensor methods, a module's
``forward``), so a fixed ``stacklevel`` points at one of them on some paths; PyTorch's warnings
name the user's line.
"""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # vkml's folder


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called by this function's caller that names the
    first frame outside vkml."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


# the wrappers between a user's call and a public function (vkml/frontend/complex.py, amp.py)
_DISPATCH_WRAPPERS = frozenset(("dispatched", "autocast_op"))


def called_by_user(depth: int = 1) -> bool:
    """Whether the function ``depth`` frames up from this function's caller (1: that caller's caller) was
    called by code outside vkml, through dispatch wrappers only; False when vkml calls it itself."""
    frame = sys._getframe(depth + 1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        if frame.f_code.co_name not in _DISPATCH_WRAPPERS:
            return False
        frame = frame.f_back
    return True
