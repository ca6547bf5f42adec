"""The grade stage's entry: ``grade_batch``, what ``fleetlab grade`` runs between reading its options and its reports.

It takes the notebooks in (``submissions.take_in``: a stray file is a note, never a stop), keeps the
shard's learners, keeps the journal's row of each notebook graded before and unchanged since (same
sha256), grades the rest (``grade.grade_notebooks``), journals each row as it finishes, and returns
every row in the submissions' order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fleetlab_instructor.grade.grade import DEFAULT_WORKERS, GradeRow, Limits, grade_notebooks
from fleetlab_instructor.grade.journal import Journal, journal_of, sha256_of
from fleetlab_instructor.grade.submissions import ALL, Shard, Submission, Unreadable, read_notebook, shard_of, take_in


@dataclass(frozen=True)
class Batch:
    """A graded batch: each submission with its row (same order), intake's notes, and how the rows came."""

    submissions: list[Submission]
    rows: list[GradeRow]
    notes: list[str]
    graded: int
    """Notebooks graded in this run (the others' rows were unreadable files or kept from the journal)."""
    kept: int
    """Rows kept from the journal."""
    seconds: float
    """Wall time of the grading itself."""


def grade_batch(paths: Sequence[Path], *, out: Path, grader_env: Mapping[str, str], shard: Shard = ALL,
                limits: Limits = Limits(), workers: int = DEFAULT_WORKERS, sealed: bool = True, restart: bool = False,
                on_kept: Callable[[Submission, Path], None] = lambda sub, journal: None,
                on_start: Callable[[int], None] = lambda pending: None,
                on_graded: Callable[[GradeRow], None] = lambda row: None) -> Batch:
    """Grade the notebooks under ``paths`` of ``shard``'s learners into a ``Batch``, journalled beside ``out``.

    ``on_kept(submission, journal folder)`` is called for each row kept from the journal (``restart``
    forgets it), then ``on_start(notebooks to grade)``, then ``on_graded(row)`` as each finishes.
    """
    intake = take_in(paths)
    submissions = shard_of(intake.submissions, shard)
    journal = Journal(journal_of(out), restart=restart)
    rows: dict[Submission, GradeRow] = {}
    kept = 0
    pending: dict[str, tuple[Submission, str]] = {}  # notebook path -> (submission, sha256)
    for sub in submissions:
        text = read_notebook(sub.path)
        if isinstance(text, Unreadable):
            rows[sub] = GradeRow(str(sub.path), {}, {}, str(text))
        elif (row := journal.finished(sub, sha256 := sha256_of(text))) is not None:
            rows[sub], kept = row, kept + 1
            on_kept(sub, journal.folder)
        else:
            pending[str(sub.path)] = (sub, sha256)
    on_start(len(pending))

    def finished(row: GradeRow) -> None:
        journal.record(*pending[row.notebook], row)
        on_graded(row)

    started = time.monotonic()
    graded = grade_notebooks([sub.path for sub, _ in pending.values()], limits=limits, workers=workers,
                             grader_env=grader_env, on_graded=finished, sealed=sealed) if pending else []
    seconds = time.monotonic() - started
    rows.update(zip((sub for sub, _ in pending.values()), graded, strict=True))
    return Batch(submissions, [rows[sub] for sub in submissions], [str(note) for note in intake.notes], len(graded),
                 kept, seconds)
