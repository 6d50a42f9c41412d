"""What vkml did: event counters and the kernels of recent realizes.

>>> import vkml
>>> vkml.debug.reset_counters()
>>> _ = (vkml.ones(4) * 2).numpy()
>>> vkml.debug.counters()["dispatches"]
1
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque

from . import config
from .runtime import counters as _counters

# Names and grids of the kernels dispatched by recent realizes, newest last.
recent_kernels: deque = deque(maxlen=256)
# Callables given every dispatched Kernel (vkml-dump-spirv --run uses this).
kernel_listeners: list = []


def counters() -> dict[str, int]:
    """A copy of the event counters: kernels_compiled, dispatches, submissions, barriers, bytes_uploaded, ..."""
    return _counters.snapshot()


def reset_counters() -> None:
    """Zero every counter."""
    _counters.reset_counters()


def record_dispatches(device_name: str, dispatches) -> None:
    for d in dispatches:
        recent_kernels.append((device_name, d.kernel.name, d.grid, d.kernel.local_size))
        for listener in kernel_listeners:
            listener(d.kernel)


# ---------------------------------------------------------------------- timed runs: VKML_DEBUG and vkml.profiler
# Callables given (device_name, dispatches, seconds, host_start) for every realize's run while they
# are listed: vkml.profiler.profile adds one for the length of its block.
run_listeners: list = []


def level() -> int:
    """``VKML_DEBUG``: 0 (quiet), 1 (a line per realize), 2 (and a line per kernel), 3 (and its ops)."""
    return config.debug_level()


def timing_wanted() -> bool:
    """Whether realizes time each dispatch: ``VKML_DEBUG`` >= 1, or a profiler is recording."""
    return bool(run_listeners) or config.debug_level() >= 1


# bytes_uploaded and bytes_downloaded when the last VKML_DEBUG line was printed: each line counts
# the transfers since the one before (uploads of a step's inputs, downloads of the last results)
_transfers_seen = {"bytes_uploaded": 0, "bytes_downloaded": 0}


def run_timed(device, dispatches, planned: bool, groups=None) -> None:
    """``device.run(dispatches)`` with each dispatch timed (GPU timestamps on Vulkan, wall clock on the
    CPU), handed to ``run_listeners`` and, under ``VKML_DEBUG``, printed to stderr. ``groups``: the
    fused groups (``scheduler.fused_groups``), for ``VKML_DEBUG=3``.

    Timing makes the host wait for each run, so the overlap of Python and GPU work is lost while it is on.
    """
    queries = getattr(device, "timestamp_queries", None)
    timed = queries is None or queries.supported
    before = _counters.snapshot()
    host_start = time.perf_counter()
    seconds = device.run(dispatches, timestamps=True) if timed else device.run(dispatches)
    if not timed:
        device.synchronize()
    wall = time.perf_counter() - host_start
    for listener in list(run_listeners):
        listener(device.name, dispatches, seconds, host_start)
    debug_level = config.debug_level()
    if debug_level >= 1:
        after = _counters.snapshot()
        # max(0, ...): reset_counters() may have zeroed the counters since the last line
        moved = tuple(max(0, after[key] - _transfers_seen[key]) for key in _transfers_seen)
        _transfers_seen.update((key, after[key]) for key in _transfers_seen)
        report = run_report(device.name, dispatches, seconds, wall, planned, after, before, debug_level, groups, moved)
        print(report, file=sys.stderr)


def _size(nbytes: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if nbytes < 1024 or unit == "MiB":
            return f"{nbytes} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


def run_report(
    device_name: str,
    dispatches,
    seconds,
    wall: float,
    planned: bool,
    after: dict,
    before: dict,
    debug_level: int = 2,
    groups=None,
    transfers: tuple[int, int] = (0, 0),
) -> str:
    """What ``VKML_DEBUG`` prints for one realize on one device.

    Level 1: one summary line: kernels, dispatches, submissions, the bytes the kernels bind
    (every buffer each dispatch reads or writes, counted once per dispatch), the bytes uploaded
    and downloaded since the previous line, GPU time (timestamps; the interpreter's wall clock on
    the CPU), wall time, whether the plan was made or replayed, kernels compiled. Level 2: and a
    line per dispatch. Level 3: and under each dispatch the ops fused into its kernel, each with
    the user's source line (recorded when ``VKML_DEBUG=3`` is set before vkml is imported).
    """
    launched = after["dispatches"] - before["dispatches"]
    compiled = after["kernels_compiled"] - before["kernels_compiled"]
    timer = "GPU" if device_name != "cpu" else "interpreter"
    total = "n/a (no timestamps)" if seconds is None else f"{sum(seconds) * 1e3:.3f} ms {timer}"
    plan = "planned" if planned else "plan replayed"
    bound = sum(b.nbytes for d in dispatches for b in d.buffers.values())
    uploaded, downloaded = transfers
    lines = [
        f"vkml: realize on {device_name}: {len(dispatches)} kernels, {launched} dispatches, "
        f"{after['submissions'] - before['submissions']} submission, {_size(bound)} bound, "
        f"{_size(uploaded)} up, {_size(downloaded)} down, {total}, {wall * 1e3:.3f} ms wall, "
        f"{plan}, {compiled} kernels compiled"
    ]
    if debug_level < 2:
        return lines[0]
    owners = _group_of_each_dispatch(groups, len(dispatches)) if debug_level >= 3 else None
    for i, d in enumerate(dispatches):
        took = "      -" if seconds is None else f"{seconds[i] * 1e3:7.3f}"
        lines.append(f"  {i:3d} {took} ms  {d.kernel.name}  grid {tuple(d.grid)} x {tuple(d.kernel.local_size)}")
        if owners is not None and owners[i] is not None:
            lines += [f"        {_op_text(n)}" for n in owners[i] if _shown(n)]
    if debug_level >= 3 and owners is None:
        lines.append("  (the fused groups do not match the dispatches one to one: listed by group)")
        for k, (_, members) in enumerate(groups or ()):
            lines.append(f"  group {k}")
            lines += [f"        {_op_text(n)}" for n in members if _shown(n)]
    return "\n".join(lines)


def _group_of_each_dispatch(groups, count: int):
    """Per dispatch, the nodes of its group (None for a group's second and later passes); None when
    the groups' dispatch counts do not add up to ``count``."""
    if groups is None or sum(n for n, _ in groups) != count:
        return None
    owners: list = []
    for n, members in groups:
        owners += [members] + [None] * (n - 1) if n else []
    return owners


def _shown(node) -> bool:
    """Whether a fused node is an op of the user's: not a scalar constant or its broadcast (a kernel parameter)."""
    return node.op != "const" and not (node.op == "view" and node.srcs and node.srcs[0].op == "const")


def _op_text(node) -> str:
    """One fused op: its name, shape and dtype, and the user's line that made it."""
    name = node.arg.op.name if node.op in ("elementwise", "reduce") else node.op
    shape = "(" + ", ".join(map(str, node.shape)) + ("," if len(node.shape) == 1 else "") + ")"
    where = getattr(node, "origin", None) or "source unknown: set VKML_DEBUG=3 before importing vkml"
    return f"{name:<12} {shape} {node.dtype.name}  at {where}"


# ---------------------------------------------------------------------- the lazy graph of a tensor


def dump_graph(*tensors, format: str = "text", file=None) -> str:  # noqa: A002 - the name users expect
    """The lazy graph behind ``tensors``, as text (one node a line, sources indented below their user)
    or as Graphviz ``dot`` (``format="dot"``); also written to ``file`` (a path or a stream) when given.

    Realized nodes show as ``buffer`` leaves; a node used twice is printed once and referred to by
    its number after that.

    >>> import vkml
    >>> print(vkml.debug.dump_graph(vkml.ones(2) * 2))  # doctest: +ELLIPSIS
    %0 elementwise (2,) float32 cpu  Elementwise('mul', vkml.float32)
      %1 view (2,) float32 cpu  ViewStack(...
        %2 const () float32 cpu  1.0
      %3 view (2,) float32 cpu  ViewStack(...
        %4 const () float32 cpu  2.0
    """
    if format not in ("text", "dot"):
        raise ValueError(f"dump_graph(): format must be 'text' or 'dot', got {format!r}")
    roots = [getattr(t, "node", t) for t in tensors]
    numbers: dict[int, int] = {}
    text = _dot(roots, numbers) if format == "dot" else "\n".join(_text(roots, numbers))
    if isinstance(file, (str, bytes)) or hasattr(file, "__fspath__"):
        with open(file, "w") as out:
            out.write(text + "\n")
    elif file is not None:
        file.write(text + "\n")
    return text


def _label(node) -> str:
    shape = "(" + ", ".join(map(str, node.shape)) + ("," if len(node.shape) == 1 else "") + ")"
    arg = "" if node.arg is None else f"  {_short(node.arg)}"
    return f"{node.op} {shape} {node.dtype.name} {node.device.name}{arg}"


def _short(arg) -> str:
    text = repr(arg)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(roots, numbers: dict) -> list[str]:
    lines: list[str] = []
    stack = [(root, 0) for root in reversed(roots)]
    while stack:
        node, depth = stack.pop()
        pad = "  " * depth
        if id(node) in numbers:
            lines.append(f"{pad}%{numbers[id(node)]} (above)")
            continue
        numbers[id(node)] = len(numbers)
        lines.append(f"{pad}%{numbers[id(node)]} {_label(node)}")
        stack.extend((src, depth + 1) for src in reversed(node.srcs))
    return lines


def _dot(roots, numbers: dict) -> str:
    lines = ["digraph vkml {", "  node [shape=box, fontname=monospace];"]
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) in numbers:
            continue
        numbers[id(node)] = len(numbers)
        label = _label(node).replace('"', '\\"')
        lines.append(f'  n{numbers[id(node)]} [label="{label}"];')
        stack.extend(node.srcs)
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        lines.extend(f"  n{numbers[id(src)]} -> n{numbers[id(node)]};" for src in node.srcs)
        stack.extend(node.srcs)
    lines.append("}")
    return "\n".join(lines)


