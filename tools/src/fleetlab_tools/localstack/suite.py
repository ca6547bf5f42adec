"""``make test-localstack``: the course on a real LocalStack, one table per lab.

``run()`` starts LocalStack (``localstack_host.up``), measures its fidelity
table, then runs, each part bounded in time:

* the backend contract suite (``tests/contract`` with
  ``FLEETLAB_CONTRACT_BACKENDS=localstack``), at most ``CONTRACT_LIMIT`` s;
* every instructor notebook (``labs/solutions/*.ipynb``) with its checks
  expected to pass, and every student notebook (``labs/*.ipynb``) with its
  checks expected to say "not yet", each in a fresh kernel; its time is
  reported against ``goal`` (two minutes), and a notebook still running
  after ``limit`` seconds (a hang, not a slow lab) is interrupted and fails;

and stops LocalStack again, also when a part fails or the run is
interrupted. A new lab joins as soon as its notebooks exist. Per lab it
prints pass/fail, the time, where a notebook stopped, and the fidelity
rows that lab reads on which LocalStack differs from AWS or from moto (the
backend the stored outputs come from). With ``fidelity_doc`` it also
rewrites ``docs/fidelity.md`` with the moto, moto-server and LocalStack columns.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import nbformat
from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from fleetlab.backends.backend import open_backend
from fleetlab.backends.fidelity import FidelityTable, feature_ids, probe
from fleetlab.core.settings import settings
from fleetlab.core.timescale import describe_scale
from fleetlab_tools.fidelity_doc import main as write_fidelity_doc
from fleetlab_tools.localstack import host as localstack_host

PARTS = ("contract", "instructor", "student")
NOTEBOOK_GOAL = 120.0
"""Seconds a notebook should take on LocalStack: measured and reported (a benchmark), never a failure."""
NOTEBOOK_LIMIT = 360.0
"""Seconds after which a notebook is taken to hang: it is interrupted and fails."""
CONTRACT_LIMIT = 900.0
JOBS = 2
"""Parts (the contract suite, a notebook) run at once: two keep both cores of a small machine busy."""
PASSED, FAILED, TIME_LIMIT = "pass", "FAIL", "time limit"
RULE_WIDTH = 100  # the report's heading rule, also on a console that never wraps (a CI log)
_EXPECTED_CHECKS = {"instructor": "pass", "student": "not-yet"}


@dataclass(frozen=True)
class NotebookRun:
    """One notebook run top to bottom on LocalStack."""

    path: Path
    kind: str  # "instructor" or "student"
    result: str  # PASSED, FAILED or TIME_LIMIT
    seconds: float
    stopped_at: str = ""  # the cell that failed or overran, and why
    slowest: str = ""  # the cell that took longest, and its time

    @property
    def lab(self) -> str:
        return self.path.name.split("_", 1)[0]


@dataclass(frozen=True)
class ContractRun:
    """The contract suite's pytest summary line, exit code and time."""

    summary: str
    returncode: int
    seconds: float
    failures: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.returncode == 0


@dataclass
class SuiteResult:
    """Everything one ``run`` measured."""

    install_seconds: float | None = None
    start_seconds: float | None = None
    probe_seconds: float = 0.0
    scale: int = 1  # how many times faster than real time the lab clock ran
    goal: float = NOTEBOOK_GOAL  # seconds each notebook should take (reported)
    contract: ContractRun | None = None
    notebooks: list[NotebookRun] = field(default_factory=list)
    localstack: FidelityTable | None = None
    moto: FidelityTable | None = None

    @property
    def passed(self) -> bool:
        contract_ok = self.contract is None or self.contract.passed
        return contract_ok and all(run.result == PASSED for run in self.notebooks)

    def over_goal(self) -> list[NotebookRun]:
        """The notebooks that took longer than ``goal`` (whether or not they passed)."""
        return [run for run in self.notebooks if run.seconds > self.goal]


