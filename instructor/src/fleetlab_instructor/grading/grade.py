"""Grade submitted notebooks: an ordered list of small named steps per notebook.

    prepare -> execute -> add hidden cases -> score -> report

Each step reads and fills in the ``Job``; a learner's mistake (a raising
cell, a hang, a dead kernel) is recorded in ``job.errors`` and the later
steps see it, so one notebook's failure costs only its own points. A dead
kernel is an error, never a pass: scores come only from a grading cell that
finished, and only from its one output that carries this run's nonce.
Errors name cells counted from 1 at the top of the notebook, markdown included.
"""

from __future__ import annotations

import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from fleetlab_tools.kernel import CellStatus, KernelStartFailed, NotebookKernel
from nbformat import NotebookNode

from fleetlab.course.grading import handover
from fleetlab.course.grading.results import CheckStatus
from fleetlab.course.grading.session import GRADES_MIME
from fleetlab_instructor.checks import full_checks
from fleetlab_instructor.grading.sandbox import kernel_env, write_kernel_startup
from fleetlab_instructor.grading.submissions import lab_of

CHECK_CALL = re.compile(r"""\bcheck\(\s*["'](\d\d\.[a-z0-9][a-z0-9_-]*)["']""")
SCORED = (CheckStatus.PASS, CheckStatus.FAIL)  # a fail keeps the points of the cases it passed
_ERROR_CHARS = 160
DEFAULT_WORKERS = 2
"""Notebooks graded at once: each kernel is CPU-bound, so two keep a two-core machine busy."""


@dataclass(frozen=True)
class Limits:
    """Time limits, in seconds. A cell gets ``cell`` seconds, all cells together ``notebook``."""

    cell: float = 60
    notebook: float = 300
    grading: float = 60
    startup: float = 60


@dataclass(frozen=True)
class CaseReport:
    """One case as the grading cell reported it; a hidden case comes without its name."""

    name: str
    hidden: bool
    status: str
    diagnosis: str


@dataclass(frozen=True)
class CheckReport:
    """One check's verdict as the grading cell reported it: its status and its cases (for the feedback)."""

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


@dataclass
class Job:
    """One notebook on its way through the steps. ``start_kernel(nb)`` returns a started kernel."""

    name: str
    text: str
    limits: Limits
    start_kernel: Callable[[NotebookNode], Any]
    nonce: str = field(default_factory=lambda: secrets.token_hex(16))
    nb: NotebookNode | None = None
    kernel: Any = None
    grading_cell: int | None = None
    max_points: dict[str, float | None] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    checks: dict[str, CheckReport] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    row: GradeRow | None = None


def prepare(job: Job) -> None:
    """Read the notebook, clear its outputs, and note the checks of its lab (from its name) and those it calls."""
    try:
        nb = nbformat.reads(job.text, as_version=4)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        job.errors.append(f"not a readable notebook ({_short(exc)})")
        return
    job.max_points.update(dict.fromkeys(check.id for check in full_checks(lab_of(Path(job.name)))))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            job.max_points.update(dict.fromkeys(CHECK_CALL.findall(cell.source)))
    job.nb = nb


