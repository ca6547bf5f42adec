"""The instructor's side of every check: hidden cases, the reference answer, and both catalogues.

The public side of check ``NN.name`` (its harness and public cases) is in the
learner's library, ``fleetlab.course.checks``. Its instructor's side is the
module ``fleetlab_instructor.checks.labNN.name``, which defines ``SIDE``::

    SIDE = InstructorSide(
        "03.budget",
        hidden=[Facts(...), Facts(...)],
        reference=reference_budget,
        right_answers=[RightAnswer("...", ...)],
        wrong_answers=[WrongAnswer("...", ..., expect="good steps parked", mistake="hard-coded-budget")],
    )

``full_check(check_id)`` is the check the grader runs: the public side with
the hidden cases added. ``side_of(check_id)`` is the rest, for the course's
own tests (the reference passes every case, each right answer passes, each
wrong answer is rejected) and for the grader.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading import registry
from fleetlab.course.grading.registry import Case, Check

__all__ = ["InstructorSide", "RightAnswer", "WrongAnswer", "full_check", "full_checks", "side_of"]


@dataclass(frozen=True)
class WrongAnswer:
    """A known wrong answer the check must reject.

    ``expect`` is a fragment of the diagnosis the learner sees. ``public`` is
    True when the public cases reject it (the lesson's central mistakes must
    be), False when only hidden cases do (hard-coding, over-fitting).
    ``mistake`` is the key (``CaseOutcome.mistake``) its failing cases report
    when the harness recognises the mistake; feedback and the room report name
    a failed case by it (``InstructorSide.label_of``). "" when the harness
    names none: such a failure is told in the runner's or the harness's words.
    """

    name: str
    answer: Any
    expect: str
    public: bool = True
    mistake: str = ""


@dataclass(frozen=True)
class RightAnswer:
    """An answer that differs from the reference but is right: it must pass every case."""

    name: str
    answer: Any


@dataclass(frozen=True)
class InstructorSide:
    """What the grader and the course's tests know of a check and a learner must not.

    ``shared_mistakes`` names, in a teacher's words, a mistake key that several
    wrong answers share (the harness sees one mistake where the catalogue lists
    its variants); feedback and the room report then say that name.
    """

    check_id: str
    hidden: Sequence[Case] = ()
    reference: Any = None
    right_answers: Sequence[RightAnswer] = ()
    wrong_answers: Sequence[WrongAnswer] = ()
    shared_mistakes: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("hidden", "right_answers", "wrong_answers"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for wrong in self.wrong_answers:
            if wrong.mistake and not registry.MISTAKE_KEY.match(wrong.mistake):
                raise InvalidInput("mistake", f"{self.check_id} {wrong.name!r}: {wrong.mistake!r} is no mistake key",
                                   hint="a key is lower-case words joined by '-', as the harness reports it")
        keys = {wrong.mistake for wrong in self.wrong_answers}
        if stray := sorted(set(self.shared_mistakes) - keys):
            raise InvalidInput("shared_mistakes", f"{self.check_id}: no wrong answer carries {', '.join(stray)}",
                               hint="name only keys that catalogue entries carry")

    def label_of(self, mistake: str) -> str:
        """What a failed case with key ``mistake`` points to: its ``shared_mistakes`` name, else the name of the
        catalogue entries that carry it ("a or b" when two do); "" when none does."""
        if mistake in self.shared_mistakes:
            return self.shared_mistakes[mistake]
        names = [wrong.name for wrong in self.wrong_answers if mistake and wrong.mistake == mistake]
        return " or ".join(dict.fromkeys(names))


_SIDES: dict[str, InstructorSide] = {}


def side_of(check_id: str) -> InstructorSide:
    """The instructor's side of ``check_id``; InvalidInput when the check or its side is unknown."""
    check = registry.get_check(check_id)
    if check.id not in _SIDES:
        _SIDES[check.id] = _load(check)
    return _SIDES[check.id]


def full_check(check_id: str) -> Check:
    """``check_id`` as the grader runs it: its public side with its hidden cases."""
    return registry.get_check(check_id).with_hidden(side_of(check_id).hidden)


def full_checks(lab: str) -> list[Check]:
    """Every check of ``lab`` as the grader runs it, by id."""
    return [full_check(check.id) for check in registry.checks_of(lab)]


def register_side(side: InstructorSide) -> None:
    """Use ``side`` for its check from now on (a fixture lab's checks, which live outside this package)."""
    _SIDES[side.check_id] = side


def _load(check: Check) -> InstructorSide:
    lab, name = check.id.split(".", 1)
    module_name = f"{__name__}.lab{lab}.{name.replace('-', '_')}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise
        raise InvalidInput("check_id", f"{check.id} has no instructor's side",
                           hint=f"write {module_name} with its SIDE") from None
    side = getattr(module, "SIDE", None)
    if not isinstance(side, InstructorSide) or side.check_id != check.id:
        raise InvalidInput("check_id", f"{module_name} defines no SIDE for {check.id}",
                           hint="SIDE = InstructorSide(check_id, hidden=..., reference=..., ...)")
    return side
