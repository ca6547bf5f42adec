"""``04.timeouts``: the hidden profiles, the reference timers and both catalogues.

The hidden profiles are far from the public ones (minutes-long calls; many
short calls), so timers fitted to the public profiles do not pass; in the
last, steps of one or two long calls leave no gap for a beat, so a
HeartbeatSeconds taken as a share of TimeoutSeconds fails.
"""

from __future__ import annotations

import math

import numpy

from fleetlab.course.checks.lab04.timeouts import Profile
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Profile("long research: 2 to 4 calls, each p50 200 s, p95 600 s", (2, 4), 200, 600),
    Profile("many short tool calls: 8 to 15 calls, each p50 5 s, p95 20 s", (8, 15), 5, 20),
    Profile("one or two long calls: each p50 120 s, p95 400 s", (1, 2), 120, 400),
)


def _p(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def choose_timeouts(steps):
    """The reference: TimeoutSeconds covers the p95 step, HeartbeatSeconds the p99 call, each with a 1.5x margin."""
    totals = [sum(step) for step in steps]
    single_calls = [call for step in steps for call in step]
    heartbeat = math.ceil(_p(single_calls, 0.99) * 1.5)
    timeout = max(math.ceil(_p(totals, 0.95) * 1.5), heartbeat + 1)
    return {"TimeoutSeconds": timeout, "HeartbeatSeconds": heartbeat}


def timeouts_as_tuple(steps):
    """Right: a (timeout, heartbeat) pair, margins of 2x on p95 step and 1.3x on the longest call seen."""
    totals = [sum(step) for step in steps]
    longest_call = max(call for step in steps for call in step)
    heartbeat = math.ceil(longest_call * 1.3)
    return max(math.ceil(_p(totals, 0.95) * 2), heartbeat + 1), heartbeat


def timeouts_in_snake_case(steps):
    """Right: snake_case keys, the p99 step and twice the p99 call."""
    totals = [sum(step) for step in steps]
    single_calls = [call for step in steps for call in step]
    heartbeat = math.ceil(2 * _p(single_calls, 0.99))
    return {"timeout_seconds": max(math.ceil(_p(totals, 0.99) * 1.2), heartbeat + 1), "heartbeat_seconds": heartbeat}


def timeouts_as_numpy(steps):
    """Right: numpy's percentiles and numpy integers, as a data scientist would write it."""
    totals = numpy.array([sum(step) for step in steps])
    single_calls = numpy.array([call for step in steps for call in step])
    heartbeat = numpy.int64(numpy.ceil(numpy.percentile(single_calls, 99) * 1.5))
    return {"TimeoutSeconds": max(numpy.int64(numpy.ceil(numpy.percentile(totals, 95) * 1.5)), heartbeat + 1),
            "HeartbeatSeconds": heartbeat}


def timeouts_as_whole_floats(steps):
    """Right: whole numbers held in floats (630.0), the way round() in some languages returns them."""
    reference = choose_timeouts(steps)
    return {key: float(value) for key, value in reference.items()}


def no_timeout(steps):
    return {"TimeoutSeconds": None, "HeartbeatSeconds": choose_timeouts(steps)["HeartbeatSeconds"]}


def no_heartbeat(steps):
    return {"TimeoutSeconds": choose_timeouts(steps)["TimeoutSeconds"], "HeartbeatSeconds": None}


def timeout_from_median_step(steps):
    reference = choose_timeouts(steps)
    median = math.ceil(_p([sum(step) for step in steps], 0.5))
    return {"TimeoutSeconds": max(median, reference["HeartbeatSeconds"] + 1), "HeartbeatSeconds": reference["HeartbeatSeconds"]}


def heartbeat_from_median_call(steps):
    median = math.ceil(_p([call for step in steps for call in step], 0.5))
    return {"TimeoutSeconds": choose_timeouts(steps)["TimeoutSeconds"], "HeartbeatSeconds": median}


def heartbeat_as_long_as_timeout(steps):
    timeout = choose_timeouts(steps)["TimeoutSeconds"]
    return {"TimeoutSeconds": timeout, "HeartbeatSeconds": timeout}


def a_day_and_half_a_day(steps):
    return {"TimeoutSeconds": 86_400, "HeartbeatSeconds": 43_200}


def fractional_seconds(steps):
    totals = [sum(step) for step in steps]
    single_calls = [call for step in steps for call in step]
    return {"TimeoutSeconds": _p(totals, 0.95) * 1.5 + 0.5, "HeartbeatSeconds": _p(single_calls, 0.99) * 1.5 + 0.5}


def numbers_as_text(steps):
    return {key: str(value) for key, value in choose_timeouts(steps).items()}


def heartbeat_a_third_of_timeout(steps: list[list[float]]) -> dict[str, int]:
    timeout = choose_timeouts(steps)["TimeoutSeconds"]
    return {"TimeoutSeconds": timeout, "HeartbeatSeconds": math.ceil(timeout / 3)}


RIGHT_ANSWERS = (
    RightAnswer("a (timeout, heartbeat) pair, 2x the p95 step, 1.3x the longest call", timeouts_as_tuple),
    RightAnswer("snake_case keys, the p99 step and twice the p99 call", timeouts_in_snake_case),
    RightAnswer("numpy percentiles and numpy integers", timeouts_as_numpy),
    RightAnswer("whole numbers as floats", timeouts_as_whole_floats),
)

WRONG_ANSWERS = (
    WrongAnswer("no TimeoutSeconds", no_timeout, "without TimeoutSeconds",
                mistake="no-timeout"),
    WrongAnswer("no HeartbeatSeconds", no_heartbeat, "no HeartbeatSeconds",
                mistake="no-heartbeat"),
    WrongAnswer("TimeoutSeconds from the median step", timeout_from_median_step, "longer than TimeoutSeconds",
                mistake="timeout-shorter-than-healthy-steps"),
    WrongAnswer("HeartbeatSeconds from the median call", heartbeat_from_median_call,
                "longer than HeartbeatSeconds",
                mistake="heartbeat-shorter-than-a-call"),
    WrongAnswer("HeartbeatSeconds as long as TimeoutSeconds", heartbeat_as_long_as_timeout,
                "must be smaller than TimeoutSeconds",
                mistake="task-refused-by-aws"),
    WrongAnswer("a day, and half a day", a_day_and_half_a_day, "noticed only after",
                mistake="heartbeat-far-too-long"),
    WrongAnswer("fractions of a second", fractional_seconds, "whole number",
                mistake="fractions-of-a-second"),
    WrongAnswer("numbers as text", numbers_as_text, "a str",
                mistake="timer-not-a-number"),
    WrongAnswer("HeartbeatSeconds a third of TimeoutSeconds", heartbeat_a_third_of_timeout,
                "not a share of TimeoutSeconds", public=False,
                mistake="heartbeat-a-share-of-timeout"),
)

SIDE = InstructorSide("04.timeouts", hidden=HIDDEN, reference=choose_timeouts,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS)
