"""A small ipywidgets view of progress: pick a lab, see which of its checks pass.

It refreshes itself after every ``check()`` in the same kernel.
"""

from __future__ import annotations

import ipywidgets as widgets
from rich import box
from rich.table import Table
from rich.text import Text

from fleetlab.core.rendering import notebook_html
from fleetlab.course.grading import progress
from fleetlab.course.grading.display import SYMBOL


class ProgressWidget(widgets.VBox):
    """A lab picker above a table of that lab's checks and their latest results."""

    def __init__(self, lab: str | None = None) -> None:
        labs = progress.labs()
        self.lab_picker = widgets.Dropdown(
            options=labs, value=lab if lab in labs else (labs[0] if labs else None), description="lab"
        )
        self.table = widgets.HTML()
        super().__init__([self.lab_picker, self.table])
        self.lab_picker.observe(lambda change: self.refresh(), names="value")
        self.refresh()
        progress.watch(self)

    def refresh(self) -> None:
        """Re-read the recorded results of the chosen lab."""
        lab = self.lab_picker.value
        self.table.value = progress_html(progress.rows(lab)) if lab else "<i>no labs have checks yet</i>"


def progress_widget(lab: str | None = None) -> ProgressWidget:
    """The progress widget, opened on ``lab`` (default: the first lab)."""
    return ProgressWidget(lab)


def progress_html(rows: list[progress.Row]) -> str:
    """A table as HTML: one line per check, its status mark, id, title, status and points ("–" until graded)."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    for column in ("", "check", "exercise", "status"):
        table.add_column(column)
    table.add_column("points", justify="right")
    for row in rows:
        cells = (SYMBOL.get(row.status, "-"), row.id, row.title, row.label, str(row.score))
        table.add_row(*map(Text, cells))
    return notebook_html(table)
