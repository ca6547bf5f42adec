"""The bench suite: the plan of measurements, running them, and the course total."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from fleetlab_instructor.bench.chaos import chaos_day
from fleetlab_instructor.bench.notebooks import grade_throughput, lab_run_times
from fleetlab_instructor.bench.overhead import library_overhead
from fleetlab_instructor.bench.report import machine_info, results_document, results_table, row, save
from fleetlab_instructor.bench.throughput import (
    demo_wall_time,
    pipeline_throughput,
    simulated_fleet_day,
    virtual_clock_ratio,
)

MEASUREMENTS = ("pipeline", "overhead", "clock", "demo", "chaos", "labs", "grade")
DEFAULT_BACKENDS = ("moto", "moto-server")
DEFAULT_OUT = Path("bench/results.json")
COURSE_GOAL = 180.0  # seconds: every lab headless plus grading the solutions, 2 cores


def run(
    console: Console,
    *,
    only: Sequence[str] = MEASUREMENTS,
    backends: Sequence[str] = DEFAULT_BACKENDS,
    steps: int = 200,
    out: Path = DEFAULT_OUT,
) -> int:
    """Run the chosen measurements, print the table, save the JSON.

    Returns 1 when a measurement went wrong (it raised, or what it measured
    did not complete correctly, so its figure means little), else 0; a
    missed goal shows in the table and does not change the exit code.
    """
    started = datetime.now(timezone.utc)  # before any backend: the virtual clock moves datetime too
    machine = machine_info()  # the load average before the bench adds its own
    plan = measurement_plan(only, backends, steps)
    results: list[dict[str, Any]] = []
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, redirect_stdout=False, redirect_stderr=False) as bar:
        task = bar.add_task("bench", total=len(plan))
        for label, measure in plan:
            bar.update(task, description=f"bench: {label}")
            results.append(guarded(label, measure))
            bar.advance(task)
    results += course_total(results)
    document = results_document(results, started=started, machine=machine, settings={
        "backends": list(backends), "steps": steps, "only": list(only)})
    console.print(results_table(results))
    save(document, out)
    console.print(f"saved {out}")
    broken = [r for r in results if r.get("error")]
    for result in broken:
        console.print(f"[bold red]{result['name']} ({result.get('backend') or '-'}) went wrong:[/] {result['error']}",
                      highlight=False)
    return 1 if broken else 0


def measurement_plan(
    only: Sequence[str], backends: Sequence[str], steps: int
) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    """(label, thunk) for every measurement to run: per backend, then the notebook ones."""
    plan: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    per_block = 10  # short blocks follow a shared machine's load changes more closely
    blocks = max(2, steps // per_block)
    for name in backends:
        if "pipeline" in only:
            plan.append((f"pipeline on {name}", lambda name=name: pipeline_throughput(name, steps)))
        if "overhead" in only:
            plan.append((f"overhead on {name}",
                         lambda name=name: library_overhead(name, blocks=blocks, per_block=per_block)))
        if "clock" in only:
            plan.append((f"virtual clock on {name}", lambda name=name: virtual_clock_ratio(name, steps)))
        if "demo" in only:
            plan.append((f"demo on {name}", lambda name=name: demo_wall_time(name)))
    if "clock" in only:
        plan.append(("simulated fleet day", simulated_fleet_day))
    if "chaos" in only:
        plan.append(("chaos day on moto", chaos_day))
    if "labs" in only:
        plan.append(("lab notebooks", lab_run_times))
    if "grade" in only:
        plan.append(("grade throughput", grade_throughput))
    return plan


def course_total(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The whole course plus grading its solutions, derived from the labs and grade measurements.

    Every instructor notebook once, headless, plus the grader's wall time per
    notebook times the solution notebooks it graded. Empty unless both
    measurements ran cleanly.
    """
    labs = next((r for r in results if r.get("name") == "labs" and not r.get("error")), None)
    grade = next((r for r in results if r.get("name") == "grade" and not r.get("error")), None)
    if labs is None or grade is None:
        return []
    solutions = [run["wall_seconds"] for run in labs["runs"] if run["notebook"].startswith("labs/solutions/")]
    grading = grade["wall_seconds"] * grade["solution_notebooks"] / grade["notebooks"]
    total = sum(solutions) + grading
    return [{"name": "course", "backend": "moto", "error": "", "rows": [
        row(f"whole course ({len(solutions)} labs) + grading the solutions", "moto", total, "s",
            goal=f"<= {COURSE_GOAL:g} s", met=total <= COURSE_GOAL,
            note=f"labs {sum(solutions):.1f} s + grading {grading:.1f} s")]}]


def guarded(label: str, measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one measurement; a failure becomes a result with ``error`` instead of ending the bench."""
    try:
        return measure()
    except Exception as exc:  # a benchmark harness records a broken measurement and carries on
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return {
            "name": label,
            "backend": None,
            "error": f"{type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})",
            "rows": [row(label, None, None, "", note="failed: see error")],
        }
