"""The notebooks measured: each lab's headless run time and the batch grader's throughput."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fleetlab_instructor.bench.report import not_measured, row

LAB_GOAL_DEFAULT = 20.0
"""Seconds for a lab, headless, on the default backend: the course's target for every lab."""

LAB_GOALS = {"04": 30.0, "07": 45.0}
"""The course's two exceptions, named ahead of their labs so the bench holds them to it when they land:
04 waits on Step Functions timers, which run in real time; 07 is the whole-fleet capstone."""
FIRST_CELL_GOAL = 2.0
"""Seconds for a lab's first cell (its imports and ``fleetlab.start``), the kernel already started."""
GRADE_GOAL = 30.0  # notebooks per minute on 2 cores: the course's target for `fleetlab grade`
SHARE_GOAL = 0.85  # of the machine's limit (cores x 60 / CPU-seconds a graded notebook needs), measured in the same run


def default_notebooks(root: Path | None = None) -> list[Path]:
    """Instructor notebooks (``labs/solutions/*.ipynb``), then ``labs/*.ipynb``."""
    labs = _labs_folder(root)
    if labs is None:
        return []
    return sorted(labs.glob("solutions/*.ipynb")) + sorted(labs.glob("*.ipynb"))


def lab_goal(path: Path) -> float:
    """The headless time goal of a lab notebook, from its number."""
    return LAB_GOALS.get(path.name[:2], LAB_GOAL_DEFAULT)


def lab_run_times(notebooks: Sequence[Path] | None = None, *, timeout: float = 120) -> dict[str, Any]:
    """Run each notebook headless in a fresh kernel on the moto backend; time it, and its first cell cold and warm.

    Every kernel gets ``FLEETLAB_BACKEND=moto`` (the default backend) and
    each notebook a fresh, throwaway ``FLEETLAB_HOME``, so checks run here
    never touch a learner's progress. In that home the notebook's first cell
    runs alone first, with no fidelity table cached (a learner's first lab on
    this backend and version: the cold first cell), and the measurement it
    starts in the background is waited for; then the whole notebook runs in
    a new kernel, its first cell finding the table cached (every later lab:
    the warm first cell). Each cell may run ``timeout`` seconds.
    """
    paths = list(notebooks) if notebooks is not None else default_notebooks()
    runs: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fleetlab-bench-") as home:
        env = {k: v for k, v in os.environ.items() if k not in ("FLEETLAB_ALLOW_REAL_AWS", "FLEETLAB_FIDELITY_CACHE")}
        env["FLEETLAB_BACKEND"] = "moto"
        for path in paths:
            own_home = Path(tempfile.mkdtemp(dir=home))
            lab_env = {**env, "FLEETLAB_HOME": str(own_home)}
            cold = execute_notebook(path, env=lab_env, timeout=timeout, cells=1)
            _wait_for_measurements(own_home)
            run = execute_notebook(path, env=lab_env, timeout=timeout)
            run["first_cell"] = {"cold_seconds": cold["first_cell_seconds"], "warm_seconds": run["first_cell_seconds"]}
            goal = lab_goal(path)
            label = _display_path(path)
            runs.append({"notebook": label, "goal_seconds": goal, **run})
            rows.append(row(f"lab {label}", "moto", run["wall_seconds"], "s", goal=f"<= {goal:g} s",
                            met=(run["wall_seconds"] <= goal) and not run["error"], note=run["error"]))
            for cache, measured in (("warm", run), ("cold", cold)):
                seconds = measured["first_cell_seconds"]
                rows.append(row(f"lab {label} first cell, fidelity cache {cache}", "moto", seconds, "s",
                                goal=f"<= {FIRST_CELL_GOAL:g} s",
                                met=seconds is not None and seconds <= FIRST_CELL_GOAL and not measured["error"],
                                note=measured["error"]))
    if not paths:
        rows.append(row("lab notebooks", "moto", None, "s", note="no notebooks found under labs/"))
    return {"name": "labs", "backend": "moto", "timeout": timeout, "runs": runs,
            "error": "; ".join(f"{r['notebook']}: {r['error']}" for r in runs if r["error"]), "rows": rows}


def _wait_for_measurements(home: Path) -> None:
    """Wait for the fidelity measurements a lab started in the background under ``home`` to end."""
    from fleetlab.backends.fidelity import background

    for held in home.glob("*.measuring"):
        background.wait(held.with_name(held.name.removesuffix(".measuring")))


def execute_notebook(path: Path, *, env: dict[str, str], timeout: float, cells: int | None = None) -> dict[str, Any]:
    """One headless run of ``path`` in a fresh kernel (in its folder): its time, its first cell's and its slowest.

    The cells (the first ``cells`` code cells, or all) run through
    ``fleetlab_tools.kernel.NotebookKernel`` (the grader's executor), each
    for at most ``timeout`` seconds; the run stops at the first cell that
    raises, overruns or kills the kernel, and ``error`` names it.
    """
    import nbformat
    from fleetlab_tools.kernel import CellRun, CellStatus, KernelStartFailed, NotebookKernel

    nb = nbformat.read(path, as_version=4)
    runs: list[CellRun] = []
    error = ""
    kernel_ready: float | None = None
    t0 = time.perf_counter()
    try:
        with NotebookKernel(nb, env=env, cwd=path.parent) as kernel:
            kernel_ready = time.perf_counter() - t0
            if cells is None:
                runs = kernel.run_code_cells(timeout)
            else:
                code = [index for index, cell in enumerate(nb.cells) if cell.cell_type == "code"][:cells]
                for index in code:
                    runs.append(kernel.run_cell(index, timeout))
                    if runs[-1].status != CellStatus.OK:
                        break
    except KernelStartFailed as exc:  # a notebook that cannot run is a result, not the end of the bench
        error = str(exc)
    seconds = {ran.index: ran.seconds for ran in runs}
    if runs and runs[-1].status != CellStatus.OK:
        error = f"cell {runs[-1].index}: {' '.join(runs[-1].error.split())[:200]}"
    return {
        "wall_seconds": time.perf_counter() - t0,
        "kernel_start_seconds": kernel_ready,
        "cells_seconds": sum(seconds.values()),
        "first_cell_seconds": runs[0].seconds if runs else None,
        "slowest_cells": _slowest_cells(nb, seconds, 3),
        "error": error,
    }


