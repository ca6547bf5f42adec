"""The worker's attempt budget: one receive below the queue's maxReceiveCount, so no caller hangs.

A queue parks a message once it has been received maxReceiveCount times
without a delete, and a caller waiting for that message's answer would wait
forever. So the worker keeps its own budget one below. On its last attempt
(receive maxReceiveCount - 1) a failure is final: the worker answers the
caller with a graceful error (``state.responses``), parks the message on
the DLQ with a diagnosis (``dlq.dead_letter``) and deletes it. The receive
left over is the spare: when the last attempt never reported (its worker
crashed, or someone reading the queue used up a receive), the next receive
gives up at once, without running the step again. The queue's redrive
policy stays as the backstop for a worker that dies on the spare receive too.

Each step is written so a crash between them repeats it harmlessly: the
error is written only where there is no answer yet, and a FIFO DLQ drops a
second record of the same message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fleetlab.backends.backend import Backend
from fleetlab.core.errors import InvalidInput
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.dlq import DeadLetterTarget, Diagnosis, dead_letter

if TYPE_CHECKING:
    from fleetlab.services.state.responses import ResponseStore


@dataclass(frozen=True)
class GaveUp:
    """What the worker did when it gave up on a message."""

    diagnosis: Diagnosis
    dead_letter_id: str
    answered: bool
    """True when this give-up wrote the caller's graceful error (False: no store, or an answer was there)."""


class LastAttempt:
    """The attempt budget of a worker on one queue: ``max_receive_count - 1`` attempts, then give up.

    ``responses`` (optional) gets the graceful error under
    ``request_id_of(delivery)`` (the trace id by default). Raises
    InvalidInput for a maxReceiveCount below 2, which leaves no spare receive.
    """

    def __init__(
        self,
        backend: Backend,
        target: DeadLetterTarget,
        *,
        max_receive_count: int,
        responses: ResponseStore | None = None,
        request_id_of: Callable[[Delivery], str] = lambda delivery: delivery.trace_id,
    ) -> None:
        if max_receive_count < 2:
            raise InvalidInput(
                "max_receive_count", f"{max_receive_count} leaves no receive for the graceful error",
                hint="the worker's budget is maxReceiveCount - 1 attempts; use at least 2",
            )
        self.backend = backend
        self.target = target
        self.max_receive_count = max_receive_count
        self.responses = responses
        self.request_id_of = request_id_of

    @property
    def attempts(self) -> int:
        """Attempts the worker makes: one below the queue's maxReceiveCount."""
        return self.max_receive_count - 1

    def is_last(self, receive_count: int) -> bool:
        """True when a failure on this receive is final."""
        return receive_count >= self.attempts

    def never_reported(self, receive_count: int) -> bool:
        """True on the spare receive: the last attempt was used without an outcome."""
        return receive_count > self.attempts

    def give_up(self, delivery: Delivery, message: dict[str, Any], error: BaseException | None) -> GaveUp:
        """Answer the caller with a graceful error, then park ``message`` with its diagnosis.

        ``error`` is what the last attempt raised (None when it never
        reported). The caller deletes the message from the queue afterwards.
        """
        diagnosis = self.target.diagnose(error, attempts=min(delivery.receive_count, self.attempts))
        answered = False
        if self.responses is not None:
            answered = self.responses.fail(
                self.request_id_of(delivery), diagnosis.error_code, diagnosis.error_message,
                attempt=delivery.receive_count,
            )
        return GaveUp(diagnosis, dead_letter(self.backend, self.target, message, diagnosis), answered)
