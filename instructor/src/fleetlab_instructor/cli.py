"""The instructor's subcommands of ``fleetlab``: ``assign``, ``release``, ``handout``, ``collect``, ``grade``,
``feedback``, ``gradebook`` and ``bench``, click commands.

The ``fleetlab`` command finds each through its ``fleetlab.commands`` entry point.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from fleetlab.backends.backend import BACKEND_NAMES
from fleetlab.cli.argtypes import POSITIVE_FLOAT, POSITIVE_INT, ChoiceList
from fleetlab.cli.output import stdout_console
from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading.registry import known_labs
from fleetlab_instructor.bench.suite import DEFAULT_BACKENDS, DEFAULT_OUT, MEASUREMENTS
from fleetlab_instructor.bench.suite import run as run_suite
from fleetlab_instructor.grade.grade import DEFAULT_WORKERS, Limits
from fleetlab_instructor.grade.submissions import ALL, Shard, Submission, parse_run, parse_shard, printable

PATH = click.Path(path_type=Path)


class Parsed(click.ParamType):
    """A value a parser of the grading package reads, its InvalidInput shown as the option's usage error."""

    def __init__(self, name: str, parse: Callable[[str], Any]) -> None:
        self.name, self.parse = name, parse

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self.parse(value)
        except InvalidInput as exc:
            self.fail(exc.problem + (f" ({exc.hint})" if exc.hint else ""), param, ctx)


def _say(text: str) -> None:
    """Print ``text`` as one plain line: no markup, highlighting or wrapping (a path or learner id stays whole)."""
    stdout_console().print(text, highlight=False, soft_wrap=True, markup=False)


GRADE_HELP = """Grade submitted notebooks into a gradebook CSV and a feedback file per learner.

Learner ids: a notebook is <learner>_<NN>_<lab>.ipynb (alice_01_at_least_once.ipynb),
or <NN>_<lab>.ipynb in a folder named for its learner (alice/01_at_least_once.ipynb,
h.o@example.org/01_at_least_once.ipynb: any name a hub allows); NN is its lab. The
folder names a notebook's owner, whatever its file is named. One file never stops
the batch: a notebook that names no learner or lab (Untitled.ipynb) or a lab the course
lacks, a second one of a lab for one learner (a Jupyter -Copy1 among them), a folder
inside a learner's folder, a link or a FIFO is left out, and said in a note; a notebook
that is not UTF-8 JSON is its owner's error row.

The gradebook (Canvas's gradebook CSV layout): a header row (learner, one column per
check of the labs handed in, total), a 'Points Possible' row of the grader's own
maximum points, then one row per learner; numbers only, blank where a learner handed
in no notebook of that lab. Feedback: FEEDBACK/<learner>.md (FEEDBACK is feedback/
beside the gradebook unless --feedback names it), every public case's diagnosis and,
for a failed hidden case, the mistake it points to, never its inputs.

Each finished row is kept in OUT.journal/ beside the gradebook: run again with the same
--out, and a notebook graded before whose file is unchanged (same sha256) keeps its
row; --restart grades every notebook again.

--shard I/N --run RUN grades the learners at positions I-1, I-1+N, ... of the sorted
learner ids (every shard must see the same submissions) and writes, beside the
gradebook, RUN.shard-I-of-N.json; `fleetlab gradebook merge` joins the shard files of
run RUN into the gradebook an unsharded run writes.
"""


