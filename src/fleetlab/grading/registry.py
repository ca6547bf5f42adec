"""What a check is, and where checks are found.

A check belongs to one exercise. It has public cases (run in the notebook),
hidden cases (run only by the grader), a catalogue of known wrong answers
(each of which it must reject; a test proves it), and a harness that runs the
learner's answer against one case::

    @register("00.planes", title="Name the three planes", points=1,
              public=[...], hidden=[...], wrong_answers=[...])
    def planes(answer, case, ctx) -> CaseOutcome: ...

Check ids are ``"<lab>.<name>"`` (``"01.visibility"``). The checks of lab
``NN`` live in ``fleetlab.grading.checks.labNN`` and are imported on first use.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput

CHECK_ID = re.compile(r"^(?P<lab>\d\d)\.(?P<name>[a-z0-9][a-z0-9_-]*)$")
DEFAULT_TIMEOUT = 4.0


@dataclass(frozen=True)
class Case:
    """One input the harness runs the answer against. Subclass it to add inputs."""

    name: str


@dataclass(frozen=True)
class CaseOutcome:
    """What the harness concluded for one case; ``diagnosis`` speaks the learner's terms."""

    ok: bool
    diagnosis: str = ""


@dataclass(frozen=True)
class WrongAnswer:
    """A known wrong answer the check must reject.

    ``expect`` is a fragment the diagnosis must contain. ``public`` is True
    when the public cases alone already reject it (False: only hidden cases do).
    """

    name: str
    answer: Any
    expect: str
    public: bool = True


Harness = Callable[[Any, Case, Any], CaseOutcome]


@dataclass(frozen=True)
class Check:
    """One graded exercise. ``timeout`` bounds all of its cases together, in seconds."""

    id: str
    title: str
    points: float
    harness: Harness
    public: tuple[Case, ...]
    hidden: tuple[Case, ...] = ()
    wrong_answers: tuple[WrongAnswer, ...] = ()
    timeout: float = DEFAULT_TIMEOUT

    @property
    def lab(self) -> str:
        return self.id.split(".", 1)[0]

    def cases(self, *, include_hidden: bool) -> list[tuple[Case, bool]]:
        """The cases to run as ``(case, is_hidden)``, public first."""
        chosen = [(case, False) for case in self.public]
        if include_hidden:
            chosen += [(case, True) for case in self.hidden]
        return chosen


_CHECKS: dict[str, Check] = {}


def register(
    check_id: str,
    *,
    title: str,
    points: float = 1,
    public: Sequence[Case],
    hidden: Sequence[Case] = (),
    wrong_answers: Sequence[WrongAnswer] = (),
    timeout: float = DEFAULT_TIMEOUT,
) -> Callable[[Harness], Harness]:
    """Decorator: register the decorated harness as check ``check_id``.

    Registering the same id again replaces the check (a re-run notebook cell
    or a reloaded module). Raises InvalidInput for a malformed id or no public case.
    """
    _parse_id(check_id)
    if not public:
        raise InvalidInput("public", f"check {check_id} has no public case", hint="give it at least one")

    def decorate(harness: Harness) -> Harness:
        _CHECKS[check_id] = Check(
            id=check_id,
            title=title,
            points=points,
            harness=harness,
            public=tuple(public),
            hidden=tuple(hidden),
            wrong_answers=tuple(wrong_answers),
            timeout=timeout,
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
    """Labs with a check module in ``fleetlab.grading.checks``."""
    from importlib import resources

    modules = (entry.name for entry in resources.files("fleetlab.grading.checks").iterdir())
    return sorted(match.group(1) for name in modules if (match := re.fullmatch(r"lab(\d\d)\.py", name)))


def known_labs() -> list[str]:
    """Labs with a check module or a registered check."""
    return sorted(set(shipped_labs()) | {check.lab for check in _CHECKS.values()})


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
        importlib.import_module(f"fleetlab.grading.checks.lab{lab}")
    except ModuleNotFoundError as exc:
        if exc.name != f"fleetlab.grading.checks.lab{lab}":
            raise
