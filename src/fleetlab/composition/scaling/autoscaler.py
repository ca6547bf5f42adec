"""KEDA and the HPA on one timeline: who acts when, on which reading, with what result.

KEDA polls every ``pollingInterval`` seconds and the HPA syncs every
``sync_period`` seconds, both from the moment the ScaledObject is created.
Each reads the queue itself (the HPA through KEDA's metrics server, which
asks SQS again unless the trigger sets ``useCachedMetrics``, in which case
it gets KEDA's last polled value). When both fall due at the same instant
KEDA goes first. Replica counts change at once: a pod counts from the moment
it is requested (pod start-up, if any, is the fleet's business).

The same ``Autoscaler`` drives the time-stepped simulator (which reads its
own counts), the small real loop (which reads a real queue) and
``fleetlab keda-size`` (which reads a constant). Its HPA sync can be
replaced (``hpa_step``): lab 05's check runs a learner's own sync that way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fleetlab.composition.scaling.hpa import Hpa, HpaDecision, HpaSettings
from fleetlab.composition.scaling.keda import KedaDecision, KedaOperator
from fleetlab.composition.scaling.manifest import ScaledObject
from fleetlab.composition.scaling.scaler import QueueAttributes, queue_length

Decision = KedaDecision | HpaDecision
HpaStep = Callable[[float, int, QueueAttributes], Decision]
"""One HPA sync: (time, current replicas, the queue's counts) -> a decision with ``desired``."""


@dataclass
class Autoscaler:
    """KEDA plus its HPA for one ScaledObject, starting at ``start`` with ``replicas`` pods.

    ``advance(now, read)`` runs every poll and sync due at or before
    ``now``, each on a fresh ``read()`` of the queue, and returns their
    decisions in order; ``replicas`` is the count they leave. ``hpa_step``
    replaces the HPA model's sync (it gets the counts, not the metric).
    """

    scaled: ScaledObject
    settings: HpaSettings = field(default_factory=HpaSettings)
    replicas: int = 0
    start: float = 0.0
    hpa_step: HpaStep | None = None

    def __post_init__(self) -> None:
        self.keda = KedaOperator(self.scaled, created_at=self.start)
        self.hpa = Hpa(self.scaled, self.settings)
        self.next_poll = self.start
        self.next_sync = self.start
        self.polled: QueueAttributes | None = None

    @property
    def next_due(self) -> float:
        """When the next poll or sync falls due."""
        return min(self.next_poll, self.next_sync)

    def advance(self, now: float, read: Callable[[], QueueAttributes]) -> list[Decision]:
        """Run every poll and sync due by ``now``; return their decisions."""
        decisions: list[Decision] = []
        while self.next_due <= now:
            if self.next_poll <= self.next_sync:
                decisions.append(self._poll(read))
            else:
                decisions.append(self._sync(read))
        return decisions

    def _poll(self, read: Callable[[], QueueAttributes]) -> KedaDecision:
        self.polled = read()
        decision = self.keda.poll(self.next_poll, self.replicas, queue_length(self.scaled.trigger, self.polled))
        self.replicas = decision.desired
        self.next_poll += self.scaled.polling_interval
        return decision

    def _sync(self, read: Callable[[], QueueAttributes]) -> Decision:
        if self.scaled.trigger.use_cached_metrics and self.polled is not None:
            reading = self.polled
        else:
            reading = read()
        decision = (self.hpa_step or self._model_sync)(self.next_sync, self.replicas, reading)
        self.replicas = decision.desired
        self.next_sync += self.settings.sync_period
        return decision

    def _model_sync(self, at: float, current: int, reading: QueueAttributes) -> HpaDecision:
        return self.hpa.sync(at, current, queue_length(self.scaled.trigger, reading))


def replicas_over_time(scaled: ScaledObject, readings: Callable[[float], QueueAttributes], *, until: float,
                       replicas: int = 0, settings: HpaSettings | None = None) -> list[tuple[float, str, int, int]]:
    """(time, actor, before, after) for every poll and sync up to ``until``, the queue read from ``readings(t)``.

    For predicting a run by hand: the queue is whatever ``readings`` says at
    each instant, not what the replicas would make of it.
    """
    scaler = Autoscaler(scaled, settings or HpaSettings(), replicas=replicas)
    rows: list[tuple[float, str, int, int]] = []
    while scaler.next_due <= until:
        at = scaler.next_due
        for decision in scaler.advance(at, lambda: readings(at)):
            rows.append((decision.at, decision.actor, decision.current, decision.desired))
    return rows
