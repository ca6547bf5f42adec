"""Capacity arithmetic for a fleet of agent steps: in-flight work, API calls per second and per day.

The figures and quotas come from the course's source material (seed 000,
"Production realities"):

* Little's law: steps in flight = arrival rate x step time, against the
  ~120,000 in-flight messages a standard queue allows (past it, a short
  poll returns OverLimit and a long poll returns nothing, with no error);
* every step costs one SQS receive and one delete, one completion event
  (PutEvents carries 10 entries a request on a classic bus) and one
  idempotency write (a DynamoDB conditional put);
* a step that closes a Step Functions callback calls SendTaskSuccess once;
  those calls draw on a token bucket refilling at 500/s in us-east-1,
  us-west-2 and eu-west-1, 300/s in every other region that has Step
  Functions (a region botocore does not list is refused).

The seeds give no prices, so cost is counted in calls; ``priced`` turns
calls into money for prices the caller supplies, and ``daily_bill`` prices
a fleet's day per step (``fleetlab.course.experiments.scaling.step_prices``
reads them from the course's dated price list).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from fleetlab.composition.scaling.manifest import ScaledObject, scaled_object
from fleetlab.core.errors import InvalidInput

DAY = 86_400
IN_FLIGHT_CAP = 120_000  # messages received but not deleted, per standard queue
PUT_EVENTS_ENTRIES = 10  # entries per PutEvents request on a classic bus
BIG_THREE = ("us-east-1", "us-west-2", "eu-west-1")
STEP_FUNCTIONS_REGIONS = (
    "af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
    "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5",
    "ap-southeast-6", "ap-southeast-7", "ca-central-1", "ca-west-1", "eu-central-1", "eu-central-2", "eu-north-1",
    "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "me-south-1",
    "mx-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
)
"""The commercial AWS regions with Step Functions, as the pinned botocore lists them (a test keeps the two equal)."""
CALLBACK_REFILL = {"big-3": 500.0, "other": 300.0}  # SendTaskSuccess tokens per second
CALLBACK_BUCKET = {"big-3": 3_000, "other": 1_500}


@dataclass(frozen=True)
class Capacity:
    """The arithmetic for one fleet; every figure is per the whole fleet."""

    conversations_per_minute: float
    steps_per_conversation: int
    step_seconds: float
    region: str
    steps_per_minute: float
    steps_per_second: float
    steps_per_day: float
    sqs_calls_per_second: float
    sqs_calls_per_day: float
    completion_events_per_day: float
    put_events_requests_per_day: float
    idempotency_writes_per_day: float
    in_flight_steps: float
    in_flight_share: float
    callbacks_per_second: float
    callback_refill_per_second: float
    callback_bucket: int
    callback_share: float
    calls_per_step: float

    @property
    def callback_headroom(self) -> float:
        """How many times the callback rate fits in the refill rate."""
        return self.callback_refill_per_second / self.callbacks_per_second if self.callbacks_per_second else math.inf

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["callback_headroom"] = self.callback_headroom
        return data


def capacity(conversations_per_minute: float, steps: int, step_seconds: float, *, region: str = "us-east-1") -> Capacity:
    """The arithmetic for ``conversations_per_minute`` of ``steps`` steps taking ``step_seconds`` each, in ``region``.

    Raises InvalidInput naming a figure that is not positive, or a ``region`` that has no Step Functions.
    """
    if conversations_per_minute <= 0:
        raise InvalidInput("conversations_per_minute", f"must be positive, got {conversations_per_minute}")
    if steps < 1:
        raise InvalidInput("steps", f"must be at least 1, got {steps}")
    if step_seconds <= 0:
        raise InvalidInput("step_seconds", f"must be positive, got {step_seconds}")
    per_minute = conversations_per_minute * steps
    per_second = per_minute / 60
    per_day = per_second * DAY
    in_flight = per_second * step_seconds
    tier = callback_tier(region)
    refill = CALLBACK_REFILL[tier]
    return Capacity(
        conversations_per_minute=conversations_per_minute,
        steps_per_conversation=steps,
        step_seconds=step_seconds,
        region=region,
        steps_per_minute=per_minute,
        steps_per_second=per_second,
        steps_per_day=per_day,
        sqs_calls_per_second=2 * per_second,
        sqs_calls_per_day=2 * per_day,
        completion_events_per_day=per_day,
        put_events_requests_per_day=math.ceil(per_day / PUT_EVENTS_ENTRIES),
        idempotency_writes_per_day=per_day,
        in_flight_steps=in_flight,
        in_flight_share=in_flight / IN_FLIGHT_CAP,
        callbacks_per_second=per_second,
        callback_refill_per_second=refill,
        callback_bucket=CALLBACK_BUCKET[tier],
        callback_share=per_second / refill,
        calls_per_step=2 + 1 / PUT_EVENTS_ENTRIES + 1,
    )


def callback_tier(region: str) -> str:
    """The SendTaskSuccess quota tier of ``region``: ``big-3`` or ``other``.

    Raises InvalidInput naming ``region`` and the regions known (Step Functions' commercial regions).
    """
    if region not in STEP_FUNCTIONS_REGIONS:
        raise InvalidInput("region", f"unknown AWS region {region!r}",
                           hint=f"choose from {', '.join(STEP_FUNCTIONS_REGIONS)}")
    return "big-3" if region in BIG_THREE else "other"


def priced(calls: Mapping[str, float], prices: Mapping[str, float]) -> float:
    """Money for ``calls`` at ``prices`` (same keys, price per call). Raises InvalidInput for a call left unpriced."""
    missing = sorted(set(calls) - set(prices))
    if missing:
        raise InvalidInput(missing[0], "has no price", hint=f"give a price per call for: {', '.join(missing)}")
    return sum(count * prices[name] for name, count in calls.items())


BILLED_PER_STEP = {"sqs": 2, "events": 1, "dynamodb": 1}
"""What one step bills: two SQS requests, one EventBridge event (billed per entry, batched or not), one write."""


def daily_bill(cap: Capacity, prices: Mapping[str, float]) -> dict[str, float]:
    """US dollars a day, by line (``sqs``, ``events``, ``dynamodb``), at ``prices`` in dollars per million.

    Raises InvalidInput naming a line ``prices`` leaves out.
    """
    per_million = {line: count * cap.steps_per_day / 1e6 for line, count in BILLED_PER_STEP.items()}
    return {line: per_million[line] * price for line, price in _prices_for(prices).items()}


def _prices_for(prices: Mapping[str, float]) -> dict[str, float]:
    missing = sorted(set(BILLED_PER_STEP) - set(prices))
    if missing:
        raise InvalidInput(missing[0], "has no price", hint="give dollars per million for sqs, events and dynamodb")
    return {line: float(prices[line]) for line in BILLED_PER_STEP}


def fleet_scaled_object(cap: Capacity, *, pod_concurrency: int, headroom: float = 1.2, min_replicas: int = 2,
                        queue_url: str = "https://sqs.us-east-1.amazonaws.com/111122223333/agent-steps",
                        name: str = "agent-worker") -> ScaledObject:
    """A ScaledObject sized by Little's law: queueLength = what one pod works at once, max = in flight x headroom / that."""
    if pod_concurrency < 1:
        raise InvalidInput("pod_concurrency", f"must be at least 1, got {pod_concurrency}")
    if headroom < 1:
        raise InvalidInput("headroom", f"must be at least 1, got {headroom}")
    most = max(min_replicas, math.ceil(cap.in_flight_steps * headroom / pod_concurrency), 1)
    return scaled_object(name, queue_url, region=cap.region, queue_length=pod_concurrency,
                         min_replica_count=min_replicas, max_replica_count=most)
