"""The long-polling queue worker, with a visibility heartbeat.

``QueueWorker`` is the container worker of a KEDA-scaled fleet: it receives,
keeps the message hidden with a ChangeMessageVisibility heartbeat while the
step runs, and deletes only after the handler returns (with
``batch_deletes``, what one receive finished goes in one DeleteMessageBatch
after the last of them, as Lambda's event source mapping deletes, or sooner
when one nears the end of its visibility timeout). It consults a
``FaultPlan`` at the named crash points; a crash leaves the message
undeleted, so it comes back after its visibility timeout. With a
``LastAttempt`` it gives up one receive before the queue would park the
message: it answers the caller, parks the message with a diagnosis itself,
and deletes it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.core.errors import AlreadyInProgress, InvalidInput, LeaseLost, WorkerCrashed
from fleetlab.core.faults import CrashPoint, FaultPlan
from fleetlab.core.ledger import Effect, EffectsLedger
from fleetlab.core.status import Status
from fleetlab.core.tracing import Tracer
from fleetlab.services.sqs import messages
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.lastattempt import LastAttempt
from fleetlab.services.sqs.messages import parse_body


class Outcome(Status):
    """How handling a message ended."""

    DONE = "done"
    """The handler returned and the message was deleted."""
    CRASHED = "crashed"
    """An injected fault killed the worker at a crash point; the message comes back."""
    BUSY = "busy"
    """Another worker holds the work's lease (AlreadyInProgress); the message comes back."""
    FAILED = "failed"
    """The handler raised; the message comes back, and is dead-lettered after maxReceiveCount."""
    PARKED = "parked"
    """The last attempt failed (or never reported): the worker answered the caller, parked it, and deleted it."""


@dataclass(frozen=True)
class HandleOutcome:
    """How handling one delivery ended: done, crashed, busy or failed."""

    trace_id: str
    message_id: str
    receive_count: int
    status: Outcome
    result: Any = None
    error: str = ""


DELETE_MARGIN_SHARE = 10
"""With batch deletes, what a receive finished is deleted once one of those messages is within
1/DELETE_MARGIN_SHARE of the visibility timeout of coming back (and a timer looks that often)."""


