"""Checks, progress, student notebooks and batch grading for the fleetlab labs.

In a lab notebook::

    from fleetlab.course.grading import check
    check("01.visibility", visibility_timeout)

Writing a check: see ``registry`` (``register``, ``Case``, ``CaseOutcome``),
``fleetlab_instructor.checks`` for its hidden cases, reference and catalogues,
and ``docs/writing-checks.md``.
``progress_widget()`` shows which checks pass. Importing this
package stays light: ipywidgets loads with the widget, and the notebook
toolchain (``assign``, ``grade``, ``executor``) only when the commands run.
"""

from typing import Any

from fleetlab.course.grading.registry import Case, CaseOutcome, Check, get_check, register
from fleetlab.course.grading.results import CaseResult, CheckResult, CheckStatus
from fleetlab.course.grading.runner import CheckContext, run_check
from fleetlab.course.grading.session import check

__all__ = [
    "Case",
    "CaseOutcome",
    "CaseResult",
    "Check",
    "CheckContext",
    "CheckResult",
    "CheckStatus",
    "check",
    "get_check",
    "progress_widget",
    "register",
    "run_check",
]


def __getattr__(name: str) -> Any:
    if name == "progress_widget":
        from fleetlab.course.grading.widget import progress_widget

        return progress_widget
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
