"""Turn the knobs, see latency and cost: one simulator run per setting, small enough for a slider.

``latency_and_cost`` builds a ScaledObject from the knobs (queueLength,
min/max replicas), runs the fleet simulator on steady arrivals (plus an
optional burst) with pods of a fixed concurrency, and reports the step
latency the work saw and what the fleet cost: pod-hours and API calls, and
money when the caller gives prices (the course's sources give none).
A queueLength above what a pod works at once under-provisions (latency
grows); below it over-provisions (pods idle, empty polls cost calls).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fleetlab.composition.scaling.capacity import priced
from fleetlab.composition.scaling.manifest import scaled_object
from fleetlab.composition.scaling.simulator import FleetRun, Pods, Workload, simulate


@dataclass(frozen=True)
class TradeOff:
    """Latency and cost of one setting over the simulated window."""

    p50_latency: float
    p95_latency: float
    max_latency: float
    peak_age_of_oldest: float
    peak_replicas: int
    mean_replicas: float
    pod_hours: float
    api_calls: dict[str, float]
    steps_completed: int
    calls_per_step: float
    cost: float | None = None
    run: FleetRun | None = field(default=None, compare=False, repr=False)


def latency_and_cost(queue_length: int = 5, step_seconds: float = 90.0, arrivals_per_minute: float = 60.0,
                     min_replicas: int = 0, max_replicas: int = 100, *, concurrency: int = 5, minutes: float = 60.0,
                     burst: int = 0, burst_at: float = 600.0, prices: Mapping[str, float] | None = None,
                     dt: float = 1.0) -> TradeOff:
    """Simulate ``minutes`` of one-step work arriving at ``arrivals_per_minute`` (plus ``burst`` at ``burst_at`` s).

    Raises InvalidInput (naming the knob) for a setting KEDA or the model refuses.
    """
    scaled = scaled_object("tradeoff", "https://sqs.us-east-1.amazonaws.com/111122223333/tradeoff",
                           queue_length=queue_length, min_replica_count=min_replicas,
                           max_replica_count=max_replicas)
    workload = Workload(arrivals_per_minute, 1, bursts=((burst_at, burst),) if burst else ())
    seconds = minutes * 60
    run = simulate(scaled, workload, Pods(step_seconds=step_seconds, concurrency=concurrency), seconds=seconds,
                   dt=dt, replicas=min_replicas)
    calls = run.api_calls()
    steps = run.steps_completed
    return TradeOff(
        p50_latency=run.latency(0.5),
        p95_latency=run.latency(0.95),
        max_latency=run.latency(1.0),
        peak_age_of_oldest=run.peak_age,
        peak_replicas=run.peak_replicas,
        mean_replicas=run.pod_seconds / seconds,
        pod_hours=run.pod_seconds / 3600,
        api_calls=calls,
        steps_completed=steps,
        calls_per_step=sum(calls.values()) / steps if steps else 0.0,
        cost=priced({**calls, "pod_hour": run.pod_seconds / 3600}, prices) if prices is not None else None,
        run=run,
    )
