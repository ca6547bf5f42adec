"""The notebooks measured: each lab's headless run time (nbclient) and the batch grader's throughput."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .report import not_measured, row

LAB_GOAL_DEFAULT = 20.0
"""Seconds for a lab, headless, on the default backend: the course's target for every lab."""

LAB_GOALS = {"04": 30.0, "07": 45.0}
"""The course's two exceptions, named ahead of their labs so the bench holds them to it when they land:
04 waits on Step Functions timers, which run in real time; 07 is the whole-fleet capstone."""
GRADE_GOAL = 30.0  # notebooks per minute on 2 cores: the course's target for `fleetlab grade`


def default_notebooks(root: Path | None = None) -> list[Path]:
    """Instructor notebooks (``labs/solutions/*.ipynb``), then ``labs/*.ipynb``."""
    labs = _labs_folder(root)
    if labs is None:
        return []
    return sorted(labs.glob("solutions/*.ipynb")) + sorted(labs.glob("*.ipynb"))


def lab_goal(path: Path) -> float:
    """The headless time goal of a lab notebook, from its number."""
    return LAB_GOALS.get(path.name[:2], LAB_GOAL_DEFAULT)


def lab_run_times(notebooks: Sequence[Path] | None = None, *, timeout: float = 120,
                  attempts: int = 2) -> dict[str, Any]:
    """Execute each notebook headless with nbclient, in this process, on the moto backend; time each.

    The kernel gets ``FLEETLAB_BACKEND=moto`` (the default backend) and a
    fresh, throwaway ``FLEETLAB_HOME`` per run, so checks run here never touch
    a learner's progress and every run starts with a cold fidelity cache (as
    in the grader, where each notebook gets a fresh home).

    nbclient's client sometimes misses a finished cell's reply and waits out
    the whole ``timeout`` without an error (jupyter/nbclient#312, about 4% of
    runs when measured): such a run is recorded as stalled and the notebook run
    again, up to ``attempts`` runs; the value is the last run's time, and
    every stall is kept in the JSON and named in the note.
    """
    paths = list(notebooks) if notebooks is not None else default_notebooks()
    runs: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fleetlab-bench-") as home:
        env = {k: v for k, v in os.environ.items() if k not in ("FLEETLAB_ALLOW_REAL_AWS",)}
        env["FLEETLAB_BACKEND"] = "moto"

        def attempt(path: Path) -> dict[str, Any]:
            return execute_notebook(path, env={**env, "FLEETLAB_HOME": tempfile.mkdtemp(dir=home)}, timeout=timeout)

        for path in paths:
            tries = [attempt(path)]
            while tries[-1]["stalled_cells"] and len(tries) < max(1, attempts):
                tries.append(attempt(path))
            last = tries[-1]
            stalls = [f"cell {c['cell']} {c['seconds']:.0f} s" for t in tries for c in t["stalled_cells"]]
            goal = lab_goal(path)
            label = _display_path(path)
            runs.append({"notebook": label, "goal_seconds": goal, **last, "attempts": tries})
            notes = [last["error"]] if last["error"] else []
            if stalls:
                notes.append(f"nbclient stall (#312) in {', '.join(stalls)}; "
                             + ("still stalled" if last["stalled_cells"] else f"value from run {len(tries)}"))
            rows.append(row(f"lab {label}", "moto", last["wall_seconds"], "s", goal=f"<= {goal:g} s",
                            met=(last["wall_seconds"] <= goal) and not last["error"], note="; ".join(notes)))
    if not paths:
        rows.append(row("lab notebooks", "moto", None, "s", note="no notebooks found under labs/"))
    return {"name": "labs", "backend": "moto", "timeout": timeout, "runs": runs,
            "error": "; ".join(f"{r['notebook']}: {r['error']}" for r in runs if r["error"]), "rows": rows}


