"""The manifest ``fleetlab collect`` writes beside the notebooks it collected, and which notebook is late.

``OUT/fleetlab-collect.json`` (``MANIFEST``), UTF-8 JSON::

    {"format": "fleetlab-collect/1",
     "run": "day1-final",                      # this collect's run id
     "collected_at": "2026-12-04T17:05:12Z",   # when it began (UTC)
     "source": "the hub http://127.0.0.1:8000",
     "labs": ["01"],
     "on_time": {"run": "day1-deadline", "collected_at": "2026-12-04T17:00:03Z"},  # or null
     "notebooks": [
       {"learner": "h.o@example.org",           # the hub user, as the hub names them
        "folder": "h.o@example.org",            # their folder in OUT (the id escaped), the id `grade` reads
        "path": "h.o@example.org/01_at_least_once.ipynb",   # relative to OUT
        "lab": "01",
        "collected_at": "2026-12-04T17:05:13Z",
        "run": "day1-final",
        "sha256": "…",                          # of the notebook's bytes as collected
        "late": false}],
     "left_out": [{"learner": "bob", "path": "labs/Untitled.ipynb", "why": "…"}]}

``on_time`` is null for a collect at the deadline: it is the on-time snapshot, and none of its
notebooks is late. A later collect names that snapshot (``--on-time``): each of its notebooks is late
when the snapshot holds no notebook of that learner at that path, or one with another sha256. The
file times of a learner's home play no part: a learner can set them.

How late (``Manifest.lateness``, what ``fleetlab gradebook adjust --collected`` and the exports read):
a late notebook's days late are the time from the on-time snapshot's ``collected_at`` to the
notebook's own ``collected_at``, each day begun counted whole (a notebook collected an hour after
the deadline's collect is 1 day late). Both times are the facilitator's collects.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from fleetlab.core.errors import InvalidInput
from fleetlab.core.files import write_atomically

MANIFEST = "fleetlab-collect.json"
FORMAT = "fleetlab-collect/1"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
"""How the manifest writes a time: UTC, to the second."""
DAY = 24 * 60 * 60


@dataclass(frozen=True)
class Collected:
    """One notebook a collect wrote (the module's docstring says each field)."""

    learner: str
    folder: str
    path: str
    lab: str
    collected_at: str
    run: str
    sha256: str
    late: bool


@dataclass(frozen=True)
class LeftOut:
    """A file in a learner's home that was not collected, or a learner whose home could not be read, and why."""

    learner: str
    path: str
    why: str


@dataclass
class Manifest:
    """A collect: its run, when, from where, which labs, the on-time snapshot it was judged by, what it holds."""

    run: str
    collected_at: str
    source: str
    labs: list[str]
    on_time: dict[str, str] | None
    notebooks: list[Collected] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)

    def learner_of(self, folder: str) -> str | None:
        """The hub user whose notebooks are in ``folder`` (a learner id as ``grade`` reads it), or None."""
        return next((entry.learner for entry in self.notebooks if entry.folder == folder), None)

    def late(self, path: str) -> bool:
        """Whether the notebook at ``path`` (relative to the collected folder) came in late; False if unknown."""
        return any(entry.late for entry in self.notebooks if entry.path == path)

    def lateness(self) -> dict[tuple[str, str], int]:
        """(learner id as ``grade`` reads it, i.e. the folder; lab) -> whole days late, for each late notebook.

        Raises InvalidInput when a notebook is late but the manifest names no on-time snapshot.
        """
        late = [entry for entry in self.notebooks if entry.late]
        if late and self.on_time is None:
            raise InvalidInput("on_time", f"is null in collect {self.run!r}, yet it marks notebooks late",
                               hint="collect again with --on-time naming the deadline's collect")
        return {(entry.folder, entry.lab): days_between(self.on_time["collected_at"], entry.collected_at)
                for entry in late}


def days_between(deadline: str, collected: str) -> int:
    """Whole days from ``deadline`` to ``collected`` (manifest times), each day begun counted, at least 1."""
    try:
        seconds = (datetime.strptime(collected, TIME_FORMAT) - datetime.strptime(deadline, TIME_FORMAT)).total_seconds()
    except ValueError as exc:
        raise InvalidInput("collected_at", f"a time of the manifest is not UTC to the second ({exc})",
                           hint="a manifest time reads 2026-12-04T17:00:03Z; collect again") from None
    return max(1, math.ceil(seconds / DAY))


def write_manifest(manifest: Manifest, folder: Path) -> Path:
    """Write ``manifest`` as ``folder/MANIFEST``; its path."""
    path = folder / MANIFEST
    write_atomically(path, json.dumps({"format": FORMAT, **asdict(manifest)}, indent=1, ensure_ascii=False) + "\n")
    return path


def read_manifest(folder: Path) -> Manifest:
    """The manifest of the collected ``folder``; InvalidInput naming it when there is none or it is unreadable."""
    path = folder / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.pop("format", None) != FORMAT:
            raise ValueError(f"its format is not {FORMAT}")
        return Manifest(**{**data, "notebooks": [Collected(**entry) for entry in data["notebooks"]],
                           "left_out": [LeftOut(**entry) for entry in data["left_out"]]})
    except FileNotFoundError:
        raise InvalidInput(str(folder), f"holds no {MANIFEST}: it is no folder `fleetlab collect` wrote",
                           hint="name the --out folder of a collect") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise InvalidInput(str(path), f"is no manifest of `fleetlab collect` ({exc})",
                           hint="collect again into a new folder") from None
