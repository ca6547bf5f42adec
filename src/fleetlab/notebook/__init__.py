"""What a notebook shows: tables (``tables``), matplotlib figures (``plots``) and ipywidgets
controls (``widgets``). Importing this package stays light: matplotlib and ipywidgets load
when a figure or a widget is first made."""

from .plots import outage_posture, step_times_vs_visibility, trace_waterfall, visibility_timeline, window_timeline
from .tables import Table
from .widgets import outage_explorer, outage_table, visibility_explorer

__all__ = [
    "Table",
    "outage_explorer",
    "outage_posture",
    "outage_table",
    "step_times_vs_visibility",
    "trace_waterfall",
    "visibility_explorer",
    "visibility_timeline",
    "window_timeline",
]
