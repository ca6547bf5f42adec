"""Size a chaos day's fleet for real traffic: which AWS quota binds first at a given step rate, and the day's bill.

The fleet's calls per step come from a day it ran (``calls_per_step``):
what the scoreboard counted, divided by the steps that completed. At
``steps_per_second`` they meet four quotas:

* EventBridge PutEvents requests per second (10,000 in us-east-1, us-west-2
  and eu-west-1; 2,400 in us-east-2, eu-central-1 and eu-south-2; 400 at the
  low end elsewhere; seed 000's quota table);
* SQS messages in flight per standard queue (~120,000; Little's law: the
  step rate on a queue times the step time). A standard queue's call rate
  is effectively unbounded;
* Step Functions SendTaskSuccess (a token bucket refilling at 500/s in the
  big-3 regions, 300/s elsewhere), one call per orchestrated step;
* DynamoDB write request units per second on one on-demand table (40,000 by
  default, adjustable: AWS's DynamoDB quotas page, not the seeds).

The bill prices the same calls for a day with the course's price list
(``fleetlab.composition.cost``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from statistics import fmean

from rich import box
from rich.console import Group
from rich.table import Table

from fleetlab.composition.chaos.calls import DYNAMODB_WRITES
from fleetlab.composition.chaos.scoreboard import Scoreboard
from fleetlab.composition.cost import CallCounts, Estimate, estimate
from fleetlab.composition.scaling.capacity import CALLBACK_REFILL, DAY, IN_FLIGHT_CAP, callback_tier
from fleetlab.core.errors import InvalidInput
from fleetlab.core.rendering import plain_text

PUT_EVENTS_PER_SECOND = {"us-east-1": 10_000, "us-west-2": 10_000, "eu-west-1": 10_000,
                         "us-east-2": 2_400, "eu-central-1": 2_400, "eu-south-2": 2_400}
PUT_EVENTS_ELSEWHERE = 400  # the low end of "400-1,200 rps in most other regions"
DYNAMODB_TABLE_WRITES = 40_000  # write request units per second, one on-demand table, by default


@dataclass(frozen=True)
class QuotaUse:
    """One quota at the sized rate: ``use`` against ``limit`` (both in ``unit``), and what that share means."""

    quota: str
    use: float
    limit: float
    unit: str
    how: str

    @property
    def share(self) -> float:
        return self.use / self.limit


@dataclass(frozen=True)
class Sizing:
    """The fleet at ``steps_per_second``: every quota's use (most used first) and a day's bill."""

    steps_per_second: float
    step_seconds: float
    region: str
    quotas: tuple[QuotaUse, ...]
    bill: Estimate

    @property
    def binds_first(self) -> QuotaUse:
        """The quota with the largest share of its limit."""
        return self.quotas[0]

    def table(self) -> Group:
        """The quotas, most used first, then the day's bill."""
        quotas = Table(title=f"{self.steps_per_second:,.0f} steps a second in {self.region} "
                             f"(steps of {self.step_seconds:,.0f} s)", box=box.SIMPLE_HEAD)
        for column, justify in (("quota", "left"), ("use", "right"), ("limit", "right"), ("share", "right"),
                                ("from", "left")):
            quotas.add_column(column, justify=justify)  # type: ignore[arg-type]
        for row in self.quotas:
            quotas.add_row(row.quota, f"{row.use:,.0f}", f"{row.limit:,.0f} {row.unit}", f"{row.share:.0%}", row.how)
        bill = self.bill.table()
        bill.title = f"a day of it: {self.steps_per_second * DAY:,.0f} steps at list prices"
        return Group(quotas, bill)

    def __str__(self) -> str:
        return plain_text(self.table())


def calls_per_step(board: Scoreboard) -> dict[str, float]:
    """The day's API calls by operation (``service.Operation``) per completed step."""
    completed = max(board.counts.completed, 1)
    return {name: count / completed for name, count in sorted(board.calls_by_operation.items())}


def mean_step_seconds(board: Scoreboard) -> float:
    """The mean seconds of the model call that completed each step (the ``latency_s`` its completion hop
    records): nearly all of a step's time in a worker, and so the step time Little's law needs."""
    latencies = [hop.attrs["latency_s"] for hops in board.traces.values() for hop in hops
                 if hop.name == "completed" and "latency_s" in hop.attrs]
    if not latencies:
        raise InvalidInput("board", "its traces hold no completed step to time")
    return fmean(latencies)


def size_fleet(per_step: Mapping[str, float], steps_per_second: float, *, step_seconds: float, queues: int,
               callbacks_per_step: float = 1.0, region: str = "us-east-1") -> Sizing:
    """The quotas a fleet making ``per_step`` calls per step meets at ``steps_per_second``, spread over
    ``queues`` standard queues, with ``callbacks_per_step`` SendTaskSuccess calls each; and a day's bill.

    Raises InvalidInput naming a rate, time or count that is not positive, or a region without Step Functions.
    """
    for name, value in (("steps_per_second", steps_per_second), ("step_seconds", step_seconds), ("queues", queues)):
        if not value > 0:
            raise InvalidInput(name, f"must be positive, got {value!r}")
    if callbacks_per_step < 0:
        raise InvalidInput("callbacks_per_step", f"must be zero or more, got {callbacks_per_step!r}")
    refill = CALLBACK_REFILL[callback_tier(region)]
    put_events = PUT_EVENTS_PER_SECOND.get(region, PUT_EVENTS_ELSEWHERE)
    writes = sum(n for name, n in per_step.items()
                 if name.startswith("dynamodb.") and name.split(".", 1)[1] in DYNAMODB_WRITES)
    rows = (
        QuotaUse("EventBridge PutEvents", per_step.get("eventbridge.PutEvents", 0.0) * steps_per_second, put_events,
                 "requests/s", f"{per_step.get('eventbridge.PutEvents', 0.0):.2f} requests a step"),
        QuotaUse("SQS messages in flight, per queue", steps_per_second / queues * step_seconds, IN_FLIGHT_CAP,
                 "messages", f"Little's law: {steps_per_second / queues:,.0f}/s x {step_seconds:,.0f} s on each of "
                             f"{queues} queues"),
        QuotaUse("Step Functions SendTaskSuccess", callbacks_per_step * steps_per_second, refill, "calls/s (refill)",
                 f"{callbacks_per_step:g} callback a step"),
        QuotaUse("DynamoDB writes, one table", writes * steps_per_second, DYNAMODB_TABLE_WRITES, "units/s",
                 f"{writes:.2f} writes a step"),
    )
    quotas = tuple(sorted(rows, key=lambda row: row.share, reverse=True))
    return Sizing(steps_per_second, step_seconds, region, quotas, daily_estimate(per_step, steps_per_second))


def daily_estimate(per_step: Mapping[str, float], steps_per_second: float) -> Estimate:
    """A day at ``steps_per_second`` priced from the course's price list: each call per step times the day's
    steps, one EventBridge entry per step."""
    steps = steps_per_second * DAY
    calls = {name: round(n * steps) for name, n in per_step.items()}
    items = {"eventbridge.PutEvents": round(steps)} if "eventbridge.PutEvents" in calls else {}
    return estimate(f"07 at {steps_per_second:,.0f} steps/s", counts=CallCounts(calls=calls, items=items))