def run(
    repo: Path,
    *,
    parts: Sequence[str] = PARTS,
    limit: float = NOTEBOOK_LIMIT,
    goal: float = NOTEBOOK_GOAL,
    labs: Sequence[str] = (),
    fidelity_doc: Path | None = None,
    jobs: int = JOBS,
    console: Console,
) -> SuiteResult:
    """Start LocalStack, run ``parts`` on it, ``jobs`` at a time, stop it; print and return what was measured.

    ``labs`` (two-digit numbers) keeps the notebooks of those labs only (empty: every lab).
    A notebook fails when a cell fails or it runs past ``limit`` s; ``goal`` is only reported.
    The contract suite and each notebook are one part each; every notebook has its own
    kernel, home and resource prefix, so parts share LocalStack and nothing else.
    """
    result = SuiteResult(goal=goal)
    progress = _progress(console)
    with _terminate_as_exit(), tempfile.TemporaryDirectory(prefix="fleetlab-localstack-") as scratch:
        shared = Path(scratch)
        try:
            result.scale = settings().time_scale
            ports = localstack_host.available_ports()
            started = localstack_host.up(ports=ports, report=progress)
            result.install_seconds, result.start_seconds = started.install_seconds, started.start_seconds
            pointed = {**started.environment, "FLEETLAB_FIDELITY_CACHE": str(shared / "fidelity")}
            with mock.patch.dict(os.environ, pointed):
                _measure_fidelity(result, fidelity_doc, progress)
                _run_parts(result, repo, parts, labs, shared, limit, goal, jobs, progress)
        finally:
            localstack_host.down(report=progress)
    print_report(result, console)
    return result


def _run_parts(result: SuiteResult, repo: Path, parts: Sequence[str], labs: Sequence[str], shared: Path,
               limit: float, goal: float, jobs: int, progress: localstack_host.Report) -> None:
    """The contract suite (the longest part, so first) and every notebook, ``jobs`` at a time, in ``result``."""

    def notebook(path: Path, kind: str) -> NotebookRun:
        progress(f"running {path.relative_to(repo)} (goal {goal:g} s, stopped at {limit:g} s)")
        run = run_notebook(path, kind, shared, limit)
        progress(f"{path.relative_to(repo)}: {run.result} in {run.seconds:.0f} s")
        return run

    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="test-localstack")
    try:
        contract = pool.submit(run_contract_suite, repo, shared, progress) if "contract" in parts else None
        runs = [pool.submit(notebook, path, kind) for kind in ("instructor", "student") if kind in parts
                for path in lab_notebooks(repo, kind, labs)]
        result.contract = contract.result() if contract else None
        result.notebooks = [run.result() for run in runs]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # on an interrupt, what has not started never starts


# --------------------------------------------------------------------------- fidelity


def _measure_fidelity(result: SuiteResult, fidelity_doc: Path | None, progress: localstack_host.Report) -> None:
    """LocalStack's and moto's tables; with ``fidelity_doc``, the doc is rewritten first (it probes all three)."""
    started = time.monotonic()
    if fidelity_doc is not None:
        progress(f"probing moto, moto-server and LocalStack for {fidelity_doc}")
        if write_fidelity_doc(["--out", str(fidelity_doc), "--backends", "moto,moto-server,localstack"]):
            progress(f"could not write {fidelity_doc}: see the lines above")
    else:
        progress("probing LocalStack's fidelity")
    result.localstack = _table_of("localstack", refresh=fidelity_doc is None)
    result.moto = _table_of("moto", refresh=False)
    result.probe_seconds = time.monotonic() - started


def _table_of(name: str, *, refresh: bool) -> FidelityTable:
    backend = open_backend(name)
    try:
        return probe(backend, refresh=refresh)
    finally:
        backend.close()


# --------------------------------------------------------------------------- the contract suite