@click.command("assign", help="write the student notebooks from the instructor notebooks")
@click.option("--solutions", type=PATH, default=Path("labs/solutions"), help="instructor notebooks")
@click.option("--out", type=PATH, default=Path("labs"), help="where the student notebooks go")
@click.option("--check", is_flag=True, help="write nothing; exit 1 naming student notebooks that are stale")
def assign(solutions: Path, out: Path, check: bool) -> int:
    from fleetlab_instructor.handout.assign import assign as write_student_notebooks
    from fleetlab_instructor.handout.assign import stale

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
    from fleetlab_instructor.handout.release import write_release

    written = write_release(course, out, force=force)
    size = f"{written.size / 1024:,.0f} KiB" if written.size < 1024 * 1024 else f"{written.size / 1024 ** 2:.1f} MiB"
    _say(f"wrote the learner's release to {out}: {written.files} files, {size}")
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
@click.option("--shard", type=Parsed("I/N", parse_shard), default=ALL, metavar="I/N",
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
@click.option("--run", type=Parsed("RUN", parse_run), default=None, metavar="RUN",
              help="this grading run's id, the same for every shard (needed with --shard): the shard file is "
                   "RUN.shard-I-of-N.json beside the gradebook")
@click.option("--restart", is_flag=True, help="forget the journal of an earlier run with this --out; grade every "
                                               "notebook again")
def grade(paths: tuple[Path, ...], out: Path, feedback: Path | None, report: Path | None, shard: Shard,
          cell_timeout: float, notebook_timeout: float, grading_timeout: float, workers: int, unsandboxed: bool,
          run: str | None, restart: bool) -> int:
    from fleetlab_instructor.grade.batch import grade_batch
    from fleetlab_instructor.report.gradebook import summary_table
    from fleetlab_instructor.report.publish import publish

    if shard != ALL and run is None:
        raise InvalidInput("--run", f"is missing: --shard {shard} needs the run's id",
                           hint="give every shard of one run the same --run, e.g. --run lab03-day1")
    feedback = feedback if feedback is not None else out.parent / "feedback"
    if unsandboxed:
        Console(stderr=True).print(UNSEALED_WARNING, style="yellow", highlight=False, soft_wrap=True)
    console = stdout_console()

    def kept(sub: Submission, journal: Path) -> None:
        console.print(f"kept: {printable(str(sub.path))}: graded before and unchanged since (same sha256), its row "
                      f"taken from {journal} (--restart grades it again)", markup=False, highlight=False,
                      soft_wrap=True)

    bar = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True))
    task = bar.add_task("grading", total=0)

    def started(pending: int) -> None:
        bar.update(task, total=pending)
        bar.start()

    try:
        batch = grade_batch(paths, out=out, grader_env=dict(os.environ), shard=shard,
                            limits=Limits(cell=cell_timeout, notebook=notebook_timeout, grading=grading_timeout),
                            workers=workers, sealed=not unsandboxed, restart=restart, on_kept=kept,
                            on_start=started, on_graded=lambda row: bar.advance(task))
    finally:
        bar.stop()
    written = publish(batch, out=out, feedback=feedback, room_report=report, run=run, shard=shard)
    console.print(summary_table(batch.rows, written.book.maxima))
    for note in batch.notes:
        console.print(f"not graded as found: {note}", markup=False, highlight=False, soft_wrap=True)
    rate = batch.graded / batch.seconds * 60 if batch.seconds else 0.0
    learners = f"{len(written.book.rows)} learner{'' if len(written.book.rows) == 1 else 's'}"
    share = "" if shard == ALL else f" (shard {shard}: {learners})"
    notes = batch.notes
    summary = (f"graded {batch.graded} notebooks{share} in {batch.seconds:.1f} s ({rate:.1f}/min)"
               + (f", kept {batch.kept} from the journal" if batch.kept else "")
               + (f"; {len(notes)} files not graded as found (above)" if notes else "")
               + f"; gradebook: {out}; feedback: {feedback}" + (f"; room report: {report}" if report else "")
               + (f"; shard file: {written.shard_file}" if written.shard_file else ""))
    console.print(summary, markup=False, highlight=False, soft_wrap=True)
    return 0


@click.group("gradebook", short_help="merge, adjust and export what `fleetlab grade` wrote",
             help="work with what `fleetlab grade` wrote: merge the shard files of a run; adjust a gradebook (a "
                  "regrade, lateness, overrides); export it to Canvas or Gradescope")
def gradebook_group() -> None:
    """The ``gradebook`` subcommands."""


@gradebook_group.command(
    "merge", help="join the shard files of one run (`fleetlab grade --shard I/N --run RUN`, each RUN.shard-I-of-N.json) "
                  "into its gradebook; refuse files of two runs, a shard given twice or missing (each missing one "
                  "named), a learner graded differently in two, or a check's maximum that differs")
@click.argument("shards", nargs=-1, required=True, type=PATH, metavar="RUN.shard-I-of-N.json...",
                help="every shard file of the run, named one by one")
@click.option("--out", type=PATH, required=True, help="the merged gradebook CSV to write")
@click.option("--report", type=PATH, default=None, metavar="ROOM.html", help="also write the whole run's room report")
def merge(shards: tuple[Path, ...], out: Path, report: Path | None) -> int:
    from fleetlab_instructor.report.publish import publish_merged

    whole = publish_merged(list(shards), out=out, room_report=report)
    summary = (f"merged run {whole.run!r}, {len(dict.fromkeys(shards))} shards: {len(whole.book.rows)} learners, "
               f"{len(whole.book.maxima)} checks; {out}" + (f"; room report: {report}" if report else ""))
    stdout_console().print(summary, highlight=False, soft_wrap=True)
    return 0


