"""``06.retry_policy``: the hidden goals, the reference policy and both catalogues.

The hidden goals change the alarm's delay and the blips to ride out, so an
answer that copies a fixed policy does not pass.
"""

from __future__ import annotations

from typing import Any

import numpy

from fleetlab.course.checks.lab06.retry_policy import Goal
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Goal("page within 15 min (the alarm takes 2 min), ride out 2 min blips", 900, 120, 120),
    Goal("page within 1 h (the alarm takes 60 s), ride out 20 min blips", 3_600, 60, 1_200),
)


def reference_retry_policy(detect_within: float, alarm_delay: float, ride_out: float, dlq_arn: str) -> dict[str, Any]:
    """Retry for as long as the goal leaves after the alarm's delay, as often as EventBridge allows; a DLQ."""
    return {
        "RetryPolicy": {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": int(detect_within - alarm_delay)},
        "DeadLetterConfig": {"Arn": dlq_arn},
    }


def _policy_answer(attempts: int, age: int, *, dead_letter: bool = True) -> Any:
    def answer(detect_within: float, alarm_delay: float, ride_out: float, dlq_arn: str) -> dict[str, Any]:
        chosen: dict[str, Any] = {"RetryPolicy": {"MaximumRetryAttempts": attempts, "MaximumEventAgeInSeconds": age}}
        if dead_letter:
            chosen["DeadLetterConfig"] = {"Arn": dlq_arn}
        return chosen

    return answer


RIGHT_ANSWERS = (
    RightAnswer("the RetryPolicy fields at the top", lambda goal, alarm, blip, dlq: {
        "MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": goal - alarm, "DeadLetterConfig": {"Arn": dlq}}),
    RightAnswer("a whole PutTargets target, Id and Arn included", lambda goal, alarm, blip, dlq: {
        "Id": "billing", "Arn": "arn:aws:sqs:us-east-1:123456789012:billing",
        **reference_retry_policy(goal, alarm, blip, dlq)}),
    RightAnswer("24 attempts within the goal", lambda goal, alarm, blip, dlq: {
        "RetryPolicy": {"MaximumRetryAttempts": 24, "MaximumEventAgeInSeconds": goal - alarm},
        "DeadLetterConfig": {"Arn": dlq}}),
    RightAnswer("numbers as floats", lambda goal, alarm, blip, dlq: {
        "RetryPolicy": {"MaximumRetryAttempts": 185.0, "MaximumEventAgeInSeconds": float(goal - alarm)},
        "DeadLetterConfig": {"Arn": dlq}}),
    RightAnswer("numpy integers", lambda goal, alarm, blip, dlq: {
        "RetryPolicy": {"MaximumRetryAttempts": numpy.int64(185), "MaximumEventAgeInSeconds": numpy.int64(goal - alarm)},
        "DeadLetterConfig": {"Arn": dlq}}),
)

WRONG_ANSWERS = (
    WrongAnswer("the classic 24 h default", _policy_answer(185, 86_400), "the goal is 5 min",
                mistake="keeps-the-24-hour-default"),
    WrongAnswer("no dead-letter queue", lambda goal, alarm, blip, dlq: {
        "RetryPolicy": {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": goal - alarm}}, "nobody is paged",
        mistake="no-dead-letter-queue"),
    WrongAnswer("forgets the alarm's delay", lambda goal, alarm, blip, dlq: {
        "RetryPolicy": {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": goal},
        "DeadLetterConfig": {"Arn": dlq}}, "the goal is 2 h", mistake="forgets-the-alarm-delay"),
    WrongAnswer("the EventsV2 default (5 attempts / 5 min)", _policy_answer(5, 300), "blip",
                mistake="gives-up-within-a-blip"),
    WrongAnswer("no retries at all", _policy_answer(0, 60), "blip", mistake="never-retries"),
    WrongAnswer("minutes, not seconds", lambda goal, alarm, blip, dlq: {
        "RetryPolicy": {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": (goal - alarm) // 60},
        "DeadLetterConfig": {"Arn": dlq}}, "60", mistake="event-age-under-a-minute"),
    WrongAnswer("the 1 h policy of the guide, whatever the goal", _policy_answer(24, 3_600), "the goal is 5 min",
                mistake="retries-past-the-goal"),
)

SIDE = InstructorSide("06.retry_policy", hidden=HIDDEN, reference=reference_retry_policy,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS)