def run_contract_suite(repo: Path, shared: Path, progress: localstack_host.Report) -> ContractRun:
    """``pytest tests/contract -m contract`` on LocalStack, in a child process, at most CONTRACT_LIMIT s."""
    progress(f"running the contract suite on LocalStack (at most {CONTRACT_LIMIT:g} s)")
    command = [sys.executable, "-m", "pytest", "tests/contract", "-m", "contract", "-q", "-p", "no:cacheprovider"]
    env = {**os.environ, "FLEETLAB_CONTRACT_BACKENDS": "localstack", "FLEETLAB_HOME": str(shared / "contract")}
    started = time.monotonic()
    child = subprocess.Popen(command, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        output, _ = child.communicate(timeout=CONTRACT_LIMIT)
        lines = output.strip().splitlines()
        summary = lines[-1] if lines else "no output"
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        output, _ = child.communicate()
        lines, summary = output.strip().splitlines(), f"stopped at the {CONTRACT_LIMIT:g} s limit"
    log = localstack_host.default_home().run / "contract.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(output)
    failures = tuple(line for line in lines if line.startswith(("FAILED ", "ERROR ")))
    if child.returncode:
        failures += (f"the whole output: {log}",)
    return ContractRun(summary, child.returncode, time.monotonic() - started, failures)


# --------------------------------------------------------------------------- notebooks


def every_lab(repo: Path) -> tuple[str, ...]:
    """The two-digit ids of every lab with an instructor notebook (``--labs``' choices)."""
    return tuple(sorted(path.name[:2] for path in (repo / "labs" / "solutions").glob("[0-9][0-9]_*.ipynb")))


def lab_notebooks(repo: Path, kind: str, labs: Sequence[str] = ()) -> list[Path]:
    """The instructor (``labs/solutions``) or student (``labs``) notebooks, in lab order; only ``labs`` if given."""
    folder = repo / "labs" / ("solutions" if kind == "instructor" else "")
    return sorted(path for path in folder.glob("[0-9][0-9]_*.ipynb") if not labs or path.name[:2] in labs)


def run_notebook(path: Path, kind: str, shared: Path, limit: float) -> NotebookRun:
    """Run ``path`` top to bottom in a fresh kernel on LocalStack; stop at the first failing cell or at ``limit``."""
    from fleetlab_tools.kernel import CellStatus, NotebookKernel

    nb = nbformat.read(path, as_version=4)
    home = Path(tempfile.mkdtemp(prefix=f"{path.stem}-", dir=shared))
    env = {key: value for key, value in os.environ.items() if key != "FLEETLAB_ALLOW_REAL_AWS"}
    env.update(FLEETLAB_HOME=str(home), FLEETLAB_EXPECT_CHECKS=_EXPECTED_CHECKS[kind],
               MPLCONFIGDIR=str(shared / "matplotlib"))
    started = time.monotonic()
    deadline = started + limit
    slowest = (0.0, "")
    with NotebookKernel(nb, env=env, cwd=path.parent) as kernel:
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            left = deadline - time.monotonic()
            ran = kernel.run_cell(index, max(left, 0.0))
            where = f"cell {index} ({_first_line(cell.source)})"
            slowest = max(slowest, (ran.seconds, f"{where}: {ran.seconds:.0f} s"))
            if ran.status == CellStatus.OK:
                continue
            if ran.status == CellStatus.TIMEOUT:
                return NotebookRun(path, kind, TIME_LIMIT, time.monotonic() - started,
                                   f"{where}: still running{_interrupted_at(cell)}", slowest[1])
            return NotebookRun(path, kind, FAILED, time.monotonic() - started, f"{where}: {ran.error}", slowest[1])
    return NotebookRun(path, kind, PASSED, time.monotonic() - started, slowest=slowest[1])


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CELL_FRAME = re.compile(r"^Cell In\[\d+\], line (\d+)")
_LIBRARY_FRAME = re.compile(r"^File \S*?fleetlab/(\S+?:\d+), in (\S+?)(?:\(|$)")


def _interrupted_at(cell: nbformat.NotebookNode) -> str:
    """Where the interrupt found the cell: its line, and the innermost fleetlab frame ("" if unknown)."""
    frames = [_ANSI.sub("", entry) for output in cell.get("outputs", []) if output.get("output_type") == "error"
              for entry in output.get("traceback", [])]
    cell_line = next((match[1] for frame in frames if (match := _CELL_FRAME.match(frame))), None)
    library = [match for frame in frames if (match := _LIBRARY_FRAME.match(frame))]
    if cell_line is None:
        return ""
    inside = f", in {library[-1][2]} ({library[-1][1]})" if library else ""
    return f" at line {cell_line}{inside}"


def _first_line(source: str) -> str:
    lines = [line.strip() for line in source.splitlines() if line.strip() and not line.strip().startswith("#")]
    text = lines[0] if lines else ""
    return f"`{text[:60]}{'...' if len(text) > 60 else ''}`"


# --------------------------------------------------------------------------- the report


FIDELITY_METADATA = ("fleetlab", "fidelity")
"""Where a notebook declares the fidelity rows its lab depends on: ``nb.metadata["fleetlab"]["fidelity"]``."""


def declared_features(nb: nbformat.NotebookNode) -> list[str]:
    """The fidelity rows ``nb`` declares in its metadata (empty when it declares none)."""
    section, key = FIDELITY_METADATA
    declared = nb.metadata.get(section, {}).get(key, [])
    return [str(feature) for feature in declared] if isinstance(declared, list) else []


def features_read(notebooks: Sequence[Path]) -> list[str]:
    """The fidelity features these notebooks declare in their metadata or name in their text, in table order."""
    text = "\n".join(path.read_text() for path in notebooks)
    declared = {feature for path in notebooks for feature in declared_features(nbformat.read(path, as_version=4))}
    return [feature for feature in feature_ids()
            if feature in declared or re.search(rf"\b{re.escape(feature)}\b", text)]


def declared_differences(localstack: FidelityTable, moto: FidelityTable | None, features: Sequence[str]) -> list[str]:
    """Of ``features``, those on which LocalStack differs from AWS or from moto, in words."""
    lines = []
    for feature in features:
        here = localstack.get(feature)
        there = moto.get(feature) if moto else None
        if not here.matches_aws:
            lines.append(f"{feature}: differs from AWS here: {here.observed}")
        elif there is not None and not there.matches_aws:
            lines.append(f"{feature}: as AWS here ({here.observed}); moto differs: {there.observed}")
    return lines


def print_report(result: SuiteResult, console: Console) -> None:
    """The timings, the contract suite's line, one table per lab, and what LocalStack and moto disagree on."""
    console.print(Rule("fleetlab on LocalStack"), width=min(console.width, RULE_WIDTH))
    if result.install_seconds is not None:
        console.print(f"installed LocalStack in {result.install_seconds:.0f} s", highlight=False)
    if result.start_seconds is not None:
        console.print(f"LocalStack and moto healthy {result.start_seconds:.1f} s after starting", highlight=False)
    console.print(f"fidelity measured in {result.probe_seconds:.0f} s", highlight=False)
    if result.contract is not None:
        mark = "pass" if result.contract.passed else "FAIL"
        console.print(f"contract suite: {mark}: {result.contract.summary} ({result.contract.seconds:.0f} s)",
                      highlight=False, soft_wrap=True)
        for line in result.contract.failures:
            console.print(f"  {line}", highlight=False, soft_wrap=True)
    for lab, runs in _by_lab(result.notebooks):
        console.print(_lab_table(lab, runs, result))
    if result.localstack is not None:
        _print_disagreements(result, console)
    passed = sum(run.result == PASSED for run in result.notebooks)
    slow = result.over_goal()
    console.print(f"notebooks: {passed} passed, {len(result.notebooks) - passed} failed; "
                  f"{len(slow)} over the {result.goal:g} s goal" + "".join(
                      f"\n  {run.path.name} ({run.kind}): {run.seconds:.0f} s" for run in slow), highlight=False)


def _by_lab(runs: Sequence[NotebookRun]) -> Iterator[tuple[str, list[NotebookRun]]]:
    labs: dict[str, list[NotebookRun]] = {}
    for notebook_run in runs:
        labs.setdefault(notebook_run.lab, []).append(notebook_run)
    yield from sorted(labs.items())


def _lab_table(lab: str, runs: list[NotebookRun], result: SuiteResult) -> Table:
    notebook = runs[0].path.name
    table = Table(title=f"lab {lab} ({notebook}) on LocalStack", title_justify="left", show_lines=True)
    for column in ("notebook", "result", "time", "where it stopped", "slowest cell"):
        table.add_column(column, overflow="fold")
    slow = result.over_goal()
    for notebook_run in runs:
        over = notebook_run in slow
        table.add_row(
            notebook_run.kind,
            notebook_run.result,
            f"{notebook_run.seconds:.0f} s" + (f" (over the {result.goal:g} s goal)" if over else ""),
            notebook_run.stopped_at,
            notebook_run.slowest,
            style="red" if notebook_run.result != PASSED else "yellow" if over else None,
        )
    if result.localstack is not None:
        differences = declared_differences(result.localstack, result.moto, features_read([r.path for r in runs]))
        table.caption = "declared divergences this lab reads: " + ("; ".join(differences) or "none")
        table.caption_justify = "left"
    return table


def _print_disagreements(result: SuiteResult, console: Console) -> None:
    assert result.localstack is not None
    console.print(f"clock on LocalStack: {describe_scale(result.scale)} (FLEETLAB_TIME_SCALE={result.scale}); "
                  "the virtual clock's waits take 1/scale of their length here", highlight=False, soft_wrap=True)
    if result.moto is None:
        return
    differing = declared_differences(result.localstack, result.moto, feature_ids())
    console.print(f"where LocalStack differs from AWS or from moto ({len(differing)} rows of docs/fidelity.md):",
                  highlight=False)
    for line in differing:
        console.print(f"  - {line}", highlight=False, soft_wrap=True)


# --------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """Within the block, SIGTERM (a CI timeout, ``kill``) unwinds like Ctrl-C, so LocalStack is stopped."""

    def exit_now(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, exit_now)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _progress(console: Console) -> localstack_host.Report:
    return lambda line: console.print(f"[dim]test-localstack:[/] {line}", highlight=False, soft_wrap=True)
