"""Design arithmetic for the token loop: Standard or Express, and the callback APIs' headroom.

Express workflows stop at 300 s and cannot wait for a task token at all;
Standard runs for up to a year and bills per state transition. The sum that
decides is the worst case, not the average: ``chain_steps x p95_step x
retry_safety`` against 300 s.

SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat each have their own
token bucket per account and region: 3,000 requests of burst refilled at
500/s in us-east-1, us-west-2 and eu-west-1, 1,500 refilled at 300/s
elsewhere. Success calls scale with steps finished per second; heartbeat
calls scale with steps *in flight* (Little's law: arrival rate x step time)
divided by the heartbeat interval.

Prices come from the dated price file the real-AWS cost estimate uses
(``aws/data/prices-us-east-1.json``: list prices, free tiers left out); pass
your own where they differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fleetlab.backends.prices import load_prices
from fleetlab.core.errors import InvalidInput

EXPRESS_MAX_SECONDS = 300
CALLBACK_BUCKETS = {"us-east-1, us-west-2, eu-west-1": (3_000, 500.0), "other regions": (1_500, 300.0)}
"""Per region group: (burst, refill per second) of each SendTask* API."""


@dataclass(frozen=True)
class WorkflowChoice:
    """Worst-case duration of a chain against Express's limit, and what one execution costs on each."""

    worst_case_seconds: float
    transitions: float
    standard_price: float
    express_price: float

    @property
    def fits_express(self) -> bool:
        return self.worst_case_seconds <= EXPRESS_MAX_SECONDS

    @property
    def verdict(self) -> str:
        if not self.fits_express:
            return (f"Standard: the worst case ({self.worst_case_seconds:,.0f} s) is over Express's "
                    f"{EXPRESS_MAX_SECONDS} s limit")
        return (f"Express fits ({self.worst_case_seconds:,.0f} s of {EXPRESS_MAX_SECONDS} s), "
                "but only without callback tasks: Express cannot wait for a task token")


def list_price(counts: str) -> float:
    """US$ per unit of the Step Functions line of the price file that ``counts`` this
    (``transitions``, ``express_requests``, ``express_gb_seconds``)."""
    rule = next(r for r in load_prices()["prices"] if r["service"] == "sfn" and r["counts"] == counts)
    return rule["usd_per_million"] / 1e6


def state_transitions(chain_steps: int, *, retries_per_step: float = 0.0, states_per_step: int = 1) -> float:
    """State transitions of one execution: each state entered counts once, each retry once more, plus the end."""
    _positive("chain_steps", chain_steps)
    if retries_per_step < 0:
        raise InvalidInput("retries_per_step", f"must be 0 or more, got {retries_per_step}")
    return chain_steps * states_per_step * (1 + retries_per_step) + 1


def choose_workflow(
    chain_steps: int,
    p95_step_seconds: float,
    retry_safety: float,
    *,
    retries_per_step: float = 0.0,
    memory_mb: int = 64,
    prices: dict[str, float] | None = None,
) -> WorkflowChoice:
    """Standard or Express for a chain of ``chain_steps`` steps. Raises InvalidInput naming a bad field.

    Express bills the execution's duration (the worst case here) in 64 MB
    steps of memory; Standard bills each state transition. ``prices`` maps
    ``transitions``, ``express_requests``, ``express_gb_seconds`` to US$ per
    unit; by default the price file's.
    """
    _positive("chain_steps", chain_steps)
    _positive("p95_step_seconds", p95_step_seconds)
    if retry_safety < 1:
        raise InvalidInput("retry_safety", f"must be at least 1 (no retries), got {retry_safety}")
    worst = chain_steps * p95_step_seconds * retry_safety
    transitions = state_transitions(chain_steps, retries_per_step=retries_per_step)
    billed_gb = math.ceil(max(memory_mb, 64) / 64) * 64 / 1024
    price = prices or {counts: list_price(counts) for counts in ("transitions", "express_requests", "express_gb_seconds")}
    return WorkflowChoice(
        worst_case_seconds=worst,
        transitions=transitions,
        standard_price=transitions * price["transitions"],
        express_price=price["express_requests"] + worst * billed_gb * price["express_gb_seconds"],
    )


@dataclass(frozen=True)
class ApiLoad:
    """One callback API: calls per second against its bucket's refill rate."""

    api: str
    rate: float
    refill: float

    @property
    def headroom(self) -> float:
        """Refill over demand: 4.0 means the fleet can grow 4x before this API throttles."""
        return math.inf if self.rate == 0 else self.refill / self.rate


def callback_load(
    steps_per_second: float,
    *,
    step_seconds: float,
    heartbeat_every: float | None,
    region: str = "us-east-1, us-west-2, eu-west-1",
) -> list[ApiLoad]:
    """SendTaskSuccess and SendTaskHeartbeat rates of a fleet, each against its refill rate.

    Heartbeats: steps in flight (``steps_per_second x step_seconds``) each
    beat once per ``heartbeat_every`` seconds. Raises InvalidInput naming a bad field.
    """
    if steps_per_second < 0:
        raise InvalidInput("steps_per_second", f"must be 0 or more, got {steps_per_second}")
    _positive("step_seconds", step_seconds)
    if heartbeat_every is not None:
        _positive("heartbeat_every", heartbeat_every)
    if region not in CALLBACK_BUCKETS:
        raise InvalidInput("region", f"{region!r} is not a region group", hint=f"one of {list(CALLBACK_BUCKETS)}")
    refill = CALLBACK_BUCKETS[region][1]
    in_flight = steps_per_second * step_seconds
    beats = in_flight / heartbeat_every if heartbeat_every else 0.0
    return [ApiLoad("SendTaskSuccess", steps_per_second, refill), ApiLoad("SendTaskHeartbeat", beats, refill)]


def _positive(field: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise InvalidInput(field, f"must be a positive number, got {value!r}")