class QueueWorker:
    """Long-polling worker with a visibility heartbeat.

    ``handler(delivery)`` runs the step. The message is deleted only after it
    returns. ``heartbeat_every`` (seconds of the backend's clock) extends the
    message's visibility to ``visibility_timeout`` while the handler runs.
    A handler that raises leaves the message for redelivery; AlreadyInProgress
    is reported as ``busy``; an injected crash as ``crashed``. With
    ``last_attempt``, a failure on the last attempt (and the spare receive
    after an attempt that never reported) is ``parked`` instead. Each receive
    long-polls ``wait_seconds`` (by default the backend's ``receive_wait``:
    at once on moto, one service second where EventBridge delivers after
    PutEvents returns and a redelivery turns up late). ``batch_deletes``:
    ``poll_once`` deletes what it finished together, one DeleteMessageBatch
    after the last message it received, or sooner when a finished message
    (no longer heartbeated while it waits) nears the end of its visibility
    timeout: none comes back for want of its delete.
    """

    def __init__(
        self,
        backend: Backend,
        queue_url: str,
        handler: Callable[[Delivery], Any],
        *,
        name: str = "worker",
        ledger: EffectsLedger | None = None,
        tracer: Tracer | None = None,
        faults: FaultPlan | None = None,
        heartbeat_every: float | None = None,
        visibility_timeout: int | None = None,
        wait_seconds: int | None = None,
        last_attempt: LastAttempt | None = None,
        batch_deletes: bool = False,
    ) -> None:
        if heartbeat_every is not None and not visibility_timeout:
            raise InvalidInput("visibility_timeout", "is required when heartbeat_every is set")
        if heartbeat_every is not None and visibility_timeout and heartbeat_every >= visibility_timeout:
            raise InvalidInput(
                "heartbeat_every",
                f"{heartbeat_every} s must be shorter than the visibility timeout {visibility_timeout} s",
            )
        self.backend = backend
        self.sqs = backend.client("sqs")
        self.queue_url = queue_url
        self.handler = handler
        self.name = name
        self.ledger = ledger if ledger is not None else EffectsLedger()
        self.tracer = tracer
        self.faults = faults or FaultPlan()
        self.heartbeat_every = heartbeat_every
        self.visibility_timeout = visibility_timeout
        self.wait_seconds = wait_seconds
        self.last_attempt = last_attempt
        self.batch_deletes = batch_deletes
        self._pending: _PendingDeletes | None = None

    def poll_once(self, max_messages: int = 1, *, wait_seconds: int | None = None) -> list[HandleOutcome]:
        """Receive up to ``max_messages`` and handle each in turn; ``wait_seconds`` overrides the worker's long poll.

        Each finished message is deleted as it finishes, or (``batch_deletes``) together with the others.
        Raises InvalidInput naming ``visibility_timeout`` for batch deletes on a worker without one.
        """
        if not self.batch_deletes:
            return [self.handle(message) for message in self.receive(max_messages, wait_seconds=wait_seconds)]
        margin = self._delete_margin()  # before the receive: a refusal leaves nothing in flight
        received = self.receive(max_messages, wait_seconds=wait_seconds)
        pending = self._pending = _PendingDeletes(self, margin,
                                                  hidden_until=self.backend.clock.now() + self.visibility_timeout)
        try:
            with self.backend.clock.every(margin, pending.delete_if_due):
                outcomes = [pending.keep(*self._work(message)) for message in received]
        finally:
            self._pending = None
        pending.delete()
        return outcomes

    def delete_finished(self) -> None:
        """With batch deletes, delete now what the receive being handled has finished (else nothing).

        For a caller that is about to let a long time pass while this worker
        cannot look at its clock (another thread's work run inside one of its waits).
        """
        if (pending := self._pending) is not None:
            pending.delete()

    def run_for(
        self,
        seconds: float,
        *,
        poll_interval: float = 20.0,
        max_messages: int = 1,
        stop_when: Callable[[], bool] | None = None,
    ) -> list[HandleOutcome]:
        """Keep polling for ``seconds`` of the backend's clock, or until ``stop_when()`` is true.

        After an empty poll the worker waits ``poll_interval``. Meant as one
        actor of ``clock.run_together``: several workers on one queue,
        interleaved exactly on the virtual clock.
        """
        clock = self.backend.clock
        until = clock.now() + seconds
        outcomes: list[HandleOutcome] = []
        while clock.now() < until and not (stop_when and stop_when()):
            found = self.poll_once(max_messages)
            outcomes += found
            if not found:
                clock.sleep(min(poll_interval, max(until - clock.now(), 0.0)))
        return outcomes

    def receive(self, max_messages: int = 1, *, wait_seconds: int | None = None) -> list[dict[str, Any]]:
        """One ReceiveMessage call (under the backend's receive lock), long-polling ``wait_seconds``
        (default: the worker's own)."""
        wait = self.wait_seconds if wait_seconds is None else wait_seconds
        return messages.receive(self.backend, self.queue_url, max_messages=max_messages, wait_seconds=wait)

    def handle(self, message: dict[str, Any]) -> HandleOutcome:
        """Run the handler on one received message, then delete it (unless it is to come back)."""
        outcome, finished = self._work(message)
        if finished is not None:
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=finished.receipt_handle)
            self._trace(finished, "deleted")
        return outcome

    def _work(self, message: dict[str, Any]) -> tuple[HandleOutcome, Delivery | None]:
        """Run the handler on one message: its outcome, and its delivery when the message is to be deleted."""
        delivery = self._delivery(message)
        self._trace(delivery, "received", receive=delivery.receive_count)
        if self.last_attempt is not None and self.last_attempt.never_reported(delivery.receive_count):
            return self._give_up(delivery, message, None), delivery
        try:
            with self._heartbeat(delivery):
                result = self.handler(delivery)
            self.faults.check(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, delivery.trace_id, delivery.receive_count)
        except WorkerCrashed as crash:
            self._trace(delivery, "crashed", point=crash.point)
            return self._outcome(delivery, Outcome.CRASHED, error=crash.point), None
        except AlreadyInProgress as busy:
            self._trace(delivery, "busy")
            return self._outcome(delivery, Outcome.BUSY, error=str(busy)), None
        except Exception as exc:  # the handler's failure: leave the message for redelivery, or give up
            if self._is_final(delivery, exc):
                return self._give_up(delivery, message, exc), delivery
            self._trace(delivery, "failed", error=type(exc).__name__)
            return self._outcome(delivery, Outcome.FAILED, error=f"{type(exc).__name__}: {exc}"), None
        return self._outcome(delivery, Outcome.DONE, result=result), delivery

    def _delete_margin(self) -> float:
        """How close to coming back a finished message may get before its batch is deleted without the rest."""
        if not self.visibility_timeout:
            raise InvalidInput("visibility_timeout", "is required when batch_deletes is set",
                               hint="pass the queue's: finished messages wait for their batch-mates only "
                                    "while it keeps them hidden")
        return self.visibility_timeout / DELETE_MARGIN_SHARE

    def _delete_together(self, finished: list[Delivery]) -> None:
        """Delete the finished messages of one receive, ten per DeleteMessageBatch; trace which went."""
        kept = messages.delete_batch(self.backend, self.queue_url,
                                     [{"ReceiptHandle": delivery.receipt_handle} for delivery in finished])
        kept_handles = {message["ReceiptHandle"] for message in kept}
        for delivery in finished:
            self._trace(delivery, "delete_failed" if delivery.receipt_handle in kept_handles else "deleted")

    def _is_final(self, delivery: Delivery, error: Exception) -> bool:
        """A failure on the last attempt is final; a lost lease is not (another worker owns the work)."""
        return (self.last_attempt is not None and self.last_attempt.is_last(delivery.receive_count)
                and not isinstance(error, LeaseLost))

    def _give_up(self, delivery: Delivery, message: dict[str, Any], error: Exception | None) -> HandleOutcome:
        assert self.last_attempt is not None
        gave_up = self.last_attempt.give_up(delivery, message, error)
        self._trace(delivery, "parked", error_code=gave_up.diagnosis.error_code, answered=gave_up.answered)
        return self._outcome(delivery, Outcome.PARKED, result=gave_up, error=gave_up.diagnosis.error_message)

    def _delivery(self, message: dict[str, Any]) -> Delivery:
        body, parsed, problem = parse_body(message["Body"])
        return Delivery(
            message_id=message["MessageId"],
            receipt_handle=message["ReceiptHandle"],
            body=body,
            receive_count=messages.receive_count(message),
            queue_url=self.queue_url,
            worker=self.name,
            envelope=parsed,
            envelope_error=problem,
            attributes=dict(message.get("Attributes", {})),
            _effect=self._record_effect,
        )

    def _record_effect(self, delivery: Delivery, kind: str, key: str | None) -> Effect:
        self.faults.check(CrashPoint.BEFORE_EFFECT, delivery.trace_id, delivery.receive_count)
        effect = self.ledger.record(
            key or delivery.trace_id,
            kind=kind,
            actor=self.name,
            at=self.backend.clock.now(),
            receive_count=delivery.receive_count,
        )
        self._trace(delivery, "effect", kind=kind)
        return effect

    def _heartbeat(self, delivery: Delivery) -> contextlib.AbstractContextManager[None]:
        if self.heartbeat_every is None:
            return contextlib.nullcontext()

        def beat() -> None:
            self.faults.check(CrashPoint.DURING_HEARTBEAT, delivery.trace_id, delivery.receive_count)
            self.sqs.change_message_visibility(
                QueueUrl=self.queue_url,
                ReceiptHandle=delivery.receipt_handle,
                VisibilityTimeout=self.visibility_timeout,
            )
            delivery._hidden_until = self.backend.clock.now() + self.visibility_timeout
            self._trace(delivery, "heartbeat", visibility=self.visibility_timeout)
            for hook in delivery._heartbeat_hooks:
                hook()

        return self.backend.clock.every(self.heartbeat_every, beat)

    def _trace(self, delivery: Delivery, hop: str, **attrs: Any) -> None:
        if self.tracer is not None:
            self.tracer.record(delivery.trace_id, hop, at=self.backend.clock.now(), component=self.name, **attrs)

    def _outcome(self, delivery: Delivery, status: Outcome, *, result: Any = None, error: str = "") -> HandleOutcome:
        return HandleOutcome(delivery.trace_id, delivery.message_id, delivery.receive_count, status, result, error)


