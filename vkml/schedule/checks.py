"""Value checks that ride along with the work they guard, and raise when its results are read.

An op that must refuse some argument values (a class index out of range) cannot read them at
the call without a download, which on a GPU waits for the work that made them and stalls the
pipeline. Instead it records a check: a few small nodes computed from the values (the first
bad position and its value) and a guard, the node every result of the op is computed through.

- A realize that reaches the guard also computes the check's nodes, in the same submission.
- It downloads nothing: the nodes it computed are marked unverified, and so is anything later
  computed from them (the next training step computes from the parameters this one updated).
- Reading a marked tensor (``numpy``, ``item``, ``tolist``) reads its checks' values first (the
  read waits for that work anyway) and raises the first failing check's error, naming the op
  and the user's line that called it. A refused check raises again on every later read of a
  marked node and at every realize that reaches its guard or a marked node, so no wrong value
  is handed out.

A check that passed is done. Ops may remember passes for realized inputs (their values cannot
change), so the same loaded labels are checked once.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Callable

from ..graph.node import Node, toposort

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # vkml's folder


class Check:
    __slots__ = ("guard", "nodes", "describe", "error", "passed", "message", "__weakref__")

    def __init__(self, guard: Node, nodes: tuple[Node, ...], describe: Callable[[list], str | None], error):
        self.guard = weakref.ref(guard)
        self.nodes = nodes  # realized with the guard's users; their values go to ``describe``
        self.describe = describe  # values -> the error message, or None when they are fine
        self.error = error
        self.passed = False
        self.message: str | None = None  # set once the values were read and refused

    def fail(self) -> None:
        raise self.error(self.message)


_pending: weakref.WeakSet = weakref.WeakSet()  # unread checks whose guard may still be computed
_guarded: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # guard node -> its checks (keeps them alive)
_unverified: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # realized node -> checks to read first
_open: weakref.WeakSet = weakref.WeakSet()  # computed checks not read yet, or refused (marks of passed ones are inert)


def user_line() -> str:
    """``file:line`` of the innermost caller outside vkml (for errors raised later, at a read)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return "an unknown line" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def defer(guard: Node, nodes: tuple[Node, ...], describe: Callable[[list], str | None], error=IndexError) -> Check:
    """Check ``describe(values of nodes)`` with whatever is computed through ``guard``."""
    check = Check(guard, tuple(nodes), describe, error)
    _guarded.setdefault(guard, []).append(check)
    _pending.add(check)
    return check


def active() -> bool:
    """Whether a realize has checks to look for (the common case, none, costs this test only)."""
    return bool(len(_pending) or len(_open))


def reached(targets: tuple[Node, ...]) -> tuple[list[Check], list[Check]]:
    """(checks whose guard a realize of ``targets`` computes through, unread checks its inputs carry).

    A check already refused raises here, before anything is computed from its op's results.
    """
    order = toposort(list(targets))
    ids = {id(n) for n in order}
    found = []
    for check in list(_pending):
        guard = check.guard()
        if guard is None:  # nothing can be computed through it any more
            _pending.discard(check)
        elif id(guard) in ids:
            found.append(check)
    carried: list[Check] = []
    for node in (*targets, *(s for n in order for s in n.srcs)):
        for check in _unverified.get(node, ()):
            if not check.passed and check not in carried and check not in found:
                carried.append(check)
    for check in (*found, *carried):
        if check.message is not None:
            check.fail()
    return found, carried


def submitted(checks: list[Check], targets: tuple[Node, ...]) -> None:
    """After a realize of ``targets`` that computed or used ``checks``: a read of them verifies first."""
    _open.update(checks)
    # A check's own nodes are not marked: the mark would hold the check, which holds its nodes, and
    # a weak key whose value keeps it alive is never dropped (every later realize then pays a walk).
    own = {id(n) for check in checks for n in check.nodes}
    for node in targets:
        if id(node) in own:
            continue
        marks = _unverified.setdefault(node, [])
        marks.extend(c for c in checks if c not in marks)


def passed(check: Check) -> None:
    """Mark ``check`` read and passed (its values were fine): nothing reads it again."""
    check.passed = True
    _pending.discard(check)
    _open.discard(check)


def verify_read(node: Node) -> None:
    """Before ``node``'s values are read: read its checks' values and raise the first refused one."""
    for check in _unverified.get(node, ()):
        if check.passed:
            continue
        if check.message is None:
            values = [n.device.download(n.buffer).reshape(n.shape).tolist() for n in check.nodes]
            check.message = check.describe(values)
            if check.message is None:
                check.passed = True
                _pending.discard(check)
                _open.discard(check)
                continue
        check.fail()  # the mark stays: every later read of this node raises too
    _unverified.pop(node, None)
