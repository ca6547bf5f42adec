"""What a check is, and where checks are found: the public side of every check.

A check belongs to one exercise. Its public side, here in the learner's
library, is a harness that runs an answer against one case, and the public
cases the notebook runs::

    @register("00.planes", title="Name the three planes", points=1,
              public=[...], hidden_cases=4)
    def planes(answer, case, ctx) -> CaseOutcome: ...

Its instructor's side lives in ``fleetlab_instructor.checks`` and never in
this package: the hidden cases (run only by the grader, against hard-coding
and over-fitting; here only their number is known, for the scoring line),
the reference answer, and the catalogues of right-but-different and of known
wrong answers. ``Check.with_hidden(cases)`` is how the grader adds them.

Points split evenly over the cases (public and hidden), unless the check
says why its cases cannot be scored apart (``all_or_nothing="why"``).

Check ids are ``"<lab>.<name>"`` (``"01.visibility"``). The checks of lab
``NN`` live in ``fleetlab.course.checks.labNN`` (a module, or a package with
one module per check) and are imported on first use.
"""

from __future__ import annotations

import contextlib
import importlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fleetlab.core.errors import HiddenCasesMissing, InvalidInput


class StopAnswer(BaseException):
    """Raised by a harness, from a call the learner's code made, to stop that code (a worker that will not stop).

    It is no Exception, so the learner's ``except Exception`` lets it through, and in a graded run it crosses to
    the process running the answer and back as itself; the harness catches it where it called the learner's code.
    """

CHECK_ID = re.compile(r"^(?P<lab>\d\d)\.(?P<name>[a-z0-9][a-z0-9_-]*)$")
DEFAULT_TIMEOUT = 4.0


@dataclass(frozen=True)
class Case:
    """One input the harness runs the answer against. Subclass it to add inputs."""

    name: str


MISTAKE_KEY = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


class Diagnosis(str):
    """A diagnosis in words that knows the key of the mistake it tells (for a harness's helpers that return words).

    ``CaseOutcome(False, Diagnosis(words, "key"))`` reports ``mistake="key"``.
    Joining it to other text gives a plain str, without the key.
    """

    mistake: str

    def __new__(cls, words: str, mistake: str) -> Diagnosis:
        said = super().__new__(cls, words)
        said.mistake = mistake
        return said


@dataclass(frozen=True)
class CaseOutcome:
    """What the harness concluded for one case; ``diagnosis`` speaks the learner's terms.

    ``mistake`` is the key of the mistake a failed case recognised (a short
    slug, ``"reports-only-the-failed-record"``), the one a catalogue entry
    (``WrongAnswer.mistake``) carries; "" when the harness names none. A
    failed case whose ``diagnosis`` is a ``Diagnosis`` takes its key from it.
    Raises InvalidInput when it is not a lower-case slug or is set on a pass.
    """

    ok: bool
    diagnosis: str = ""
    mistake: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.diagnosis, Diagnosis):
            if not self.ok and not self.mistake:
                object.__setattr__(self, "mistake", self.diagnosis.mistake)
            object.__setattr__(self, "diagnosis", str(self.diagnosis))
        if self.mistake and (self.ok or not MISTAKE_KEY.match(self.mistake)):
            raise InvalidInput("mistake", f"{self.mistake!r} is no mistake key of a failed case",
                               hint="a failed case's key is lower-case words joined by '-'; a passed case has none")


Harness = Callable[[Any, Case, Any], CaseOutcome]


