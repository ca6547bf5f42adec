"""``05.bill``: the hidden fleets, the reference bill and both catalogues.

The hidden fleets bring other prices and 20-minute steps, so an answer
fitted to the public fleets does not pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy

from fleetlab.composition.scaling.capacity import DAY
from fleetlab.course.checks.lab05.bill import Fleet
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Fleet("2,000 conversations a minute, 8 steps of 45 s, other prices", 2_000, 8, 45,
          (("sqs", 0.50), ("events", 1.20), ("dynamodb", 0.75))),
    Fleet("12 conversations a minute, 3 steps of 20 min, us-east-1 prices", 12, 3, 1_200),
)


def reference_bill(conversations_per_minute: float, steps: int, step_seconds: float,
                   prices: Mapping[str, float]) -> tuple[float, float]:
    """Little's law for the steps in flight; two SQS requests, one event and one write per step, for a day."""
    steps_per_second = conversations_per_minute * steps / 60
    per_day = steps_per_second * DAY
    dollars = per_day * (2 * prices["sqs"] + prices["events"] + prices["dynamodb"]) / 1_000_000
    return steps_per_second * step_seconds, dollars


def _as_dict(cpm: float, steps: int, seconds: float, prices: Mapping[str, float]) -> dict[str, float]:
    in_flight, dollars = reference_bill(cpm, steps, seconds, prices)
    return {"in_flight_steps": in_flight, "dollars_per_day": dollars}


def _by_line(cpm: float, steps: int, seconds: float, prices: Mapping[str, float]) -> list[Any]:
    per_day = Fraction(str(cpm)) * steps * 1440
    lines = {"sqs": 2 * per_day, "events": per_day, "dynamodb": per_day}
    return [round(cpm * steps / 60 * seconds), round(sum(n * Fraction(str(prices[k])) / 10**6
                                                         for k, n in lines.items()), 2)]


RIGHT_ANSWERS = (
    RightAnswer("a dict naming the two figures", _as_dict),
    RightAnswer("a numpy array", lambda cpm, steps, seconds, prices: numpy.array(reference_bill(cpm, steps, seconds,
                                                                                                   prices))),
    RightAnswer("fractions, a list, the bill to the cent and whole steps", _by_line),
)


def _slip(name: str) -> Any:
    """An answer that makes the slip ``name`` of the public harness's ``slips``, in a learner's own arithmetic."""

    def answer(cpm: float, steps: int, seconds: float, prices: Mapping[str, float]) -> tuple[float, float]:
        def bill(sqs: float = 2, events: float = 1, dynamodb: float = 1, day: float = cpm * steps * 1440) -> float:
            return day * (sqs * prices["sqs"] + events * prices["events"] + dynamodb * prices["dynamodb"]) / 1e6

        in_flight = cpm * steps / 60 * seconds
        return {
            "counts-conversations-not-steps": (cpm / 60 * seconds, bill(day=cpm * 1440)),
            "steps-per-minute-times-seconds": (cpm * steps * seconds, bill()),
            "bills-an-hour-not-a-day": (in_flight, bill(day=cpm * steps * 60)),
            "one-sqs-request-per-step": (in_flight, bill(sqs=1)),
            "events-billed-per-request": (in_flight, bill(events=0.1)),
            "no-idempotency-write": (in_flight, bill(dynamodb=0)),
            "prices-read-per-call": (in_flight, bill() * 1e6),
        }[name]

    return answer


def the_librarys_bill(conversations_per_minute, steps, step_seconds, prices):
    from fleetlab.composition.scaling.capacity import capacity, daily_bill

    fleet = capacity(conversations_per_minute, steps, step_seconds)
    return fleet.in_flight_steps, sum(daily_bill(fleet, prices).values())


WRONG_ANSWERS = (
    WrongAnswer("per conversation, not per step", _slip("counts-conversations-not-steps"),
                "grow with steps, not users", mistake="counts-conversations-not-steps"),
    WrongAnswer("steps per minute x step seconds", _slip("steps-per-minute-times-seconds"), "60 times too many",
                mistake="steps-per-minute-times-seconds"),
    WrongAnswer("a bill for an hour", _slip("bills-an-hour-not-a-day"), "your bill covers an hour",
                mistake="bills-an-hour-not-a-day"),
    WrongAnswer("one SQS request per step", _slip("one-sqs-request-per-step"), "two SQS requests",
                mistake="one-sqs-request-per-step"),
    WrongAnswer("PutEvents billed per request", _slip("events-billed-per-request"),
                "10 entries in one PutEvents are 10 events", mistake="events-billed-per-request"),
    WrongAnswer("no idempotency write", _slip("no-idempotency-write"), "one idempotency write",
                mistake="no-idempotency-write"),
    WrongAnswer("prices per call", _slip("prices-read-per-call"), "not per call", mistake="prices-read-per-call"),
    WrongAnswer("the bill only", lambda cpm, steps, seconds, prices: 26.19, "return two numbers",
                mistake="not-two-numbers"),
    WrongAnswer("the seed's fleet, hard-coded", lambda cpm, steps, seconds, prices: (11_250, 26.19),
                "steps in flight"),
    WrongAnswer("the library's capacity and daily_bill", the_librarys_bill,
                "calls `fleetlab.composition.scaling.capacity.capacity`"),
)

SIDE = InstructorSide("05.bill", hidden=HIDDEN, reference=reference_bill,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS)