def _lab_column(text: str) -> tuple[str, str]:
    lab, sep, column = text.partition("=")
    if not sep or len(lab) != 2 or not lab.isdigit() or not column:
        raise InvalidInput("--column", f"is {text!r}", hint="LAB=HEADER, e.g. 03='Lab 03 (12345)'")
    return lab, column


LATE_PENALTY = click.option(
    "--late-penalty", type=float, default=0.0, metavar="SHARE",
    help="the share of a late lab's points taken per day late, each day begun counted (default 0: none)")
"""The facilitator's penalty for lateness, read with a collect's manifest (--collected)."""


@gradebook_group.command(
    "adjust", help="apply, in this order, one learner's regrade (--regrade, the gradebook `fleetlab grade` wrote for "
                   "their notebooks), the late column from a collect's manifest with an optional penalty, and a "
                   "facilitator's overrides (learner,check,points,reason) to GRADES.csv; write OUT and, beside it, "
                   "OUT's name with .reasons.csv: each override with its reason")
@click.argument("grades", type=PATH, metavar="GRADES.csv", help="the gradebook `fleetlab grade` or `merge` wrote")
@click.option("--out", type=PATH, required=True, help="the adjusted gradebook CSV to write")
@click.option("--regrade", "regrades", type=PATH, multiple=True, metavar="REGRADE.csv",
              help="a gradebook of one learner's regraded notebooks: it replaces their cells of the labs it graded")
@click.option("--collected", type=PATH, default=None, metavar="FOLDER",
              help="the folder of the collect the gradebook graded (`fleetlab collect --on-time`): its manifest "
                   "says which labs came in late and by how many days (fleetlab_instructor.collect.manifest)")
@LATE_PENALTY
@click.option("--overrides", type=PATH, default=None, metavar="OVERRIDES.csv",
              help="learner,check,points,reason: the points a facilitator decided, applied last")
def adjust(grades: Path, out: Path, regrades: tuple[Path, ...], collected: Path | None, late_penalty: float,
           overrides: Path | None) -> int:
    from fleetlab_instructor.report.adjust import adjust_gradebook

    adjusted = adjust_gradebook(grades, out=out, regrades=regrades, collected=collected, penalty=late_penalty,
                                overrides=overrides)
    late = sum(len(labs) for labs in (adjusted.book.late or {}).values())
    _say(f"adjusted {grades}: {len(regrades)} regrade(s), {late} late lab(s), {len(adjusted.applied)} override(s); "
         f"{out}" + (f"; reasons: {adjusted.reasons}" if adjusted.reasons else ""))
    return 0


@gradebook_group.command(
    "canvas", help="write GRADES.csv as a Canvas gradebook import: the roster's Student, ID, SIS User ID, SIS Login "
                   "ID and Section, one column per lab headed as the roster heads its assignment (Lab 03 (12345)), "
                   "and a Points Possible row. ROSTER.csv is the gradebook exported from Canvas; each learner id is "
                   "matched to a student's SIS Login ID or SIS User ID")
@click.argument("grades", type=PATH, metavar="GRADES.csv",
                help="the gradebook to export (`fleetlab grade`, `merge` or `adjust` wrote it)")
@click.option("--roster", type=PATH, required=True, metavar="ROSTER.csv", help="the gradebook exported from Canvas")
@click.option("--out", type=PATH, required=True, help="the import CSV to write")
@click.option("--column", "columns", type=Parsed("LAB=HEADER", _lab_column), multiple=True, metavar="LAB=HEADER",
              help="the roster's column for a lab when its name does not say 'Lab NN'")
def canvas(grades: Path, roster: Path, out: Path, columns: tuple[tuple[str, str], ...]) -> int:
    from fleetlab_instructor.report.exports import write_canvas

    book = write_canvas(grades, roster=roster, out=out, columns=dict(columns))
    _say(f"wrote the Canvas import of {len(book.rows)} learners to {out}: import it in Canvas's Grades > Import")
    return 0


HIDDEN_VISIBILITY = click.option(
    "--hidden", type=click.Choice(["after_due_date", "hidden"]), default="after_due_date",
    help="when the learner sees the hidden cases' tests (default after_due_date)")
