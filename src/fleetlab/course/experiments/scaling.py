"""What lab 05 runs and its checks grade: bursts on real queues, and the fleet model where queues cannot go.

* ``burst``: documents land on a fresh queue and the small real loop
  (``scaling.realloop``) works them: KEDA and the HPA read the real queue,
  simulated pods receive and delete its real messages, the effects ledger
  counts every document.
* ``trickle``: a night of test traffic on the fleet model, to weigh
  ``activationQueueLength`` (pods kept warm against the oldest message's age).
* ``capped``: a fleet under a provider's concurrency quota, on the fleet
  model: pods past the quota turn queue pressure into throttled calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.backends.prices import load_prices
from fleetlab.composition.scaling.manifest import ScaledObject, scaled_object
from fleetlab.composition.scaling.realloop import RealLoopRun, run_real_loop
from fleetlab.composition.scaling.simulator import FleetRun, Pods, Workload, simulate
from fleetlab.composition.topology import experiment_queue, new_prefix

MODEL_QUEUE = "https://sqs.us-east-1.amazonaws.com/111122223333/agent-documents"
"""The queue URL the fleet-model runs name (the model reads no queue)."""


def burst(backend: Backend, scaled: ScaledObject, documents: int, *, step_seconds: float = 90.0,
          concurrency: int = 5, visibility_timeout: int = 300, arrivals: Sequence[tuple[float, int]] = (),
          prefix: str | None = None, **loop: Any) -> RealLoopRun:
    """``documents`` land at once on a fresh queue (plus ``arrivals``: (seconds, documents)); the real loop works them.

    ``scaled`` is pointed at the fresh queue; ``loop`` goes to
    ``run_real_loop`` (``tick``, ``max_seconds``, ``scale_down``,
    ``replicas``, ``hpa_step``, ``settings``). The queue is deleted afterwards.
    Raises InvalidInput for a step not shorter than the visibility timeout.
    """
    with experiment_queue(backend, prefix or new_prefix("05"), visibility_timeout=visibility_timeout) as queue:
        on_queue = scaled.with_trigger(queue_url=queue.url)
        landing = [(0.0, documents)] if documents else []
        return run_real_loop(backend, queue.url, on_queue, arrivals=[*landing, *arrivals],
                             step_seconds=step_seconds, concurrency=concurrency, **loop)


def trickle(activation_queue_length: int, *, hours: float = 8.0, every_minutes: float = 20.0,
            step_seconds: float = 90.0, startup_seconds: float = 120.0, queue_length: int = 5) -> FleetRun:
    """A night of one test document every ``every_minutes`` on a fleet that may sleep (minReplicaCount 0)."""
    scaled = scaled_object("night", MODEL_QUEUE, queue_length=queue_length,
                           activation_queue_length=activation_queue_length)
    workload = Workload(conversations_per_minute=1 / every_minutes)
    pods = Pods(step_seconds=step_seconds, concurrency=queue_length, startup_seconds=startup_seconds)
    return simulate(scaled, workload, pods, seconds=hours * 3600, sample_every=60)


def capped(max_replicas: int, provider_concurrency: int, *, documents: int = 3_000, concurrency: int = 6,
           step_seconds: float = 90.0, minutes: float = 30.0) -> FleetRun:
    """A burst of ``documents`` on a fleet whose pods share ``provider_concurrency`` model calls at once.

    queueLength is the pods' concurrency; each step holds one model call.
    """
    scaled = scaled_object("capped", MODEL_QUEUE, queue_length=concurrency, max_replica_count=max_replicas)
    pods = Pods(step_seconds=step_seconds, concurrency=concurrency, provider_concurrency=provider_concurrency)
    return simulate(scaled, Workload(bursts=((0.0, documents),)), pods, seconds=minutes * 60)


def step_prices() -> dict[str, float]:
    """Dollars per million from the course's dated price list: SQS requests, EventBridge events, DynamoDB writes."""
    rules = load_prices()["prices"]

    def rule(service: str, operation: str) -> float:
        return next(r["usd_per_million"] for r in rules if r["service"] == service and operation in r["operations"])

    return {"sqs": rule("sqs", "*"), "events": rule("eventbridge", "PutEvents"),
            "dynamodb": rule("dynamodb", "PutItem")}