def execute(job: Job) -> None:
    """Run the learner's code cells in a fresh kernel, within the cell and notebook limits."""
    if job.nb is None:
        return
    try:
        job.kernel = job.start_kernel(job.nb)
    except KernelStartFailed as exc:
        job.errors.append(str(exc))
        return
    deadline = time.monotonic() + job.limits.notebook
    for index, cell in enumerate(job.nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        remaining = deadline - time.monotonic()
        cut_by_notebook = remaining < job.limits.cell
        run = job.kernel.run_cell(index, max(0.0, min(job.limits.cell, remaining)))
        where = f"cell {index + 1}"
        if run.status == CellStatus.ERROR:
            job.errors.append(f"{where} raised {_short(run.error)}")
        elif run.status == CellStatus.TIMEOUT:
            limit = f"ran past the notebook's {job.limits.notebook:g} s limit" if cut_by_notebook else run.error
            job.errors.append(f"{where} {limit}")
            return
        elif run.status == CellStatus.DEAD:
            job.errors.append(f"the kernel died in {where}")
            return


def add_hidden_cases(job: Job) -> None:
    """Append and run the grading cell: every checked answer again, with hidden cases."""
    if job.kernel is None or not job.kernel.alive:
        return
    labs = sorted({check_id.split(".", 1)[0] for check_id in job.max_points})
    job.nb.cells.append(nbformat.v4.new_code_cell(grading_source(job.nonce, hidden_cases(job.max_points), labs)))
    index = len(job.nb.cells) - 1
    run = job.kernel.run_cell(index, job.limits.grading)
    if run.status == CellStatus.OK:
        job.grading_cell = index
    elif run.status == CellStatus.DEAD:
        job.errors.append("the kernel died while grading")
    elif run.status == CellStatus.TIMEOUT:
        job.errors.append(f"grading timed out after {job.limits.grading:g} s")
    else:
        job.errors.append(f"grading failed ({run.error.split(':', 1)[0]})")  # no message: it may quote hidden inputs


def score(job: Job) -> None:
    """Read the points from the grading cell's one output that carries this job's nonce."""
    if job.grading_cell is None:
        return
    outputs = job.nb.cells[job.grading_cell].outputs
    payloads = [out.get("data", {}).get(GRADES_MIME) for out in outputs if out.output_type == "display_data"]
    genuine = [payload for payload in payloads if isinstance(payload, Mapping) and payload.get("nonce") == job.nonce]
    if len(genuine) != 1:
        job.errors.append("no grades were reported" if not genuine else "grade output was forged; scores withheld")
        return
    try:
        _read_grades(job, genuine[0])
    except (KeyError, TypeError, ValueError) as exc:
        job.scores.clear()
        job.checks.clear()
        job.errors.append(f"grades were malformed ({_short(exc)}); scores withheld")


def report(job: Job) -> None:
    """Make the gradebook row: every known check (0 when not earned), total, errors."""
    scores = {check_id: job.scores.get(check_id, 0.0) for check_id in sorted(job.max_points)}
    job.row = GradeRow(job.name, scores, dict(job.max_points), "; ".join(job.errors), dict(job.checks))


STEPS: tuple[tuple[str, Callable[[Job], None]], ...] = (
    ("prepare", prepare),
    ("execute", execute),
    ("add hidden cases", add_hidden_cases),
    ("score", score),
    ("report", report),
)


def grade_job(job: Job) -> GradeRow:
    """Take ``job`` through every step; the kernel is always stopped, a report always made."""
    try:
        for name, step in STEPS[:-1]:
            try:
                step(job)
            except Exception as exc:  # a grader bug or a broken kernel channel: this notebook only
                job.errors.append(f"grading step {name!r} failed ({_short(exc)})")
                break
    finally:
        if job.kernel is not None:
            job.kernel.shutdown()
    report(job)
    return job.row


def grade_notebooks(
    paths: Sequence[Path],
    *,
    limits: Limits = Limits(),
    workers: int = DEFAULT_WORKERS,
    grader_env: Mapping[str, str],
    on_graded: Callable[[GradeRow], None] = lambda row: None,
) -> list[GradeRow]:
    """Grade every notebook, ``workers`` at a time, each in its own kernel, home and cwd.

    Rows come back in the order of ``paths``. All notebooks are read before
    any runs, so one submission cannot alter another before it is graded.
    """
    texts = [path.read_text(encoding="utf-8") for path in paths]
    rows: list[GradeRow | None] = [None] * len(paths)
    with tempfile.TemporaryDirectory(prefix="fleetlab-grade-") as root:
        shared_cache = Path(root, "shared")
        shared_cache.mkdir()
        write_kernel_startup(shared_cache)

        def grade_one(index: int) -> GradeRow:
            home = Path(root, f"notebook-{index}")
            home.mkdir()
            env = kernel_env(grader_env, home, shared_cache)

            def start_kernel(nb: NotebookNode) -> NotebookKernel:
                return NotebookKernel(nb, env=env, cwd=home, startup_timeout=limits.startup).start()

            try:
                return grade_job(Job(str(paths[index]), texts[index], limits, start_kernel))
            finally:
                shutil.rmtree(home, ignore_errors=True)

        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="fleetlab-grade") as pool:
            futures = {pool.submit(grade_one, index): index for index in range(len(paths))}
            for future in as_completed(futures):
                rows[futures[future]] = row = future.result()
                on_graded(row)
    return rows


def hidden_cases(check_ids: Iterable[str]) -> str:
    """The hidden cases of every check of the labs ``check_ids`` name, handed over as text (``handover``)."""
    labs = sorted({check_id.split(".", 1)[0] for check_id in check_ids})
    return handover.encode({check.id: check.hidden for lab in labs for check in full_checks(lab)})


def grading_source(nonce: str, hidden: str, labs: Sequence[str] = ()) -> str:
    """The grading cell's code: grade every check of ``labs`` and every checked answer, with ``hidden``'s cases."""
    return ("import fleetlab.course.grading.session\n"
            f'fleetlab.course.grading.session.grade_session("{nonce}", "{hidden}", {tuple(labs)!r});')



def _read_grades(job: Job, payload: Mapping[str, Any]) -> None:
    for check_id, max_points in payload["expected"].items():
        job.max_points[str(check_id)] = float(max_points)
    for check_id, grade in payload["checks"].items():
        max_points = float(grade["max_points"])
        job.max_points[str(check_id)] = max_points
        earned = float(grade["points"]) if grade["status"] in SCORED else 0.0
        job.scores[str(check_id)] = min(max(earned, 0.0), max_points)
        job.checks[str(check_id)] = _check_report(grade)


def _check_report(grade: Mapping[str, Any]) -> CheckReport:
    cases = tuple(CaseReport(str(case["name"]), bool(case["hidden"]), str(case["status"]), str(case["diagnosis"]))
                  for case in grade.get("cases", ()))
    return CheckReport(str(grade["status"]), str(grade.get("diagnosis", "")), cases)


def _short(value: object) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"
