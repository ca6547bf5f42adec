"""matplotlib figures every lab shares: the figure each lesson's plots draw on (shown as PNG in a notebook),
and one trace's waterfall (lab 00 and after). Every figure titled, every axis labelled."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from fleetlab.core.tracing import Tracer


def _new_figure(width: float, height: float) -> Figure:
    """A pyplot-free Figure that a notebook shows as PNG when a cell returns it."""
    from matplotlib.figure import Figure

    _show_figures_as_png()
    return Figure(figsize=(width, height))


def _show_figures_as_png() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is not None:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png")


def trace_waterfall(tracer: Tracer, trace_id: str) -> Figure:
    """One trace's hops on a time axis, one row per hop, coloured by component."""
    hops = tracer.timeline(trace_id)
    figure = _new_figure(8, 0.45 * max(len(hops), 2) + 1.2)
    axes = figure.add_subplot()
    if not hops:
        axes.set_title(f"No hops recorded for {trace_id}")
        return figure
    start = hops[0].at
    components = list(dict.fromkeys(h.component for h in hops))
    colours = {c: f"C{i}" for i, c in enumerate(components)}
    for row, hop in enumerate(hops):
        offset = hop.at - start
        axes.barh(row, max(offset, 1e-9), left=0, color=colours[hop.component], alpha=0.25)
        axes.plot([offset], [row], "o", color=colours[hop.component])
    axes.set_yticks(range(len(hops)), [f"{h.name} ({h.component})" for h in hops])
    axes.invert_yaxis()
    axes.set_xlabel("seconds since the event was published (on the backend's clock)")
    axes.set_ylabel("hop")
    axes.set_title(f"Trace {trace_id}: every hop of one step")
    figure.tight_layout()
    return figure
