"""Lab 06's figures: the idempotency window against every way work comes back; a retry posture through an outage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from fleetlab.display.plots import _new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from fleetlab.services.events.retry import Posture
    from fleetlab.services.state.window import DuplicateSources

_POSTURE_COLOURS = ("tab:gray", "tab:orange", "tab:green", "tab:blue", "tab:purple")  # apart even in 64 colours


def window_timeline(
    sources: DuplicateSources,
    windows: Mapping[str, float],
    arrivals: Sequence[tuple[str, float, bool]] = (),
) -> Figure:
    """Where the same work can come back from, against idempotency windows, in days after the first run.

    Top row: the bus's retry window, then the queue's retention, then the
    replay horizon, end to end. One row per window in ``windows`` (label ->
    seconds). ``arrivals`` are duplicates that really arrived: (window
    label, seconds after the first run, whether the work ran again).
    """
    figure = _new_figure(9, 1.4 + 0.6 * (len(windows) + 1))
    axes = figure.add_subplot()
    day = 86_400
    left = 0.0
    for (label, length), colour in zip(
        (("bus retries", sources.retry_window), ("queue retention", sources.retention),
         ("replay horizon", sources.replay_horizon)), ("C0", "C1", "C4")):
        if length:
            axes.barh(0, length / day, left=left / day, height=0.5, color=colour, alpha=0.7, label=label)
        left += length
    rows = ["the work can come back", *windows]
    for row, (label, seconds) in enumerate(windows.items(), start=1):
        covers = seconds >= sources.latest_duplicate
        axes.barh(row, seconds / day, height=0.5, color="C2" if covers else "C3", alpha=0.35)
        for _, at, ran_again in (a for a in arrivals if a[0] == label):
            marker, colour = ("X", "C3") if ran_again else ("o", "C2")
            axes.scatter([at / day], [row], marker=marker, color=colour, s=90, zorder=3)
    axes.axvline(sources.latest_duplicate / day, color="black", linestyle="--", linewidth=1,
                 label="last possible duplicate")
    axes.set_yticks(range(len(rows)), rows)
    axes.invert_yaxis()
    axes.set_xlabel("days after the first run (X: the duplicate ran again; o: it was suppressed)")
    axes.set_ylabel("idempotency window")
    axes.set_title("An idempotency window must outlive every way the work can come back")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    figure.tight_layout()
    return figure


def outage_posture(
    postures: Sequence[Posture], outage_seconds: float, *, events_per_minute: float, longest_hours: float = 30
) -> Figure:
    """For each retry posture, against the length of a target outage: when someone is paged, and the burst at recovery."""
    figure = _new_figure(10, 3.8)
    paged_axes, burst_axes = figure.subplots(1, 2)
    hours = [h / 4 for h in range(1, int(longest_hours * 4) + 1)]
    for index, posture in enumerate(postures):
        outcomes = [posture.through_outage(h * 3_600, events_per_minute=events_per_minute) for h in hours]
        paged = [o.paged_after / 3_600 if o.paged_after is not None else float("nan") for o in outcomes]
        colour = _POSTURE_COLOURS[index % len(_POSTURE_COLOURS)]
        style = {"color": colour, "label": posture.name, "linestyle": "-" if posture.dead_letter_queue else ":"}
        paged_axes.plot(hours, paged, **style)
        burst_axes.plot(hours, [max(o.delivered_late, 0.5) for o in outcomes], **style)
    for axes in (paged_axes, burst_axes):
        axes.axvline(outage_seconds / 3_600, color="black", linestyle="--", linewidth=1)
        axes.set_xlabel("target outage (hours)")
        axes.set_yscale("log")
    paged_axes.set_ylabel("hours until someone is paged")
    paged_axes.set_title("Time to page (no line: nobody is paged)")
    burst_axes.set_ylabel("events delivered late, at recovery")
    burst_axes.set_title(f"The recovery burst at {events_per_minute:g} events/min")
    burst_axes.legend(fontsize=8)
    figure.suptitle("What a retry posture does through a target outage")
    figure.tight_layout()
    return figure
