"""Lab 05's knobs: sliders over a ScaledObject and its workload, showing latency, cost and the fleet over time."""

from __future__ import annotations

from typing import Any

from fleetlab.composition.scaling.tradeoff import TradeOff, latency_and_cost
from fleetlab.core.errors import FleetlabError
from fleetlab.display.scaling_plots import fleet_timeline

KNOBS = (  # (argument, label, minimum, maximum, step, start)
    ("queue_length", "queueLength", 1, 30, 1, 5),
    ("step_seconds", "step time (s)", 10, 600, 10, 90),
    ("arrivals_per_minute", "arrivals / min", 0, 300, 5, 60),
    ("min_replicas", "minReplicaCount", 0, 10, 1, 0),
    ("max_replicas", "maxReplicaCount", 1, 100, 1, 30),
)


def summary(result: TradeOff) -> str:
    """The figures a slider move changes, as one line of HTML."""
    calls = sum(result.api_calls.values())
    return (f"<b>p95 step latency</b> {result.p95_latency:.0f} s &nbsp; <b>oldest message</b> "
            f"{result.peak_age_of_oldest:.0f} s &nbsp; <b>peak replicas</b> {result.peak_replicas} &nbsp; "
            f"<b>pod-hours</b> {result.pod_hours:.1f} &nbsp; <b>API calls</b> {calls:,.0f} "
            f"({result.calls_per_step:.2f} per step)")


def tradeoff_explorer(*, concurrency: int = 5, minutes: float = 60.0, burst: int = 100,
                      burst_at: float = 600.0) -> Any:
    """Sliders for queueLength, step time, arrivals and the replica bounds over pods working ``concurrency`` steps.

    Each move reruns the fleet simulator for ``minutes`` (steady arrivals plus
    a ``burst`` at ``burst_at`` s) and redraws; a setting KEDA refuses shows
    its error instead of a figure.
    """
    import ipywidgets as widgets
    from IPython.display import display

    sliders = {
        name: widgets.IntSlider(value=start, min=low, max=high, step=step, description=label,
                                style={"description_width": "initial"}, continuous_update=False)
        for name, label, low, high, step, start in KNOBS
    }
    text = widgets.HTML()
    output = widgets.Output()

    def redraw(change: Any = None) -> None:
        settings = {name: slider.value for name, slider in sliders.items()}
        output.clear_output(wait=True)
        try:
            result = latency_and_cost(concurrency=concurrency, minutes=minutes, burst=burst, burst_at=burst_at,
                                      **settings)
        except FleetlabError as exc:
            text.value = f"<b>not a valid setting:</b> {exc}"
            return
        text.value = summary(result)
        with output:
            display(fleet_timeline(result.run, max_replicas=settings["max_replicas"],
                                   title=f"queueLength {settings['queue_length']}, pods of {concurrency}"))

    for slider in sliders.values():
        slider.observe(redraw, names="value")
    redraw()
    return widgets.VBox([*sliders.values(), text, output])