"""Gradescope's visibility for the tests of hidden cases: after the due date, or never."""


@gradebook_group.command(
    "gradescope", help="write Gradescope's results.json for one learner of a shard file (`fleetlab grade --run RUN`): "
                       "a test per case, hidden cases by what they point to, never their inputs; with --collected, "
                       "the learner's late labs said and their penalty taken")
@click.argument("shard", type=PATH, metavar="RUN.shard-I-of-N.json",
                help="the shard file `fleetlab grade --run RUN` wrote")
@click.option("--learner", default=None, metavar="NAME",
              help="the learner whose results to write (needed when the shard holds more than one)")
@click.option("--collected", type=PATH, default=None, metavar="FOLDER",
              help="the collect the shard graded: its manifest says which labs came in late")
@LATE_PENALTY
@click.option("--out", type=PATH, default=Path("/autograder/results/results.json"),
              help="where to write it (default Gradescope's /autograder/results/results.json)")
@HIDDEN_VISIBILITY
def gradescope(shard: Path, learner: str | None, collected: Path | None, late_penalty: float, out: Path,
               hidden: str) -> int:
    from fleetlab_instructor.report.exports import write_results

    results = write_results(shard, out=out, learner=learner, collected=collected, penalty=late_penalty,
                            hidden_visibility=hidden)
    _say(f"wrote {out}: score {results['score']:g}, {len(results['tests'])} tests")
    return 0


@gradebook_group.command(
    "autograder", help="write Gradescope's autograder archive for one lab: setup.sh (installs the course), "
                       "run_autograder (grades the submitted notebook --unsandboxed, Gradescope's container being "
                       "the sandbox, and writes results.json) and the course's source; upload it as the "
                       "assignment's autograder")
@click.argument("out", type=PATH, metavar="OUT.zip", help="the archive to write")
@click.option("--lab", required=True, help="the lab's two digits, e.g. 03")
@click.option("--course", type=PATH, default=Path("."), help="the course's root (default: the current folder)")
@HIDDEN_VISIBILITY
def autograder(out: Path, lab: str, course: Path, hidden: str) -> int:
    from fleetlab_instructor.report.exports import write_autograder

    files = write_autograder(course, out, lab=lab, hidden_visibility=hidden)
    _say(f"wrote {out}: {files} files, lab {lab}")
    return 0


ROOM_HELP = ("The room is a JupyterHub (--hub, its public address, with an API token that lists users, starts "
             "and stops servers and reaches them: an admin's, or a service's with admin:users, admin:servers and "
             "access:servers), each learner's home reached through their server's Contents API (a stopped server "
             "is started for the work and stopped after it); or the home folders on this machine (--homes, as on "
             "The Littlest JupyterHub: /home/jupyter-{username}). The learners: every non-admin user of the hub, "
             "or every home the template matches; --learner names some. deploy/jupyterhub/README.md walks the day.")


def room_options(command: Callable[..., int]) -> Callable[..., int]:
    """The options naming the room and its learners, given to ``command`` as ``room`` and ``learners``."""

    def with_room(hub: str | None, homes: str | None, token: str | None, start_timeout: float,
                  learner: tuple[str, ...], **options: Any) -> int:
        from fleetlab_instructor.collect.room import HomeFolders, Hub, choose

        if (hub is None) == (homes is None):
            raise InvalidInput("--hub", "name the room with --hub URL or with --homes TEMPLATE, one of them",
                               hint="e.g. --hub http://127.0.0.1:8000, or --homes '/home/jupyter-{username}'")
        room = Hub(hub, token or "", start_timeout=start_timeout) if hub else HomeFolders(homes)
        return command(room=room, learners=choose(room, learner), **options)

    with_room.__name__, with_room.__doc__ = command.__name__, command.__doc__
    for option in reversed((
        click.option("--hub", metavar="URL", help="the JupyterHub's public address, e.g. http://127.0.0.1:8000"),
        click.option("--homes", metavar="TEMPLATE",
                     help="instead of --hub: the learners' home folders here, {username} for the learner"),
        click.option("--token", envvar="JUPYTERHUB_API_TOKEN", show_envvar=True,
                     help="the hub's API token (better in the environment than on a command line)"),
        click.option("--start-timeout", type=POSITIVE_FLOAT, default=120,
                     help="seconds a learner's server may take to start or stop (default 120)"),
        click.option("--learner", multiple=True, metavar="NAME", help="only this learner (again for more)"),
    )):
        with_room = option(with_room)
    return with_room


