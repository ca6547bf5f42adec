"""``05.burst``: the hidden bursts, the reference sync and both catalogues.

Each known mistake but the last is an answer that follows one of the public harness's
``MISTAKES`` rules, so the catalogue and the diagnosis agree on what it missed. The
last, a tolerance of one replica, only a hidden burst catches (2 replicas, 15 messages:
a ratio of 1.5, yet one replica short).
"""

from __future__ import annotations

import math
from typing import Any

from fleetlab.course.checks.lab05.burst import MISTAKES, Burst
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Burst("90 documents of 2-minute steps (queueLength 6, pods of 6, maxReplicaCount 40)",
          documents=90, queue_length=6, concurrency=6, max_replicas=40, step_seconds=120.0),
    Burst("6 replicas (minReplicaCount 6, maxReplicaCount 10), 32 documents, then 20 more (queueLength 5)",
          documents=32, replicas=6, min_replicas=6, arrivals=((30.0, 20),), max_replicas=10),
    Burst("3 documents on a fleet kept at 2 (minReplicaCount 2, queueLength 5)",
          documents=3, min_replicas=2, max_replicas=10),
    Burst("2 replicas, 15 documents (queueLength 5, pods of 5)", documents=15, replicas=2, max_replicas=10),
)


def reference_desired(current: int, visible: int, in_flight: int, queue_length: int, min_replicas: int,
                      max_replicas: int) -> int:
    """The HPA's sync: count in-flight messages, keep the count inside the band, limit the step, clamp."""
    metric = visible + in_flight
    ratio = metric / (queue_length * current)
    if 0.9 <= ratio <= 1.1:
        proposal = current
    else:
        proposal = math.ceil(metric / queue_length)
    proposal = max(proposal, min_replicas, 1)
    proposal = min(proposal, max_replicas)
    return min(proposal, max(2 * current, 4))


def _tolerance_by_difference(current: int, visible: int, in_flight: int, q: int, low: int, high: int) -> int:
    metric = visible + in_flight
    wanted = current if abs(metric - q * current) <= 0.1 * q * current else -(-metric // q)
    return max(min(wanted, high, max(2 * current, 4)), low, 1)


def _numpy_answer(current: int, visible: int, in_flight: int, q: int, low: int, high: int) -> Any:
    import numpy

    ratio = (visible + in_flight) / (q * current)
    proposal = current if numpy.isclose(ratio, 1, atol=0.1, rtol=0) else numpy.ceil((visible + in_flight) / q)
    return numpy.clip(proposal, max(1, low), min(high, max(2 * current, 4)))


class _Hpa:
    """A learner's class: the settings as attributes, the sync as ``__call__``."""

    tolerance = 0.1

    def __call__(self, current: int, visible: int, in_flight: int, q: int, low: int, high: int) -> int:
        usage = visible + in_flight
        target = math.ceil(usage / q)
        if abs(usage / q / current - 1) <= self.tolerance:
            target = current
        return sorted((max(1, low), target, min(high, max(2 * current, 4))))[1]


RIGHT_ANSWERS = (
    RightAnswer("the band as a difference, integer ceiling division", _tolerance_by_difference),
    RightAnswer("numpy: isclose, ceil and clip (a numpy float back)", _numpy_answer),
    RightAnswer("a callable object", _Hpa()),
)


def _tolerance_of_one_replica(current: int, visible: int, in_flight: int, q: int, low: int, high: int) -> int:
    wanted = math.ceil((visible + in_flight) / q)
    proposal = current if abs(wanted - current) <= 1 else wanted
    return min(max(proposal, low, 1), high, max(2 * current, 4))


def _with_mistake(mistake: str) -> Any:
    """An answer that follows the HPA's rule except where ``MISTAKES`` says ``mistake`` departs from it."""
    rules = dict(MISTAKES)[mistake]
    return lambda current, visible, in_flight, q, low, high: rules.desired(current, visible, in_flight, q, low, high)


def the_librarys_proposal(current, visible, in_flight, queue_length, min_replicas, max_replicas):
    from fleetlab.composition.scaling.hpa import HpaSettings, average_value_proposal, tolerances_for

    proposal = average_value_proposal(visible + in_flight, queue_length, current, tolerances_for(None, HpaSettings()))
    return max(min_replicas, min(max_replicas, proposal.replicas, max(2 * current, 4)))


WRONG_ANSWERS = (
    WrongAnswer("counts only the visible messages", _with_mistake("in-flight"), "in flight", mistake="in-flight"),
    WrongAnswer("no tolerance band", _with_mistake("tolerance"), "inside the tolerance band", mistake="tolerance"),
    WrongAnswer("no scale-up limit", _with_mistake("no-limit"), "(the scale-up limit)", mistake="no-limit"),
    WrongAnswer("+4 pods or +100% per sync", _with_mistake("plus4"), "+4 pods or +100%", mistake="plus4"),
    WrongAnswer("doubling, without the floor of 4", _with_mistake("double"), "never less than 4 replicas",
                mistake="double"),
    WrongAnswer("no maxReplicaCount clamp", _with_mistake("clamp-max"), "maxReplicaCount is 10", mistake="clamp-max"),
    WrongAnswer("rounds the proposal down", _with_mistake("floor"), "round the proposal up", mistake="floor"),
    WrongAnswer("the proposal unrounded", lambda c, v, f, q, low, high: min((v + f) / q, max(2 * c, 4), high),
                "not a whole number", mistake="not-a-whole-number"),
    WrongAnswer("a tolerance of one replica, not of 10% usage", _tolerance_of_one_replica,
                "1.50 is outside 0.9-1.1", public=False, mistake="tolerance-in-replicas"),
    WrongAnswer("a hard-coded queueLength of 5",
                lambda c, v, f, q, low, high: reference_desired(c, v, f, 5, low, high), "the metric is", public=False),
    WrongAnswer("no minReplicaCount clamp", _with_mistake("clamp-min"), "minReplicaCount is 2", public=False,
                mistake="clamp-min"),
    WrongAnswer("the library's HPA proposal", the_librarys_proposal,
                "calls `fleetlab.composition.scaling.hpa.average_value_proposal`"),
)

SIDE = InstructorSide("05.burst", hidden=HIDDEN, reference=reference_desired,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS)
