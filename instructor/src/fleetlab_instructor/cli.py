"""The instructor's subcommands of ``fleetlab``: ``assign``, ``release``, ``grade``, ``gradebook`` and ``bench``, click commands.

The ``fleetlab`` command finds each through its ``fleetlab.commands`` entry point.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from fleetlab.backends.backend import BACKEND_NAMES
from fleetlab.cli.argtypes import POSITIVE_FLOAT, POSITIVE_INT, ChoiceList
from fleetlab.cli.output import stdout_console
from fleetlab.core.errors import InvalidInput
from fleetlab_instructor.bench.suite import DEFAULT_BACKENDS, DEFAULT_OUT, MEASUREMENTS
from fleetlab_instructor.bench.suite import run as run_suite
from fleetlab_instructor.grading.grade import DEFAULT_WORKERS
from fleetlab_instructor.grading.submissions import ALL, Shard, parse_shard

PATH = click.Path(path_type=Path)


class ShardType(click.ParamType):
    """``I/N``: shard I of N, 1 <= I <= N (``submissions.parse_shard``)."""

    name = "I/N"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Shard:
        if isinstance(value, Shard):
            return value
        try:
            return parse_shard(str(value))
        except InvalidInput as exc:
            self.fail(exc.problem + (f" ({exc.hint})" if exc.hint else ""), param, ctx)


GRADE_HELP = """Grade submitted notebooks into a gradebook CSV and a feedback file per learner.

Learner ids: a notebook is <learner>_<NN>_<lab>.ipynb (alice_01_at_least_once.ipynb),
or <NN>_<lab>.ipynb in a folder named for its learner (alice/01_at_least_once.ipynb);
NN is its lab. A notebook with no learner id is refused. A learner id is letters,
digits, '.', '-' and '_'.

The gradebook (Canvas's gradebook CSV layout): a header row (learner, one column per
check of the labs handed in, total), a 'Points Possible' row of the grader's own
maximum points, then one row per learner; numbers only, blank where a learner handed
in no notebook of that lab. Feedback: FEEDBACK/<learner>.md (FEEDBACK is feedback/
beside the gradebook unless --feedback names it), every public case's diagnosis and,
for a failed hidden case, the mistake it points to, never its inputs.

