"""Lab 02's experiment: an idempotent consumer under at-least-once delivery on a real queue.

``deliver_under_chaos`` delivers alerts the ways at-least-once really does (a
producer's retry sends a new message, crashed workers' messages come back after
the visibility timeout) and returns what happened, as lab 01's races do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.composition.topology import WorkQueue
from fleetlab.course.experiments.delivery import Race, send_alerts
from fleetlab.services.sqs import messages
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.worker import HandleOutcome, Outcome, QueueWorker


def deliver_under_chaos(
    backend: Backend,
    queue: WorkQueue,
    consumer: Callable[[Delivery], Any],
    alerts: list[str],
    *,
    faults: Any = None,
    republished: tuple[str, ...] = (),
    workers: int = 2,
    conversation_of: Callable[[str], tuple[str, int]] | None = None,
    stop_when: Callable[[], bool] | None = None,
) -> Race:
    """Deliver ``alerts`` to ``consumer`` the ways at-least-once really does.

    Every alert is sent once; those in ``republished`` are sent a second time
    as a new message (a producer that retried after a timeout: a new
    MessageId, the same trace_id). ``conversation_of`` is as in
    ``send_alerts``. ``workers`` workers share the queue as
    actors, ``faults`` crash them at named points, and crashed messages come
    back after the visibility timeout. Runs until every message is deleted
    or dead-lettered, within a bounded horizon of the backend's clock, or
    until ``stop_when()`` holds (a harness that already has its verdict).
    """
    result = Race()
    send_alerts(backend, queue, list(alerts) + list(republished), conversation_of=conversation_of)
    expected_messages = len(alerts) + len(republished)
    deleted: list[str] = []

    def settled() -> bool:
        return len(deleted) >= expected_messages or _dead_lettered(backend, queue) + len(deleted) >= expected_messages

    team = [
        QueueWorker(backend, queue.url, consumer, name=f"worker-{n}", ledger=result.ledger, tracer=result.tracer, faults=faults)
        for n in range(1, workers + 1)
    ]

    def work(worker: QueueWorker) -> list[HandleOutcome]:
        outcomes: list[HandleOutcome] = []
        horizon = backend.clock.now() + (queue.max_receive_count + 2) * queue.visibility_timeout * 2
        while backend.clock.now() < horizon and not settled() and not (stop_when and stop_when()):
            found = worker.poll_once()
            outcomes += found
            deleted.extend(o.message_id for o in found if o.status == Outcome.DONE)
            if not found:
                backend.clock.sleep(queue.visibility_timeout / 10)
        return outcomes

    runs = backend.clock.run_together(*(lambda w=w: work(w) for w in team))
    result.outcomes = [outcome for run in runs for outcome in run]
    return result


def _dead_lettered(backend: Backend, queue: WorkQueue) -> int:
    return messages.depth(backend, queue.dlq_url) if queue.dlq_url else 0
