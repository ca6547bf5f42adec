"""Lab 01's figures: who held one message when, and step times against the visibility timeout.
Titled, every axis labelled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fleetlab.display.plots import _new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from fleetlab.core.tracing import Tracer


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
