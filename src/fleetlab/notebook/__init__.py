"""What a notebook shows: tables (``tables``), matplotlib figures (``plots``) and ipywidgets
controls (``widgets``). Importing this package stays light: matplotlib and ipywidgets load
when a figure or a widget is first made."""

from .plots import callback_timelines, step_times_vs_visibility, trace_waterfall, visibility_timeline
from .tables import Table
from .widgets import callback_headroom_explorer, visibility_explorer, workflow_explorer

__all__ = [
    "Table",
    "callback_headroom_explorer",
    "callback_timelines",
    "step_times_vs_visibility",
    "trace_waterfall",
    "visibility_explorer",
    "visibility_timeline",
    "workflow_explorer",
]