def print_report(report: Any) -> int:
    """Print a step's lines, its problems on stderr (a learner's names made printable); 1 when it had any, else 0."""
    console = stdout_console()
    for line in report.done:
        console.print(printable(line), markup=False, highlight=False, soft_wrap=True)
    for line in report.problems:
        print(printable(line), file=sys.stderr)
    return 1 if report.problems else 0


@click.command("handout", short_help="put the learner's release's notebooks into each learner's labs/",
               help="Put the student notebooks of RELEASE (what `fleetlab release` wrote) into labs/ in each "
                    "learner's home; a notebook the learner already has is kept, never replaced. " + ROOM_HELP)
@click.argument("release_folder", type=PATH, metavar="RELEASE", help="the folder `fleetlab release` wrote")
@room_options
def handout(room: Any, learners: list[str], release_folder: Path) -> int:
    from fleetlab_instructor.collect.exchange import hand_out

    return print_report(hand_out(room, learners, release_folder))


@click.command("collect", short_help="copy the room's notebooks of some labs into a folder `fleetlab grade` reads",
               help="Copy each learner's notebooks of --labs from labs/ in their home into OUT/<learner>/ (the "
                    "learner id escaped as a path: h.o@example.org stays, a '/' or a leading '.' does not), with "
                    "OUT/fleetlab-collect.json: per notebook its learner, lab, when it was collected, the run id, "
                    "its sha256 and whether it is late. A collect at the deadline is the on-time snapshot; a later "
                    "one with --on-time naming it marks a notebook late when the snapshot lacks it or holds other "
                    "bytes (file times play no part). A notebook that names no lab (Untitled.ipynb) is left out "
                    "and said. " + ROOM_HELP)
@click.option("--labs", type=ChoiceList(known_labs(), "lab"), required=True, metavar="NN[,NN]",
              help="the labs to collect, comma-separated, e.g. 01,03")
@click.option("--out", type=PATH, required=True, help="a new (or empty) folder for this collect")
@click.option("--run", type=Parsed("RUN", parse_run), default=None, metavar="RUN",
              help="this collect's id, e.g. day1-deadline (default collect-<UTC time>); the feedback a learner "
                   "gets back is feedback/RUN.md")
@click.option("--on-time", type=PATH, default=None, metavar="SNAPSHOT",
              help="the folder of the collect made at the deadline: judge lateness against it")
@room_options
def collect(room: Any, learners: list[str], labs: tuple[str, ...], out: Path, run: str | None,
            on_time: Path | None) -> int:
    from fleetlab_instructor.collect.exchange import collect as collect_room

    run = run or time.strftime("collect-%Y%m%dT%H%M%SZ", time.gmtime())
    manifest, report = collect_room(room, learners, labs, out, run, on_time)
    print_report(report)
    late = sum(entry.late for entry in manifest.notebooks)
    stdout_console().print(
        f"collected {len(manifest.notebooks)} notebooks of {len({e.learner for e in manifest.notebooks})} learners "
        f"into {out} (run {run}" + (f", {late} late against {on_time}" if on_time else ", the on-time snapshot")
        + f"); manifest: {out / 'fleetlab-collect.json'}", markup=False, highlight=False, soft_wrap=True)
    return 1 if [item for item in manifest.left_out if not item.path] else 0  # a home that could not be read


@click.group("feedback", help="hand the learners' feedback back")
def feedback_group() -> None:
    """The ``feedback`` subcommands."""


@feedback_group.command(
    "return", short_help="write each learner's feedback into their own home, and nowhere else",
    help="Write each learner's feedback file (FEEDBACK/<learner>.md, as `fleetlab grade` wrote it from the "
         "folder --collected names) into feedback/RUN.md in that learner's own home, RUN being the collect's "
         "run id; no other learner's home is written. A feedback file no learner of the collect has is "
         "returned to no one, and said. " + ROOM_HELP)
@click.argument("feedback", type=PATH, metavar="FEEDBACK", help="the feedback folder `fleetlab grade` wrote")
@click.option("--collected", type=PATH, required=True, help="the folder `fleetlab collect` wrote and grade read")
@room_options
def feedback_return(room: Any, learners: list[str], feedback: Path, collected: Path) -> int:
    from fleetlab_instructor.collect.exchange import return_feedback

    return print_report(return_feedback(room, collected, feedback, learners))


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
