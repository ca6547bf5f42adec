"""The Kubernetes HorizontalPodAutoscaler, as its controller computes replicas for one External metric.

Follows ``pkg/controller/podautoscaler`` of Kubernetes (1.33+), in its own words:

* **Proposal** (``replica_calculator.go``). KEDA hands the queue length to the
  HPA as an External metric in milli-units. With an ``AverageValue`` target
  (KEDA's default) the usage ratio is ``usage / (target x current pods)``; when
  it lies inside the tolerance band ``[1 - down, 1 + up]`` the proposal is the
  current count, otherwise ``ceil(usage / target)``. With a ``Value`` target the
  ratio is ``usage / target`` and the proposal ``ceil(ratio x current)``.
  The band is 0.1 each way (``--horizontal-pod-autoscaler-tolerance``); since
  1.33 ``behavior.scaleUp.tolerance`` / ``scaleDown.tolerance`` override it per
  direction.
* **Guards** (``horizontal.go``, reconcileAutoscaler). At 0 replicas with
  minReplicas above 0 the HPA does nothing (KEDA owns 0 <-> 1). Outside
  [minReplicas, maxReplicas] it moves straight to the nearer bound.
* **Normalisation without a behavior** (what KEDA creates unless the
  ScaledObject sets ``advanced.horizontalPodAutoscalerConfig.behavior``):
  the recommendation is the highest of the proposals made in the last 300 s
  (``--horizontal-pod-autoscaler-downscale-stabilization``, samples exactly
  300 s old included), then clamped to [minReplicas, min(maxReplicas,
  max(2 x current, 4))]: scale-up is limited to doubling, or 4 pods, per sync.
* **Normalisation with a behavior**: missing fields take the API defaults
  (scale-up: no stabilisation, Max of +4 pods and +100 % per 15 s; scale-down:
  the 300 s window, -100 % per 15 s). The recommendation is the current count
  pulled up to the lowest proposal of the scale-up window and down to the
  highest of the scale-down window (samples strictly inside each window); the
  rate limit counts the pods added and removed within each policy's period.
* The controller syncs every 15 s (``--horizontal-pod-autoscaler-sync-period``).

Times are seconds on whatever clock drives the model; nothing here reads a clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fleetlab.composition.scaling.manifest import Behavior, ScaledObject, ScalingPolicy, ScalingRules
from fleetlab.core.errors import InvalidInput

SCALE_UP_LIMIT_FACTOR = 2.0  # horizontal.go: scaleUpLimitFactor
SCALE_UP_LIMIT_MINIMUM = 4.0  # horizontal.go: scaleUpLimitMinimum
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)

DEFAULT_SCALE_UP = ScalingRules(
    stabilization_window_seconds=0,
    select_policy="Max",
    policies=(ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15)),
)
DEFAULT_SCALE_DOWN = ScalingRules(
    stabilization_window_seconds=None,  # the controller's downscale stabilisation flag
    select_policy="Max",
    policies=(ScalingPolicy("Percent", 100, 15),),
)


@dataclass(frozen=True)
class HpaSettings:
    """The HPA controller's flags (kube-controller-manager), with their defaults."""

    sync_period: float = 15.0
    tolerance: float = 0.1
    downscale_stabilization: float = 300.0

    def __post_init__(self) -> None:
        if self.sync_period <= 0:
            raise InvalidInput("sync_period", f"must be positive, got {self.sync_period}")
        if self.tolerance < 0:
            raise InvalidInput("tolerance", f"must not be negative, got {self.tolerance}")
        if self.downscale_stabilization < 0:
            raise InvalidInput("downscale_stabilization", f"must not be negative, got {self.downscale_stabilization}")


@dataclass(frozen=True)
class Tolerances:
    """The band of usage ratios inside which the HPA keeps the current count."""

    scale_down: float
    scale_up: float

    def within(self, ratio: float) -> bool:
        return (1.0 - self.scale_down) <= ratio <= (1.0 + self.scale_up)

    def band(self) -> str:
        return f"{1.0 - self.scale_down:.2f}-{1.0 + self.scale_up:.2f}"


