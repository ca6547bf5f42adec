"""What the bench reports: result rows, the rich table, the JSON document and the machine it ran on."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.table import Table

from fleetlab.core.versions import package_version

PACKAGES = ("fleetlab", "boto3", "botocore", "moto", "time-machine", "jsonschema", "nbclient", "ipykernel", "rich")


def row(measurement: str, backend: str | None, value: float | None, unit: str, *,
        goal: str = "", met: bool | None = None, note: str = "") -> dict[str, Any]:
    """One line of the results table."""
    return {"measurement": measurement, "backend": backend, "value": value, "unit": unit,
            "goal": goal, "met": met, "note": note}


def results_table(results: Sequence[dict[str, Any]]) -> Table:
    """The rich table: measurement | backend | value | unit | goal | met?, notes as numbered footnotes."""
    table = Table(title="fleetlab bench", caption_justify="left")
    for name, justify in (("measurement", "left"), ("backend", "left"), ("value", "right"),
                          ("unit", "left"), ("goal", "left"), ("met?", "center")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    notes: list[str] = []
    for result in results:
        for line in result["rows"]:
            met = {True: "[green]yes[/]", False: "[red]NO[/]", None: "-"}[line["met"]]
            if line["value"] is None:
                value = line["note"] or "-"
            else:
                value = _fmt(line["value"])
                if line["note"]:
                    notes.append(line["note"])
                    value = f"({len(notes)}) {value}"
            table.add_row(line["measurement"], line["backend"] or "-", value, line["unit"], line["goal"] or "-", met)
    if notes:
        table.caption = "\n".join(f"({n}) {note}" for n, note in enumerate(notes, 1))
    return table


def results_document(results: Sequence[dict[str, Any]], *, started: datetime, settings: dict[str, Any],
                     machine: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything saved: when, on what machine, with which settings, every result and row."""
    return {
        "format": "fleetlab-bench/1",
        "timestamp": started.isoformat(timespec="seconds"),
        "machine": machine or machine_info(),
        "settings": settings,
        "results": list(results),
        "rows": [line for result in results for line in result["rows"]],
    }


def machine_info() -> dict[str, Any]:
    """What a comparison between two runs needs to know about the machine."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "packages": {name: package_version(name) for name in PACKAGES},
    }


def save(document: dict[str, Any], path: Path) -> Path:
    """Write the results as JSON, making the parent folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def not_measured(measurement: str, backend: str | None, reason: str, *, unit: str = "",
                 goal: str = "") -> dict[str, Any]:
    """The result of a measurement that could not run here, saying why in its one row."""
    return {"name": measurement, "backend": backend, "measured": False, "reason": reason,
            "rows": [row(measurement, backend, None, unit, goal=goal, note=reason)]}


def _fmt(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    if abs(value) >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"