def _slowest_cells(nb: Any, seconds: dict[int, float], count: int) -> list[dict[str, Any]]:
    ranked = sorted(seconds.items(), key=lambda item: -item[1])[:count]
    return [{"cell": index, "seconds": round(taken, 3),
             "first_line": (nb.cells[index].source.strip().splitlines() or [""])[0][:80]}
            for index, taken in ranked]


def grade_throughput(notebooks: Sequence[Path] | None = None, *, workers: int | None = None,
                     min_jobs: int = 4) -> dict[str, Any]:
    """Notebooks graded per minute by the batch grader (``grade_notebooks``), by default over every lab notebook.

    The default batch is ``default_notebooks()``: the instructor's solutions
    and the student notebooks (real submissions: the first score full marks,
    the second raise at the exercises and score 0). ``workers`` defaults to
    the grader's own default. When there are fewer than ``min_jobs``
    notebooks, the list is repeated up to ``min_jobs`` so every worker has
    work (a batch of one notebook measures latency, not throughput); the
    JSON says how many were distinct, and the load average before and after
    (the machine may be shared). A solution notebook that did not grade
    cleanly is the result's ``error``; a student notebook's cells raise by design.
    """
    from fleetlab_instructor.grade.grade import DEFAULT_WORKERS, grade_notebooks

    workers = workers or DEFAULT_WORKERS
    paths = list(notebooks) if notebooks is not None else default_notebooks()
    if not paths:
        return not_measured("grade throughput", None, "no lab notebooks found",
                            unit="notebooks/min", goal=f">= {GRADE_GOAL:g}/min")
    jobs = [paths[i % len(paths)] for i in range(max(len(paths), min_jobs))]
    load_before = os.getloadavg()
    busy_before = machine_cpu_seconds()
    t0 = time.perf_counter()
    graded = grade_notebooks(jobs, workers=workers, grader_env=dict(os.environ))
    wall = time.perf_counter() - t0
    cpu = machine_cpu_seconds() - busy_before
    rate = len(jobs) / wall * 60
    cpu_per_notebook = cpu / len(jobs)
    limit = (os.cpu_count() or 1) * 60 / cpu_per_notebook if cpu_per_notebook else 0.0
    errors = sorted({f"{Path(r.notebook).name}: {r.error}" for r in graded if r.error and _is_solution(Path(r.notebook))})
    error = "; ".join(errors)
    solutions = sum(_is_solution(path) for path in jobs)  # graded, repeats included
    return {
        "name": "grade",
        "backend": "moto",
        "command": "fleetlab bench --only grade",
        "notebooks": len(jobs),
        "distinct_notebooks": len(paths),
        "solution_notebooks": sum(_is_solution(path) for path in paths),
        "workers": workers,
        "wall_seconds": wall,
        "notebooks_per_minute": rate,
        "machine_cpu_seconds": cpu,
        "cpu_seconds_per_notebook": cpu_per_notebook,
        "machine_limit_per_minute": limit,
        "share_of_limit": rate / limit if limit else 0.0,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "totals": [r.total for r in graded],
        "error": error,
        "rows": [row(f"grade throughput ({len(jobs)} notebooks: {solutions} solutions, {len(jobs) - solutions} "
                     f"student; {workers} workers)", "moto", rate, "notebooks/min", goal=f">= {GRADE_GOAL:g}/min",
                     met=(rate >= GRADE_GOAL) and not error, note=error),
                 row("grade throughput against the machine's limit (cores x 60 / CPU-s a notebook)", "moto",
                     100 * rate / limit if limit else 0.0, "%", goal=f">= {SHARE_GOAL:.0%}",
                     met=bool(limit) and rate / limit >= SHARE_GOAL,
                     note=f"{cpu_per_notebook:.2f} CPU-s a notebook, machine-wide; limit {limit:.1f}/min")],
    }


def machine_cpu_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (``/proc/stat``): the grader's kernels and
    judges included, which ``getrusage`` of the grader never sees (the warm template does not wait for them)."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    busy = sum(fields[:8]) - idle  # user nice system idle iowait irq softirq steal
    return busy / os.sysconf("SC_CLK_TCK")


def _is_solution(path: Path) -> bool:
    return path.parent.name == "solutions"


def _labs_folder(root: Path | None = None) -> Path | None:
    candidates = [root] if root is not None else [Path.cwd() / "labs", Path(__file__).resolve().parents[4] / "labs"]
    return next((c for c in candidates if c is not None and c.is_dir()), None)


def _display_path(path: Path) -> str:
    parts = path.resolve().parts
    return "/".join(parts[parts.index("labs"):]) if "labs" in parts else path.name

