"""What a notebook shows: tables (``tables``), matplotlib figures (``plots``, ``scaling_plots``,
``dlq_plots``) and ipywidgets controls (``widgets``, ``scaling_widgets``, ``dlq_widgets``).
Importing this package stays light: matplotlib and ipywidgets load when a figure or a widget is
first made."""

from .dlq_plots import failure_classes, group_progress
from .dlq_widgets import head_of_line_explorer
from .plots import step_times_vs_visibility, trace_waterfall, visibility_timeline
from .scaling_plots import fleet_timeline, tradeoff_curve
from .scaling_widgets import tradeoff_explorer
from .tables import Table
from .widgets import visibility_explorer

__all__ = [
    "Table",
    "failure_classes",
    "fleet_timeline",
    "group_progress",
    "head_of_line_explorer",
    "step_times_vs_visibility",
    "trace_waterfall",
    "tradeoff_curve",
    "tradeoff_explorer",
    "visibility_explorer",
    "visibility_timeline",
]
