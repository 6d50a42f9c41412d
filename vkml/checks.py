"""Value checks that wait for a realize.

An op that must refuse some argument values (a class index out of range) checks them at the
call when they are on the host. When they are not (an index tensor still lazy, a view of
loaded data), reading them would cost a submission of its own; instead the op records a
check: a few small nodes computed from the values (the first bad position, its value) and
a guard, the node every result of the op is computed through. Any realize that reaches the
guard also realizes the check's nodes, in the same submission, and then raises the check's
error, naming the op and the user's line that called it.

Invariants: a check stays pending while its guard may still be computed (it goes with the
guard, by a weak reference); a realize that raised marks the nodes it realized, so reading
them again, or computing from them, raises the same error instead of returning wrong values.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from .graph import Node, toposort

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass
class _Check:
    guard: weakref.ref
    nodes: tuple[Node, ...]
    describe: Callable[[list], str | None]  # the realized nodes' values -> error message, None if fine
    error: type[Exception]


_pending: dict[int, _Check] = {}  # by id of the check
_failed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # realized node -> the error it must raise


def user_line() -> str:
    """``file:line`` of the innermost caller outside vkml (for errors raised later, at realize)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return "an unknown line" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def defer(guard: Node, nodes: tuple[Node, ...], describe: Callable[[list], str | None], error=IndexError) -> None:
    """Check ``describe(values of nodes)`` when a realize reaches ``guard``; raise ``error`` then."""
    check = _Check(None, tuple(nodes), describe, error)
    key = id(check)
    check.guard = weakref.ref(guard, lambda _: _pending.pop(key, None))
    _pending[key] = check


def reached(targets: tuple[Node, ...]) -> list[_Check]:
    """The pending checks whose guard ``targets`` are computed through; raises for a failed node."""
    if not _pending and not len(_failed):
        return []
    order = toposort(list(targets))
    if len(_failed):
        for node in (*targets, *(s for n in order for s in n.srcs)):
            failure = _failed.get(node)
            if failure is not None:
                raise failure[0](failure[1])
    if not _pending:
        return []
    ids = {id(n) for n in order}
    found = []
    for check in list(_pending.values()):
        guard = check.guard()
        if guard is not None and id(guard) in ids:
            found.append(check)
    return found


def verify(checks: list[_Check], realized: tuple[Node, ...]) -> None:
    """After the realize of ``checks``' nodes with ``realized``: raise the first failing check's error.

    A check that passed is done (its values cannot change). One that failed stays pending, and
    every node this realize computed remembers the error.
    """
    for check in checks:
        values = [n.device.download(n.buffer).reshape(n.shape).tolist() for n in check.nodes]
        message = check.describe(values)
        if message is None:
            _pending.pop(id(check), None)
            continue
        for node in realized:
            _failed[node] = (check.error, message)
        raise check.error(message)
