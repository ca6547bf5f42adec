"""Check ``05.burst``: the learner writes one sync of the HPA that KEDA creates,
``desired_replicas(current, visible, in_flight, queue_length, min_replicas, max_replicas)``.

The harness makes it the HPA of the small real loop: documents land on a real
queue, KEDA (the library's) wakes the fleet from zero, and every 15 s the
learner's function reads the real queue's counts and sets the replicas that
then receive its messages. Every sync is judged against the HPA's own rule on
the same reading, until the first step completes (a scale-down would bring in
the HPA's memory, its 300 s stabilisation window, which the exercise leaves
out). The first sync that differs is explained by the rule the answer missed:
in-flight messages, the tolerance band, the scale-up limit, or the clamp.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from fleetlab.composition.scaling.manifest import scaled_object
from fleetlab.composition.scaling.scaler import QueueAttributes
from fleetlab.core.errors import InvalidInput
from fleetlab.course.experiments.scaling import MODEL_QUEUE, burst
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab.course.grading.values import whole_number

TICK = 15.0  # seconds between the loop's ticks: the HPA's sync period
VISIBILITY = 300  # the queue's visibility timeout: longer than any step, so nothing comes back mid-case
TOLERANCE = 0.1
LIMIT_FACTOR, LIMIT_FLOOR = 2, 4  # one sync: at most max(2 x current, 4) replicas


@dataclass(frozen=True)
class Burst(Case):
    """Documents landing on a queue worked by pods of ``concurrency`` steps of ``step_seconds``.

    ``replicas`` run before the burst (0: KEDA wakes the fleet); ``arrivals``
    are (seconds, documents) that land later.
    """

    documents: int = 100
    queue_length: int = 5
    min_replicas: int = 0
    max_replicas: int = 100
    replicas: int = 0
    arrivals: tuple[tuple[float, int], ...] = ()
    concurrency: int = 5
    step_seconds: float = 90.0


@dataclass(frozen=True)
class _Rules:
    """The HPA's rule for one sync, with switches for the mistakes the diagnosis looks for."""

    in_flight: bool = True
    tolerance: bool = True
    limit: str = "hpa"  # "hpa": max(2c, 4); "none"; "plus4": max(c + 4, 2c); "double": 2c
    clamp_max: bool = True
    clamp_min: bool = True
    rounding: str = "ceil"  # or "floor", "round"
    replica_band: int = 0  # > 0: keep the count when the proposal is within this many replicas, not within 10% usage

    def desired(self, current: int, visible: int, in_flight: int, q: int, low: int, high: int) -> int:
        metric = visible + (in_flight if self.in_flight else 0)
        ratio = metric / (q * current)
        if self.replica_band and abs(math.ceil(metric / q) - current) <= self.replica_band:
            proposal = current
        elif self.tolerance and not self.replica_band and 1 - TOLERANCE <= ratio <= 1 + TOLERANCE:
            proposal = current
        else:
            proposal = {"ceil": math.ceil, "floor": math.floor, "round": round}[self.rounding](metric / q)
        if self.clamp_min:
            proposal = max(proposal, max(1, low))
        if self.clamp_max:
            proposal = min(proposal, high)
        limits = {"hpa": max(LIMIT_FACTOR * current, LIMIT_FLOOR), "plus4": max(current + 4, 2 * current),
                  "double": 2 * current, "none": proposal}
        return min(proposal, limits[self.limit])


HPA = _Rules()
MISTAKES = (  # (the rule the answer seems to have missed, its mistake key; the rules it followed instead)
    ("in-flight", _Rules(in_flight=False)),
    ("tolerance", _Rules(tolerance=False)),
    ("no-limit", _Rules(limit="none")),
    ("plus4", _Rules(limit="plus4")),
    ("double", _Rules(limit="double")),
    ("clamp-max", _Rules(clamp_max=False)),
    ("clamp-min", _Rules(clamp_min=False)),
    ("floor", _Rules(rounding="floor")),
    ("round", _Rules(rounding="round")),
    ("tolerance-in-replicas", _Rules(replica_band=1)),  # the diagnosis works the rule through (see _diagnosis)
)


@dataclass(frozen=True)
class _Sync:
    """One sync the learner's function made, in the shape the autoscaler records."""

    at: float
    current: int
    desired: int
    actor = "hpa"

    @property
    def changed(self) -> bool:
        return self.desired != self.current

    def reason(self) -> str:
        return f"desired_replicas -> {self.desired}"


class _Diverged(Exception):
    """The learner's sync differs from the HPA's: the diagnosis in words, and the mistake's key ("" when none)."""

    def __init__(self, diagnosis: str, mistake: str = "") -> None:
        super().__init__(diagnosis)
        self.mistake = mistake


@dataclass
class _Judge:
    """Calls the learner's function at each sync and holds it to the HPA's rule on the same reading."""

    answer: Any
    case: Burst
    path: list[tuple[float, int]] = field(default_factory=list)

    def sync(self, at: float, current: int, reading: QueueAttributes) -> _Sync:
        if current == 0:  # the HPA waits for KEDA to wake the fleet; the learner's function is not asked
            return _Sync(at, current, current)
        case = self.case
        args = (current, reading.visible, reading.in_flight, case.queue_length, case.min_replicas, case.max_replicas)
        returned = self.answer(*args)
        try:
            got = whole_number(returned, returned_by="desired_replicas", what="a whole number of replicas",
                               example="8")
        except InvalidInput as bad:
            raise _Diverged(f"{_reading(at, args)}: {bad}", "not-a-whole-number") from None
        expected = HPA.desired(*args)
        if got != expected:
            raise _Diverged(_diagnosis(at, got, expected, args), _missed(got, args))
        self.path.append((at, got))
        return _Sync(at, current, got)


