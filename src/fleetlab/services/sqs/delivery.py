"""One received message, as a handler sees it: what the worker and its attempt budget both hand around."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fleetlab.core.errors import EnvelopeError, InvalidInput
from fleetlab.core.ledger import Effect
from fleetlab.services.events.envelope import Envelope


@dataclass
class Delivery:
    """One received message, as a handler sees it."""

    message_id: str
    receipt_handle: str
    body: Any
    receive_count: int
    queue_url: str
    worker: str
    envelope: Envelope | None = None
    envelope_error: EnvelopeError | None = None
    attributes: dict[str, str] = field(default_factory=dict)
    """The message's system attributes as received (on a FIFO queue: MessageGroupId, MessageDeduplicationId)."""
    _effect: Callable[[Delivery, str, str | None], Effect] | None = field(default=None, repr=False)
    _heartbeat_hooks: list[Callable[[], None]] = field(default_factory=list, repr=False)
    _hidden_until: float | None = field(default=None, repr=False)
    """When the visibility the worker's last heartbeat set runs out (None: no heartbeat yet)."""

    @property
    def trace_id(self) -> str:
        """The work's trace id, or the message id for a body that is not an envelope."""
        return self.envelope.trace_id if self.envelope else self.message_id

    def record_effect(self, kind: str = "effect", key: str | None = None) -> Effect:
        """Perform the step's side effect (counted in the ledger), after the BEFORE_EFFECT crash point."""
        if self._effect is None:
            raise InvalidInput("delivery", "this delivery has no effects ledger attached")
        return self._effect(self, kind, key)

    def on_heartbeat(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` on every heartbeat while this message is handled (e.g. renew a lease)."""
        self._heartbeat_hooks.append(hook)
