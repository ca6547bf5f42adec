"""Lab 06's knob: the length of a target outage, against when each retry posture pages someone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fleetlab.display.replay_plots import outage_posture
from fleetlab.display.tables import Table
from fleetlab.services.events.retry import duration

if TYPE_CHECKING:
    from fleetlab.services.events.retry import Posture


def outage_table(postures: Sequence[Posture], outage_seconds: float, *, events_per_minute: float) -> Table:
    """One row per posture: what a target outage of ``outage_seconds`` costs with it."""
    rows = []
    for posture in postures:
        outcome = posture.through_outage(outage_seconds, events_per_minute=events_per_minute)
        if outcome.paged_after is not None:
            paged = f"after {duration(outcome.paged_after)}"
        elif outcome.silent:
            paged = "never: events dropped silently"
        else:
            paged = "no page: the retries outlasted it"
        rows.append({
            "posture": posture.name,
            "paged": paged,
            "delivered late, in one burst": outcome.delivered_late,
            "in the DLQ": outcome.dead_lettered,
            "dropped": outcome.dropped,
        })
    return Table(rows, title=f"a {duration(outage_seconds)} target outage at {events_per_minute:g} events/min")


def outage_explorer(
    postures: Sequence[Posture] | None = None,
    *,
    events_per_minute: float = 10,
    start_minutes: int = 360,
    longest_minutes: int = 1_800,
    step: int = 15,
) -> Any:
    """A slider over the length of a target outage: when each posture pages someone, and the recovery burst."""
    import ipywidgets as widgets
    from IPython.display import display

    from fleetlab.services.events.retry import STANDARD_POSTURES

    chosen = tuple(postures or STANDARD_POSTURES)
    slider = widgets.IntSlider(
        value=start_minutes, min=step, max=longest_minutes, step=step, description="outage (min)",
        style={"description_width": "initial"}, continuous_update=False,
    )
    output = widgets.Output()

    def redraw(change: Any = None) -> None:
        outage = slider.value * 60
        output.clear_output(wait=True)
        with output:
            display(outage_table(chosen, outage, events_per_minute=events_per_minute))
            display(outage_posture(chosen, outage, events_per_minute=events_per_minute,
                                   longest_hours=longest_minutes / 60))

    slider.observe(redraw, names="value")
    redraw()
    return widgets.VBox([slider, output])
