"""Small tables of rows, drawn by rich: HTML in Jupyter, aligned text elsewhere."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real
from typing import Any

from rich import box
from rich.table import Table as RichTable
from rich.text import Text

from fleetlab.core.rendering import notebook_html, plain_text
from fleetlab.core.tracing import Tracer


class Table:
    """Rows of dicts shown as a table; columns are the union of keys, in first-seen order.

    Numbers are right-aligned; floats print with ``:g``. Cells are text, never rich markup.
    """

    def __init__(self, rows: Sequence[dict[str, Any]], *, title: str = "") -> None:
        self.rows = list(rows)
        self.title = title
        self.columns = list(dict.fromkeys(key for row in self.rows for key in row))

    def __rich__(self) -> RichTable:
        table = RichTable(title=Text(self.title) if self.title else None, title_justify="left",
                          box=box.SIMPLE_HEAD, show_edge=False)
        for column in self.columns:
            table.add_column(Text(column), justify="right" if self._numeric(column) else "left")
        for row in self.rows:
            table.add_row(*(Text(_cell(row.get(column, ""))) for column in self.columns))
        return table

    def _numeric(self, column: str) -> bool:
        values = [row[column] for row in self.rows if column in row]
        return bool(values) and all(isinstance(v, Real) and not isinstance(v, bool) for v in values)

    def __str__(self) -> str:
        return plain_text(self)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return notebook_html(self)


def _cell(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def trace_table(tracer: Tracer, trace_id: str) -> Table:
    """One trace's hops as a table: time since the first hop (0.1 s), hop and component."""
    hops = tracer.timeline(trace_id)
    start = hops[0].at if hops else 0.0
    rows = [{"after": f"{h.at - start:.1f} s", "hop": h.name, "component": h.component} for h in hops]
    return Table(rows, title=f"trace {trace_id}")