--shard I/N grades the learners at positions I-1, I-1+N, ... of the sorted learner
ids (every shard must see the same submissions); `fleetlab gradebook merge` joins
the shards' gradebooks into the one an unsharded run writes.
"""


@click.command("assign", help="write the student notebooks from the instructor notebooks")
@click.option("--solutions", type=PATH, default=Path("labs/solutions"), help="instructor notebooks")
@click.option("--out", type=PATH, default=Path("labs"), help="where the student notebooks go")
@click.option("--check", is_flag=True, help="write nothing; exit 1 naming student notebooks that are stale")
def assign(solutions: Path, out: Path, check: bool) -> int:
    from fleetlab_instructor.grading.assign import assign as write_student_notebooks
    from fleetlab_instructor.grading.assign import stale

    console = stdout_console()
    if check:
        outdated = stale(solutions, out)
        for path in outdated:
            print(f"stale: {path}", file=sys.stderr)
        if outdated:
            print("run `fleetlab assign` and commit the student notebooks", file=sys.stderr)
            return 1
        console.print(f"student notebooks in {out} are up to date", soft_wrap=True)  # a path must not wrap
        return 0
    for path in write_student_notebooks(solutions, out):
        console.print(f"wrote {path}", soft_wrap=True)
    return 0


@click.command(
    "release",
    short_help="write the learner's course, without answers, into OUT",
    help="Write the learner's course into OUT: the student notebooks, the fleetlab library, the tooling, "
    "a README and a Makefile (make lab, make test); no solution, hidden case, reference answer, catalogue "
    "or facilitator note. Prints the release's file count and size.",
)
@click.argument("out", type=PATH, metavar="OUT", help="the folder to write, missing or empty (or see --force)")
@click.option("--course", type=PATH, default=Path("."), help="the course's root (default: the current folder)")
@click.option("--force", is_flag=True, help="replace what OUT holds (a .git in it is kept)")
def release(out: Path, course: Path, force: bool) -> int:
    from fleetlab_instructor.grading.release import write_release

    written = write_release(course, out, force=force)
    size = f"{written.size / 1024:,.0f} KiB" if written.size < 1024 * 1024 else f"{written.size / 1024 ** 2:.1f} MiB"
    stdout_console().print(f"wrote the learner's release to {out}: {written.files} files, {size}", soft_wrap=True,
                           highlight=False)
    return 0


UNSEALED_WARNING = ("warning: grading unsandboxed. Learners' code runs as the grader's user, with the grader's view "
                    "of the machine: use --unsandboxed only for notebooks you trust (docs/architecture.md"
                    "#where-an-answer-runs)")


@click.command("grade", short_help="grade submitted notebooks into a gradebook CSV and feedback files",
               help=GRADE_HELP)
@click.argument("paths", nargs=-1, required=True, type=PATH, metavar="PATH...",
                help="notebooks, or folders of them")
@click.option("--out", type=PATH, default=Path("grades.csv"), help="the gradebook CSV to write")
@click.option("--feedback", type=PATH, default=None,
              help="the folder for the feedback files, one <learner>.md each (default: feedback/ beside the "
                   "gradebook)")
@click.option("--report", type=PATH, default=None, metavar="ROOM.html",
              help="also write the room report: per check, the share that passed and the most common "
                   "misconceptions, with a plot, for the facilitator's screen")
@click.option("--shard", type=ShardType(), default=ALL, metavar="I/N",
              help="grade only shard I of N of the learners (default 1/1: all)")
@click.option("--cell-timeout", type=POSITIVE_FLOAT, default=60, help="seconds per cell (default 60)")
@click.option("--notebook-timeout", type=POSITIVE_FLOAT, default=300, help="seconds per notebook (default 300)")
@click.option("--grading-timeout", type=POSITIVE_FLOAT, default=60, help="seconds for the hidden cases (default 60)")
@click.option("--workers", type=POSITIVE_INT, default=DEFAULT_WORKERS,
              help=f"kernels running at once (default {DEFAULT_WORKERS}); the judge takes more notebooks meanwhile")
@click.option("--unsandboxed", is_flag=True,
              help="run learners' code without a sandbox, as the grader's user: only for notebooks you trust, "
                   "where no sandbox can be made (macOS; a kernel without user namespaces; a Gradescope container, "
                   "which is the sandbox there)")
def grade(paths: tuple[Path, ...], out: Path, feedback: Path | None, report: Path | None, shard: Shard,
          cell_timeout: float, notebook_timeout: float, grading_timeout: float, workers: int,
          unsandboxed: bool) -> int:
    from fleetlab_instructor.grading import gradebook
    from fleetlab_instructor.grading.feedback import write_feedback
    from fleetlab_instructor.grading.grade import Limits, grade_notebooks
    from fleetlab_instructor.grading.submissions import find_submissions, shard_of

    feedback = feedback if feedback is not None else out.parent / "feedback"
    if unsandboxed:
        Console(stderr=True).print(UNSEALED_WARNING, style="yellow", highlight=False, soft_wrap=True)
    submissions = shard_of(find_submissions(paths), shard)
    notebooks = [sub.path for sub in submissions]
    limits = Limits(cell=cell_timeout, notebook=notebook_timeout, grading=grading_timeout)
    started = time.monotonic()
    columns = (TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task("grading", total=len(notebooks))
        rows = grade_notebooks(
            notebooks,
            limits=limits,
            workers=workers,
            grader_env=dict(os.environ),
            on_graded=lambda row: bar.advance(task),
            sealed=not unsandboxed,
        )
    seconds = time.monotonic() - started
    book = gradebook.build(submissions, rows)
    gradebook.write_csv(book, out)
    write_feedback(book, submissions, rows, feedback)
    if report is not None:
        from fleetlab_instructor.grading.room import room_summary, write_room_report

        write_room_report(room_summary(book, submissions, rows), report)
    console = stdout_console()
    console.print(gradebook.summary_table(rows, book.maxima))
    rate = len(rows) / seconds * 60 if seconds else 0.0
    learners = f"{len(book.rows)} learner{'' if len(book.rows) == 1 else 's'}"
    share = "" if shard == ALL else f" (shard {shard}: {learners})"
    summary = (f"graded {len(rows)} notebooks{share} in {seconds:.1f} s ({rate:.1f}/min); "
               f"gradebook: {out}; feedback: {feedback}" + (f"; room report: {report}" if report else ""))
    console.print(summary, highlight=False, soft_wrap=True)
    return 0


@click.group("gradebook", help="work with gradebook CSVs that `fleetlab grade` wrote")
def gradebook_group() -> None:
    """The ``gradebook`` subcommands."""


@gradebook_group.command("merge", help="join shards' gradebooks (`fleetlab grade --shard I/N`) into one; refuse "
                                       "a learner graded differently in two, or a check's maximum that differs")
@click.argument("gradebooks", nargs=-1, required=True, type=PATH, metavar="GRADEBOOK.csv...",
                help="the shards' gradebooks")
@click.option("--out", type=PATH, required=True, help="the merged gradebook CSV to write")
def merge(gradebooks: tuple[Path, ...], out: Path) -> int:
    from fleetlab_instructor.grading import gradebook

    merged = gradebook.merge({path: gradebook.read_csv(path) for path in dict.fromkeys(gradebooks)})
    gradebook.write_csv(merged, out)
    summary = f"merged {len(gradebooks)} gradebooks: {len(merged.rows)} learners, {len(merged.maxima)} checks; {out}"
    stdout_console().print(summary, highlight=False, soft_wrap=True)
    return 0


@click.command(
    "bench",
    short_help="measure throughput, library overhead, the virtual clock and lab run times; save JSON",
    help="Run the benchmarks, print one table and save the figures as JSON "
    "(benchmarks report; they never fail on a missed goal).",
)
@click.option("--out", type=PATH, default=DEFAULT_OUT, help=f"where to save the results (default {DEFAULT_OUT})")
@click.option("--backends", type=ChoiceList(BACKEND_NAMES, "backend"), default=DEFAULT_BACKENDS,
              metavar="NAME[,NAME]",
              help=f"backends to measure, comma-separated (default {','.join(DEFAULT_BACKENDS)})")
@click.option("--steps", type=POSITIVE_INT, default=200,
              help="steps per pipeline and clock measurement, and per path in the overhead one (default 200)")
@click.option("--only", type=ChoiceList(MEASUREMENTS, "measurement"), default=MEASUREMENTS, metavar="NAME[,NAME]",
              help=f"measurements to run, comma-separated, from {', '.join(MEASUREMENTS)} (default all)")
def bench(out: Path, backends: tuple[str, ...], steps: int, only: tuple[str, ...]) -> int:
    return run_suite(stdout_console(), only=only, backends=backends, steps=steps, out=out)
