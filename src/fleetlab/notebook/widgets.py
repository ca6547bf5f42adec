"""ipywidgets controls for the labs: turn a knob, see the consequence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..events.retry import duration
from .plots import outage_posture, step_times_vs_visibility
from .tables import Table

if TYPE_CHECKING:
    from ..events.retry import Posture


def duplicate_rate(step_times: list[float], visibility_timeout: float) -> float:
    """Share of steps that outlive the visibility timeout (each one would run twice)."""
    if not step_times:
        return 0.0
    return sum(1 for t in step_times if t > visibility_timeout) / len(step_times)


def visibility_explorer(step_times: list[float], *, start: int = 300, maximum: int = 1800, step: int = 30) -> Any:
    """A slider over the visibility timeout showing the step-time histogram and the duplicate rate."""
    import ipywidgets as widgets
    from IPython.display import display

    slider = widgets.IntSlider(
        value=start, min=step, max=maximum, step=step, description="visibility (s)",
        style={"description_width": "initial"}, continuous_update=False,
    )
    output = widgets.Output()

    def redraw(change: Any = None) -> None:
        output.clear_output(wait=True)
        with output:
            print(f"visibility {slider.value} s -> duplicate rate {duplicate_rate(step_times, slider.value):.1%}")
            display(step_times_vs_visibility(step_times, slider.value))

    slider.observe(redraw, names="value")
    redraw()
    return widgets.VBox([slider, output])


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

    from ..events.retry import STANDARD_POSTURES

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
