"""KEDA's aws-sqs-queue scaler: which queue attributes count, and when it is active.

Follows KEDA v2.21 ``pkg/scalers/aws_sqs_queue_scaler.go``: the scaler asks
SQS for ApproximateNumberOfMessages, plus ...NotVisible when
``scaleOnInFlight`` is true (the default), plus ...Delayed when
``scaleOnDelayed`` is true (default false), and adds them up. That sum is
the metric the HPA scales on; the scaler is *active* when it is strictly
above ``activationQueueLength`` (default 0). Activation only decides 0 <-> 1
replicas; between 1 and N the HPA uses the metric whatever its activity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fleetlab.composition.scaling.manifest import SqsTrigger
from fleetlab.core.errors import InvalidInput
from fleetlab.core.numbers import whole

VISIBLE = "ApproximateNumberOfMessages"
IN_FLIGHT = "ApproximateNumberOfMessagesNotVisible"
DELAYED = "ApproximateNumberOfMessagesDelayed"
ATTRIBUTE_NAMES = (VISIBLE, IN_FLIGHT, DELAYED)


@dataclass(frozen=True)
class QueueAttributes:
    """The three counts KEDA can read from a queue."""

    visible: int
    in_flight: int = 0
    delayed: int = 0

    def __post_init__(self) -> None:
        for name in ("visible", "in_flight", "delayed"):
            value = getattr(self, name)
            count = whole(value)
            if count is None or count < 0:
                raise InvalidInput(name, f"must be a whole number >= 0, got {value!r}")
            object.__setattr__(self, name, count)

    @classmethod
    def from_sqs(cls, attributes: Mapping[str, str]) -> QueueAttributes:
        """From a GetQueueAttributes answer. Raises InvalidInput naming a missing attribute."""
        counts = []
        for name in ATTRIBUTE_NAMES:
            if name not in attributes:
                raise InvalidInput(name, "missing from the GetQueueAttributes answer")
            try:
                counts.append(int(attributes[name]))
            except ValueError:
                raise InvalidInput(name, f"is not a whole number: {attributes[name]!r}") from None
        return cls(*counts)


def queue_length(trigger: SqsTrigger, attributes: QueueAttributes) -> int:
    """The scaler's metric: visible, plus in flight and delayed when the trigger counts them."""
    length = attributes.visible
    if trigger.scale_on_in_flight:
        length += attributes.in_flight
    if trigger.scale_on_delayed:
        length += attributes.delayed
    return length


def is_active(trigger: SqsTrigger, length: int) -> bool:
    """Whether the scaler is active: the metric is strictly above activationQueueLength."""
    return length > trigger.activation_queue_length


def explain_metric(trigger: SqsTrigger, attributes: QueueAttributes) -> str:
    """The metric spelled out, e.g. ``17 = 12 visible + 5 in flight (3 delayed not counted)``."""
    parts = [f"{attributes.visible} visible"]
    left_out = []
    for count, counted, label, flag in (
        (attributes.in_flight, trigger.scale_on_in_flight, "in flight", "scaleOnInFlight"),
        (attributes.delayed, trigger.scale_on_delayed, "delayed", "scaleOnDelayed"),
    ):
        if counted:
            parts.append(f"{count} {label}")
        elif count:
            left_out.append(f"{count} {label} not counted: {flag} is false")
    text = f"{queue_length(trigger, attributes)} = {' + '.join(parts)}"
    return text + (f" ({'; '.join(left_out)})" if left_out else "")
