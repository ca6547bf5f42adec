"""matplotlib figures for the labs: every figure titled, every axis labelled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..tracing import Tracer


def _new_figure(width: float, height: float) -> Figure:
    """A pyplot-free Figure that a notebook shows as PNG when a cell returns it."""
    from matplotlib.figure import Figure

    _show_figures_as_png()
    return Figure(figsize=(width, height))


def _show_figures_as_png() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is not None:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png")


def trace_waterfall(tracer: Tracer, trace_id: str) -> Figure:
    """One trace's hops on a time axis, one row per hop, coloured by component."""
    hops = tracer.timeline(trace_id)
    figure = _new_figure(8, 0.45 * max(len(hops), 2) + 1.2)
    axes = figure.add_subplot()
    if not hops:
        axes.set_title(f"No hops recorded for {trace_id}")
        return figure
    start = hops[0].at
    components = list(dict.fromkeys(h.component for h in hops))
    colours = {c: f"C{i}" for i, c in enumerate(components)}
    for row, hop in enumerate(hops):
        offset = hop.at - start
        axes.barh(row, max(offset, 1e-9), left=0, color=colours[hop.component], alpha=0.25)
        axes.plot([offset], [row], "o", color=colours[hop.component])
    axes.set_yticks(range(len(hops)), [f"{h.name} ({h.component})" for h in hops])
    axes.invert_yaxis()
    axes.set_xlabel("seconds since the event was published (on the backend's clock)")
    axes.set_ylabel("hop")
    axes.set_title(f"Trace {trace_id}: every hop of one step")
    figure.tight_layout()
    return figure


def visibility_timeline(tracer: Tracer, trace_id: str, visibility_timeout: float) -> Figure:
    """Who held one message when: each receive's invisible window, heartbeats, effects, deletes.

    One row per worker. A bar is the window during which the queue hid the
    message from everyone else (a heartbeat stretches it); where a second
    bar starts before the first worker deleted, two workers ran one step.
    """
    hops = tracer.timeline(trace_id)
    figure = _new_figure(9, 1.0 + 0.7 * max(len({h.component for h in hops}), 2))
    axes = figure.add_subplot()
    axes.set_title(f"{trace_id}: receives, invisible windows and effects")
    axes.set_xlabel("seconds since the first receive")
    axes.set_ylabel("worker")
    received = [h for h in hops if h.name == "received"]
    if not received:
        return figure
    start = received[0].at
    workers = list(dict.fromkeys(h.component for h in received))
    for receive in received:
        row = workers.index(receive.component)
        end = _window_end(hops, receive, visibility_timeout)
        axes.barh(row, end - receive.at, left=receive.at - start, height=0.5, color="C0", alpha=0.3)
        axes.annotate(f"receive {receive.attrs.get('receive', '?')}", (receive.at - start, row + 0.32), fontsize=8)
    markers = {"effect": ("*", "C3"), "deleted": ("x", "C2"), "crashed": ("X", "black"), "heartbeat": ("|", "C0")}
    for name, (marker, colour) in markers.items():
        points = [(h.at - start, workers.index(h.component)) for h in hops if h.name == name and h.component in workers]
        if points:
            xs, ys = zip(*points)
            axes.scatter(xs, ys, marker=marker, color=colour, s=90, label=name, zorder=3)
    axes.set_yticks(range(len(workers)), workers)
    axes.set_ylim(-0.6, len(workers) - 0.2)
    axes.legend(loc="upper right", fontsize=8)
    figure.tight_layout()
    return figure


def _window_end(hops: list, receive, visibility_timeout: float) -> float:
    """When the queue would show the message again after ``receive`` (or when it was deleted)."""
    end = receive.at + visibility_timeout
    for hop in hops:
        if hop.component != receive.component or hop.at < receive.at:
            continue
        if hop.name == "heartbeat" and hop.at <= end:
            end = hop.at + visibility_timeout
        if hop.name in ("deleted", "crashed") and hop.at <= end:
            return hop.at if hop.name == "deleted" else end
    return end


def step_times_vs_visibility(step_times: list[float], visibility_timeout: float) -> Figure:
    """Histogram of step durations with the visibility timeout; the tail past it runs twice."""
    figure = _new_figure(8, 3.6)
    axes = figure.add_subplot()
    late = sum(1 for t in step_times if t > visibility_timeout)
    rate = late / len(step_times) if step_times else 0.0
    axes.hist(step_times, bins=40, color="C0", alpha=0.7, label="step durations")
    axes.axvline(visibility_timeout, color="C3", linewidth=2, label=f"visibility timeout {visibility_timeout:.0f} s")
    axes.set_title(f"Steps longer than the visibility timeout run twice: {rate:.1%} of steps")
    axes.set_xlabel("step duration (s)")
    axes.set_ylabel("steps")
    axes.legend(fontsize=8)
    figure.tight_layout()
    return figure


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
    price.set_ylabel("US$ per million executions")
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
