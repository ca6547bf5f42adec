"""The grading journal: each finished row kept beside the gradebook, so a grader killed part-way can resume.

``fleetlab grade --out grades.csv`` keeps ``grades.csv.journal/`` (a folder
the grader creates, mode 0700): one JSON file per notebook graded, written
atomically as soon as its row is made, holding the notebook's path, the
sha256 of its bytes, its learner, its lab and its row. A rerun with the
same ``--out`` takes a notebook's row from the journal when all of these
are unchanged, and grades the others; ``--restart`` empties it first.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from fleetlab.core.files import write_atomically
from fleetlab_instructor.report.gradebook import row_from_json, row_json
from fleetlab_instructor.grade.grade import GradeRow
from fleetlab_instructor.grade.submissions import Submission


def journal_of(out: Path) -> Path:
    """The journal folder of the gradebook ``out``: ``<out>.journal`` beside it."""
    return out.parent / f"{out.name}.journal"


def sha256_of(text: str) -> str:
    """The sha256 of a notebook's bytes, from its text (UTF-8 decoding and encoding give the same bytes back)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Journal:
    """The rows finished so far in ``folder`` (``restart``: forget them all first)."""

    def __init__(self, folder: Path, *, restart: bool = False) -> None:
        if restart:
            shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.folder = folder

    def finished(self, sub: Submission, sha256: str) -> GradeRow | None:
        """``sub``'s row if the journal holds one for this path, learner, lab and sha256; else None."""
        try:
            entry = json.loads(self._entry(sub).read_text(encoding="utf-8"))
            if (entry["path"], entry["learner"], entry["lab"], entry["sha256"]) != \
                    (str(sub.path), sub.learner, sub.lab, sha256):
                return None
            return row_from_json(entry["row"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # none written yet, or not one this grader wrote: grade the notebook again

    def record(self, sub: Submission, sha256: str, row: GradeRow) -> None:
        """Keep ``sub``'s finished ``row`` (one file, replaced atomically)."""
        write_atomically(self._entry(sub), json.dumps(
            {"path": str(sub.path), "learner": sub.learner, "lab": sub.lab, "sha256": sha256, "row": row_json(row)}))

    def _entry(self, sub: Submission) -> Path:
        return self.folder / f"{hashlib.sha256(str(sub.path).encode('utf-8', 'surrogateescape')).hexdigest()}.json"
