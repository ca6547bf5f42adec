"""What a notebook shows: tables (``tables``, ``scaling_tables``), matplotlib figures (``plots``,
``scaling_plots``, ``dlq_plots``, ``callback_plots``, ``replay_plots``, ``governor_plots``,
``chaos_plots``) and ipywidgets controls
(``widgets``, ``scaling_widgets``, ``dlq_widgets``, ``callback_widgets``, ``replay_widgets``,
``chaos_widgets``).
Importing this package stays light: matplotlib and ipywidgets load when a figure or a widget is
first made."""

from fleetlab.display import scaling_tables
from fleetlab.display.callback_plots import callback_timelines
from fleetlab.display.callback_widgets import callback_headroom_explorer, workflow_explorer
from fleetlab.display.chaos_plots import conversation_waterfall, day_dashboard
from fleetlab.display.chaos_widgets import quota_table, sizing_explorer
from fleetlab.display.dlq_plots import failure_classes, group_progress
from fleetlab.display.dlq_widgets import head_of_line_explorer
from fleetlab.display.governor_plots import batch_size_tradeoff
from fleetlab.display.plots import step_times_vs_visibility, trace_waterfall, visibility_timeline
from fleetlab.display.replay_plots import outage_posture, window_timeline
from fleetlab.display.replay_widgets import outage_explorer, outage_table
from fleetlab.display.scaling_plots import fleet_timeline, tradeoff_curve
from fleetlab.display.scaling_widgets import tradeoff_explorer
from fleetlab.display.tables import Table, trace_table
from fleetlab.display.widgets import visibility_explorer

__all__ = [
    "Table",
    "trace_table",
    "batch_size_tradeoff",
    "callback_headroom_explorer",
    "callback_timelines",
    "conversation_waterfall",
    "day_dashboard",
    "failure_classes",
    "fleet_timeline",
    "group_progress",
    "head_of_line_explorer",
    "outage_explorer",
    "outage_posture",
    "outage_table",
    "quota_table",
    "scaling_tables",
    "sizing_explorer",
    "step_times_vs_visibility",
    "trace_waterfall",
    "tradeoff_curve",
    "tradeoff_explorer",
    "visibility_explorer",
    "visibility_timeline",
    "window_timeline",
    "workflow_explorer",
]
