"""The report stage's entry: what a graded batch, or a run's shard files, become on disk.

``publish`` writes what ``fleetlab grade`` leaves: the gradebook, a feedback file per learner, the
shard file of a run (``--run``) and the room report when asked. ``publish_merged`` does the same
for ``fleetlab gradebook merge``: the shard files of one run joined into its gradebook (and its
room report).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fleetlab_instructor.grade.batch import Batch
from fleetlab_instructor.grade.grade import GradeRow
from fleetlab_instructor.grade.submissions import Shard, Submission
from fleetlab_instructor.report import gradebook
from fleetlab_instructor.report.feedback import write_feedback


@dataclass(frozen=True)
class Published:
    """What ``publish`` wrote: the gradebook it built, and the shard file's path (None without a run)."""

    book: gradebook.Gradebook
    shard_file: Path | None


def publish(batch: Batch, *, out: Path, feedback: Path, room_report: Path | None, run: str | None,
            shard: Shard) -> Published:
    """Write ``batch``'s gradebook to ``out``, its feedback files into ``feedback``, its shard file beside ``out``
    when ``run`` names the run, and its room report to ``room_report`` when given."""
    book = gradebook.build(batch.submissions, batch.rows)
    gradebook.write_csv(book, out)
    write_feedback(book, batch.submissions, batch.rows, feedback)
    shard_file = None if run is None else gradebook.write_shard(
        gradebook.ShardFile(run, shard, book, list(zip(batch.submissions, batch.rows, strict=True)), batch.notes),
        out.parent)
    if room_report is not None:
        _write_room_report(book, batch.submissions, batch.rows, room_report, batch.notes)
    return Published(book, shard_file)


def publish_merged(shards: list[Path], *, out: Path, room_report: Path | None) -> gradebook.ShardFile:
    """Join the shard files ``shards`` of one run (``gradebook.merge_shards`` says what it refuses), write the
    gradebook to ``out`` and the whole run's room report to ``room_report`` when given; the joined run."""
    whole = gradebook.merge_shards({path: gradebook.read_shard(path) for path in dict.fromkeys(shards)})
    gradebook.write_csv(whole.book, out)
    if room_report is not None:
        _write_room_report(whole.book, [sub for sub, _ in whole.graded], [row for _, row in whole.graded],
                           room_report, whole.notes)
    return whole


def _write_room_report(book: gradebook.Gradebook, submissions: list[Submission], rows: list[GradeRow], path: Path,
                       notes: list[str]) -> None:
    from fleetlab_instructor.report.room import room_summary, write_room_report  # matplotlib: only when asked

    write_room_report(room_summary(book, submissions, rows), path, notes=notes)
