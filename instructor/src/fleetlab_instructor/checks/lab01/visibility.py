"""``01.visibility``: the hidden workloads, the reference timeout and both catalogues.

The public workloads are heavy-tailed, so an answer built on the mean or the
median runs several steps twice; the hidden ones have other percentiles, so
a hard-coded number fails one of them.
"""

from __future__ import annotations

import math
import statistics

import numpy

from fleetlab.course.checks.lab01.visibility import SQS_MAX_VISIBILITY, Workload, p95
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Workload("short tool calls (p50 20 s, p95 45 s)", 20, 45),
    Workload("long research steps (p50 240 s, p95 900 s)", 240, 900),
)


def reference_visibility(step_times: list[float]) -> int:
    """The p95 (nearest rank, after sorting) with a 1.5x margin."""
    ordered = sorted(step_times)
    return math.ceil(1.5 * ordered[math.ceil(0.95 * len(ordered)) - 1])


def _unsorted_p95(times: list[float]) -> float:
    return 1.5 * times[math.ceil(0.95 * len(times)) - 1]


RIGHT_ANSWERS = (
    RightAnswer("numpy's percentile (linear interpolation), x1.5", lambda times: numpy.percentile(times, 95) * 1.5),
    RightAnswer("statistics.quantiles, x1.5", lambda times: statistics.quantiles(times, n=20)[-1] * 1.5),
    RightAnswer("a numpy integer", lambda times: numpy.int64(reference_visibility(times))),
    RightAnswer("a float, not rounded", lambda times: 1.5 * p95(times)),
    RightAnswer("twice the p95", lambda times: 2 * p95(times)),
    RightAnswer("the p99", lambda times: sorted(times)[math.ceil(0.99 * len(times)) - 1]),
)

WRONG_ANSWERS = (
    WrongAnswer("SQS's default of 30 s", lambda times: 30, "outlived it", mistake="shorter-than-the-slow-steps"),
    WrongAnswer("the median step time", lambda times: sorted(times)[len(times) // 2], "outlived it",
                mistake="shorter-than-the-slow-steps"),
    WrongAnswer("the mean plus 50%", lambda times: 1.5 * sum(times) / len(times), "outlived it",
                mistake="shorter-than-the-slow-steps"),
    WrongAnswer("twice the mean", lambda times: 2 * sum(times) / len(times), "outlived it",
                mistake="shorter-than-the-slow-steps"),
    WrongAnswer("the p95 of the unsorted list, x1.5", _unsorted_p95, "the list is not sorted",
                mistake="shorter-than-the-slow-steps"),
    WrongAnswer("the 12-hour maximum", lambda times: SQS_MAX_VISIBILITY, "waits",
                mistake="crashed-step-waits-too-long"),
    WrongAnswer("ten times the longest step seen", lambda times: 10 * max(times), "waits",
                mistake="crashed-step-waits-too-long"),
    WrongAnswer("the longest step seen (a heavy tail's outlier)", max, "waits", mistake="crashed-step-waits-too-long"),
    WrongAnswer("a hard-coded 900 s", lambda times: 900, "waits", public=False, mistake="crashed-step-waits-too-long"),
    WrongAnswer("a number, not the function", 630, "pass the function itself: check('01.visibility', choose_visibility)"),
    WrongAnswer("a string", lambda times: "900", "return a number of seconds", mistake="not-a-number-of-seconds"),
    WrongAnswer("a bool", lambda times: True, "a bool", mistake="not-a-number-of-seconds"),
    WrongAnswer("NaN", lambda times: float("nan"), "returned NaN", mistake="not-a-number-of-seconds"),
    WrongAnswer("a negative number", lambda times: -1, "a negative duration", mistake="not-a-number-of-seconds"),
    WrongAnswer("more than SQS allows", lambda times: 50_000, "at most 43200 s", mistake="past-the-sqs-maximum"),
)

SHARED_MISTAKES = {
    "shorter-than-the-slow-steps": "a timeout shorter than the slow steps (the tail, not the middle, sets it)",
    "crashed-step-waits-too-long": "a timeout far past the slow steps: a crashed step waits that long for nothing",
    "not-a-number-of-seconds": "not a positive number of seconds",
}

SIDE = InstructorSide("01.visibility", hidden=HIDDEN, reference=reference_visibility,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS, shared_mistakes=SHARED_MISTAKES)
