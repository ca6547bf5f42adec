"""Lab 03's widget: move through a FIFO run and watch one stuck message hold up its group alone."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fleetlab.display.poison_plots import group_progress

if TYPE_CHECKING:
    from fleetlab.services.sqs.groups import GroupProgress


def progress_at(progress: GroupProgress, at: float) -> str:
    """One line: each group's steps finished ``at`` seconds in, and which group waits behind the stuck step."""
    stuck_group = progress.stuck.rsplit("-step-", 1)[0]
    parts = []
    for group in progress.finished:
        done = progress.done_by(group, at)
        waiting = group == stuck_group and (progress.parked_at is None or at < progress.parked_at)
        note = f" (waiting behind {progress.stuck})" if waiting and done < progress.steps else ""
        parts.append(f"{group} {done}/{progress.steps}{note}")
    return f"at +{at / 60:.0f} min: " + " · ".join(parts)


def head_of_line_explorer(progress: GroupProgress) -> Any:
    """A slider over the run's minutes: each group's progress so far, in words and in the figure."""
    import ipywidgets as widgets
    from IPython.display import display

    slider = widgets.IntSlider(
        value=0, min=0, max=max(1, math.ceil(progress.horizon / 60)), step=1, description="minutes",
        style={"description_width": "initial"}, continuous_update=False,
    )
    output = widgets.Output()

    def redraw(change: Any = None) -> None:
        output.clear_output(wait=True)
        with output:
            print(progress_at(progress, slider.value * 60))
            display(group_progress(progress, at=slider.value * 60))

    slider.observe(redraw, names="value")
    redraw()
    return widgets.VBox([slider, output])
