"""Rows of bench/bench.py's results, and how they print: a markdown table and JSON.

>>> row = Row("add", "2^20", peer="eager (cpu)", vkml_median=1e-3, peer_median=5e-4)
>>> row.ratio_text()
'2.00'
>>> Row("add", peer="eager (cuda)", vkml_wall_median=1e-3, peer_wall_median=1.5e-3).speedup_text()
'1.50'
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

from bench_timing import geometric_mean


@dataclass
class Row:
    """One line of the results: vkml against one peer on one workload.

    ``clock`` says which times the min/median columns hold: ``"gpu"`` (vkml: dispatch
    timestamps, or wall time on the CPU reference device; PyTorch: CUDA events, or wall time
    on the CPU) or ``"wall"`` (time to result seen from Python). ``ratio`` is vkml / peer on
    the medians. ``speedup`` is the headline, the user's clock: peer wall time / vkml wall time
    (above 1: vkml is faster), from the wall medians, or the medians of a ``"wall"`` row. ``status`` is ``ok``,
    ``mismatch`` (results differ beyond ``tolerance``), ``error`` or ``skipped``.
    """

    workload: str
    size: str = ""
    peer: str = ""
    clock: str = "gpu"
    vkml_min: float | None = None
    vkml_median: float | None = None
    vkml_wall_median: float | None = None
    peer_min: float | None = None
    peer_median: float | None = None
    peer_wall_median: float | None = None
    ratio: float | None = None
    vkml_rate: float | None = None
    peer_rate: float | None = None
    rate_unit: str = ""
    vkml_peak_bytes: int | None = None
    peer_peak_bytes: int | None = None
    rel_error: float | None = None
    tolerance: float | None = None
    samples: tuple[int, int] = (0, 0)
    status: str = "ok"
    note: str = ""
    phases: dict[str, float] = field(default_factory=dict)  # medians, seconds (graph and compile rows)
    speedup: float | None = None

    def __post_init__(self):
        if self.ratio is None and self.vkml_median and self.peer_median:
            self.ratio = self.vkml_median / self.peer_median
        if self.clock == "wall":
            self.vkml_wall_median = self.vkml_wall_median or self.vkml_median
            self.peer_wall_median = self.peer_wall_median or self.peer_median
        if self.speedup is None and self.vkml_wall_median and self.peer_wall_median:
            self.speedup = self.peer_wall_median / self.vkml_wall_median

    def speedup_text(self) -> str:
        return "—" if self.speedup is None else f"{self.speedup:.2f}"

    def ratio_text(self) -> str:
        return "—" if self.ratio is None else f"{self.ratio:.2f}"


# ---------------------------------------------------------------------------- units


def seconds_text(seconds: float | None) -> str:
    """``1.23 ms`` style, three significant digits."""
    if seconds is None:
        return "—"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def rate_text(rate: float | None, unit: str) -> str:
    """``4.12 TB/s`` / ``51 TFLOP/s`` style."""
    if rate is None or not unit:
        return "—"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if rate >= scale:
            return f"{rate / scale:.3g} {prefix}{unit}"
    return f"{rate:.3g} {unit}"


def mib_text(nbytes: int | None) -> str:
    return "—" if nbytes is None else f"{nbytes / 2**20:,.0f}"


def error_text(row: Row) -> str:
    if row.rel_error is None:
        return "—"
    text = f"{row.rel_error:.1e}"
    return text if row.status != "mismatch" else f"**{text} MISMATCH**"


# ---------------------------------------------------------------------------- tables

COLUMNS = (
    "workload",
    "size",
    "peer",
    "vkml wall",
    "peer wall",
    "PyTorch/vkml (wall)",
    "clock",
    "vkml min / median",
    "peer min / median",
    "vkml/peer (clock)",
    "vkml rate",
    "peer rate",
    "peak MiB vkml / peer",
    "rel. err",
    "note",
)


def _cells(row: Row) -> list[str]:
    if row.status in ("error", "skipped"):
        return [row.workload, row.size, row.peer, *[""] * (len(COLUMNS) - 4), f"{row.status}: {row.note}"]
    return [
        row.workload,
        row.size,
        row.peer or "—",
        seconds_text(row.vkml_wall_median),
        seconds_text(row.peer_wall_median),
        f"**{row.speedup_text()}**",
        row.clock,
        f"{seconds_text(row.vkml_min)} / {seconds_text(row.vkml_median)}",
        f"{seconds_text(row.peer_min)} / {seconds_text(row.peer_median)}" if row.peer else "—",
        row.ratio_text(),
        rate_text(row.vkml_rate, row.rate_unit),
        rate_text(row.peer_rate, row.rate_unit),
        f"{mib_text(row.vkml_peak_bytes)} / {mib_text(row.peer_peak_bytes)}",
        error_text(row),
        row.note,
    ]


def markdown_table(header: list[str], lines: list[list[str]]) -> str:
    escaped = [[cell.replace("|", "\\|") for cell in line] for line in lines]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(line) + " |" for line in escaped]
    return "\n".join(out)


def results_table(rows: list[Row]) -> str:
    return markdown_table(list(COLUMNS), [_cells(r) for r in rows])


def phases_table(rows: list[Row]) -> str:
    """Medians of each phase of the rows that have phases (graph and cold-compile rows)."""
    with_phases = [r for r in rows if r.phases]
    names: list[str] = []
    for r in with_phases:
        names += [p for p in r.phases if p not in names]
    lines = [[r.workload] + [seconds_text(r.phases.get(p)) for p in names] for r in with_phases]
    return markdown_table(["workload (medians)"] + names, lines) if lines else ""


def summary(rows: list[Row]) -> list[str]:
    """Geometric means: first the headline, PyTorch/vkml wall time over every compared row; then
    vkml/peer device-clock time over every compared row and over the op suite alone."""
    lines = []
    walls = [r for r in rows if r.speedup is not None and r.status == "ok"]
    mean = geometric_mean([r.speedup for r in walls])
    if mean is not None:
        lines.append(
            f"geometric mean of PyTorch/vkml wall time (the user's clock, above 1: vkml is faster) "
            f"over {len(walls)} compared rows: {mean:.2f}"
        )
    for label, chosen in (
        ("all compared rows", [r for r in rows if r.ratio is not None and r.status == "ok"]),
        (
            "op suite (op:*)",
            [r for r in rows if r.ratio is not None and r.status == "ok" and r.workload.startswith("op:")],
        ),
    ):
        mean = geometric_mean([r.ratio for r in chosen])
        if mean is not None:
            lines.append(f"geometric mean of vkml/peer device-clock time over {label} ({len(chosen)}): {mean:.2f}")
    return lines


def to_json(meta: dict, rows: list[Row]) -> str:
    def clean(value):
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return value

    records = [{k: clean(v) for k, v in asdict(r).items()} for r in rows]
    return json.dumps({"meta": meta, "rows": records, "summary": summary(rows)}, indent=1, ensure_ascii=False)
