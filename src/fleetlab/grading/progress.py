"""Record check results locally, and tell per lab which checks pass.

Results live in ``progress.json`` under ``$FLEETLAB_HOME`` (default
``~/.fleetlab``). Every write replaces the file atomically under a lock, so
two kernels checking at once never corrupt it or lose a result.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..files import write_atomically
from . import registry
from .results import CheckResult

_VIEWS: weakref.WeakSet[Any] = weakref.WeakSet()


@dataclass(frozen=True)
class Row:
    """One check's line in a progress table; ``status`` is "" when never run."""

    id: str
    title: str
    status: str
    points: float
    max_points: float
    at: str


def home() -> Path:
    """``$FLEETLAB_HOME``, or ``~/.fleetlab``."""
    return Path(os.environ.get("FLEETLAB_HOME") or Path.home() / ".fleetlab")


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
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
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
            Row(check_id, title, entry.get("status", ""), entry.get("points", 0), max_points, entry.get("at", ""))
        )
    return table


def labs() -> list[str]:
    """Labs that have checks or recorded results."""
    return sorted(set(registry.known_labs()) | {check_id.split(".", 1)[0] for check_id in load()})


def watch(view: Any) -> None:
    """Call ``view.refresh()`` after every recorded result, while ``view`` lives."""
    _VIEWS.add(view)


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    home().mkdir(parents=True, exist_ok=True)
    with open(home() / "progress.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