@dataclass(frozen=True)
class Proposal:
    """What the replica calculator proposes from one metric reading, and the ratio it used."""

    replicas: int
    ratio: float
    within_tolerance: bool


def tolerances_for(behavior: Behavior | None, settings: HpaSettings) -> Tolerances:
    """Per-direction tolerances: the behavior's override where set, else the controller's flag."""
    down = up = settings.tolerance
    if behavior is not None:
        if behavior.scale_down is not None and behavior.scale_down.tolerance is not None:
            down = behavior.scale_down.tolerance
        if behavior.scale_up is not None and behavior.scale_up.tolerance is not None:
            up = behavior.scale_up.tolerance
    return Tolerances(scale_down=down, scale_up=up)


def average_value_proposal(usage: int, target: int, current: int, tolerances: Tolerances) -> Proposal:
    """GetExternalPerPodMetricReplicas: ``current`` inside the band, else ``ceil(usage / target)``.

    ``usage`` and ``target`` are whole messages; the HPA works in milli-units,
    and so does this, so the floating-point ratio is the controller's own.
    """
    usage_milli, target_milli = usage * 1000, target * 1000
    ratio = float(usage_milli) / (float(target_milli) * float(current))
    if tolerances.within(ratio):
        return Proposal(current, ratio, True)
    return Proposal(min(math.ceil(float(usage_milli) / float(target_milli)), INT32_MAX), ratio, False)


def value_proposal(usage: int, target: int, current: int, tolerances: Tolerances) -> Proposal:
    """GetExternalMetricReplicas (``metricType: Value``): ``ceil(usage / target x ready pods)``."""
    ratio = float(usage * 1000) / float(target * 1000)
    if current == 0:
        return Proposal(math.ceil(ratio), ratio, False)
    if tolerances.within(ratio):
        return Proposal(current, ratio, True)
    return Proposal(min(math.ceil(ratio * float(current)), INT32_MAX), ratio, False)


@dataclass(frozen=True)
class HpaDecision:
    """One sync of the HPA: what it read, proposed, stabilised and set, and why.

    ``guard`` is "disabled" (0 replicas, KEDA's turn), "above-max",
    "below-min" or "" (the metric was used). ``limit`` is the controller's
    ScalingLimited reason: DesiredWithinRange, ScaleUpLimit, TooManyReplicas,
    TooFewReplicas or ScaleDownLimit.
    """

    at: float
    current: int
    metric: int
    desired: int
    guard: str = ""
    proposal: Proposal | None = None
    tolerances: Tolerances | None = None
    stabilized: int | None = None
    limit: str = ""
    scale_up_limit: int | None = None

    actor = "hpa"

    @property
    def changed(self) -> bool:
        return self.desired != self.current

    def reason(self) -> str:
        """One sentence: why the HPA set (or kept) this count."""
        if self.guard == "disabled":
            return "0 replicas: the HPA waits for KEDA to activate the target"
        if self.guard == "above-max":
            return f"{self.current} is above maxReplicas: set to {self.desired}"
        if self.guard == "below-min":
            return f"{self.current} is below minReplicas: set to {self.desired}"
        assert self.proposal is not None and self.tolerances is not None
        ratio = f"usage ratio {self.proposal.ratio:.3f}"
        if self.proposal.within_tolerance:
            text = f"{ratio} inside the tolerance band {self.tolerances.band()}: keep {self.current}"
        else:
            text = f"{ratio} outside {self.tolerances.band()}: proposal {self.proposal.replicas}"
        if self.stabilized is not None and self.stabilized != self.proposal.replicas:
            text += f"; stabilised to {self.stabilized} (highest recent recommendation)" \
                if self.stabilized > self.proposal.replicas else \
                f"; stabilised to {self.stabilized} (lowest recent recommendation)"
        if self.limit == "ScaleUpLimit" and self.desired != self.stabilized:
            text += f"; rate limit allows {self.scale_up_limit} this sync"
        elif self.limit in ("TooManyReplicas", "TooFewReplicas", "ScaleDownLimit") and self.desired != self.stabilized:
            text += f"; clamped to {self.desired} ({self.limit})"
        return text + f" -> {self.desired}"


@dataclass
class _Stamped:
    at: float
    value: int


