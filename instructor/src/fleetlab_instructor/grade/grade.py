"""Grade submitted notebooks: an ordered list of small named steps per notebook.

    prepare -> execute -> hand in -> release the kernel -> judge -> report

The learner's kernel only runs the learner's cells and hands the answers
over: a last cell the grader appends (``session.hand_in``) writes each
answer, serialised by value, to a file. The course's demonstration cells
that no answer needs are not run (``demos``). The verdict is computed outside that
kernel, by a judge (``fleetlab.course.judge.server``): a fresh process in
the kernels' environment in which no learner cell ever ran (the answers it
calls run in sealed answer processes), given the hidden cases by the grader. It reports each case's status as JSON; the grader scores the
cases with its own registry's checks (their points, their number of cases),
and nothing the notebook printed or displayed counts. A learner's cell may
replace ``check``, the runner, the registry or ``display`` in its kernel: the
judge never ran that cell. A dead kernel is an error, never a pass.

Every learner process is sealed (``fleetlab.course.judge.sandbox``): the
kernel and each answer process see the interpreter, the library and their
own folder, never the batch folder, the instructor's package or another
learner; they cannot see or signal the grader, the judge or each other, and
nothing they start outlives them.

Each step reads and fills in the ``Job``; a learner's mistake (a raising
cell, a hang, a dead kernel) is recorded in ``job.errors`` and the later
steps see it, so one notebook's failure costs only its own points.
Errors name a cell as the learner sees it: its place among the code cells, and its exercise (``cells``).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from fleetlab_tools.kernel import CellStatus, KernelStartFailed, NotebookKernel
from fleetlab_tools.warm_kernels import WarmKernels
from nbformat import NotebookNode

from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading import registry, shortcuts
from fleetlab.course.grading.registry import Check
from fleetlab.course.grading.results import CaseResult, CheckStatus, conclude
from fleetlab.course.judge import sandbox
from fleetlab.course.judge.server import keep_memory_private
from fleetlab_instructor.checks import full_check, full_checks
from fleetlab_instructor.grade.cells import cell_name
from fleetlab_instructor.grade.environment import kernel_env, measure_graded_backend, share_fidelity_tables
from fleetlab_instructor.grade.judging import JudgeServer, Verdicts, judge_answers
from fleetlab_instructor.grade.submissions import Unreadable, lab_of, read_notebook
from fleetlab_instructor.handout.demos import cells_to_skip

CHECK_CALL = re.compile(r"""\bcheck\(\s*["'](\d\d\.[a-z0-9][a-z0-9_-]*)["']""")
SCORED = (CheckStatus.PASS, CheckStatus.FAIL)  # a fail keeps the points of the cases it passed
_ERROR_CHARS = 160
DEFAULT_WORKERS = 2
"""Kernels running at once: each is CPU-bound, so two keep a two-core machine busy."""
JUDGES_PER_WORKER = 2
"""Notebooks each worker leaves with the judge while its next kernel runs. A judge mostly waits (moto's Step
Functions runs its states on real time: lab 04's solution took 18 s of a judge's wall time for 2.6 s of CPU),
so its waiting need not hold a kernel's place."""


@dataclass(frozen=True)
class Limits:
    """Time limits, in seconds. A cell gets ``cell`` seconds, all cells together ``notebook``."""

    cell: float = 60
    notebook: float = 300
    grading: float = 60
    startup: float = 60


@dataclass(frozen=True)
class CaseReport:
    """One case as the judge reported it; a hidden case comes without its name."""

    name: str
    hidden: bool
    status: str
    diagnosis: str
    mistake: str = ""  # the key of the mistake the harness recognised, "" when none (``CaseOutcome.mistake``)


@dataclass(frozen=True)
class CheckReport:
    """One check's verdict as the judge reported it: its status and its cases (for the feedback)."""

    status: str
    diagnosis: str
    cases: tuple[CaseReport, ...] = ()


@dataclass
class GradeRow:
    """One notebook's line in the gradebook: points per check, total, what went wrong, and each check's cases."""

    notebook: str
    scores: dict[str, float]
    max_points: dict[str, float | None]
    error: str
    checks: dict[str, CheckReport] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.scores.values())


ANSWERS_FILE = "fleetlab-answers.json"
"""Where, in the kernel's working folder, the hand-in cell writes the answers."""
MAX_ANSWERS_BYTES = 64 * 2**20
"""The most a notebook's handed-in answers may weigh; the grader reads no more."""

Judge = Callable[[Sequence[Check], bytes, float], Verdicts]
"""Judge a notebook's handed-in answers on these checks within so many seconds (``judging.judge_answers``)."""


@dataclass
class Job:
    """One notebook on its way through the steps.

    ``start_kernel(nb)`` returns a started kernel whose working folder is
    ``workdir``; ``judge`` computes the verdicts (``Judge``).
    """

    name: str
    text: str | Unreadable
    limits: Limits
    start_kernel: Callable[[NotebookNode], Any]
    judge: Judge
    workdir: Path
    nb: NotebookNode | None = None
    kernel: Any = None
    graded: dict[str, Check] = field(default_factory=dict)
    answers: bytes | None = None
    max_points: dict[str, float | None] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    checks: dict[str, CheckReport] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    built_by: dict[str, list[str]] = field(default_factory=dict)
    """The implementing functions the cells that build a data answer call, by check, read here (``prepare``)."""
    row: GradeRow | None = None
    kernel_place: threading.Semaphore | None = None
    """The bound on kernels running at once whose place this job holds until its kernel is released."""


def prepare(job: Job) -> None:
    """Read the notebook, clear its outputs, and note the checks of its lab (from its name) and those it calls.

    Each check and its maximum come from the grader's own registry; a called
    check it does not know keeps no maximum and scores nothing. The cells that
    build a data answer are read here for the library's own answer (``Job.built_by``).
    """
    if isinstance(job.text, Unreadable):
        job.errors.append(str(job.text))
        return
    try:
        nb = nbformat.reads(job.text, as_version=4)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        job.errors.append(f"not a readable notebook ({_short(exc)})")
        return
    job.graded.update((check.id, check) for check in full_checks(lab_of(Path(job.name))))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            for check_id in CHECK_CALL.findall(cell.source):
                if check_id not in job.graded and (check := _known_check(check_id)) is not None:
                    job.graded[check_id] = check
                job.max_points.setdefault(check_id, None)
    job.max_points.update((check_id, check.points) for check_id, check in job.graded.items())
    sources = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    job.built_by = {check_id: taken for check_id, check in job.graded.items()
                    if (taken := shortcuts.called_in_source(check, sources))}
    job.nb = nb


def execute(job: Job) -> None:
    """Run the notebook's code cells in a fresh kernel, within the cell and notebook limits.

    The course's demonstrations that no answer needs are left out (``demos.cells_to_skip``).
    """
    if job.nb is None:
        return
    try:
        job.kernel = job.start_kernel(job.nb)
    except KernelStartFailed as exc:
        job.errors.append(str(exc))
        return
    skipped = cells_to_skip(job.nb, [check.answer_name for check in job.graded.values() if check.answer_name])
    deadline = time.monotonic() + job.limits.notebook
    for index, cell in enumerate(job.nb.cells):
        if cell.cell_type != "code" or not cell.source.strip() or index in skipped:
            continue
        remaining = deadline - time.monotonic()
        cut_by_notebook = remaining < job.limits.cell
        run = job.kernel.run_cell(index, max(0.0, min(job.limits.cell, remaining)))
        where = cell_name(job.nb, index)
        if run.output_cut:
            job.errors.append(f"{where} printed more than the grader keeps; its output was cut")
        if run.status == CellStatus.ERROR:
            job.errors.append(f"{where} raised {_short(run.error)}")
        elif run.status == CellStatus.TIMEOUT:
            limit = f"ran past the notebook's {job.limits.notebook:g} s limit" if cut_by_notebook else run.error
            job.errors.append(f"{where} {limit}")
            return
        elif run.status == CellStatus.DEAD:
            job.errors.append(f"the kernel died in {where}")
            return


def hand_in(job: Job) -> None:
    """Append and run the hand-in cell: the kernel writes the answer to every graded check to ``ANSWERS_FILE``."""
    if job.kernel is None or not job.kernel.alive:
        return
    names = {check_id: check.answer_name for check_id, check in sorted(job.graded.items())}
    handed_in = job.workdir / ANSWERS_FILE
    handed_in.unlink(missing_ok=True)  # only the hand-in cell's file counts, never one a learner's cell left
    job.nb.cells.append(nbformat.v4.new_code_cell(hand_in_source(names)))
    run = job.kernel.run_cell(len(job.nb.cells) - 1, job.limits.grading)
    if run.status == CellStatus.DEAD:
        job.errors.append("the kernel died while handing in the answers")
    elif run.status == CellStatus.TIMEOUT:
        job.errors.append(f"handing in the answers timed out after {job.limits.grading:g} s")
    elif run.status == CellStatus.ERROR:
        job.errors.append(f"handing in the answers failed ({run.error.split(':', 1)[0]})")
    else:
        answers = read_handed_in(handed_in)
        if isinstance(answers, str):
            job.errors.append(answers)
        else:
            job.answers = answers  # untrusted bytes: only the judge reads them


def read_handed_in(path: Path) -> bytes | str:
    """The bytes of the kernel's hand-in file, or why none were taken. The file lies in a folder the learner's
    code could write: it is opened without following a link or waiting on a FIFO, must be a regular file, and
    is read no further than ``MAX_ANSWERS_BYTES`` (a link to ``/dev/zero`` or to a file of the grader's is refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return "the kernel handed in no answers"
    with os.fdopen(fd, "rb") as handed_in:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "the kernel handed in no answers (not a regular file)"
        data = handed_in.read(MAX_ANSWERS_BYTES + 1)
    if len(data) > MAX_ANSWERS_BYTES:
        return f"the answers handed in weigh over {MAX_ANSWERS_BYTES // 2**20} MB; none was graded"
    return data


def release_kernel(job: Job) -> None:
    """Stop the notebook's kernel and give back its place among the kernels running at once; again, nothing."""
    if job.kernel is not None:
        job.kernel.shutdown()
    if job.kernel_place is not None:
        job.kernel_place.release()
        job.kernel_place = None


def judge(job: Job) -> None:
    """Have the judge run every graded check on the answers (the kernel stopped before), and score its verdicts."""
    if job.answers is None:
        return
    verdicts = job.judge(list(job.graded.values()), job.answers, job.limits.grading)
    job.errors += verdicts.errors
    if verdicts.withheld:
        return
    try:
        for check_id, verdict in verdicts.checks.items():
            if check_id in job.graded:
                job.checks[check_id] = _check_report(verdict)
                job.scores[check_id] = earned(job.graded[check_id], verdict)
        _refuse_built_by_the_library(job)
    except (KeyError, TypeError, ValueError) as exc:
        job.scores.clear()
        job.checks.clear()
        job.errors.append(f"grades were malformed ({_short(exc)}); scores withheld")


def _refuse_built_by_the_library(job: Job) -> None:
    """A data answer its cells built with the exercise's implementing functions, as the grader reads the notebook,
    scores nothing, whatever the kernel's hand-in said (its code could clear ``In`` or change the hand-in)."""
    for check_id, taken in job.built_by.items():
        if check_id in job.checks:
            refused = shortcuts.refused_shortcut(job.graded[check_id], taken, graded=True)
            job.checks[check_id] = CheckReport(str(refused.status), refused.diagnosis, ())
            job.scores[check_id] = 0.0


def earned(check: Check, verdict: Mapping[str, Any]) -> float:
    """The points ``verdict``'s cases earn on the grader's own ``check``: none unless it reports every case.

    A fail keeps the points of the cases it passed (unless the check is all
    or nothing); an error or a "not yet" earns nothing.
    """
    cases = [CaseResult(str(case["name"]), CheckStatus(case["status"]), str(case["diagnosis"]), bool(case["hidden"]))
             for case in verdict["cases"]]
    hidden = sum(case.hidden for case in cases)
    if not cases or (len(cases) - hidden, hidden) != (len(check.public), check.hidden_cases):
        return 0.0
    result = conclude(check, cases, graded=True)
    points = result.points if result.status in SCORED else 0.0
    return min(max(float(points), 0.0), check.points)


def report(job: Job) -> None:
    """Make the gradebook row: every known check (0 when not earned), total, errors."""
    scores = {check_id: job.scores.get(check_id, 0.0) for check_id in sorted(job.max_points)}
    job.row = GradeRow(job.name, scores, dict(job.max_points), "; ".join(job.errors), dict(job.checks))


STEPS: tuple[tuple[str, Callable[[Job], None]], ...] = (
    ("prepare", prepare),
    ("execute", execute),
    ("hand in", hand_in),
    ("release the kernel", release_kernel),
    ("judge", judge),
    ("report", report),
)


def grade_job(job: Job, kernels: threading.Semaphore | None = None) -> GradeRow:
    """Take ``job`` through ``STEPS``, in order; a step that raises ends them there, as this notebook's error.
    The kernel is always released, and the report always made.

    ``kernels`` bounds the kernels running at once: this job takes one of its places
    before the first step and gives it back when its kernel is released, before it is judged.
    """
    if kernels is not None:
        kernels.acquire()
        job.kernel_place = kernels
    try:
        for name, step in STEPS[:-1]:
            try:
                step(job)
            except Exception as exc:  # a grader bug or a broken kernel channel: this notebook only
                job.errors.append(f"grading step {name!r} failed ({_short(exc)})")
                break
    finally:
        release_kernel(job)
    report(job)
    return job.row


def grade_notebooks(
    paths: Sequence[Path],
    *,
    limits: Limits = Limits(),
    workers: int = DEFAULT_WORKERS,
    grader_env: Mapping[str, str],
    on_graded: Callable[[GradeRow], None] = lambda row: None,
    sealed: bool = True,
) -> list[GradeRow]:
    """Grade every notebook, ``workers`` kernels at a time, each in its own kernel, home and cwd, each judged apart.

    Rows come back in the order of ``paths``. All notebooks are read before
    any runs, so one submission cannot alter another before it is graded.
    One judge server serves the batch, in the kernels' environment; up to
    ``JUDGES_PER_WORKER`` notebooks per worker are judged while the next kernels run;
    notebooks with checks that wait on the real clock start first (``_waits_first``).
    Each kernel is forked from one warm template (``WarmKernels``), started in
    that environment too, so the batch pays for the library's imports once.
    ``sealed`` (the default) seals every kernel and answer process in a sandbox
    of its own (``fleetlab.course.judge.sandbox``); where none can be made it
    raises SandboxUnavailable before anything runs. Unsealed is for trusted notebooks only.
    """
    if sealed and (why := sandbox.probe()):
        raise sandbox.SandboxUnavailable(f"learner code cannot be sealed here: {why}. Grade on Linux with user "
                                         "namespaces, or pass --unsandboxed for notebooks you trust")
    keep_memory_private()  # no learner's code, in a kernel or an answer's process, can write into the grader
    texts = [read_notebook(path) for path in paths]  # the text, or why it is no notebook (submissions.Unreadable)
    rows: list[GradeRow | None] = [None] * len(paths)
    with tempfile.TemporaryDirectory(prefix="fleetlab-grade-") as root:
        shared_cache = Path(root, "shared")
        shared_cache.mkdir()
        measure_graded_backend()
        share_fidelity_tables(shared_cache)
        server_home, template_home = Path(root, "judge"), Path(root, "template")
        server_home.mkdir()
        template_home.mkdir()
        server = JudgeServer(kernel_env(grader_env, server_home, shared_cache), server_home, startup=limits.startup,
                             sealed=sealed)
        template = WarmKernels(kernel_env(grader_env, template_home, shared_cache), startup=limits.startup,
                               sealed=sealed)

        def grade_one(index: int) -> GradeRow:
            home = Path(root, f"notebook-{index}")
            home.mkdir()
            env = {**kernel_env(grader_env, home, shared_cache), **template.environment()}

            def start_kernel(nb: NotebookNode) -> NotebookKernel:
                return NotebookKernel(nb, env=env, cwd=home, startup_timeout=limits.startup).start()

            def judge_this(checks: Sequence[Check], answers: bytes, seconds: float) -> Verdicts:
                return judge_answers(server, Path(root, f"judge-{index}"), checks, answers, seconds)

            try:
                return grade_job(Job(str(paths[index]), texts[index], limits, start_kernel, judge_this, home), kernels)
            finally:
                shutil.rmtree(home, ignore_errors=True)
                shutil.rmtree(Path(root, f"judge-{index}"), ignore_errors=True)

        workers = max(1, workers)
        kernels = threading.Semaphore(workers)
        with server, template, ThreadPoolExecutor(max_workers=workers * (1 + JUDGES_PER_WORKER),
                                        thread_name_prefix="fleetlab-grade") as pool:
            futures = {pool.submit(grade_one, index): index for index in _waits_first(paths)}
            for future in as_completed(futures):
                rows[futures[future]] = row = future.result()
                on_graded(row)
    return rows


def _waits_first(paths: Sequence[Path]) -> list[int]:
    """The order to start ``paths`` in (indexes): the notebooks whose lab has a check that waits on the real clock
    (``Check.real_time``) first, so their waits overlap the other notebooks' work instead of ending the batch."""
    def waits(index: int) -> bool:
        lab = lab_of(Path(paths[index]))
        return lab in registry.known_labs() and any(check.real_time for check in registry.checks_of(lab))

    return sorted(range(len(paths)), key=lambda index: not waits(index))


def hand_in_source(names: Mapping[str, str]) -> str:
    """The hand-in cell's code: write the answer to each check of ``names`` (id -> answer name) to ``ANSWERS_FILE``."""
    return ("import fleetlab.course.grading.session\n"
            f"fleetlab.course.grading.session.hand_in({ANSWERS_FILE!r}, {dict(names)!r});")


def _known_check(check_id: str) -> Check | None:
    try:
        return full_check(check_id)
    except InvalidInput:
        return None


def _check_report(grade: Mapping[str, Any]) -> CheckReport:
    cases = tuple(case_report(case) for case in grade.get("cases", ()))
    return CheckReport(str(grade["status"]), str(grade.get("diagnosis", "")), cases)


def case_report(case: Mapping[str, Any]) -> CaseReport:
    """The CaseReport of one case's plain data (the judge's verdict, a journal's or a shard's row)."""
    return CaseReport(str(case["name"]), bool(case["hidden"]), str(case["status"]), str(case["diagnosis"]),
                      str(case.get("mistake", "")))


def _short(value: object) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"
