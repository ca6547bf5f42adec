"""Lab 01's control: turn the visibility timeout, see the share of steps that run twice."""

from __future__ import annotations

from typing import Any

from fleetlab.display.delivery_plots import step_times_vs_visibility


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
