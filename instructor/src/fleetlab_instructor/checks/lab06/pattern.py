"""``06.pattern``: the hidden traffic, the reference pattern and both catalogues.

The hidden case adds coder steps and a second replay, so a pattern that
matches only the public case's agent class does not pass.
"""

from __future__ import annotations

import json

from fleetlab.course.checks.lab06.pattern import Traffic
from fleetlab.course.experiments.replay import COMPLETED_STEPS
from fleetlab.services.events.envelope import COMPLETED, REQUESTED, SOURCE
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Traffic("researcher and coder steps, replayed twice", (("researcher", 2), ("coder", 2)), requested=1, replays=2),
)

REFERENCE_PATTERN = {"source": [SOURCE], "detail-type": [COMPLETED], "replay-name": [{"exists": False}]}

RIGHT_ANSWERS = (
    RightAnswer("the same pattern as JSON text", json.dumps(REFERENCE_PATTERN)),
    RightAnswer("no source, only the detail-type", {"detail-type": [COMPLETED], "replay-name": [{"exists": False}]}),
    RightAnswer("a prefix on the source", {"source": [{"prefix": "fleet."}], "detail-type": [COMPLETED],
                                           "replay-name": [{"exists": False}]}),
    RightAnswer("a prefix on the detail-type", {"detail-type": [{"prefix": "agent.step.completed"}],
                                                "replay-name": [{"exists": False}], "source": [SOURCE]}),
    RightAnswer("the completed steps' pattern with replay-name added by hand",
                {**COMPLETED_STEPS, "replay-name": [{"exists": False}]}),
    RightAnswer("tuples, not lists (JSON arrays all the same)",
                {key: tuple(value) for key, value in REFERENCE_PATTERN.items()}),
)

WRONG_ANSWERS = (
    WrongAnswer("matches replays too", {"source": [SOURCE], "detail-type": [COMPLETED]}, "the replay reached",
                mistake="lets-replays-through"),
    WrongAnswer("matches only replays", {**COMPLETED_STEPS, "replay-name": [{"exists": True}]}, "opposite",
                mistake="matches-only-replays"),
    WrongAnswer("replay-name inside detail",
                {**COMPLETED_STEPS, "detail": {"replay-name": [{"exists": False}]}}, "top-level",
                mistake="replay-name-inside-detail"),
    WrongAnswer("exists as a string", {**COMPLETED_STEPS, "replay-name": [{"exists": "false"}]}, "not a string",
                mistake="exists-not-a-boolean"),
    WrongAnswer("a number where prefix takes text", {**REFERENCE_PATTERN, "source": [{"prefix": 3}]}, "take text",
                mistake="text-filter-not-text"),
    WrongAnswer("no detail-type", {"source": [SOURCE], "replay-name": [{"exists": False}]}, REQUESTED,
                mistake="matches-requested-steps"),
    WrongAnswer("values not in lists", {"source": SOURCE, "detail-type": COMPLETED,
                                        "replay-name": [{"exists": False}]}, "sits in a list",
                mistake="value-not-in-a-list"),
    WrongAnswer("researcher steps only", {**REFERENCE_PATTERN, "detail": {"agent_class": ["researcher"]}},
                "coder-1", public=False,
                mistake="blocks-original-steps"),
    WrongAnswer("not JSON", "{'source': ['fleet.coordinator']}", "JSON",
                mistake="pattern-not-a-dict-or-json"),
)

SIDE = InstructorSide("06.pattern", hidden=HIDDEN, reference=REFERENCE_PATTERN,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS)