class _PendingDeletes:
    """The finished messages of one receive not deleted yet, each with when it would come back.

    ``delete`` sends them all (ten per call). ``delete_if_due`` does so once one is within ``margin`` seconds of
    coming back: received until ``hidden_until``, or later when a heartbeat pushed it on. A timer may call it while
    the worker handles the next message, so the list is guarded.
    """

    def __init__(self, worker: QueueWorker, margin: float, *, hidden_until: float) -> None:
        self.worker = worker
        self.margin = margin
        self.hidden_until = hidden_until
        self.finished: list[tuple[Delivery, float]] = []
        self.lock = threading.Lock()

    def keep(self, outcome: HandleOutcome, finished: Delivery | None) -> HandleOutcome:
        """Note ``finished`` (a message to delete), if any, deleting at once if it is due; ``outcome`` unchanged."""
        if finished is not None:
            with self.lock:
                self.finished.append((finished, max(self.hidden_until, finished._hidden_until or 0.0)))
            self.delete_if_due()
        return outcome

    def delete_if_due(self) -> None:
        now = self.worker.backend.clock.now()
        with self.lock:
            due = any(until - now <= self.margin for _, until in self.finished)
        if due:
            self.delete()

    def delete(self) -> None:
        with self.lock:
            going, self.finished = [delivery for delivery, _ in self.finished], []
        if going:
            self.worker._delete_together(going)
