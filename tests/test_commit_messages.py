"""Commit messages from issue 15 on: an imperative subject of at most 72 characters, then a blank line.

Checks every commit after ``SINCE`` (the last commit before the rule was enforced by a test) in this
checkout's history. A checkout without git history (an unpacked release) has no commits to check.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SINCE = "e66e2eb"  # history before it keeps its subjects; every later commit is checked
LIMIT = 72


def _commits() -> list[tuple[str, str, str]]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return []
    known = subprocess.run(["git", "cat-file", "-e", f"{SINCE}^{{commit}}"], cwd=REPO, capture_output=True)
    if known.returncode != 0:  # a shallow clone without the anchor: nothing to compare against
        return []
    out = subprocess.run(
        ["git", "log", "--format=%h%x00%s%x00%b%x1e", f"{SINCE}..HEAD"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [tuple(entry.strip("\n").split("\x00", 2)) for entry in out.split("\x1e") if entry.strip()]


def test_commit_subjects_are_short_and_imperative(limit: int = LIMIT):
    bad = [
        f"{sha}: {subject!r} ({len(subject)} characters)"
        for sha, subject, _ in _commits()
        if len(subject) > limit or subject.endswith(".") or not subject[:1].isupper()
    ]
    assert not bad, (
        f"commit subjects must be imperative, capitalised, without a final period, <= {limit} chars:\n" + "\n".join(bad)
    )