@dataclass(frozen=True)
class Check:
    """One graded exercise. ``timeout`` bounds all of its cases together, in seconds.

    ``side_by_side``: the cases share nothing (each makes its own resources)
    and none jumps the clock, so on a real clock they run at the same time
    and their waits on the backend overlap; on a virtual clock they always
    run one after another.

    ``real_time``: the cases wait on the real clock on every backend (Step
    Functions' timers run in real seconds, moto's too), so the grader judges
    the check in a judge of its own, beside the notebook's other checks.
    """

    id: str
    title: str
    points: float
    harness: Harness
    public: tuple[Case, ...]
    hidden_cases: int = 0
    hidden: tuple[Case, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    all_or_nothing: str = ""
    function: str = ""
    side_by_side: bool = False
    answer: str = ""
    parameters: str = ""
    implemented_by: tuple[str, ...] = ()
    real_time: bool = False

    @property
    def lab(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def answer_name(self) -> str:
        """The name the notebook gives the answer (``answer``, else ``function``); "" when unnamed."""
        return self.answer or self.function

    def with_hidden(self, cases: Sequence[Case]) -> Check:
        """This check with its hidden cases added (the grader's side).

        Raises InvalidInput when their number is not the ``hidden_cases`` the
        check declares, or a name repeats a case's.
        """
        cases = tuple(cases)
        if len(cases) != self.hidden_cases:
            raise InvalidInput("hidden", f"check {self.id} declares {self.hidden_cases} hidden cases, not {len(cases)}",
                               hint="make register(hidden_cases=...) and the instructor's side agree")
        _require_distinct_names(self.id, (*self.public, *cases), field="hidden")
        return replace(self, hidden=cases)

    def cases(self, *, include_hidden: bool) -> list[tuple[Case, bool]]:
        """The cases to run as ``(case, is_hidden)``, public first.

        Raises HiddenCasesMissing when the hidden cases are asked for and the
        check does not carry them (they come with the instructor's side).
        """
        chosen = [(case, False) for case in self.public]
        if include_hidden:
            if len(self.hidden) != self.hidden_cases:
                raise HiddenCasesMissing(self.id)
            chosen += [(case, True) for case in self.hidden]
        return chosen

    def case_points(self) -> float:
        """What one passing case earns (0 when the check is all or nothing)."""
        return 0.0 if self.all_or_nothing else self.points / (len(self.public) + self.hidden_cases)

    def scoring(self) -> str:
        """How the points split, in one line: ``2 points, 0.5 for each of 4 cases (2 here, 2 more at grading)``."""
        count = len(self.public) + self.hidden_cases
        where = f"{len(self.public)} here, {self.hidden_cases} more at grading" if self.hidden_cases else "all of them here"
        total = f"{readable_points(self.points)} point{'' if self.points == 1 else 's'}"
        if self.all_or_nothing:
            return f"{total} for all {count} cases together ({where}): {self.all_or_nothing}"
        return f"{total}, {readable_points(self.case_points())} for each of {count} cases ({where})"


_CHECKS: dict[str, Check] = {}


def register(
    check_id: str,
    *,
    title: str,
    points: float = 1,
    public: Sequence[Case],
    hidden_cases: int = 0,
    timeout: float = DEFAULT_TIMEOUT,
    all_or_nothing: str = "",
    function: str = "",
    side_by_side: bool = False,
    answer: str = "",
    parameters: str = "",
    implemented_by: Sequence[str] = (),
    real_time: bool = False,
) -> Callable[[Harness], Harness]:
    """Decorator: register the decorated harness as check ``check_id``.

    ``function`` names the function the exercise asks for: an answer that is
    not callable is then refused before any case runs, and so is one that
    cannot take ``parameters`` (``"sqs, dlq_url"``, as the notebook's stub
    has them) in that order. ``answer`` names the
    value the exercise asks for when it is not a function (the grader finds
    an answer by this name, or ``function``). ``side_by_side`` and
    ``real_time``: see ``Check``.
    ``implemented_by`` names (dotted paths) the library functions that do what
    the exercise asks: an answer that calls one scores nothing (``shortcuts``).

    ``hidden_cases`` counts the cases the grader adds (``Check.with_hidden``).

    Registering the same id again replaces the check (a re-run notebook cell
    or a reloaded module). Raises InvalidInput for a malformed id, no public
    case, a negative number of hidden cases, or two cases with one name.
    """
    _parse_id(check_id)
    if not public:
        raise InvalidInput("public", f"check {check_id} has no public case", hint="give it at least one")
    if isinstance(hidden_cases, bool) or not isinstance(hidden_cases, int) or hidden_cases < 0:
        raise InvalidInput("hidden_cases", f"is {hidden_cases!r} for check {check_id}", hint="count them: 0 or more")
    _require_distinct_names(check_id, public, field="public")

    def decorate(harness: Harness) -> Harness:
        _CHECKS[check_id] = Check(
            id=check_id,
            title=title,
            points=points,
            harness=harness,
            public=tuple(public),
            hidden_cases=hidden_cases,
            timeout=timeout,
            all_or_nothing=all_or_nothing,
            function=function,
            side_by_side=side_by_side,
            answer=answer,
            parameters=parameters,
            implemented_by=tuple(implemented_by),
            real_time=real_time,
        )
        return harness

    return decorate


def get_check(check_id: str) -> Check:
    """The check named ``check_id``, importing its lab's check module if needed."""
    lab = _parse_id(check_id)
    if check_id not in _CHECKS:
        _import_lab(lab)
    if check_id not in _CHECKS:
        known = ", ".join(sorted(c for c in _CHECKS if c.startswith(f"{lab}."))) or "none"
        raise InvalidInput("check_id", f"there is no check named {check_id!r}", hint=f"checks of lab {lab}: {known}; a notebook older than the library may name an old one: "
                           "see docs/troubleshooting.md#stale-student-notebook")
    return _CHECKS[check_id]


def checks_of(lab: str) -> list[Check]:
    """Every registered check of ``lab``, by id."""
    _import_lab(lab)
    return [check for check_id, check in sorted(_CHECKS.items()) if check.lab == lab]


def shipped_labs() -> list[str]:
    """Labs with a check module or package in ``fleetlab.course.checks``."""
    from importlib import resources

    modules = (entry.name for entry in resources.files("fleetlab.course.checks").iterdir())
    return sorted(match.group(1) for name in modules if (match := re.fullmatch(r"lab(\d\d)(\.py)?", name)))


def lab_id(given: Any) -> Any:
    """A lab's two digits, ``"03"``, for ``"03"``, ``"3"`` or ``3``; anything else comes back as given, to be refused by name."""
    if isinstance(given, int) and not isinstance(given, bool) and 0 <= given <= 99:
        return f"{given:02d}"
    if isinstance(given, str) and re.fullmatch(r"\s*\d{1,2}\s*", given):
        return f"{int(given):02d}"
    return given


def known_labs() -> list[str]:
    """Labs with a check module or a registered check."""
    return sorted(set(shipped_labs()) | {check.lab for check in _CHECKS.values()})


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Checks registered inside the block are forgotten after it; the shipped ones stay.

    For tests and fixture labs: the shipped labs are imported first, so
    the registry after the block is exactly the registry before it.
    """
    for lab in shipped_labs():
        _import_lab(lab)
    saved = dict(_CHECKS)
    try:
        yield
    finally:
        _CHECKS.clear()
        _CHECKS.update(saved)


def format_points(points: float) -> str:
    """``2`` for 2.0, ``1.5`` for 1.5, ``0.125`` for an eighth, ``0.333333`` for a third: as a gradebook keeps it."""
    return f"{points:g}"


def readable_points(points: float) -> str:
    """Points as people write them: ``2``, ``1.5``, ``0.125`` for an eighth, ``0.33`` for a third.

    Exact up to three decimals; a share that needs more is rounded to two.
    """
    exact = round(points, 3)
    return f"{exact if abs(points - exact) < 1e-9 else round(points, 2):g}"


def _require_distinct_names(check_id: str, cases: Sequence[Case], *, field: str) -> None:
    names = [case.name for case in cases]
    if len(set(names)) != len(names):
        raise InvalidInput(field, f"check {check_id} has two cases with one name", hint="name each case apart")


def _parse_id(check_id: str) -> str:
    match = CHECK_ID.match(check_id) if isinstance(check_id, str) else None
    if match is None:
        raise InvalidInput(
            "check_id",
            f"{check_id!r} is not a check id",
            hint='use the id printed in the exercise, like "01.visibility"',
        )
    return match.group("lab")


def _import_lab(lab: str) -> None:
    try:
        importlib.import_module(f"fleetlab.course.checks.lab{lab}")
    except ModuleNotFoundError as exc:
        if exc.name != f"fleetlab.course.checks.lab{lab}":
            raise
