"""Figures for lab 04: callback runs on one time axis, Standard against Express, the callback APIs' load.
Titled, every axis labelled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fleetlab.display.plots import _new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


_HISTORY_MARKERS = {
    "TaskSubmitted": ("^", "C0", "token sent"),
    "TaskSucceeded": ("o", "C2", "task succeeded"),
    "TaskFailed": ("X", "C3", "task failed"),
    "TaskTimedOut": ("X", "C1", "task timed out"),
    "ExecutionSucceeded": ("s", "C2", "execution succeeded"),
    "ExecutionFailed": ("s", "C3", "execution failed"),
    "ExecutionAborted": ("s", "black", "execution aborted"),
}
_WORKER_MARKERS = {
    "SendTaskHeartbeat": ("|", "C0", "heartbeat"),
    "SendTaskSuccess": ("*", "C2", "SendTaskSuccess"),
    "SendTaskFailure": ("P", "C3", "SendTaskFailure"),
}
_TASK_ENDS = ("TaskSucceeded", "TaskFailed", "TaskTimedOut")
_LINE_MARKERS = ("|", "x", "+", "_")


def callback_timelines(runs: Sequence[Any], *, title: str = "Callback runs: the token out, the answers back") -> Figure:
    """One row per run (objects with ``label``, ``status`` and ``timeline()``): Step Functions above, worker below.

    A shaded bar is a task waiting for its token's answer; a hollow marker
    is a callback Step Functions refused.
    """
    figure = _new_figure(9.5, 1.2 + 0.9 * max(len(runs), 1))
    axes = figure.add_subplot()
    axes.set_title(title)
    axes.set_xlabel("seconds since the execution started (real time)")
    axes.set_ylabel("run")
    labelled: set[str] = set()
    end = max((e.at for run in runs for e in run.timeline()), default=1.0)
    for row, run in enumerate(runs):
        entries = run.timeline()
        _shade_waits(axes, row, entries, end)
        for entry in entries:
            markers = _HISTORY_MARKERS if entry.who == "Step Functions" else _WORKER_MARKERS
            if entry.event not in markers:
                continue
            marker, colour, name = markers[entry.event]
            y = row + (0.18 if markers is _HISTORY_MARKERS else -0.18)
            label = name if entry.ok else f"{name} refused"
            paint = {"color": colour} if marker in _LINE_MARKERS else \
                {"edgecolors": colour, "facecolors": colour if entry.ok else "none"}
            axes.scatter([entry.at], [y], marker=marker, s=70, zorder=3, label=None if label in labelled else label,
                         **paint)
            labelled.add(label)
    axes.set_yticks(range(len(runs)), [f"{run.label}\n({run.status})" for run in runs])
    axes.set_ylim(len(runs) - 0.4, -0.6)
    axes.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    figure.tight_layout()
    return figure


def _shade_waits(axes: Any, row: int, entries: Sequence[Any], end: float) -> None:
    """A bar from each TaskSubmitted to the end of that task (or the edge of the plot)."""
    waiting_since = None
    for entry in entries:
        if entry.who != "Step Functions":
            continue
        if entry.event == "TaskSubmitted":
            waiting_since = entry.at
        elif entry.event in _TASK_ENDS and waiting_since is not None:
            axes.barh(row + 0.18, entry.at - waiting_since, left=waiting_since, height=0.22, color="C0", alpha=0.2)
            waiting_since = None
    if waiting_since is not None:
        axes.barh(row + 0.18, end - waiting_since, left=waiting_since, height=0.22, color="C0", alpha=0.2)


def workflow_choice_plot(choice: Any, limit: float) -> Figure:
    """The chain's worst case against Express's limit, beside the price of one execution on each."""
    figure = _new_figure(9, 3.2)
    duration, price = figure.subplots(1, 2)
    duration.barh(["worst case"], [choice.worst_case_seconds], color="C2" if choice.fits_express else "C3")
    duration.axvline(limit, color="black", linestyle="--", label=f"Express limit {limit:.0f} s")
    duration.set_title("chain_steps x p95_step x retry_safety")
    duration.set_xlabel("seconds")
    duration.legend(fontsize=8)
    price.bar(["Standard", "Express"], [choice.standard_price * 1e6, choice.express_price * 1e6], color=["C0", "C1"])
    price.set_title("price of one execution")
    price.set_xlabel("workflow type")
    price.set_ylabel("US$ per million executions")
    figure.suptitle("Standard or Express for this chain")
    figure.tight_layout()
    return figure


def callback_load_plot(loads: Sequence[Any]) -> Figure:
    """Each callback API's calls per second against its bucket's refill rate."""
    figure = _new_figure(8, 3.2)
    axes = figure.add_subplot()
    names = [load.api for load in loads]
    axes.bar(names, [load.rate for load in loads], color=["C3" if load.rate > load.refill else "C0" for load in loads])
    refill = max(load.refill for load in loads)
    axes.axhline(refill, color="black", linestyle="--", label=f"refill {refill:.0f}/s per API")
    axes.set_title("Callback APIs: calls per second against the account's refill rate")
    axes.set_ylabel("calls per second")
    axes.set_xlabel("API")
    axes.legend(fontsize=8)
    figure.tight_layout()
    return figure
