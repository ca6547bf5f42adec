"""Check ``05.bill``: ``fleet_bill(conversations_per_minute, steps, step_seconds, prices)``
returns ``(in_flight_steps, dollars_per_day)`` for a fleet: the steps in flight
at once (Little's law: steps per second x step time) and the day's bill for
the calls every step makes (one SQS receive and one delete, one completion
event, one idempotency write), at ``prices`` in US dollars per million.

Pure arithmetic, checked against ``scaling.capacity`` within 1% (or a cent,
or one step). A wrong figure is explained by the slip it matches: counting
conversations instead of steps, a day of minutes, one SQS call per step,
PutEvents billed per request, a price per call.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from fleetlab.composition.scaling.capacity import capacity, daily_bill
from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading.registry import Case, CaseOutcome, register

US_EAST_1 = (("sqs", 0.40), ("events", 1.00), ("dynamodb", 0.625))  # the course's price list, per million
RELATIVE = 0.01


@dataclass(frozen=True)
class Fleet(Case):
    """Conversations a minute, steps each, seconds a step, and dollars per million per line."""

    conversations_per_minute: float = 500
    steps: int = 15
    step_seconds: float = 90
    prices: tuple[tuple[str, float], ...] = US_EAST_1

    @property
    def price_list(self) -> dict[str, float]:
        return dict(self.prices)


def expected(case: Fleet) -> tuple[float, float]:
    """(steps in flight, dollars a day) from the library's capacity arithmetic."""
    cap = capacity(case.conversations_per_minute, case.steps, case.step_seconds)
    return cap.in_flight_steps, sum(daily_bill(cap, case.price_list).values())


def slips(case: Fleet) -> dict[str, tuple[float, float]]:
    """What each known slip gives for this fleet: (in flight, dollars a day), by the slip's mistake key."""
    cpm, steps, seconds, p = case.conversations_per_minute, case.steps, case.step_seconds, case.price_list
    per_day = cpm * steps * 1440
    right = expected(case)

    def bill(sqs: float = 2, events: float = 1, dynamodb: float = 1, day: float = per_day) -> float:
        return day * (sqs * p["sqs"] + events * p["events"] + dynamodb * p["dynamodb"]) / 1e6

    return {
        "counts-conversations-not-steps": (cpm / 60 * seconds, bill(day=cpm * 1440)),
        "steps-per-minute-times-seconds": (cpm * steps * seconds, right[1]),
        "bills-an-hour-not-a-day": (right[0], bill(day=cpm * steps * 60)),
        "one-sqs-request-per-step": (right[0], bill(sqs=1)),
        "events-billed-per-request": (right[0], bill(events=0.1)),
        "no-idempotency-write": (right[0], bill(dynamodb=0)),
        "prices-read-per-call": (right[0], bill() * 1e6),
    }


SLIP_WORDS = {
    "counts-conversations-not-steps": "you counted conversations, not steps: every one of the {steps} steps of a "
                                      "conversation is received, deleted, announced and recorded, so the work in "
                                      "flight and the bill grow with steps, not users",
    "steps-per-minute-times-seconds": "steps in flight = steps per second x seconds a step (Little's law); steps per "
                                      "minute x seconds counts 60 times too many",
    "bills-an-hour-not-a-day": "a day is 1,440 minutes (86,400 s): your bill covers an hour",
    "one-sqs-request-per-step": "each step makes two SQS requests, a ReceiveMessage and a DeleteMessage",
    "events-billed-per-request": "EventBridge bills every event, batched or not: 10 entries in one PutEvents are "
                                 "10 events",
    "no-idempotency-write": "each step also makes one idempotency write to DynamoDB",
    "prices-read-per-call": "the prices are dollars per million calls, not per call",
}


def _close(got: float, want: float, absolute: float) -> bool:
    return abs(got - want) <= max(RELATIVE * abs(want), absolute)


MONEY_WORDS = ("dollar", "usd", "bill", "cost", "price", "$")


