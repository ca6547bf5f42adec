"""What a check concluded: per case, and for the whole check.

A notebook runs the public cases only, so it can tell a learner "public
cases pass" but never give points: only the grader, which adds the hidden
cases, scores. Points split per case (``Check.case_points``) unless the
check is all or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from fleetlab.course.grading.registry import Check


class Status(StrEnum):
    """A check's (or one case's) status."""

    PASS = "pass"  # every case ran and passed: the grader's verdict
    PUBLIC_PASS = "public pass"  # every public case passed; the hidden cases have not run
    FAIL = "fail"
    NOT_YET = "not yet"  # the exercise is unfinished
    ERROR = "error"  # the check itself broke: a fleetlab bug, never the learner's fault
    SKIPPED = "skipped"  # a case not run because an earlier one timed out


NOT_YET_ADVICE = (
    "not yet: finish the exercise above (replace the `...` or the "
    "`raise NotImplementedError`), then run this check again"
)


@dataclass(frozen=True)
class CaseResult:
    """One case's result. ``hidden`` cases are never shown to a learner."""

    name: str
    status: Status
    diagnosis: str = ""
    hidden: bool = False
    seconds: float = 0.0


@dataclass
class CheckResult:
    """A check's verdict on one answer (``display`` renders it).

    ``points`` is None in a notebook (no score before the hidden cases run);
    ``grader_adds`` counts the hidden cases still to come (0 once graded).
    """

    id: str
    title: str
    status: Status
    points: float | None
    max_points: float
    diagnosis: str
    cases: list[CaseResult] = field(default_factory=list)
    grader_adds: int = 0
    scoring: str = ""
    _shown_in: int | None = field(default=None, repr=False, compare=False)

    @property
    def passed(self) -> bool:
        """Every case that ran passed (in a notebook: the public cases)."""
        return self.status in (Status.PASS, Status.PUBLIC_PASS)


def conclude(check: Check, cases: list[CaseResult], *, graded: bool) -> CheckResult:
    """Fold case results into the check's status, diagnosis and (when ``graded``) points."""
    grader_adds = 0 if graded else check.hidden_cases
    status, diagnosis = _verdict(cases, grader_adds)
    points = _points(check, cases, status) if not grader_adds else None
    return CheckResult(
        check.id, check.title, status, points, check.points, diagnosis, cases, grader_adds, check.scoring()
    )


def not_yet(check: Check, *, graded: bool) -> CheckResult:
    """The verdict on an answer that is still a stub (no case was run)."""
    return _without_cases(check, Status.NOT_YET, NOT_YET_ADVICE, graded=graded)


def refused(check: Check, diagnosis: str, *, graded: bool) -> CheckResult:
    """The verdict on an answer of the wrong kind (no case was run)."""
    return _without_cases(check, Status.FAIL, diagnosis, graded=graded)


def _without_cases(check: Check, status: Status, diagnosis: str, *, graded: bool) -> CheckResult:
    grader_adds = 0 if graded else check.hidden_cases
    points = 0.0 if not grader_adds else None
    return CheckResult(check.id, check.title, status, points, check.points, diagnosis, [], grader_adds, check.scoring())


def _verdict(cases: list[CaseResult], grader_adds: int) -> tuple[Status, str]:
    statuses = {case.status for case in cases}
    if Status.NOT_YET in statuses:
        return Status.NOT_YET, NOT_YET_ADVICE
    if Status.ERROR in statuses:
        return Status.ERROR, _first(cases, Status.ERROR)
    failed = [case for case in cases if case.status in (Status.FAIL, Status.SKIPPED)]
    if failed:
        diagnosis = failed[0].diagnosis
        if len({case.diagnosis for case in failed}) > 1:
            diagnosis += f" ({len(failed)} of {len(cases)} cases fail)"
        return Status.FAIL, diagnosis
    if grader_adds:
        return Status.PUBLIC_PASS, f"all {len(cases)} public cases pass; no points until the grader has run every case"
    return Status.PASS, f"all {len(cases)} cases pass"


def _points(check: Check, cases: list[CaseResult], status: Status) -> float:
    if check.all_or_nothing:
        return check.points if status == Status.PASS else 0.0
    passing = sum(1 for case in cases if case.status == Status.PASS)
    return round(passing * check.case_points(), 6)


def _first(cases: list[CaseResult], status: Status) -> str:
    return next(case.diagnosis for case in cases if case.status == status)
