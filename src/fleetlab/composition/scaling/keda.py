"""KEDA's side of a ScaledObject: activation, scale from zero, cooldown to zero.

Follows KEDA v2.21 ``pkg/scaling/executor/scale_scaledobjects.go``
(RequestScale), run on every ``pollingInterval`` (default 30 s):

* **Active** (the scaler's metric is above ``activationQueueLength``): at 0
  replicas (or below ``minReplicaCount`` when ``idleReplicaCount`` is set) KEDA
  sets ``max(minReplicaCount, 1)`` itself; otherwise it only records the last
  active time. Either way the HPA does the rest between 1 and N.
* **Inactive**: with replicas above 0 and ``minReplicaCount`` 0 (or above
  ``idleReplicaCount``), KEDA scales to 0 (or to the idle count) once
  ``cooldownPeriod`` has passed since the last active time, strictly, as
  ``Time.Before`` compares; before any activity it counts
  ``initialCooldownPeriod`` from the ScaledObject's creation instead. Below
  ``minReplicaCount`` without an idle count it restores the minimum.

KEDA's polls and the HPA's syncs are independent loops; ``autoscaler``
runs both on one timeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetlab.composition.scaling.manifest import ScaledObject
from fleetlab.composition.scaling.scaler import is_active


@dataclass(frozen=True)
class KedaDecision:
    """One poll: the metric, whether the scaler was active, and what KEDA set (None: left alone)."""

    at: float
    current: int
    metric: int
    active: bool
    target: int | None
    why: str

    actor = "keda"

    @property
    def desired(self) -> int:
        return self.current if self.target is None else self.target

    @property
    def changed(self) -> bool:
        return self.desired != self.current

    def reason(self) -> str:
        return self.why


class KedaOperator:
    """KEDA's executor for one ScaledObject created at ``created_at``."""

    def __init__(self, scaled: ScaledObject, *, created_at: float) -> None:
        self.scaled = scaled
        self.created_at = created_at
        self.last_active: float | None = None

    def poll(self, now: float, current: int, metric: int) -> KedaDecision:
        """One RequestScale at ``now`` with ``current`` replicas and the scaler's metric."""
        active = is_active(self.scaled.trigger, metric)
        if active:
            return self._active(now, current, metric)
        return self._inactive(now, current, metric)

    def _active(self, now: float, current: int, metric: int) -> KedaDecision:
        spec = self.scaled
        threshold = spec.trigger.activation_queue_length
        self.last_active = now
        below_min_when_idling = spec.idle_replica_count is not None and current < spec.min_replica_count
        if current == 0 or below_min_when_idling:
            target = spec.min_replica_count if spec.min_replica_count > 0 else 1
            return KedaDecision(now, current, metric, True, target,
                                f"active ({metric} > activationQueueLength {threshold}): scale {current} -> {target}")
        return KedaDecision(now, current, metric, True, None,
                            f"active ({metric} > activationQueueLength {threshold}): the HPA scales 1..N")

    def _inactive(self, now: float, current: int, metric: int) -> KedaDecision:
        spec = self.scaled
        idle = spec.idle_replica_count
        quiet = f"inactive ({metric} <= activationQueueLength {spec.trigger.activation_queue_length})"
        if (idle is not None and current > idle) or (current > 0 and spec.min_replica_count == 0):
            rest = idle if idle is not None else spec.min_replica_count
            since, wait = self._cooldown_start()
            if since + wait < now:
                return KedaDecision(now, current, metric, False, rest,
                                    f"{quiet} for over {wait:g} s: scale {current} -> {rest}")
            return KedaDecision(now, current, metric, False, None,
                                f"{quiet}: cooling down until after t={since + wait:g} s")
        if idle is None and current < spec.min_replica_count:
            return KedaDecision(now, current, metric, False, spec.min_replica_count,
                                f"{quiet}: below minReplicaCount, set {spec.min_replica_count}")
        return KedaDecision(now, current, metric, False, None, f"{quiet}: nothing to do")

    def _cooldown_start(self) -> tuple[float, float]:
        """(when the countdown started, how long it lasts): last activity, or creation before any."""
        if self.last_active is None:
            return self.created_at, float(self.scaled.initial_cooldown_period)
        return self.last_active, float(self.scaled.cooldown_period)
