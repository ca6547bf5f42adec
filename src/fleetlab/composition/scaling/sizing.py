"""One reading of a queue, explained: the metric, activation, the HPA's target and what limits it.

``size(scaled, attributes, current)`` is what ``fleetlab keda-size`` prints.
With no current replica count it gives the HPA's target for the reading
(``ceil(metric / queueLength)`` clamped to the replica bounds). With a
current count it runs KEDA and the HPA (``autoscaler``) on that constant
reading: the first poll and sync say what happens next, with the tolerance
band, the rate limit and the clamp; running on until nothing changes says
where the fleet settles and when, *if the queue stayed as read*.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from fleetlab.composition.scaling.autoscaler import Autoscaler
from fleetlab.composition.scaling.hpa import HpaDecision, HpaSettings
from fleetlab.composition.scaling.manifest import ScaledObject
from fleetlab.composition.scaling.scaler import QueueAttributes, explain_metric, is_active, queue_length
from fleetlab.core.errors import InvalidInput

SETTLE_HORIZON = 4 * 3600.0  # seconds of constant readings to look ahead for the settled count


@dataclass(frozen=True)
class Step:
    """One line of the explanation."""

    name: str
    text: str


@dataclass(frozen=True)
class Sizing:
    """What KEDA and the HPA make of one reading. ``desired`` is the count after the next poll and sync."""

    metric: int
    active: bool
    current: int | None
    desired: int
    settles_at: int
    settle_seconds: float
    steps: tuple[Step, ...]
    path: tuple[tuple[float, str, int, int], ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``--json``)."""
        data = asdict(self)
        data["steps"] = [{"step": s.name, "text": s.text} for s in self.steps]
        data["path"] = [{"at": at, "actor": actor, "from": a, "to": b} for at, actor, a, b in self.path]
        return data


def size(scaled: ScaledObject, attributes: QueueAttributes, current: int | None = None,
         settings: HpaSettings | None = None) -> Sizing:
    """Explain one reading. Raises InvalidInput for a negative ``current`` or a Value target without it."""
    settings = settings or HpaSettings()
    trigger = scaled.trigger
    metric = queue_length(trigger, attributes)
    active = is_active(trigger, metric)
    steps = [
        Step("metric", explain_metric(trigger, attributes)),
        Step("activation", f"{'active' if active else 'inactive'}: {metric} "
                           f"{'>' if active else '<='} activationQueueLength {trigger.activation_queue_length}"),
    ]
    if current is None:
        return _target_only(scaled, metric, active, steps)
    if current < 0:
        raise InvalidInput("current", f"must not be negative, got {current}")
    return _from_current(scaled, attributes, metric, active, current, settings, steps)


def _target_only(scaled: ScaledObject, metric: int, active: bool, steps: list[Step]) -> Sizing:
    trigger = scaled.trigger
    if trigger.metric_type == "Value":
        raise InvalidInput("current", "is needed with metricType Value (the target scales the current count)")
    target = math.ceil(metric / trigger.queue_length)
    low, high = scaled.hpa_min_replicas, scaled.max_replica_count
    clamped = min(max(target, low), high)
    steps.append(Step("target", f"ceil({metric} / queueLength {trigger.queue_length}) = {_replicas(target)}"))
    steps.append(Step("clamp", f"HPA bounds [{low}, {high}] -> {clamped}"))
    desired = clamped
    if not active and scaled.min_replica_count == 0:
        desired = 0
        steps.append(Step("zero", f"inactive with minReplicaCount 0: KEDA scales to 0 once cooldownPeriod "
                                  f"({scaled.cooldown_period} s) has passed since the last active poll"))
    steps.append(Step("desired", f"{_replicas(desired)} (give --current to see the tolerance band and the rate limit)"))
    return Sizing(metric, active, None, desired, desired, 0.0, tuple(steps))


def _from_current(scaled: ScaledObject, attributes: QueueAttributes, metric: int, active: bool, current: int,
                  settings: HpaSettings, steps: list[Step]) -> Sizing:
    scaler = Autoscaler(scaled, settings, replicas=current)
    if current > 0:
        scaler.keda.last_active = 0.0  # a running fleet: assume the queue was busy until this reading
    first = scaler.advance(0.0, lambda: attributes)
    for decision in first:
        steps.append(Step(decision.actor, decision.reason()))
    desired = scaler.replicas
    path = [(d.at, d.actor, d.current, d.desired) for d in first if d.changed]
    settled_at = path[-1][0] if path else 0.0
    quiet_for = max(settings.downscale_stabilization, scaled.cooldown_period) + scaled.polling_interval
    while scaler.next_due <= SETTLE_HORIZON and scaler.next_due - settled_at <= quiet_for + settings.sync_period:
        for decision in scaler.advance(scaler.next_due, lambda: attributes):
            if decision.changed:
                path.append((decision.at, decision.actor, decision.current, decision.desired))
                settled_at = decision.at
    settles_at = scaler.replicas
    if any(isinstance(d, HpaDecision) and d.proposal and (d.stabilized or 0) > d.proposal.replicas for d in first):
        steps.append(Step("stabilisation", f"a scale-down waits for the highest recommendation of the last "
                                           f"{settings.downscale_stabilization:g} s (assumed {current} until now)"))
    steps.append(Step("desired", f"{_replicas(desired)} after the next poll and sync"))
    steps.append(Step("settles", f"{_replicas(settles_at)} after {settled_at:g} s if the queue stays at {metric}"))
    return Sizing(metric, active, current, desired, settles_at, settled_at, tuple(steps), tuple(path))


def _replicas(count: int) -> str:
    return f"{count} replica" if count == 1 else f"{count} replicas"