def _replicas(count: int) -> str:
    return "1 replica" if count == 1 else f"{count} replicas"


def _reading(at: float, args: tuple[int, ...]) -> str:
    current, visible, in_flight = args[:3]
    return f"at +{at:g} s, with {_replicas(current)} and {visible} messages visible + {in_flight} in flight"


def _missed(got: int, args: tuple[int, ...]) -> str:
    """The first of ``MISTAKES`` whose rules set ``got`` replicas on this reading (its key); "" when none does."""
    return next((name for name, rules in MISTAKES if rules.desired(*args) == got), "")


def _diagnosis(at: float, got: int, expected: int, args: tuple[int, ...]) -> str:
    current, visible, in_flight, q, low, high = args
    head = f"{_reading(at, args)} (queueLength {q}), you set {_replicas(got)}; the HPA sets {expected}"
    missed = _missed(got, args)
    metric = visible + in_flight
    ratio = metric / (q * current)
    limit = max(LIMIT_FACTOR * current, LIMIT_FLOOR)
    why = {
        "in-flight": f"you counted only the visible messages: KEDA's metric adds the {in_flight} in flight "
                     f"(scaleOnInFlight is true by default), which pods are working right now; without them "
                     f"the fleet looks over-provisioned and shrinks mid-work",
        "tolerance": f"the usage ratio {metric} / ({q} x {current}) = {ratio:.2f} is inside the tolerance band "
                     f"0.9-1.1: the HPA keeps the current count rather than chase a change that small",
        "no-limit": f"one sync takes the fleet to at most max(2 x {current}, 4) = {limit} replicas "
                    f"(the scale-up limit); the rest comes at the next syncs",
        "plus4": f"without a behavior in the ScaledObject the HPA allows at most max(2 x {current}, 4) = {limit} "
                 f"replicas after a sync; +4 pods or +100% is the policy of a ScaledObject that sets one",
        "double": f"the scale-up limit is max(2 x {current}, 4) = {limit}: never less than 4 replicas, "
                  f"even from {current}",
        "clamp-max": f"maxReplicaCount is {high}: the HPA never asks for more",
        "clamp-min": f"minReplicaCount is {low}: the HPA never goes below max(1, minReplicaCount) = {max(1, low)}",
        "floor": f"round the proposal up: ceil({metric} / {q}) = {math.ceil(metric / q)}; rounding down "
                 f"leaves messages nobody has room for",
        "round": f"round the proposal up: ceil({metric} / {q}) = {math.ceil(metric / q)}, not to the nearest",
    }.get(missed) or _worked(args)
    return f"{head}: {why}"


def _worked(args: tuple[int, ...]) -> str:
    """The HPA's rule worked through for one reading."""
    current, visible, in_flight, q, low, high = args
    metric = visible + in_flight
    ratio = metric / (q * current)
    inside = 1 - TOLERANCE <= ratio <= 1 + TOLERANCE
    proposal = current if inside else math.ceil(metric / q)
    return (f"the metric is {visible} + {in_flight} = {metric}; the ratio {metric} / ({q} x {current}) = "
            f"{ratio:.2f} is {'inside' if inside else 'outside'} 0.9-1.1, so the proposal is {proposal}; "
            f"then at least max(1, {low}), at most maxReplicaCount {high} and max(2 x {current}, 4) = "
            f"{max(LIMIT_FACTOR * current, LIMIT_FLOOR)}")


@register(
    "05.burst",
    title="Predict the replicas over a burst, sync by sync",
    function="desired_replicas",
    parameters="current, visible, in_flight, queue_length, min_replicas, max_replicas",
    points=3,
    public=[
        Burst("62 documents land on an empty queue (queueLength 5, pods of 5, maxReplicaCount 50)",
              documents=62, queue_length=5, max_replicas=50),
        Burst("10 replicas, 52 documents, then 13 and 3 more (queueLength 5, pods of 5)",
              documents=52, replicas=10, arrivals=((30.0, 13), (60.0, 3)), max_replicas=40),
        Burst("60 documents against maxReplicaCount 10 (queueLength 4, pods of 4, minReplicaCount 2)",
              documents=60, queue_length=4, concurrency=4, min_replicas=2, max_replicas=10),
    ],
    hidden_cases=4,
    timeout=30,
    implemented_by=(
        "fleetlab.composition.scaling.hpa.Hpa.sync",
        "fleetlab.composition.scaling.hpa.Hpa.propose",
        "fleetlab.composition.scaling.hpa.average_value_proposal",
    ),
)
def check_burst(answer: Any, case: Burst, ctx: Any) -> CaseOutcome:
    """Run a burst on a real queue with the learner's function as the HPA; judge every sync."""
    judge = _Judge(answer, case)
    scaled = scaled_object("documents", MODEL_QUEUE, queue_length=case.queue_length,
                           min_replica_count=case.min_replicas, max_replica_count=case.max_replicas)
    try:
        burst(ctx.backend, scaled, case.documents, step_seconds=case.step_seconds, concurrency=case.concurrency,
              visibility_timeout=VISIBILITY, arrivals=case.arrivals, replicas=case.replicas, tick=TICK,
              max_seconds=case.step_seconds - TICK, hpa_step=judge.sync, prefix=ctx.fresh_prefix())
    except _Diverged as diverged:
        return CaseOutcome(False, str(diverged), diverged.mistake)
    counts = " -> ".join(str(count) for _, count in judge.path)
    return CaseOutcome(True, f"{len(judge.path)} syncs, each as the HPA sets it ({counts})")
