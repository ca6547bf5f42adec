"""Small tables that render as HTML in Jupyter and as aligned text elsewhere."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from fleetlab.core.tracing import Tracer


class Table:
    """Rows of dicts shown as a table; columns are the union of keys, in first-seen order."""

    def __init__(self, rows: Sequence[dict[str, Any]], *, title: str = "") -> None:
        self.rows = list(rows)
        self.title = title
        self.columns = list(dict.fromkeys(key for row in self.rows for key in row))

    def _cell(self, row: dict[str, Any], column: str) -> str:
        value = row.get(column, "")
        return f"{value:g}" if isinstance(value, float) else str(value)

    def __str__(self) -> str:
        cells = [[self._cell(row, c) for c in self.columns] for row in self.rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        lines = [self.title] if self.title else []
        lines.append("  ".join(c.ljust(w) for c, w in zip(self.columns, widths)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(self._cell(r, c))}</td>" for c in self.columns) + "</tr>"
            for r in self.rows
        )
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def trace_table(tracer: Tracer, trace_id: str) -> Table:
    """One trace's hops as a table: time since the first hop (0.1 s), hop and component."""
    hops = tracer.timeline(trace_id)
    start = hops[0].at if hops else 0.0
    rows = [{"after": f"{h.at - start:.1f} s", "hop": h.name, "component": h.component} for h in hops]
    return Table(rows, title=f"trace {trace_id}")
