"""Lab 07's knob: the step rate a fleet is sized for, against the AWS quotas it meets and a day's bill."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fleetlab.composition.chaos.sizing import size_fleet
from fleetlab.core.errors import InvalidInput
from fleetlab.display.tables import Table

RATES = (10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000)
"""The slider's stops, in steps a second."""


def quota_table(per_step: Mapping[str, float], steps_per_second: float, *, step_seconds: float, queues: int,
                region: str = "us-east-1") -> Table:
    """One row per quota at ``steps_per_second``, most used first, with the day's bill in the title."""
    sizing = size_fleet(per_step, steps_per_second, step_seconds=step_seconds, queues=queues, region=region)
    rows = [{"quota": row.quota, "use": f"{row.use:,.0f}", "limit": f"{row.limit:,.0f} {row.unit}",
             "share": f"{row.share:.0%}", "binds?": "yes" if row.share >= 1 else ""} for row in sizing.quotas]
    return Table(rows, title=f"{steps_per_second:,} steps a second in {region}: about "
                             f"${sizing.bill.total_usd:,.0f} a day")


def sizing_explorer(per_step: Mapping[str, float], *, step_seconds: float, queues: int, start: int = 1_000,
                    region: str = "us-east-1") -> Any:
    """A slider over the step rate (``RATES``): each quota's share at that rate, and the day's bill.

    Raises InvalidInput naming ``start`` when it is not one of ``RATES``.
    """
    if start not in RATES:
        raise InvalidInput("start", f"must be one of the slider's rates {', '.join(map(str, RATES))}, got {start!r}")
    import ipywidgets as widgets
    from IPython.display import display

    slider = widgets.SelectionSlider(options=list(RATES), value=start, description="steps/s",
                                     continuous_update=False)
    output = widgets.Output()

    def redraw(change: Any = None) -> None:
        output.clear_output(wait=True)
        with output:
            display(quota_table(per_step, slider.value, step_seconds=step_seconds, queues=queues, region=region))

    slider.observe(redraw, names="value")
    redraw()
    return widgets.VBox([slider, output])