def execute_notebook(path: Path, *, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """One headless run of ``path`` with nbclient (in its folder); its time, slowest cells and stalls."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    cells = CellTimer()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}},
                            on_cell_start=cells.start, on_cell_executed=cells.executed)
    error = ""
    t0 = time.perf_counter()
    try:
        client.execute(env=env, stderr=subprocess.DEVNULL)  # the kernel's TCP warning is noise here
    except Exception as exc:  # a failing notebook is a result, not the end of the bench
        error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    wall = time.perf_counter() - t0
    stalled = [{"cell": i, "seconds": round(s, 3)} for i, s in sorted(cells.seconds.items()) if s >= 0.98 * timeout]
    return {
        "wall_seconds": wall,
        "kernel_start_seconds": (cells.first_start - t0) if cells.first_start else None,
        "cells_seconds": sum(cells.seconds.values()),
        "slowest_cells": cells.slowest(nb, 3),
        "stalled_cells": stalled,  # a stall can also make a later cell fail (timers ran out meanwhile): retried alike
        "error": error,
    }


class CellTimer:
    """nbclient hooks that time each cell on this process's wall clock.

    nbclient's own timing metadata comes from the kernel's message dates,
    which the virtual clock in the kernel moves; these do not.
    """

    def __init__(self) -> None:
        self.seconds: dict[int, float] = {}
        self.first_start: float | None = None
        self._started: dict[int, float] = {}

    def start(self, cell: Any = None, cell_index: int = 0, **_: Any) -> None:
        now = time.perf_counter()
        self.first_start = self.first_start or now
        self._started[cell_index] = now

    def executed(self, cell: Any = None, cell_index: int = 0, **_: Any) -> None:
        if cell_index in self._started:
            self.seconds[cell_index] = time.perf_counter() - self._started.pop(cell_index)

    def slowest(self, nb: Any, count: int) -> list[dict[str, Any]]:
        ranked = sorted(self.seconds.items(), key=lambda item: -item[1])[:count]
        return [{"cell": index, "seconds": round(seconds, 3),
                 "first_line": (nb.cells[index].source.strip().splitlines() or [""])[0][:80]}
                for index, seconds in ranked]


def grade_throughput(notebooks: Sequence[Path] | None = None, *, workers: int = 2, min_jobs: int = 4) -> dict[str, Any]:
    """Notebooks graded per minute by ``fleetlab.grading``'s batch grader over the solution notebooks.

    When there are fewer than ``min_jobs`` notebooks, the list is repeated
    up to ``min_jobs`` so every worker has work (a batch of one notebook
    measures latency, not throughput); the JSON says how many were distinct.
    """
    from ..grading.grade import grade_notebooks

    labs = _labs_folder()
    paths = list(notebooks) if notebooks is not None else (
        sorted(labs.glob("solutions/*.ipynb")) if labs is not None else [])
    if not paths:
        return not_measured("grade throughput", None, "no solution notebooks found",
                            unit="notebooks/min", goal=f">= {GRADE_GOAL:g}/min")
    jobs = [paths[i % len(paths)] for i in range(max(len(paths), min_jobs))]
    t0 = time.perf_counter()
    graded = grade_notebooks(jobs, workers=workers, grader_env=dict(os.environ))
    wall = time.perf_counter() - t0
    rate = len(jobs) / wall * 60
    errors = sorted({f"{Path(r.notebook).name}: {r.error}" for r in graded if r.error})
    error = "; ".join(errors)
    return {
        "name": "grade",
        "backend": "moto",
        "notebooks": len(jobs),
        "distinct_notebooks": len(paths),
        "workers": workers,
        "wall_seconds": wall,
        "notebooks_per_minute": rate,
        "totals": [r.total for r in graded],
        "error": error,
        "rows": [row(f"grade throughput ({len(jobs)} runs of {len(paths)} solution notebook(s), {workers} workers)",
                     "moto", rate, "notebooks/min", goal=f">= {GRADE_GOAL:g}/min",
                     met=(rate >= GRADE_GOAL) and not error, note=error)],
    }


def _labs_folder(root: Path | None = None) -> Path | None:
    candidates = [root] if root is not None else [Path.cwd() / "labs", Path(__file__).resolve().parents[3] / "labs"]
    return next((c for c in candidates if c is not None and c.is_dir()), None)


def _display_path(path: Path) -> str:
    parts = path.resolve().parts
    return "/".join(parts[parts.index("labs"):]) if "labs" in parts else path.name

