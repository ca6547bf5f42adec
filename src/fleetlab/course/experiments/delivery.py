"""Lab 01's experiments: workers racing for the same messages on a real queue.

Each experiment works on a queue it is given (usually a throwaway one from
``topology.experiment_queue``), sends one message per alert, lets workers
race for them on the backend's clock, and returns what happened: the effects
ledger and the trace of every hop.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.composition.topology import WorkQueue
from fleetlab.core.ledger import EffectsLedger
from fleetlab.core.tracing import Tracer
from fleetlab.services.events.envelope import Envelope
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.worker import HandleOutcome, QueueWorker


class RaceOver(Exception):
    """Raised inside a step the race no longer needs: its ``stop_when`` held before the step was done."""


@dataclass
class Race:
    """What a race produced: effects, hops and every handling outcome."""

    ledger: EffectsLedger = field(default_factory=EffectsLedger)
    tracer: Tracer = field(default_factory=Tracer)
    outcomes: list[HandleOutcome] = field(default_factory=list)

    def tickets(self, alert: str) -> int:
        return self.ledger.count(alert)


def send_alerts(
    backend: Backend,
    queue: WorkQueue,
    alerts: list[str],
    *,
    conversation_of: Callable[[str], tuple[str, int]] | None = None,
) -> None:
    """Put one step message per alert on ``queue`` (bodies are envelope details).

    ``conversation_of(alert)`` gives the alert's (conversation_id, step);
    by default each alert is step 1 of a conversation of its own.
    """
    sqs = backend.client("sqs")
    for alert in alerts:
        conversation, step = conversation_of(alert) if conversation_of else (alert, 1)
        body = Envelope(trace_id=alert, conversation_id=conversation, step=step, agent_class="alerts").detail()
        sqs.send_message(QueueUrl=queue.url, MessageBody=json.dumps(body))


def race(
    backend: Backend,
    queue: WorkQueue,
    step_seconds: Mapping[str, float],
    *,
    workers: int = 2,
    heartbeat: Callable[..., Any] | None = None,
    heartbeat_every: float | None = None,
    poll_interval: float | None = None,
    stop_when: Callable[[Race], bool] | None = None,
) -> Race:
    """``workers`` healthy workers share ``queue``; the step of each alert takes ``step_seconds[alert]``.

    Each step files one ticket (its side effect) and the worker deletes the
    message afterwards. ``heartbeat_every`` turns on the worker's own
    visibility heartbeat; ``heartbeat(sqs, queue_url, receipt_handle,
    visibility_timeout, clock)`` instead wraps each step in a learner's
    heartbeat context manager. Runs until every alert's message is deleted,
    or until ``stop_when(race so far)`` holds: then the steps still running
    end at once (RaceOver inside each, a ``failed`` hop) and nothing more
    is received, so a race is only as long as its verdict needs.
    """
    result = Race()
    send_alerts(backend, queue, list(step_seconds))
    sqs = backend.client("sqs")
    interval = poll_interval or max(queue.visibility_timeout / 30, 1.0)

    def over() -> bool:
        return stop_when is not None and stop_when(result)

    def spend(seconds: float) -> None:
        if stop_when is None:
            backend.clock.sleep(seconds)
            return
        end = backend.clock.now() + seconds
        while (left := end - backend.clock.now()) > 0:
            if over():
                raise RaceOver("the race had its answer before this step was done")
            backend.clock.sleep(min(left, interval))

    def step(delivery: Delivery) -> str:
        if heartbeat is None:
            spend(step_seconds[delivery.trace_id])
        else:
            with heartbeat(sqs, queue.url, delivery.receipt_handle, queue.visibility_timeout, backend.clock):
                spend(step_seconds[delivery.trace_id])
        delivery.record_effect(kind="ticket")
        return "filed"

    def finished() -> bool:
        return all(any(h.name == "deleted" for h in result.tracer.timeline(a)) for a in step_seconds) or over()

    team = [
        QueueWorker(
            backend, queue.url, step, name=f"worker-{n}", ledger=result.ledger, tracer=result.tracer,
            heartbeat_every=heartbeat_every, visibility_timeout=queue.visibility_timeout if heartbeat_every else None,
        )
        for n in range(1, workers + 1)
    ]
    horizon = 2 * sum(step_seconds.values()) + 4 * queue.visibility_timeout
    runs = backend.clock.run_together(
        *(lambda w=w: w.run_for(horizon, poll_interval=interval, stop_when=finished) for w in team)
    )
    result.outcomes = [outcome for run in runs for outcome in run]
    return result


def first_duplicate_story(result: Race, alert: str) -> str:
    """One sentence on how ``alert`` came to take effect twice, from its hops."""
    hops = result.tracer.timeline(alert)
    receives = [h for h in hops if h.name == "received"]
    if len(receives) < 2:
        return f"{alert} filed {result.tickets(alert)} ticket(s)"
    first, second = receives[0], receives[1]
    return (
        f"{alert} filed {result.tickets(alert)} tickets: receive {second.attrs.get('receive')} "
        f"by {second.component} came {second.at - first.at:.0f} s after {first.component} took it, "
        "while the first step was still running"
    )
