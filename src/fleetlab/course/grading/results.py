"""What a check concluded: per case, and for the whole check.

A notebook runs the public cases only, so it can tell a learner "public
cases pass" but never give points: only the grader, which adds the hidden
cases, scores. Points split per case (``Check.case_points``) unless the
check is all or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleetlab.core.status import Status
from fleetlab.course.grading.registry import Check


MAX_TEXT = 2000
"""The most characters of one diagnosis (or of an exception's text in it) a verdict keeps; the rest is cut."""
CUT = " [... {count} characters cut]"


def capped(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` cut to about ``limit`` characters, saying how much was cut: what an answer says (its exception's
    text, a value it returned) never makes a verdict, the feedback or the grader's memory grow without bound."""
    if len(text) <= limit:
        return text
    return text[:limit] + CUT.format(count=len(text) - limit)


class CheckStatus(Status):
    """A check's (or one case's) status, as the notebook, the progress file and the gradebook show it."""

    PASS = "pass"  # every case ran and passed: the grader's verdict
    PUBLIC_PASS = "public pass"  # every public case passed; the hidden cases have not run
    FAIL = "fail"
    NOT_YET = "not yet"  # the exercise is unfinished
    ERROR = "error"  # the check itself broke: a fleetlab bug, never the learner's fault
    SKIPPED = "skipped"  # a case not run: an earlier one timed out or said "not yet"


NOT_YET_ADVICE = (
    "not yet: finish the exercise above (replace the `...` or the "
    "`raise NotImplementedError`), then run this check again"
)


@dataclass(frozen=True)
class CaseResult:
    """One case's result. ``hidden`` cases are never shown to a learner."""

    name: str
    status: CheckStatus
    diagnosis: str = ""
    hidden: bool = False
    seconds: float = 0.0
    mistake: str = ""  # the key of the mistake the harness recognised (``CaseOutcome.mistake``)

    def __post_init__(self) -> None:
        object.__setattr__(self, "diagnosis", capped(self.diagnosis))


@dataclass
class CheckResult:
    """A check's verdict on one answer (``display`` renders it).

    ``points`` is None in a notebook (no score before the hidden cases run);
    ``grader_adds`` counts the hidden cases still to come (0 once graded).
    """

    id: str
    title: str
    status: CheckStatus
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
        return self.status in (CheckStatus.PASS, CheckStatus.PUBLIC_PASS)


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
    return _without_cases(check, CheckStatus.NOT_YET, NOT_YET_ADVICE, graded=graded)


def refused(check: Check, diagnosis: str, *, graded: bool) -> CheckResult:
    """The verdict on an answer of the wrong kind (no case was run)."""
    return _without_cases(check, CheckStatus.FAIL, diagnosis, graded=graded)


def _without_cases(check: Check, status: CheckStatus, diagnosis: str, *, graded: bool) -> CheckResult:
    grader_adds = 0 if graded else check.hidden_cases
    points = 0.0 if not grader_adds else None
    return CheckResult(check.id, check.title, status, points, check.points, capped(diagnosis), [], grader_adds,
                       check.scoring())


def _verdict(cases: list[CaseResult], grader_adds: int) -> tuple[CheckStatus, str]:
    statuses = {case.status for case in cases}
    if CheckStatus.NOT_YET in statuses:
        return CheckStatus.NOT_YET, NOT_YET_ADVICE
    if CheckStatus.ERROR in statuses:
        return CheckStatus.ERROR, _first(cases, CheckStatus.ERROR)
    failed = [case for case in cases if case.status in (CheckStatus.FAIL, CheckStatus.SKIPPED)]
    if failed:
        diagnosis = failed[0].diagnosis
        if len({case.diagnosis for case in failed}) > 1:
            diagnosis += f" ({len(failed)} of {len(cases)} cases fail)"
        return CheckStatus.FAIL, diagnosis
    if grader_adds:
        return CheckStatus.PUBLIC_PASS, (f"all {len(cases)} public cases pass; "
                                         "no points until the grader has run every case")
    return CheckStatus.PASS, f"all {len(cases)} cases pass"


def _points(check: Check, cases: list[CaseResult], status: CheckStatus) -> float:
    if check.all_or_nothing:
        return check.points if status == CheckStatus.PASS else 0.0
    passing = sum(1 for case in cases if case.status == CheckStatus.PASS)
    return round(passing * check.case_points(), 6)


def _first(cases: list[CaseResult], status: CheckStatus) -> str:
    return next(case.diagnosis for case in cases if case.status == status)
