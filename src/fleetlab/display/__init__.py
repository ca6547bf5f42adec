"""What a notebook shows: the pieces every lab shares (``tables``: the ``Table`` every lab prints and
a trace's table; ``plots``: the figure each lesson's plots draw on and a trace's waterfall) and one
module per lesson and kind, named as the lesson's modules are in ``course/experiments/``
(``fleetlab.course.labs``): ``delivery_plots``, ``delivery_widgets``, ``poison_plots``,
``poison_widgets``, ``callback_plots``, ``callback_widgets``, ``scaling_tables``, ``scaling_plots``,
``scaling_widgets``, ``replay_plots``, ``replay_widgets``, ``chaos_plots``, ``chaos_widgets``.
Importing this package stays light: matplotlib and ipywidgets load when a figure or a widget is
first made."""

from fleetlab.display import scaling_tables
from fleetlab.display.callback_plots import callback_timelines
from fleetlab.display.callback_widgets import callback_headroom_explorer, workflow_explorer
from fleetlab.display.chaos_plots import batch_size_tradeoff, conversation_waterfall, day_dashboard
from fleetlab.display.chaos_widgets import quota_table, sizing_explorer
from fleetlab.display.delivery_plots import step_times_vs_visibility, visibility_timeline
from fleetlab.display.delivery_widgets import visibility_explorer
from fleetlab.display.plots import trace_waterfall
from fleetlab.display.poison_plots import failure_classes, group_progress
from fleetlab.display.poison_widgets import head_of_line_explorer
from fleetlab.display.replay_plots import outage_posture, window_timeline
from fleetlab.display.replay_widgets import outage_explorer, outage_table
from fleetlab.display.scaling_plots import fleet_timeline, tradeoff_curve
from fleetlab.display.scaling_widgets import tradeoff_explorer
from fleetlab.display.tables import Table, trace_table

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
