"""Show a check's result: compact HTML in Jupyter, plain text elsewhere.

Only public cases are ever listed. A result shows once per cell: ``check()``
displays it, and the same object returned as the cell's value does not show
a second time (a later cell that evaluates it shows it again). ``show``
registers itself with IPython as the display of every ``CheckResult``.
"""

from __future__ import annotations

import html
from typing import Any

from .results import ERROR, FAIL, NOT_YET, PASS, CheckResult

SYMBOL = {PASS: "✓", FAIL: "✗", NOT_YET: "…", ERROR: "⚠"}
_COLOUR = {PASS: "#2e7d32", FAIL: "#c62828", NOT_YET: "#616161", ERROR: "#e65100"}


def show(result: CheckResult) -> None:
    """Display ``result`` in the running IPython, or print it; at most once per cell."""
    shell = _ipython()
    if shell is None:
        print(as_text(result))
        return
    _register(shell)
    if result._shown_in == shell.execution_count:
        return
    result._shown_in = shell.execution_count
    from IPython.display import display

    display(mimebundle(result), raw=True)


def mimebundle(result: CheckResult) -> dict[str, str]:
    """The ``text/plain`` and ``text/html`` renderings of ``result``."""
    return {"text/plain": as_text(result), "text/html": as_html(result)}


def as_text(result: CheckResult) -> str:
    """``✓ 00.planes Name the three planes: pass, 1/1 point`` plus the diagnosis and cases."""
    lines = [f"{SYMBOL[result.status]} {result.id} {result.title}: {result.status}, {_score(result)}"]
    lines.append(f"  {result.diagnosis}")
    if marks := _case_marks(result):
        lines.append(f"  cases: {marks}")
    return "\n".join(lines)


def as_html(result: CheckResult) -> str:
    """A one-box HTML rendering; every learner-derived string is escaped."""
    colour = _COLOUR[result.status]
    head = (
        f'<b style="color:{colour}">{SYMBOL[result.status]} {html.escape(result.status)}</b> '
        f"<code>{html.escape(result.id)}</code> {html.escape(result.title)} · <b>{_score(result)}</b>"
    )
    parts = [f"<div>{head}</div>", f"<div>{html.escape(result.diagnosis)}</div>"]
    if marks := _case_marks(result):
        parts.append(f'<div style="color:#616161;font-size:90%">cases: {html.escape(marks)}</div>')
    style = f"border-left:4px solid {colour};padding:2px 10px;margin:4px 0"
    return f'<div class="fleetlab-check" data-status="{result.status}" style="{style}">{"".join(parts)}</div>'


def _score(result: CheckResult) -> str:
    unit = "point" if result.max_points == 1 else "points"
    return f"{format_points(result.points)}/{format_points(result.max_points)} {unit}"


def format_points(points: float) -> str:
    """``2`` for 2.0, ``1.5`` for 1.5."""
    return str(int(points)) if float(points).is_integer() else f"{points:g}"


def _case_marks(result: CheckResult) -> str:
    public = [case for case in result.cases if not case.hidden]
    return " · ".join(f"{SYMBOL.get(case.status, '-')} {case.name}" for case in public)


def _register(shell: Any) -> None:
    """Make IPython display a CheckResult (a cell's value, say) with ``show``."""
    shell.display_formatter.ipython_display_formatter.for_type(CheckResult, show)


def _ipython() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()
