"""Composition: the services wired into the reference fleet, and what a notebook takes from it.

``topology`` (the reference topology and throwaway experiment resources),
``pipeline`` (the fleet), ``requests`` (request and response over queues),
``scaling`` (KEDA, the HPA and the fleet model), ``admission`` (the dispatcher
that takes work only when the token governor can pay for it), ``concurrency``
(AIMD), ``cost`` and ``chaos`` (the chaos day: a fleet configuration, a seeded
schedule of faults, and the scoreboard of invariants and budgets). The names below are the public surface a lab imports.
"""

from fleetlab.composition.admission import Dispatcher
from fleetlab.composition.chaos import (
    INVARIANTS,
    Budgets,
    ChaosSchedule,
    Counts,
    DayFacts,
    DaySample,
    FleetConfig,
    QuotaUse,
    Result,
    Scoreboard,
    Sizing,
    calls_per_step,
    mean_step_seconds,
    run_chaos_day,
    size_fleet,
)
from fleetlab.composition.concurrency import AdaptiveConcurrency
from fleetlab.composition.pipeline import Fleet
from fleetlab.composition.requests import (
    AgentRunner,
    Reply,
    RequestHandler,
    RequestQueues,
    RequestReply,
    RequestStatus,
    ResponseHandler,
    request_queues,
)
from fleetlab.composition.scaling import QueueAttributes, parse_scaled_object, scaled_object, size
from fleetlab.composition.scaling.capacity import IN_FLIGHT_CAP, capacity, daily_bill, fleet_scaled_object
from fleetlab.composition.scaling.simulator import Pods, Workload, simulate
from fleetlab.composition.scaling.tradeoff import latency_and_cost
from fleetlab.composition.topology import (
    AgentClass,
    TopologySpec,
    add_unrouted,
    experiment_queue,
    experiment_table,
    new_prefix,
    visibility_for,
)

__all__ = [
    "INVARIANTS",
    "IN_FLIGHT_CAP",
    "AdaptiveConcurrency",
    "AgentClass",
    "AgentRunner",
    "Budgets",
    "ChaosSchedule",
    "Counts",
    "DayFacts",
    "DaySample",
    "Dispatcher",
    "Fleet",
    "FleetConfig",
    "Pods",
    "QuotaUse",
    "QueueAttributes",
    "Reply",
    "RequestHandler",
    "RequestQueues",
    "RequestReply",
    "RequestStatus",
    "ResponseHandler",
    "Result",
    "Scoreboard",
    "Sizing",
    "TopologySpec",
    "Workload",
    "add_unrouted",
    "calls_per_step",
    "capacity",
    "daily_bill",
    "experiment_queue",
    "experiment_table",
    "fleet_scaled_object",
    "latency_and_cost",
    "mean_step_seconds",
    "new_prefix",
    "parse_scaled_object",
    "request_queues",
    "run_chaos_day",
    "scaled_object",
    "simulate",
    "size",
    "size_fleet",
    "visibility_for",
]
