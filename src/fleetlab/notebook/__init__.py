"""What a notebook shows: tables (``tables``), matplotlib figures (``plots``) and ipywidgets
controls (``widgets``). Importing this package stays light: matplotlib and ipywidgets load
when a figure or a widget is first made."""

from .plots import step_times_vs_visibility, trace_waterfall, visibility_timeline
from .tables import Table
from .widgets import visibility_explorer

__all__ = ["Table", "step_times_vs_visibility", "trace_waterfall", "visibility_explorer", "visibility_timeline"]
