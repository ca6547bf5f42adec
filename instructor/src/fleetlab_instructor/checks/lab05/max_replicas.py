"""``05.max_replicas``: the hidden quotas, the reference cap and both catalogues."""

from __future__ import annotations

import math

import numpy

from fleetlab.course.checks.lab05.max_replicas import Quota
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Quota("600 calls at once, 100 kept for chat, pods of 5", 600, 100, 5),
    Quota("240 calls at once, 20 kept for evaluations, pods of 12", 240, 20, 12),
)


def reference_max_replicas(quota: int, reserved: int, pod_concurrency: int) -> int:
    """Whole pods that fit in what the quota leaves."""
    return (quota - reserved) // pod_concurrency


RIGHT_ANSWERS = (
    RightAnswer("math.floor of the division", lambda quota, reserved, c: math.floor((quota - reserved) / c)),
    RightAnswer("int() of the division", lambda quota, reserved, c: int((quota - reserved) / c)),
    RightAnswer("numpy's floor_divide", lambda quota, reserved, c: numpy.floor_divide(quota - reserved, c)),
    RightAnswer("the largest pod count that fits, counted",
                lambda quota, reserved, c: max(n for n in range(1, quota + 1) if n * c <= quota - reserved)),
)

WRONG_ANSWERS = (
    WrongAnswer("ignores the reserved calls", lambda quota, reserved, c: quota // c, "were throttled",
                mistake="pods-past-the-quota"),
    WrongAnswer("rounds up", lambda quota, reserved, c: math.ceil((quota - reserved) / c), "were throttled",
                mistake="pods-past-the-quota"),
    WrongAnswer("rounds to the nearest", lambda quota, reserved, c: round((quota - reserved) / c), "were throttled",
                mistake="pods-past-the-quota"),
    WrongAnswer("the free calls as pods", lambda quota, reserved, c: quota - reserved, "were throttled",
                mistake="pods-past-the-quota"),
    WrongAnswer("not rounded", lambda quota, reserved, c: (quota - reserved) / c, "not a whole number",
                mistake="not-a-replica-count"),
    WrongAnswer("subtracts the reserved calls after dividing", lambda quota, reserved, c: quota // c - reserved,
                "maxReplicaCount", mistake="not-a-replica-count"),
    WrongAnswer("one pod short, for headroom", lambda quota, reserved, c: (quota - reserved) // c - 1,
                "one more pod still fits", mistake="calls-left-idle"),
    WrongAnswer("a hard-coded 51", lambda quota, reserved, c: 51, "lie idle", mistake="calls-left-idle"),
    WrongAnswer("ten pods short, for a lot of headroom", lambda quota, reserved, c: (quota - reserved) // c - 10,
                "10 more pods still fit", mistake="calls-left-idle"),
)

SHARED_MISTAKES = {
    "pods-past-the-quota": "more pods than the free calls hold (the reserved calls ignored, or the division rounded up)",
    "calls-left-idle": "fewer pods than the free calls hold: calls lie idle while documents wait",
    "not-a-replica-count": "a cap KEDA refuses (not a whole, positive number of replicas)",
}

SIDE = InstructorSide("05.max_replicas", hidden=HIDDEN, reference=reference_max_replicas,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS, shared_mistakes=SHARED_MISTAKES)
