"""Record check results locally, and tell per lab which checks pass.

Results live in ``progress.json`` under ``$FLEETLAB_HOME`` (default
``~/.fleetlab``). Every write replaces the file atomically under a lock (a
``filelock`` lock file, so on Windows too), so two kernels checking at once
never corrupt it or lose a result. A notebook's
result is recorded as what it is: "public pass" with no points until the
grader has run the hidden cases. Times are wall time, even while a lab's
virtual clock has moved the process's idea of time days ahead.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock
from time_machine import escape_hatch

from fleetlab.core.files import write_atomically
from fleetlab.core.settings import settings
from fleetlab.course.grading import registry
from fleetlab.course.grading.display import readable_points, status_label
from fleetlab.course.grading.results import CheckResult

_VIEWS: weakref.WeakSet[Any] = weakref.WeakSet()


@dataclass(frozen=True)
class Row:
    """One check's line in a progress table; ``status`` is "" when never run, ``points`` None when not scored."""

    id: str
    title: str
    status: str
    points: float | None
    max_points: float
    at: str
    grader_adds: int = 0

    @property
    def label(self) -> str:
        """The status in words: ``public cases pass (the grader adds 2 more)``, ``fail``, ``not run``."""
        return status_label(self.status, self.grader_adds) if self.status else "not run"

    @property
    def score(self) -> str:
        """``1.5/3``, or ``–/3`` while no grader has scored it."""
        earned = "–" if self.points is None else readable_points(self.points)
        return f"{earned}/{readable_points(self.max_points)}"


def home() -> Path:
    """``$FLEETLAB_HOME``, or ``~/.fleetlab``."""
    return settings().home or Path.home() / ".fleetlab"


def progress_file() -> Path:
    return home() / "progress.json"


def load() -> dict[str, dict[str, Any]]:
    """Recorded results by check id (empty when nothing was recorded yet)."""
    try:
        data = json.loads(progress_file().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except ValueError:
        return {}  # a hand-edited, unreadable file: start afresh rather than fail a check
    return data.get("checks", {})


def record(result: CheckResult) -> None:
    """Save ``result`` as the latest for its check, then refresh any live progress widget."""
    with _locked():
        checks = load()
        previous = checks.get(result.id, {})
        checks[result.id] = {
            "title": result.title,
            "status": result.status,
            "points": result.points,
            "max_points": result.max_points,
            "grader_adds": result.grader_adds,
            "at": wall_time(),
            "attempts": previous.get("attempts", 0) + 1,
        }
        write_atomically(progress_file(), json.dumps({"version": 1, "checks": checks}, indent=1, sort_keys=True))
    for view in list(_VIEWS):
        view.refresh()


def rows(lab: str) -> list[Row]:
    """Every check of ``lab`` (registered or recorded), with its latest result."""
    recorded = {check_id: entry for check_id, entry in load().items() if check_id.startswith(f"{lab}.")}
    titles = {check.id: (check.title, check.points) for check in registry.checks_of(lab)}
    table = []
    for check_id in sorted(set(titles) | set(recorded)):
        entry = recorded.get(check_id, {})
        title, max_points = titles.get(check_id, (entry.get("title", ""), entry.get("max_points", 0)))
        table.append(
            Row(
                check_id,
                title,
                entry.get("status", ""),
                entry.get("points"),
                max_points,
                entry.get("at", ""),
                entry.get("grader_adds", 0),
            )
        )
    return table


def wall_time() -> str:
    """Now, by the wall clock (never a lab's virtual clock), as ISO 8601 to the second."""
    clock = escape_hatch.datetime.datetime if escape_hatch.is_travelling() else datetime
    return clock.now(UTC).isoformat(timespec="seconds")


def labs() -> list[str]:
    """Labs that have checks or recorded results."""
    return sorted(set(registry.known_labs()) | {check_id.split(".", 1)[0] for check_id in load()})


def watch(view: Any) -> None:
    """Call ``view.refresh()`` after every recorded result, while ``view`` lives."""
    _VIEWS.add(view)


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Hold the progress file's lock for the block (waiting for another kernel's write to end)."""
    folder = home()
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(folder / "progress.lock"):
        yield