@dataclass
class Hpa:
    """One HPA object and the controller's memory of it (recommendations, scale events).

    ``sync(now, current, metric)`` is one reconcile at time ``now``; the
    caller schedules it every ``settings.sync_period`` seconds.
    """

    scaled: ScaledObject
    settings: HpaSettings = field(default_factory=HpaSettings)
    _recommendations: list[_Stamped] = field(default_factory=list, repr=False)
    _ups: list[_Stamped] = field(default_factory=list, repr=False)
    _downs: list[_Stamped] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.min_replicas = self.scaled.hpa_min_replicas
        self.max_replicas = self.scaled.max_replica_count
        self.tolerances = tolerances_for(self.scaled.behavior, self.settings)
        self.scale_up, self.scale_down = _filled_rules(self.scaled.behavior, self.settings)

    def sync(self, now: float, current: int, metric: int) -> HpaDecision:
        """Reconcile once: the desired count for ``current`` replicas and a metric reading."""
        if not self._recommendations:  # recordInitialRecommendation
            self._recommendations.append(_Stamped(now, current))
        if current == 0 and self.min_replicas != 0:
            return HpaDecision(now, current, metric, desired=0, guard="disabled")
        if current > self.max_replicas:
            decision = HpaDecision(now, current, metric, desired=self.max_replicas, guard="above-max")
        elif current < self.min_replicas:
            decision = HpaDecision(now, current, metric, desired=self.min_replicas, guard="below-min")
        else:
            decision = self._from_metric(now, current, metric)
        if decision.changed:
            self._store_scale_event(now, current, decision.desired)
        return decision

    def propose(self, current: int, metric: int) -> Proposal:
        """The replica calculator's proposal for one reading (no stabilisation, no limits)."""
        target = self.scaled.trigger.queue_length
        if self.scaled.trigger.metric_type == "Value":
            return value_proposal(metric, target, current, self.tolerances)
        return average_value_proposal(metric, target, current, self.tolerances)

    def _from_metric(self, now: float, current: int, metric: int) -> HpaDecision:
        proposal = self.propose(current, metric)
        if self.scale_up is None:
            stabilized = self._stabilize(now, proposal.replicas)
            desired, limit, up_limit = self._limit(current, stabilized)
        else:
            stabilized = self._stabilize_with_behavior(now, current, proposal.replicas)
            desired, limit, up_limit = self._limit_with_behavior(now, current, stabilized)
        return HpaDecision(now, current, metric, desired, proposal=proposal, tolerances=self.tolerances,
                           stabilized=stabilized, limit=limit, scale_up_limit=up_limit)

    # --- without a behavior: horizontal.go normalizeDesiredReplicas ---------------

    def _stabilize(self, now: float, proposal: int) -> int:
        cutoff = now - self.settings.downscale_stabilization
        kept = [rec for rec in self._recommendations if not rec.at < cutoff]
        best = max([proposal, *(rec.value for rec in kept)])
        self._recommendations = [*kept, _Stamped(now, proposal)]
        return best

    def _limit(self, current: int, desired: int) -> tuple[int, str, int]:
        up_limit = int(max(SCALE_UP_LIMIT_FACTOR * float(current), SCALE_UP_LIMIT_MINIMUM))
        if self.max_replicas > up_limit:
            highest, reason = up_limit, "ScaleUpLimit"
        else:
            highest, reason = self.max_replicas, "TooManyReplicas"
        if desired < self.min_replicas:
            return self.min_replicas, "TooFewReplicas", up_limit
        if desired > highest:
            return highest, reason, up_limit
        return desired, "DesiredWithinRange", up_limit

    # --- with a behavior: normalizeDesiredReplicasWithBehaviors ---------------------

    def _stabilize_with_behavior(self, now: float, current: int, proposal: int) -> int:
        assert self.scale_up is not None and self.scale_down is not None
        up_cutoff = now - self.scale_up.stabilization_window_seconds
        down_cutoff = now - self.scale_down.stabilization_window_seconds
        up = down = proposal
        for rec in self._recommendations:
            if rec.at > up_cutoff:
                up = min(rec.value, up)
            if rec.at > down_cutoff:
                down = max(rec.value, down)
        kept = [rec for rec in self._recommendations if not (rec.at < up_cutoff and rec.at < down_cutoff)]
        self._recommendations = [*kept, _Stamped(now, proposal)]
        recommendation = current
        if recommendation < up:
            recommendation = up
        if recommendation > down:
            recommendation = down
        return recommendation

    def _limit_with_behavior(self, now: float, current: int, desired: int) -> tuple[int, str, int | None]:
        assert self.scale_up is not None and self.scale_down is not None
        if desired > current:
            up_limit = max(self._rate_limit(now, current, self.scale_up, up=True), current)
            if self.max_replicas > up_limit:
                highest, reason = up_limit, "ScaleUpLimit"
            else:
                highest, reason = self.max_replicas, "TooManyReplicas"
            if desired > highest:
                return highest, reason, up_limit
            return desired, "DesiredWithinRange", up_limit
        if desired < current:
            down_limit = min(self._rate_limit(now, current, self.scale_down, up=False), current)
            if self.min_replicas < down_limit:
                lowest, reason = down_limit, "ScaleDownLimit"
            else:
                lowest, reason = self.min_replicas, "TooFewReplicas"
            if desired < lowest:
                return lowest, reason, None
        return desired, "DesiredWithinRange", None

    def _rate_limit(self, now: float, current: int, rules: ScalingRules, *, up: bool) -> int:
        """calculateScaleUpLimitWithScalingRules / calculateScaleDownLimitWithBehaviors."""
        if rules.select_policy == "Disabled":
            return current
        pick_smallest = (rules.select_policy == "Min") == up
        result = INT32_MAX if pick_smallest else INT32_MIN
        assert rules.policies is not None
        for policy in rules.policies:
            added = _change_within(self._ups, now, policy.period_seconds)
            removed = _change_within(self._downs, now, policy.period_seconds)
            start = current - added + removed
            if up:
                proposed = start + policy.value if policy.type == "Pods" else \
                    math.ceil(float(start) * (1 + float(policy.value) / 100))
            else:
                proposed = start - policy.value if policy.type == "Pods" else \
                    int(float(start) * (1 - float(policy.value) / 100))
            result = min(result, proposed) if pick_smallest else max(result, proposed)
        return result

    def _store_scale_event(self, now: float, before: int, after: int) -> None:
        if self.scale_up is None:
            return  # without a behavior the controller keeps no scale events
        assert self.scale_down is not None
        events, rules, change = (self._ups, self.scale_up, after - before) if after > before else \
            (self._downs, self.scale_down, before - after)
        longest = max((p.period_seconds for p in rules.policies or ()), default=0)
        outdated = [n for n, event in enumerate(events) if event.at < now - longest]
        if outdated:  # like the controller, reuse the last outdated slot; the others stay
            events[outdated[-1]] = _Stamped(now, change)
        else:
            events.append(_Stamped(now, change))


