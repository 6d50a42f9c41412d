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
- A realize that computes from marked nodes reads the checks they carry whose values the device
  has finished (a copy, no wait; ``read_if_finished``): a loop that never reads its loss carries
  only the checks still in flight, and a refused one raises at that realize, before anything is
  computed from the refused op's results.

A check that passed is done. Ops may remember passes for realized inputs (their values cannot
change), so the same loaded labels are checked once, and skip checks of values uploaded from the host
within range (``uploaded_range``: a new batch of labels every step costs no check) (``_checked_hits`` reads its last check of
them when the device has finished it, without waiting for a read of the loss).
"""

from __future__ import annotations

import itertools
import os
import sys
import weakref
from collections.abc import Callable

from ..graph.node import Node, Op

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


# Integer uploads up to this many elements are scanned on the host for their least and greatest value.
RANGE_SCAN_LIMIT = 1 << 16
_BUFFER, _VIEW = Op.BUFFER, Op.VIEW


def note_uploaded_range(buffer, array) -> None:
    """Keep the least and greatest value of an integer ``array`` just uploaded into ``buffer`` (small ones
    only), so that a check of indices read from it can pass at the call (``uploaded_range``): a new batch
    of labels is a new tensor every step, and its values are on the host as it is made. A later write
    into the buffer (``Device.upload``) drops them; realized buffers are never written otherwise."""
    if array.dtype.kind in "iu" and 0 < array.size <= RANGE_SCAN_LIMIT:
        try:
            buffer.uploaded_range = (int(array.min()), int(array.max()))
        except AttributeError:  # a buffer without values (the meta device's)
            pass


def uploaded_range(node: Node) -> tuple[int, int] | None:
    """(least, greatest) of the values a realized ``node``, or a view of one, reads, where the host knows
    them from its upload (``note_uploaded_range``: of the whole buffer, a view's window included), else None."""
    while node.op == _VIEW:
        node = node.srcs[0]
    if node.op != _BUFFER:
        return None
    buffer = node.buffer
    buffer = getattr(buffer, "parent", buffer)  # an alias (a window of a dataset's labels): its memory's owner
    return getattr(buffer, "uploaded_range", None)


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
    """Whether a realize has checks to look for (the common case, none, costs this test only).

    Read from the sets' references, not ``len`` (Python code in ``WeakSet``): a reference whose
    check just died may still be there, which only costs that realize a look."""
    return bool(_pending.data or _open.data)


def reached(targets: tuple[Node, ...]) -> tuple[list[Check], list[Check]]:
    """(checks whose guard a realize of ``targets`` computes through, unread checks its inputs carry).

    A check already refused raises here, before anything is computed from its op's results.
    """
    # The graph's nodes by id; marks sit on realized nodes only (``submitted`` marks what a realize
    # made), which have no sources: the leaves of the walk, and the targets.
    ids: set[int] = set()
    leaves: list[Node] = []
    stack = list(targets)
    while stack:
        node = stack.pop()
        if id(node) in ids:
            continue
        ids.add(id(node))
        if node.srcs:
            stack.extend(node.srcs)
        else:
            leaves.append(node)
    found = []
    for check in list(_pending):
        guard = check.guard()
        if guard is None:  # nothing can be computed through it any more
            _pending.discard(check)
        elif id(guard) in ids:
            found.append(check)
    carried: dict[Check, None] = {}  # in order, each once (a Check hashes by identity)
    if len(_unverified):
        get = _unverified.get
        for node in leaves:
            for check in get(node, ()):
                if not check.passed:
                    carried[check] = None
        for check in found:
            carried.pop(check, None)
        if carried:
            # Read those the device has finished: a loop that never reads its loss would otherwise
            # carry one more check at every step, and every realize, and every mark, would grow with
            # the number of steps; once none is left open, a realize does not walk its graph here.
            _read_finished(carried)
    for check in (*found, *carried):
        if check.message is not None:
            check.fail()
    return found, list(carried)


def _read_finished(carried: dict) -> None:
    """Read the values of ``carried`` checks whose work the device has finished (``read_if_finished``)
    and drop those that passed; a refusal is kept, and raised by the caller."""
    for check in list(carried):
        if read_if_finished(check):
            del carried[check]


def read_if_finished(check: Check) -> bool:
    """Read ``check``'s values if the device has finished computing them (``finished_values``), as a
    read of a tensor it guards would; a refusal is kept, for that read or a realize to raise. Whether
    it passed."""
    if check.passed:
        return True
    if check.message is not None:
        return False
    values = finished_values(check.nodes)
    if values is None:
        return False
    check.message = check.describe(values)
    if check.message is None:
        passed(check)
    return check.passed


def finished_values(nodes: tuple[Node, ...]) -> list | None:
    """The values of ``nodes`` (a check's) if they are realized and the device has finished them (a
    copy, with no wait: ``ready_now``; the CPU device has finished what it returned), else None."""
    if not nodes:
        return None
    for n in nodes:
        if not n.realized:
            return None
        ready = getattr(n.device, "ready_now", None)
        if ready is not None and not ready(n.buffer):
            return None
    return [n.device.download(n.buffer).reshape(n.shape).tolist() for n in nodes]


def submitted(checks: list[Check], targets: tuple[Node, ...]) -> None:
    """After a realize of ``targets`` that computed or used ``checks``: a read of them verifies first."""
    checks = list(dict.fromkeys(checks))
    _open.update(checks)
    # A check's own nodes are not marked: the mark would hold the check, which holds its nodes, and
    # a weak key whose value keeps it alive is never dropped (every later realize then pays a walk).
    own = {id(n) for check in checks for n in check.nodes}
    for node in targets:
        if id(node) in own:
            continue
        marks = _unverified.get(node)
        if marks is None:
            _unverified[node] = list(checks)
        else:
            known = set(marks)
            marks.extend(c for c in checks if c not in known)


def passed(check: Check) -> None:
    """Mark ``check`` read and passed (its values were fine): nothing reads it again."""
    check.passed = True
    _pending.discard(check)
    _open.discard(check)


def verify_read(node: Node) -> None:
    """Before ``node``'s values are read: read its checks' values and raise the first refused one."""
    if not marks:  # no node carries a mark (the usual read): nothing to look up
        return
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


# ---------------------------------------------------------------------- vkml.jit's replays


marks = _unverified.data  # weak reference to a node -> its marks: what ``unmark`` and ``submitted_anew`` reach in C


def unmark(node: Node) -> None:
    """Drop ``node``'s marks: it is about to be handed out over new values (a ``vkml.jit`` replay
    reuses a realized node nothing holds; its marks concern the values it held before)."""
    marks.pop(weakref.ref(node), None)


def submitted_anew(checks: list[Check], targets: list[Node]) -> None:
    """``submitted`` for ``targets`` whose values are all new, none of them a check's own node (a
    ``vkml.jit`` replay's): each is marked with ``checks`` alone, in one pass of C."""
    checks = list(dict.fromkeys(checks))
    _open.update(checks)
    marks.update(
        zip(map(weakref.ref, targets, itertools.repeat(_unverified._remove)), map(list.copy, itertools.repeat(checks)))
    )


def carried_by(nodes: list[Node]) -> list[Check]:
    """The unpassed checks ``nodes`` carry, each once, in order (what a realize reading them carries on)."""
    get = marks.get
    ref = weakref.ref
    found = dict.fromkeys(itertools.chain.from_iterable(filter(None, map(get, map(ref, nodes)))))
    return [c for c in found if not c.passed]
