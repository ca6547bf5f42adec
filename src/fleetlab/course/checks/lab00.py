"""Lab 00 checks: name the three planes of the reference topology.

``00.planes``: the learner gives a dict mapping each component of the
reference topology to its plane (``control``, ``work`` or ``state``), or a
function of no arguments that returns one (so a stub says "not yet").
Names are read loosely (case, spaces, hyphens, a plural "s", "DLQ"), and
"control plane" counts as "control". One case per component, scored apart:
the public cases hold the lesson's traps (the state machine and the
dead-letter queues hold data, yet are not the state plane); the hidden cases
check the rest, so an answer that names only the public four does not pass.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetlab.course.grading.registry import Case, CaseOutcome, RightAnswer, WrongAnswer, register

PLANES = ("control", "work", "state")
REFERENCE = {
    "event bus": "control",
    "rules": "control",
    "state machine": "control",
    "work queues": "work",
    "dead-letter queues": "work",
    "workers": "work",
    "idempotency table": "state",
    "claim-check bucket": "state",
}
WHY = {
    "event bus": "it routes each event to where it should go",
    "rules": "they decide which queue an event goes to",
    "state machine": "it decides each run's next step; holding the run's position does not make it state",
    "work queues": "they carry the work still to be done",
    "dead-letter queues": "they hold failed work to triage and redrive; keeping messages does not make them state",
    "workers": "they do the steps; they neither route events nor decide what comes next",
    "idempotency table": "it remembers which work was already done",
    "claim-check bucket": "it keeps the large payloads that events point to",
}
ALLOWED = "use 'control', 'work' or 'state'"


@dataclass(frozen=True)
class Component(Case):
    """One component whose plane the answer must name."""


PUBLIC = ("event bus", "state machine", "dead-letter queues", "idempotency table")
HIDDEN = tuple(name for name in REFERENCE if name not in PUBLIC)


def _with(component: str, plane: str) -> dict[str, str]:
    return {**REFERENCE, component: plane}


def _without(component: str) -> dict[str, str]:
    return {key: value for key, value in REFERENCE.items() if key != component}


def _renamed(component: str, misspelt: str) -> dict[str, str]:
    return {(misspelt if key == component else key): value for key, value in REFERENCE.items()}


WRONG_ANSWERS = (
    WrongAnswer(
        "state machine in the state plane",
        _with("state machine", "state"),
        "'state machine' belongs to the control plane, not state",
    ),
    WrongAnswer(
        "dead-letter queues in the state plane",
        _with("dead-letter queues", "state"),
        "'dead-letter queues' belongs to the work plane, not state",
    ),
    WrongAnswer(
        "workers in the control plane",
        _with("workers", "control"),
        "'workers' belongs to the work plane, not control",
        public=False,
    ),
    WrongAnswer("a public component missing", _without("event bus"), "'event bus' is missing"),
    WrongAnswer(
        "a hidden component missing", _without("claim-check bucket"), "'claim-check bucket' is missing", public=False
    ),
    WrongAnswer(
        "a misspelt component",
        _renamed("dead-letter queues", "dead-leter queues"),
        "did you mean 'dead-letter queues'",
    ),
    WrongAnswer(
        "a misspelt plane",
        _with("idempotency table", "stat"),
        f"'idempotency table' maps to 'stat', which is not a plane: {ALLOWED}",
    ),
    WrongAnswer("a list of pairs, not a dict", list(REFERENCE.items()), "expected a dict mapping each component"),
    WrongAnswer("a function that returns nothing", lambda: None, "not a NoneType"),
    WrongAnswer(
        "only the public four",
        {name: REFERENCE[name] for name in PUBLIC},
        "'rules' is missing",
        public=False,
    ),
)

RIGHT_ANSWERS = (
    RightAnswer("a function returning the dict", lambda: dict(REFERENCE)),
    RightAnswer(
        "loose spelling: capitals, 'plane', spaces",
        {f" {key.upper()} ": f"{plane.title()} plane" for key, plane in REFERENCE.items()},
    ),
    RightAnswer(
        "singular names, no hyphens, DLQ",
        {
            "Event Bus": "control", "rule": "control", "state_machine": "control", "work queue": "work",
            "DLQ": "work", "worker": "work", "idempotency table": "state", "claim check bucket": "state",
        },
    ),
    RightAnswer("extra components beside the eight", {**REFERENCE, "orchestrator": "control", "model": "work"}),
)


@register(
    "00.planes",
    title="Name the three planes",
    points=1,
    public=[Component(name) for name in PUBLIC],
    hidden=[Component(name) for name in HIDDEN],
    reference=REFERENCE,
    right_answers=RIGHT_ANSWERS,
    wrong_answers=WRONG_ANSWERS,
)
def planes(answer: Any, case: Component, ctx: Any) -> CaseOutcome:
    """Is ``case.name`` mapped to its plane in ``answer`` (or in what ``answer()`` returns)?"""
    if callable(answer):
        answer = answer()
    if not isinstance(answer, Mapping):
        return CaseOutcome(
            False,
            "expected a dict mapping each component name (like 'event bus') to its plane "
            f"('control', 'work' or 'state'), not a {type(answer).__name__}",
        )
    given = {_normal(key): value for key, value in answer.items() if isinstance(key, str)}
    component = case.name
    if _normal(component) not in given:
        return CaseOutcome(False, _missing(component, answer))
    plane = given[_normal(component)]
    if not isinstance(plane, str) or _plane(plane) not in PLANES:
        return CaseOutcome(False, f"{component!r} maps to {plane!r}, which is not a plane: {ALLOWED}")
    expected = REFERENCE[component]
    if _plane(plane) != expected:
        return CaseOutcome(
            False, f"{component!r} belongs to the {expected} plane, not {_plane(plane)}: {WHY[component]}"
        )
    return CaseOutcome(True)


def _missing(component: str, answer: Mapping[Any, Any]) -> str:
    message = f"{component!r} is missing: map every component of the reference topology to its plane"
    known = {_normal(name) for name in REFERENCE}
    strays = {_normal(key): key for key in answer if isinstance(key, str) and _normal(key) not in known}
    if close := difflib.get_close_matches(_normal(component), strays, n=1, cutoff=0.75):
        message += f" (you wrote {strays[close[0]]!r}: did you mean {component!r}?)"
    return message


def _normal(name: str) -> str:
    """One spelling per component: lower case, words only, no plural "s"; "dlq" for dead-letter queues."""
    words = re.sub(r"[^a-z0-9]+", " ", name.lower()).split()
    joined = " ".join(word[:-1] if len(word) > 3 and word.endswith("s") else word for word in words)
    return "dead letter queue" if joined == "dlq" else joined


def _plane(value: str) -> str:
    words = value.lower().split()
    return " ".join(words[:-1] if len(words) > 1 and words[-1] == "plane" else words)