def _change_within(events: list[_Stamped], now: float, period: int) -> int:
    """getReplicasChangePerPeriod: the pods changed by events strictly inside the last ``period`` s."""
    cutoff = now - period
    return sum(event.value for event in events if event.at > cutoff)


def _filled_rules(behavior: Behavior | None, settings: HpaSettings) -> tuple[ScalingRules | None, ScalingRules | None]:
    """The behavior with the API server's defaults filled in; (None, None) when there is none."""
    if behavior is None:
        return None, None
    up = _merge(behavior.scale_up, DEFAULT_SCALE_UP)
    down = _merge(behavior.scale_down, DEFAULT_SCALE_DOWN)
    if down.stabilization_window_seconds is None:  # maybeInitScaleDownStabilizationWindow
        down = ScalingRules(int(settings.downscale_stabilization), down.select_policy, down.policies, down.tolerance)
    return up, down


def _merge(given: ScalingRules | None, default: ScalingRules) -> ScalingRules:
    if given is None:
        return default
    return ScalingRules(
        stabilization_window_seconds=default.stabilization_window_seconds
        if given.stabilization_window_seconds is None else given.stabilization_window_seconds,
        select_policy=given.select_policy or default.select_policy,
        policies=given.policies if given.policies is not None else default.policies,
        tolerance=given.tolerance,
    )
