"""``03.budget``: the hidden facts, the reference budget and both catalogues.

The hidden cases change the retry period, the outage and the deadlines, so a
budget hard-coded for the public facts does not pass.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy

from fleetlab.course.checks.lab03.budget import DAY, Facts
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Facts("a retry every 3 min, outages up to 10 min, poison out within 1 h; the queue keeps 2 d, "
          "triage takes up to 10 d", 180, 600, 3_600, 2 * DAY, 10 * DAY),
    Facts("a retry every minute, outages up to 7 min 30 s, poison out within 30 min; the queue keeps 7 d, "
          "triage takes up to 5 d", 60, 450, 1_800, 7 * DAY, 5 * DAY),
)


def reference_budget(retry_seconds: float, outage_seconds: float, poison_deadline_seconds: float,
                     source_retention_seconds: float, triage_seconds: float) -> tuple[int, int]:
    """Every receive that can fall in the outage, plus the one that succeeds; a DLQ that outlives source + triage."""
    return math.ceil(outage_seconds / retry_seconds) + 1, int(source_retention_seconds + triage_seconds)


def _as_deadline_allows(retry, outage, deadline, retention, triage):
    return int(deadline // retry), 14 * DAY


RIGHT_ANSWERS = (
    RightAnswer("the most receives the poison deadline allows, and 14 days", _as_deadline_allows),
    RightAnswer("one receive of margin, and the largest DLQ retention",
                lambda retry, outage, deadline, retention, triage: (math.ceil(outage / retry) + 2, 1_209_600)),
    RightAnswer("a list of numpy numbers",
                lambda retry, outage, deadline, retention, triage: [numpy.int64(-(-outage // retry) + 1),
                                                                     numpy.float64(retention + triage + DAY)]),
    RightAnswer("a dict", lambda retry, outage, deadline, retention, triage: {
        "max_receive_count": math.ceil(outage / retry) + 1, "dlq_retention_seconds": Decimal(retention + triage)}),
    RightAnswer("whole floats", lambda retry, outage, deadline, retention, triage: (
        float(math.ceil(outage / retry) + 1), float(retention + triage))),
)

WRONG_ANSWERS = (
    WrongAnswer("maxReceiveCount 1", lambda *facts: (1, 14 * DAY), "good steps parked",
                mistake="good-work-parked-in-outage"),
    WrongAnswer("maxReceiveCount 2", lambda *facts: (2, 14 * DAY), "good steps parked",
                mistake="good-work-parked-in-outage"),
    WrongAnswer("one receive short: outage / retry, rounded up",
                lambda retry, outage, deadline, retention, triage: (math.ceil(outage / retry), 14 * DAY),
                "good steps parked",
                mistake="good-work-parked-in-outage"),
    WrongAnswer("outage / retry, rounded down, plus one",
                lambda retry, outage, deadline, retention, triage: (outage // retry + 1, 14 * DAY),
                "good steps parked",
                mistake="good-work-parked-in-outage"),
    WrongAnswer("the largest maxReceiveCount SQS allows", lambda *facts: (1_000, 14 * DAY), "must be parked within",
                mistake="poison-parked-too-late"),
    WrongAnswer("DLQ retention equal to the source's",
                lambda retry, outage, deadline, retention, triage: (math.ceil(outage / retry) + 1, retention),
                "SentTimestamp",
                mistake="dlq-expires-before-triage"),
    WrongAnswer("DLQ retention as long as triage",
                lambda retry, outage, deadline, retention, triage: (math.ceil(outage / retry) + 1, triage),
                "SentTimestamp",
                mistake="dlq-expires-before-triage"),
    WrongAnswer("DLQ retention in days", lambda retry, outage, deadline, retention, triage: (
        math.ceil(outage / retry) + 1, 14), "SQS keeps a message for 1 min to 14 d",
                mistake="retention-out-of-range"),
    WrongAnswer("DLQ retention in minutes", lambda retry, outage, deadline, retention, triage: (
        math.ceil(outage / retry) + 1, (retention + triage) // 60), "read as minutes",
                mistake="retention-in-another-unit"),
    WrongAnswer("a DLQ that keeps 30 days", lambda retry, outage, deadline, retention, triage: (
        math.ceil(outage / retry) + 1, 30 * DAY), "SQS keeps a message for 1 min to 14 d",
                mistake="retention-out-of-range"),
    WrongAnswer("half a receive", lambda retry, outage, deadline, retention, triage: (
        outage / retry + 1, 14 * DAY), "a whole number",
                mistake="receive-count-not-whole-or-allowed"),
    WrongAnswer("only maxReceiveCount", lambda *facts: 5, "return two numbers",
                mistake="not-two-numbers"),
    WrongAnswer("a hard-coded 5 and 14 days", lambda *facts: (5, 14 * DAY), "good steps parked", public=False,
                mistake="good-work-parked-in-outage"),
)

SHARED_MISTAKES = {"good-work-parked-in-outage": "too few receives to ride out the outage: every receive that can "
                                                 "fall in it, plus the one that succeeds"}
"""The harness sees only good work parked; too few receives, however they were counted or hard-coded, look alike."""

SIDE = InstructorSide("03.budget", hidden=HIDDEN, reference=reference_budget,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS, shared_mistakes=SHARED_MISTAKES)
