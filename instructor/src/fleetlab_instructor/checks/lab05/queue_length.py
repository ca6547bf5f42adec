"""``05.queue_length``: the hidden load tests, the reference queueLength and both catalogues."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy

from fleetlab.course.checks.lab05.queue_length import LoadTest
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    LoadTest("a summariser pod: 4.62 steps/min, 90.5 s a step; then 56 documents land", 4.62, 90.5, 7, 56),
    LoadTest("a browser pod: 1.19 steps/min, 150 s a step; then 30 documents land", 1.19, 150.0, 3, 30),
)


def reference_queue_length(steps_per_minute: float, mean_step_seconds: float) -> int:
    """Little's law for one pod: throughput x step time, rounded to a whole number of messages."""
    return round(steps_per_minute / 60 * mean_step_seconds)


RIGHT_ANSWERS = (
    RightAnswer("rounded up (the pod loses a moment between steps)",
                lambda per_minute, seconds: math.ceil(per_minute * seconds / 60)),
    RightAnswer("the string the manifest holds", lambda per_minute, seconds: str(round(per_minute * seconds / 60))),
    RightAnswer("numpy's rint (a numpy float back)", lambda per_minute, seconds: numpy.rint(per_minute / 60 * seconds)),
    RightAnswer("per second first, through Decimal", lambda per_minute, seconds: (
        Decimal(str(per_minute)) / 60 * Decimal(str(seconds))).to_integral_value()),
)

WRONG_ANSWERS = (
    WrongAnswer("the steps per minute (throughput, not concurrency)",
                lambda per_minute, seconds: round(per_minute), "more than the 3 messages per replica",
                mistake="queue-length-below-concurrency"),
    WrongAnswer("the step time", lambda per_minute, seconds: round(seconds), "documents wait a whole step",
                mistake="queue-length-above-concurrency"),
    WrongAnswer("rounded down", lambda per_minute, seconds: int(per_minute / 60 * seconds), "have nothing to do",
                mistake="queue-length-below-concurrency"),
    WrongAnswer("one message per replica, to be safe", lambda per_minute, seconds: 1, "have nothing to do",
                mistake="queue-length-below-concurrency"),
    WrongAnswer("twice the concurrency, for a backlog per pod",
                lambda per_minute, seconds: 2 * round(per_minute / 60 * seconds), "documents wait a whole step",
                mistake="queue-length-above-concurrency"),
    WrongAnswer("steps per minute x step time, without the /60",
                lambda per_minute, seconds: round(per_minute * seconds), "documents wait a whole step",
                mistake="queue-length-above-concurrency"),
    WrongAnswer("not rounded", lambda per_minute, seconds: per_minute / 60 * seconds, "not a whole number",
                mistake="not-a-queue-length"),
    WrongAnswer("a string KEDA cannot read", lambda per_minute, seconds: "5.0", "queueLength",
                mistake="not-a-queue-length"),
    WrongAnswer("zero", lambda per_minute, seconds: 0, "must be at least 1", mistake="not-a-queue-length"),
    WrongAnswer("a hard-coded 5", lambda per_minute, seconds: 5, "have nothing to do",
                mistake="queue-length-below-concurrency"),
)

SHARED_MISTAKES = {
    "queue-length-above-concurrency": "a queueLength above what a pod works at once: documents wait while the HPA "
                                      "reads the fleet as full",
    "queue-length-below-concurrency": "a queueLength below what a pod works at once: replicas sit idle",
    "not-a-queue-length": "a queueLength KEDA cannot take (not a whole number of at least 1)",
}

SIDE = InstructorSide("05.queue_length", hidden=HIDDEN, reference=reference_queue_length,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS,
                      shared_mistakes=SHARED_MISTAKES)
