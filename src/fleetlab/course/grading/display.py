"""Show a check's result: compact HTML in Jupyter, plain text elsewhere.

Only public cases are ever listed. In a notebook a result never shows
points: it says what the public cases showed, how many cases the grader
adds, and how the points will split. A result shows once per cell:
``check()`` displays it, and the same object returned as the cell's value
does not show a second time (a later cell that evaluates it shows it again).
``show`` registers itself with IPython as the display of every ``CheckResult``.
"""

from __future__ import annotations

import html
from typing import Any

from fleetlab.course.grading.registry import format_points, readable_points
from fleetlab.course.grading.results import CheckResult, CheckStatus

__all__ = ["SYMBOL", "as_html", "as_text", "format_points", "headline", "mimebundle", "readable_points", "show",
           "status_label"]

SYMBOL = {
    CheckStatus.PASS: "✓",
    CheckStatus.PUBLIC_PASS: "◐",
    CheckStatus.FAIL: "✗",
    CheckStatus.NOT_YET: "…",
    CheckStatus.ERROR: "⚠",
    CheckStatus.SKIPPED: "-",
}
_COLOUR = {
    CheckStatus.PASS: "#2e7d32",
    CheckStatus.PUBLIC_PASS: "#558b2f",
    CheckStatus.FAIL: "#c62828",
    CheckStatus.NOT_YET: "#616161",
    CheckStatus.ERROR: "#e65100",
}


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


def status_label(status: str, grader_adds: int) -> str:
    """``public cases pass (the grader adds 2 more)`` for a public pass; the status itself otherwise."""
    if status == CheckStatus.PUBLIC_PASS:
        return f"public cases pass (the grader adds {grader_adds} more)"
    return str(status)


def headline(result: CheckResult) -> str:
    """The status in words, with points only where points were scored."""
    label = status_label(result.status, result.grader_adds)
    if result.points is not None:
        return f"{label}, {_score(result)}"
    public = [case for case in result.cases if not case.hidden]
    if result.status == CheckStatus.FAIL and public:
        passing = sum(1 for case in public if case.status == CheckStatus.PASS)
        return f"{label} ({passing} of {len(public)} public cases pass)"
    return label


def as_text(result: CheckResult) -> str:
    """``◐ 00.planes Name the three planes: public cases pass (the grader adds 4 more)`` and the details."""
    lines = [f"{SYMBOL[result.status]} {result.id} {result.title}: {headline(result)}", f"  {result.diagnosis}"]
    if marks := _case_marks(result):
        lines.append(f"  cases: {marks}")
    if result.points is None and result.scoring:
        lines.append(f"  scoring: {result.scoring}")
    return "\n".join(lines)


def as_html(result: CheckResult) -> str:
    """A one-box HTML rendering; every learner-derived string is escaped."""
    colour = _COLOUR.get(result.status, "#616161")
    head = (
        f'<b style="color:{colour}">{SYMBOL[result.status]} {html.escape(headline(result))}</b> '
        f"<code>{html.escape(result.id)}</code> {html.escape(result.title)}"
    )
    parts = [f"<div>{head}</div>", f"<div>{html.escape(result.diagnosis)}</div>"]
    small = '<div style="color:#616161;font-size:90%">'
    if marks := _case_marks(result):
        parts.append(f"{small}cases: {html.escape(marks)}</div>")
    if result.points is None and result.scoring:
        parts.append(f"{small}scoring: {html.escape(result.scoring)}</div>")
    style = f"border-left:4px solid {colour};padding:2px 10px;margin:4px 0"
    return f'<div class="fleetlab-check" data-status="{result.status}" style="{style}">{"".join(parts)}</div>'


def _score(result: CheckResult) -> str:
    unit = "point" if result.max_points == 1 else "points"
    return f"{readable_points(result.points or 0)}/{readable_points(result.max_points)} {unit}"


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
