"""KEDA and the HPA on one timeline: a burst, hand-worked, poll by poll and sync by sync."""

from __future__ import annotations

from fleetlab.composition.scaling.autoscaler import Autoscaler, replicas_over_time
from fleetlab.composition.scaling.hpa import HpaSettings
from fleetlab.composition.scaling.scaler import QueueAttributes

from .builders import so


def burst_then_quiet(t: float) -> QueueAttributes:
    """100 messages until t=200, then none."""
    return QueueAttributes(100 if t < 200 else 0)


def test_a_burst_rises_by_the_rate_limit_and_falls_to_zero_after_the_cooldown():
    rows = replicas_over_time(so(queue_length=5), burst_then_quiet, until=700)
    changes = [(at, actor, after) for at, actor, before, after in rows if before != after]
    assert changes == [
        (0, "keda", 1),  # activation: 0 -> max(minReplicaCount, 1)
        (0, "hpa", 4),  # ceil(100 / 5) = 20, limited to max(2 x 1, 4)
        (15, "hpa", 8),
        (30, "hpa", 16),
        (45, "hpa", 20),
        # last active poll at 180; 180 + 300 = 480 is not past the cooldown, so the poll at 510 scales to zero.
        # The HPA would have come down at 495 only if 20 had left its 300 s window: the proposal of 20 at 195 has not.
        (510, "keda", 0),
    ]


def test_at_the_same_instant_keda_acts_before_the_hpa():
    rows = replicas_over_time(so(queue_length=5), burst_then_quiet, until=0)
    assert [(actor, before, after) for _, actor, before, after in rows] == [("keda", 0, 1), ("hpa", 1, 4)]


def test_activation_holds_a_trickle_at_zero():
    quiet = so(queue_length=5, activation_queue_length=3)
    rows = replicas_over_time(quiet, lambda t: QueueAttributes(3), until=600)
    assert all(after == 0 for *_, after in rows)
    rows = replicas_over_time(quiet, lambda t: QueueAttributes(4), until=0)
    assert rows[-1][-1] == 1  # 4 > 3: active, and ceil(4 / 5) = 1


def test_without_in_flight_messages_the_fleet_scales_down_mid_work():
    # 100 steps received at once and still running: visible 0, in flight 100.
    working = lambda t: QueueAttributes(100 if t < 60 else 0, 0 if t < 60 else 100)  # noqa: E731
    counted = replicas_over_time(so(queue_length=5), working, until=900, replicas=20)
    ignored = replicas_over_time(so(queue_length=5, scale_on_in_flight=False), working, until=900, replicas=20)
    assert counted[-1][-1] == 20
    assert ignored[-1][-1] == 0  # KEDA sees an idle queue and scales the busy fleet to zero


def test_cached_metrics_give_the_hpa_keda_s_last_poll():
    reads = []

    def reading() -> QueueAttributes:
        reads.append(1)
        return QueueAttributes(40)

    fresh = Autoscaler(so(queue_length=5), HpaSettings(), replicas=1)
    fresh.advance(30, reading)
    assert len(reads) == 5  # polls at 0 and 30, syncs at 0, 15 and 30
    reads.clear()
    cached = Autoscaler(so(queue_length=5, use_cached_metrics=True), HpaSettings(), replicas=1)
    cached.advance(30, reading)
    assert len(reads) == 2


def test_a_replacement_hpa_sync_gets_the_counts_and_sets_the_replicas():
    seen = []

    def sync(at, current, reading):
        seen.append((at, current, reading))
        return Autoscaler(so(queue_length=5), HpaSettings(), replicas=current).hpa.sync(at, current, 7)

    scaler = Autoscaler(so(queue_length=5), HpaSettings(), replicas=0, hpa_step=sync)
    scaler.advance(15, lambda: QueueAttributes(30, 12))
    # KEDA's poll at 0 wakes the fleet; the replacement sync runs at 0 and 15 on the queue's counts, not the metric
    assert seen == [(0, 1, QueueAttributes(30, 12)), (15, 2, QueueAttributes(30, 12))]
    assert scaler.replicas == 2  # ceil(7 / 5), as the replacement decided from its own metric