def _figures(returned: Any) -> tuple[float, float]:
    """(in flight, dollars) from a pair (a tuple, a list, a numpy array), or a dict whose keys name them.

    Raises InvalidInput saying what to return.
    """
    shape = "return two numbers: (in_flight_steps, dollars_per_day)"
    if isinstance(returned, Mapping):
        flight = [v for k, v in returned.items() if "flight" in str(k).lower()]
        money = [v for k, v in returned.items() if any(word in str(k).lower() for word in MONEY_WORDS)]
        if len(flight) != 1 or len(money) != 1:
            raise InvalidInput("fleet_bill", f"returned a dict with keys {sorted(map(str, returned))}", hint=shape)
        pair: Sequence[Any] = (flight[0], money[0])
    elif isinstance(returned, Iterable) and not isinstance(returned, (str, bytes)):
        pair = list(returned)
    else:
        pair = ()
    if len(pair) != 2:
        raise InvalidInput("fleet_bill", f"returned {returned!r}", hint=shape)
    for value in pair:
        if isinstance(value, bool) or not isinstance(value, (numbers.Real, Decimal)) or not math.isfinite(value):
            raise InvalidInput("fleet_bill", f"returned {value!r} in {returned!r}", hint=shape)
    return float(pair[0]), float(pair[1])


@register(
    "05.bill",
    title="Count a fleet's in-flight steps and price its day",
    function="fleet_bill",
    parameters="conversations_per_minute, steps, step_seconds, prices",
    points=2,
    public=[
        Fleet("500 conversations a minute, 15 steps of 90 s, us-east-1 prices", 500, 15, 90),
        Fleet("40 conversations a minute, 60 steps of 5 min, us-east-1 prices", 40, 60, 300),
    ],
    hidden_cases=2,
    timeout=5,
    implemented_by=(
        "fleetlab.composition.scaling.capacity.capacity",
        "fleetlab.composition.scaling.capacity.daily_bill",
    ),
)
def check_bill(answer: Any, case: Fleet, ctx: Any) -> CaseOutcome:
    """Arithmetic only: both figures within 1% (or a cent, or one step) of the capacity arithmetic."""
    try:
        in_flight, dollars = _figures(answer(case.conversations_per_minute, case.steps, case.step_seconds,
                                             case.price_list))
    except InvalidInput as bad:
        return CaseOutcome(False, str(bad), "not-two-numbers")
    want_flight, want_dollars = expected(case)
    flight_ok, dollars_ok = _close(in_flight, want_flight, 1), _close(dollars, want_dollars, 0.01)
    if flight_ok and dollars_ok:
        return CaseOutcome(True, f"{want_flight:,.0f} steps in flight, ${want_dollars:,.2f} a day")
    wrong = []
    if not flight_ok:
        wrong.append(f"{in_flight:,.0f} steps in flight (expected {want_flight:,.0f})")
    if not dollars_ok:
        wrong.append(f"${dollars:,.2f} a day (expected ${want_dollars:,.2f})")
    matched = [name for name, (flight, money) in slips(case).items()
               if _close(in_flight, flight, 1) and _close(dollars, money, 0.01)]
    if not matched:  # a figure no known slip gives: the worked arithmetic, and no mistake named
        return CaseOutcome(False, f"you returned {' and '.join(wrong)}: {_worked(case)}")
    slip = matched[0]
    return CaseOutcome(False, f"you returned {' and '.join(wrong)}: {SLIP_WORDS[slip].format(steps=case.steps)}", slip)


def _worked(case: Fleet) -> str:
    cap = capacity(case.conversations_per_minute, case.steps, case.step_seconds)
    lines = daily_bill(cap, case.price_list)
    return (f"{cap.steps_per_second:,.2f} steps/s x {case.step_seconds:g} s = {cap.in_flight_steps:,.0f} in flight; "
            f"a day of {cap.steps_per_day:,.0f} steps bills SQS ${lines['sqs']:,.2f} (2 requests a step), "
            f"EventBridge ${lines['events']:,.2f} (1 event) and DynamoDB ${lines['dynamodb']:,.2f} (1 write)")
