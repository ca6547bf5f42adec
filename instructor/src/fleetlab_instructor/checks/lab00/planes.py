"""``00.planes``: the hidden components, the reference map and both catalogues.

The public cases hold the lesson's traps (the state machine and the
dead-letter queues hold data, yet are not the state plane); the hidden cases
check the other four components, so an answer that names only the public four
does not pass.
"""

from __future__ import annotations

from fleetlab.course.checks.lab00.planes import ALLOWED, PUBLIC, Component
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Component("rules", "control", "they decide which queue an event goes to"),
    Component("work queues", "work", "they carry the work still to be done"),
    Component("workers", "work", "they do the steps; they neither route events nor decide what comes next"),
    Component("claim-check bucket", "state", "it keeps the large payloads that events point to"),
)
REFERENCE = {case.name: case.plane for case in (*PUBLIC, *HIDDEN)}


def _with(component: str, plane: str) -> dict[str, str]:
    return {**REFERENCE, component: plane}


def _without(component: str) -> dict[str, str]:
    return {key: value for key, value in REFERENCE.items() if key != component}


def _renamed(component: str, misspelt: str) -> dict[str, str]:
    return {(misspelt if key == component else key): value for key, value in REFERENCE.items()}


WRONG_ANSWERS = (
    WrongAnswer("state machine in the state plane", _with("state machine", "state"),
                "'state machine' belongs to the control plane, not state", mistake="state-machine-in-the-state-plane"),
    WrongAnswer("dead-letter queues in the state plane", _with("dead-letter queues", "state"),
                "'dead-letter queues' belongs to the work plane, not state",
                mistake="dead-letter-queues-in-the-state-plane"),
    WrongAnswer("workers in the control plane", _with("workers", "control"),
                "'workers' belongs to the work plane, not control", public=False,
                mistake="workers-in-the-control-plane"),
    WrongAnswer("a public component missing", _without("event bus"), "'event bus' is missing",
                mistake="event-bus-missing"),
    WrongAnswer("a hidden component missing", _without("claim-check bucket"), "'claim-check bucket' is missing",
                public=False, mistake="claim-check-bucket-missing"),
    WrongAnswer("a misspelt component", _renamed("dead-letter queues", "dead-leter queues"),
                "did you mean 'dead-letter queues'", mistake="misspelt-component"),
    WrongAnswer("a misspelt plane", _with("idempotency table", "stat"),
                f"'idempotency table' maps to 'stat', which is not a plane: {ALLOWED}", mistake="not-a-plane"),
    WrongAnswer("a list of pairs, not a dict", list(REFERENCE.items()), "expected a dict mapping each component",
                mistake="answer-not-a-dict"),
    WrongAnswer("a function that returns nothing", lambda: None, "not a NoneType", mistake="answer-not-a-dict"),
    WrongAnswer("only the public four", {case.name: case.plane for case in PUBLIC}, "'rules' is missing",
                public=False, mistake="rules-missing"),
)

RIGHT_ANSWERS = (
    RightAnswer("a function returning the dict", lambda: dict(REFERENCE)),
    RightAnswer("loose spelling: capitals, 'plane', spaces",
                {f" {key.upper()} ": f"{plane.title()} plane" for key, plane in REFERENCE.items()}),
    RightAnswer("singular names, no hyphens, DLQ", {
        "Event Bus": "control", "rule": "control", "state_machine": "control", "work queue": "work",
        "DLQ": "work", "worker": "work", "idempotency table": "state", "claim check bucket": "state",
    }),
    RightAnswer("extra components beside the eight", {**REFERENCE, "orchestrator": "control", "model": "work"}),
)

SIDE = InstructorSide("00.planes", hidden=HIDDEN, reference=REFERENCE,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS)
