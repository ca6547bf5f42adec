"""What a notebook shows: tables (``tables``, ``scaling_tables``), matplotlib figures (``plots``, ``scaling_plots``) and
ipywidgets controls (``widgets``, ``scaling_widgets``). Importing this package stays light:
matplotlib and ipywidgets load when a figure or a widget is first made."""

from .plots import step_times_vs_visibility, trace_waterfall, visibility_timeline
from . import scaling_tables
from .scaling_plots import fleet_timeline, tradeoff_curve
from .scaling_widgets import tradeoff_explorer
from .tables import Table
from .widgets import visibility_explorer

__all__ = [
    "Table",
    "fleet_timeline",
    "scaling_tables",
    "step_times_vs_visibility",
    "trace_waterfall",
    "tradeoff_curve",
    "tradeoff_explorer",
    "visibility_explorer",
    "visibility_timeline",
]
