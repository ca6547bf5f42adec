"""Lab 04's knobs: a chain against Express's 300 s and each workflow's price; a fleet against the callback APIs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fleetlab.display.callback_plots import callback_load_plot, workflow_choice_plot


def _explorer(sliders: dict[str, Any], redraw: Callable[..., None]) -> Any:
    """A column of sliders above one output; ``redraw(output, **values)`` fills the output on every change."""
    import ipywidgets as widgets

    output = widgets.Output()

    def refresh(change: Any = None) -> None:
        output.clear_output(wait=True)
        with output:
            redraw(**{name: slider.value for name, slider in sliders.items()})

    for slider in sliders.values():
        slider.observe(refresh, names="value")
    refresh()
    return widgets.VBox([*sliders.values(), output])


def _slider(kind: str, description: str, value: float, low: float, high: float, step: float) -> Any:
    import ipywidgets as widgets

    make = widgets.IntSlider if kind == "int" else widgets.FloatSlider
    return make(value=value, min=low, max=high, step=step, description=description,
                style={"description_width": "initial"}, continuous_update=False)


def workflow_explorer(*, chain_steps: int = 12, p95_step_seconds: float = 30.0, retry_safety: float = 1.0) -> Any:
    """Sliders over a chain's size, p95 step time and retry safety: Express's 300 s limit and each price."""
    from IPython.display import display

    from fleetlab.services.stepfunctions import sizing

    def redraw(chain_steps: int, p95_step_seconds: float, retry_safety: float) -> None:
        choice = sizing.choose_workflow(chain_steps, p95_step_seconds, retry_safety)
        print(f"worst case {choice.worst_case_seconds:,.0f} s -> {choice.verdict}")
        print(f"per million executions: Standard ${choice.standard_price * 1e6:,.2f} "
              f"({choice.transitions:.0f} transitions each), Express ${choice.express_price * 1e6:,.2f}")
        display(workflow_choice_plot(choice, sizing.EXPRESS_MAX_SECONDS))

    return _explorer({
        "chain_steps": _slider("int", "chain steps", chain_steps, 1, 40, 1),
        "p95_step_seconds": _slider("float", "p95 step (s)", p95_step_seconds, 1, 600, 1),
        "retry_safety": _slider("float", "retry safety", retry_safety, 1, 4, 0.25),
    }, redraw)


def callback_headroom_explorer(*, conversations_per_minute: int = 500, steps_per_conversation: int = 15,
                               step_seconds: float = 90.0, heartbeat_every: float = 300.0) -> Any:
    """Sliders over a fleet's size and heartbeat interval: SendTaskSuccess and SendTaskHeartbeat against 500/s."""
    from IPython.display import display

    from fleetlab.services.stepfunctions import sizing

    def redraw(conversations_per_minute: int, steps_per_conversation: int, step_seconds: float,
               heartbeat_every: float) -> None:
        steps_per_second = conversations_per_minute * steps_per_conversation / 60
        loads = sizing.callback_load(steps_per_second, step_seconds=step_seconds, heartbeat_every=heartbeat_every)
        for load in loads:
            print(f"{load.api}: {load.rate:,.1f}/s against {load.refill:.0f}/s -> headroom {load.headroom:,.1f}x")
        display(callback_load_plot(loads))

    return _explorer({
        "conversations_per_minute": _slider("int", "conversations / min", conversations_per_minute, 50, 5_000, 50),
        "steps_per_conversation": _slider("int", "steps / conversation", steps_per_conversation, 1, 40, 1),
        "step_seconds": _slider("float", "step time (s)", step_seconds, 5, 900, 5),
        "heartbeat_every": _slider("float", "heartbeat every (s)", heartbeat_every, 5, 900, 5),
    }, redraw)