# ---------------------------------------------------------------------- the graph with its kernels

# ``nodes -> [(dispatches, [nodes the kernel computes]), ...]`` in dispatch order: set by
# vkml/schedule/scheduler.py when it is imported (debug sits below the scheduler and cannot import it).
kernel_grouper = None


def graph(tensors, path=None) -> str:
    """The lazy graph behind ``tensors`` (a tensor or a sequence of them) as Graphviz dot, with the
    ops each kernel of their realize would compute drawn inside one box per kernel (``cluster_k``,
    in dispatch order, labelled with its number of dispatches). Nothing is realized.

    ``path``: write the dot text there; when it ends in ``.svg``, write the dot text next to it
    (``.dot``) and the SVG drawn by Graphviz's ``dot`` there (``RuntimeError`` when ``dot`` is not
    installed). A ``.dot`` path also gets an SVG beside it when ``dot`` is installed.
    Returns the dot text.
    """
    import shutil  # lazy: off import vkml's path

    items = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    roots = [getattr(t, "node", t) for t in items]
    numbers: dict[int, int] = {}
    body = _dot(roots, numbers).splitlines()[:-1]  # every node and edge; the closing brace comes last
    by_device: dict[int, list] = {}
    for root in roots:
        if not root.realized:
            by_device.setdefault(id(root.device), []).append(root)
    placed: set[int] = set()
    k = 0
    for nodes in by_device.values():
        for dispatches, members in kernel_grouper(nodes) if kernel_grouper is not None else ():
            # A node recomputed by two kernels is drawn once, in the first (Graphviz boxes cannot share nodes).
            inside = [numbers[id(n)] for n in members if id(n) in numbers and id(n) not in placed]
            placed.update(id(n) for n in members)
            body.append(f"  subgraph cluster_{k} {{")
            body.append(f'    label="kernel {k} ({dispatches} dispatch{"es" if dispatches != 1 else ""})";')
            body.append("    style=rounded; color=blue;")
            body += [f"    n{i};" for i in inside]
            body.append("  }")
            k += 1
    text = "\n".join([*body, "}"])
    if path is None:
        return text
    path = os.fspath(path)
    svg = path.endswith(".svg")
    dot_path = path[: -len(".svg")] + ".dot" if svg else path
    with open(dot_path, "w") as out:
        out.write(text + "\n")
    dot = shutil.which("dot")
    if svg and dot is None:
        raise RuntimeError(
            f"graph(): writing {path!r} needs Graphviz's dot, which is not installed; {dot_path!r} written"
        )
    if dot is not None:
        import subprocess  # only here: `import vkml` spawns nothing and need not load subprocess

        target = path if svg else os.path.splitext(path)[0] + ".svg"
        subprocess.run([dot, "-Tsvg", dot_path, "-o", target], check=True, capture_output=True)
    return text
