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

from fleetlab.course.grading.registry import Case, CaseOutcome, register

PLANES = ("control", "work", "state")
COMPONENTS = (
    "event bus", "rules", "state machine", "work queues",
    "dead-letter queues", "workers", "idempotency table", "claim-check bucket",
)
"""Every component of the reference topology: the answer maps each one to its plane."""
ALLOWED = "use 'control', 'work' or 'state'"


@dataclass(frozen=True)
class Component(Case):
    """One component, the plane it belongs to, and why (said when an answer puts it elsewhere)."""

    plane: str = ""
    why: str = ""


PUBLIC = (
    Component("event bus", "control", "it routes each event to where it should go"),
    Component("state machine", "control",
              "it decides each run's next step; holding the run's position does not make it state"),
    Component("dead-letter queues", "work",
              "they hold failed work to triage and redrive; keeping messages does not make them state"),
    Component("idempotency table", "state", "it remembers which work was already done"),
)


@register(
    "00.planes",
    title="Name the three planes",
    points=1,
    public=PUBLIC,
    hidden_cases=4,
    answer="planes",
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
            "answer-not-a-dict",
        )
    given = {_normal(key): value for key, value in answer.items() if isinstance(key, str)}
    component = case.name
    if _normal(component) not in given:
        return _missing(component, answer)
    plane = given[_normal(component)]
    if not isinstance(plane, str) or _plane(plane) not in PLANES:
        return CaseOutcome(False, f"{component!r} maps to {plane!r}, which is not a plane: {ALLOWED}", "not-a-plane")
    if _plane(plane) != case.plane:
        return CaseOutcome(False, f"{component!r} belongs to the {case.plane} plane, not {_plane(plane)}: {case.why}",
                           f"{_key(component)}-in-the-{_key(_plane(plane))}-plane")
    return CaseOutcome(True)


def _missing(component: str, answer: Mapping[Any, Any]) -> CaseOutcome:
    message = f"{component!r} is missing: map every component of the reference topology to its plane"
    known = {_normal(name) for name in COMPONENTS}
    strays = {_normal(key): key for key in answer if isinstance(key, str) and _normal(key) not in known}
    if close := difflib.get_close_matches(_normal(component), strays, n=1, cutoff=0.75):
        return CaseOutcome(False, f"{message} (you wrote {strays[close[0]]!r}: did you mean {component!r}?)",
                           "misspelt-component")
    return CaseOutcome(False, message, f"{_key(component)}-missing")


def _key(name: str) -> str:
    """``name`` as words of a mistake key: "claim-check bucket" -> "claim-check-bucket"."""
    return "-".join(re.sub(r"[^a-z0-9]+", " ", name.lower()).split())


def _normal(name: str) -> str:
    """One spelling per component: lower case, words only, no plural "s"; "dlq" for dead-letter queues."""
    words = re.sub(r"[^a-z0-9]+", " ", name.lower()).split()
    joined = " ".join(word[:-1] if len(word) > 3 and word.endswith("s") else word for word in words)
    return "dead letter queue" if joined == "dlq" else joined


def _plane(value: str) -> str:
    words = value.lower().split()
    return " ".join(words[:-1] if len(words) > 1 and words[-1] == "plane" else words)
