"""What a check concluded: per case, and for the whole check.

Statuses: ``pass``, ``fail``, ``not yet`` (the exercise is unfinished) and
``error`` (the check itself broke: a fleetlab bug, never the learner's fault).
A check earns its points only when every case passes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PASS, FAIL, NOT_YET, ERROR = "pass", "fail", "not yet", "error"
SKIPPED = "skipped"  # a case not run because an earlier one timed out
STATUSES = (PASS, FAIL, NOT_YET, ERROR)

NOT_YET_ADVICE = (
    "not yet: finish the exercise above (replace the `...` or the "
    "`raise NotImplementedError`), then run this check again"
)


@dataclass(frozen=True)
class CaseResult:
    """One case's result. ``hidden`` cases are never shown to a learner."""

    name: str
    status: str
    diagnosis: str = ""
    hidden: bool = False
    seconds: float = 0.0


@dataclass
class CheckResult:
    """A check's verdict on one answer (``display`` renders it)."""

    id: str
    title: str
    status: str
    points: float
    max_points: float
    diagnosis: str
    cases: list[CaseResult] = field(default_factory=list)
    _shown_in: int | None = field(default=None, repr=False, compare=False)

    @property
    def passed(self) -> bool:
        return self.status == PASS


def conclude(check_id: str, title: str, max_points: float, cases: list[CaseResult]) -> CheckResult:
    """Fold case results into the check's status, points and one diagnosis."""
    statuses = {case.status for case in cases}
    if NOT_YET in statuses:
        status, diagnosis = NOT_YET, NOT_YET_ADVICE
    elif ERROR in statuses:
        status, diagnosis = ERROR, _first(cases, ERROR)
    elif statuses <= {PASS}:
        status, diagnosis = PASS, f"all {len(cases)} cases pass"
    else:
        failed = [case for case in cases if case.status == FAIL]
        status, diagnosis = FAIL, failed[0].diagnosis
        if len({case.diagnosis for case in failed}) > 1:
            diagnosis += f" ({len(failed)} of {len(cases)} cases fail)"
    points = max_points if status == PASS else 0
    return CheckResult(check_id, title, status, points, max_points, diagnosis, cases)


def not_yet(check_id: str, title: str, max_points: float) -> CheckResult:
    """The verdict on an answer that is still a stub (no case was run)."""
    return CheckResult(check_id, title, NOT_YET, 0, max_points, NOT_YET_ADVICE)


def _first(cases: list[CaseResult], status: str) -> str:
    return next(case.diagnosis for case in cases if case.status == status)
