"""What the exports read of a collect's manifest: how late each learner's notebook of a lab was.

The manifest is a CSV with a header row; this module reads three columns and
ignores any other (a collect also writes when it collected and its run id)::

    learner,lab,collected_at,run,late_days
    alice,03,2026-12-04T17:00:00Z,day1,
    bob,03,2026-12-05T09:30:00Z,day1,0.7

``learner`` is the hub user name (the learner id of the gradebook), ``lab``
the lab's two digits, and ``late_days`` how many days after the deadline the
graded copy was collected: blank or 0 when on time. A manifest without a
``late_days`` column says nobody was late. Whoever writes the manifest (the
collect step) judges lateness; this module only reads it.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from fleetlab.core.errors import InvalidInput

LEARNER = "learner"
LAB = "lab"
LATE_DAYS = "late_days"
_HINT = "a manifest is a CSV with the columns learner, lab and (optionally) late_days, as `fleetlab collect` writes it"


def read_lateness(path: Path) -> dict[tuple[str, str], float]:
    """(learner, lab) -> days late, for every notebook the manifest at ``path`` says was late (more than 0 days).

    Raises InvalidInput naming the file, the line and the column that is wrong.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput("--manifest", f"cannot read {str(path)!r} ({exc})", hint=_HINT) from None
    reader = csv.DictReader(text.splitlines())
    columns = reader.fieldnames or []
    for needed in (LEARNER, LAB):
        if needed not in columns:
            raise InvalidInput("--manifest", f"{str(path)!r} has no {needed!r} column (its header: {columns})",
                               hint=_HINT)
    if LATE_DAYS not in columns:
        return {}
    late: dict[tuple[str, str], float] = {}
    for line, row in enumerate(reader, start=2):
        cell = (row.get(LATE_DAYS) or "").strip()
        try:
            days = float(cell) if cell else 0.0
        except ValueError:
            days = math.nan
        if not math.isfinite(days) or days < 0:
            raise InvalidInput(LATE_DAYS, f"is {cell!r} on line {line} of {str(path)!r}, not a number of days >= 0",
                               hint="leave it blank for a notebook on time")
        if days > 0:
            late[row[LEARNER], row[LAB]] = days
    return late
