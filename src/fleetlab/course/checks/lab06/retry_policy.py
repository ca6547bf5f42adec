"""``06.retry_policy``: a retry policy for a detection goal.

``retry_policy(detect_within, alarm_delay, ride_out,
dlq_arn)`` returns a rule target's RetryPolicy and DeadLetterConfig; the
harness puts it on a real target, reads it back, and judges the posture: a
dead target pages someone within the goal, a blip shorter than ``ride_out``
pages nobody.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from fleetlab.backends.resources import Resources
from fleetlab.core.errors import InvalidInput
from fleetlab.course.experiments.replay import COMPLETED_STEPS
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab.course.grading.values import duration
from fleetlab.services.events.retry import CLASSIC_DEFAULT, MIN_AGE_SECONDS, RetryPolicy


@dataclass(frozen=True)
class Goal(Case):
    """Page within ``detect_within`` of a target going down; the DLQ alarm takes ``alarm_delay``; ride out blips."""

    detect_within: int = 300
    alarm_delay: int = 60
    ride_out: int = 30


_TARGET_FIELDS = ("RetryPolicy", "DeadLetterConfig")
_POLICY_FIELDS = ("MaximumRetryAttempts", "MaximumEventAgeInSeconds")


class _Refused(Exception):
    """Settings that are no rule target EventBridge takes: the learner's diagnosis and the mistake's key."""

    def __init__(self, error: InvalidInput, mistake: str) -> None:
        super().__init__(str(error))
        self.outcome = CaseOutcome(False, str(error), mistake)


def _as_target(answer: Any, queue_arn: str) -> dict[str, Any]:
    """The learner's settings as a PutTargets target: nested or flat, numbers made plain ints.

    Raises _Refused when they are no dict, name fields a target does not know, or leave EventBridge's ranges.
    """
    if not isinstance(answer, Mapping):
        raise _Refused(InvalidInput("retry_policy", f"returned {type(answer).__name__}; return a dict such as "
                                                    '{"RetryPolicy": {...}, "DeadLetterConfig": {"Arn": dlq_arn}}'),
                       "not-a-dict")
    unknown = sorted(set(answer) - {*_TARGET_FIELDS, *_POLICY_FIELDS, "Id", "Arn"})
    if unknown:
        raise _Refused(InvalidInput("retry_policy", f"has fields a rule target does not know: {unknown}",
                                    hint=f"use {list(_TARGET_FIELDS)} (or the two RetryPolicy fields at the top)"),
                       "fields-a-target-does-not-know")
    policy = dict(answer.get("RetryPolicy") or {})
    policy.update({key: answer[key] for key in _POLICY_FIELDS if key in answer})
    target: dict[str, Any] = {"Id": "queue", "Arn": queue_arn}
    if policy:
        target["RetryPolicy"] = {key: _plain_int(key, value) for key, value in policy.items()}
        try:
            RetryPolicy.from_target(target)  # EventBridge's ranges, named by field
        except InvalidInput as error:
            raise _Refused(error, _range_mistake(error.field, target["RetryPolicy"].get(error.field))) from error
    if answer.get("DeadLetterConfig"):
        target["DeadLetterConfig"] = dict(answer["DeadLetterConfig"])
    return target


def _range_mistake(field: str, value: Any) -> str:
    """The key of a RetryPolicy value EventBridge refuses: an event age under its one-minute floor (the slip of
    minutes given for seconds) apart from any other value outside its ranges."""
    is_number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if field == "MaximumEventAgeInSeconds" and is_number and value < MIN_AGE_SECONDS:
        return "event-age-under-a-minute"
    return "outside-eventbridge-ranges"


def _plain_int(field: str, value: Any) -> Any:
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and float(value).is_integer():
        return int(value)
    return value


def _stored_target(target: dict[str, Any], made: Resources) -> dict[str, Any]:
    """Put ``target`` on a real rule and read back what EventBridge stored."""
    bus, _ = made.bus("bus")
    made.rule("steps", bus=bus, pattern=COMPLETED_STEPS, targets=[target])
    events = made.backend.client("events")
    return events.list_targets_by_rule(Rule=made.name("steps"), EventBusName=bus)["Targets"][0]


def _judge_posture(stored: Mapping[str, Any], case: Goal, dlq_arn: str) -> CaseOutcome:
    dead_letter = (stored.get("DeadLetterConfig") or {}).get("Arn")
    if not dead_letter:
        return CaseOutcome(False, "with no DeadLetterConfig, events that run out of retries are dropped: nothing "
                                  "reaches the queue your alarm watches, so nobody is paged; set "
                                  'DeadLetterConfig to {"Arn": dlq_arn}', "no-dead-letter-queue")
    if dead_letter != dlq_arn:
        return CaseOutcome(False, f"DeadLetterConfig points at {dead_letter}, not the DLQ you were given "
                                  f"({dlq_arn}), whose alarm pages", "dead-letters-to-another-queue")
    policy = RetryPolicy.from_target(stored)
    is_default = "RetryPolicy" not in stored or policy == CLASSIC_DEFAULT
    default = " (the classic bus's default)" if is_default else ""
    page = policy.gives_up_after + case.alarm_delay
    if page > case.detect_within:
        return CaseOutcome(False, f"with {policy.describe()}{default}, a dead target's first event is retried for "
                                  f"{duration(policy.gives_up_after)} before it reaches the DLQ; with the alarm's "
                                  f"{duration(case.alarm_delay)} that pages someone {duration(page)} after the outage "
                                  f"began, and the goal is {duration(case.detect_within)}",
                           _late_page_mistake(is_default, policy, case))
    if not policy.rides_out(case.ride_out):
        last = (f"the last retry comes {duration(policy.gives_up_after)} after the first failure"
                if policy.attempt_times else "no retry comes at all")
        return CaseOutcome(False, f"with {policy.describe()}, {last}: a {duration(case.ride_out)} blip would send "
                                  "events to the DLQ and page someone for nothing; keep retrying past the blip",
                           "gives-up-within-a-blip" if policy.attempt_times else "never-retries")
    return CaseOutcome(True, f"{policy.describe()}: paged {duration(page)} into an outage, "
                             f"a {duration(case.ride_out)} blip pages nobody")


def _late_page_mistake(is_default: bool, policy: RetryPolicy, case: Goal) -> str:
    """The key of a page that comes after the goal: the classic default kept, retries that fit the goal but leave
    no room for the alarm's delay, or retries that outlast the goal on their own."""
    if is_default:
        return "keeps-the-24-hour-default"
    if policy.gives_up_after <= case.detect_within:
        return "forgets-the-alarm-delay"
    return "retries-past-the-goal"


@register(
    "06.retry_policy",
    title="A retry policy for a detection goal",
    points=2,
    public=[
        Goal("page within 5 min of an outage (the alarm takes 60 s), ride out 30 s blips", 300, 60, 30),
        Goal("page within 2 h (the alarm takes 10 min), ride out 10 min blips", 7_200, 600, 600),
    ],
    hidden_cases=2,
    timeout=10,
    function="retry_policy",
    parameters="detect_within, alarm_delay, ride_out, dlq_arn",
)
def check_retry_policy(answer: Any, case: Goal, ctx: Any) -> CaseOutcome:
    with Resources(ctx.backend, ctx.fresh_prefix()) as made:
        dlq, work = made.queue("target-dlq"), made.queue("work")
        try:
            target = _as_target(answer(case.detect_within, case.alarm_delay, case.ride_out, dlq.arn), work.arn)
            stored = _stored_target(target, made)
        except _Refused as refused:
            return refused.outcome
        except InvalidInput as error:
            return CaseOutcome(False, str(error))
        except (ClientError, BotoCoreError) as error:
            return CaseOutcome(False, f"EventBridge refused the target: {error}")
    return _judge_posture(stored, case, dlq.arn)
