"""The HPA against hand-worked cases: tolerance band, stabilisation, rate limits, clamps and guards."""

from __future__ import annotations

import pytest

from fleetlab.composition.scaling.hpa import Hpa, HpaSettings
from fleetlab.composition.scaling.manifest import ScalingRules

from .builders import behavior, pods, so

# queueLength 5 and 10 replicas: the band 0.9-1.1 is a metric of 45 to 55 messages.


@pytest.mark.parametrize("metric, proposal", [
    (55, 10),  # ratio 1.10: on the upper edge, inside the band
    (56, 12),  # 1.12: above it, ceil(56 / 5)
    (45, 10),  # 0.90: on the lower edge, inside
    (44, 9),   # 0.88: below it, ceil(44 / 5)
])
def test_the_tolerance_band_on_both_sides(metric, proposal):
    assert Hpa(so(queue_length=5)).propose(10, metric).replicas == proposal


def test_a_per_direction_tolerance_overrides_the_band():
    strict_up = Hpa(so(queue_length=5, behavior=behavior(up=ScalingRules(tolerance=0.0))))
    assert Hpa(so(queue_length=5)).propose(10, 51).replicas == 10  # 1.02 is inside the default band
    assert strict_up.propose(10, 51).replicas == 11
    loose_down = Hpa(so(queue_length=5, behavior=behavior(down=ScalingRules(tolerance=0.5))))
    assert loose_down.propose(10, 26).replicas == 10  # 0.52 is inside 0.5-1.1
    assert loose_down.propose(10, 24).replicas == 5
    assert loose_down.propose(10, 56).replicas == 12  # scale-up keeps the default 0.1


def test_the_controller_flag_sets_the_tolerance_for_both_directions():
    hpa = Hpa(so(queue_length=5), HpaSettings(tolerance=0.0))
    assert hpa.propose(10, 51).replicas == 11 and hpa.propose(10, 49).replicas == 10


def run_syncs(hpa: Hpa, metrics: dict[float, int], current: int, until: float) -> list[tuple[float, int]]:
    """Sync every 15 s with the metric in force at each time; return (time, replicas) after each sync."""
    out = []
    t = 0.0
    while t <= until:
        metric = metrics[max(k for k in metrics if k <= t)]
        current = hpa.sync(t, current, metric).desired
        out.append((t, current))
        t += 15.0
    return out


def test_scale_down_waits_for_the_stabilisation_window_a_sample_300_s_old_still_counts():
    # 50 messages keep 10 replicas (ratio 1.0) until t=15; from t=30 there are 10 (proposal 2).
    history = run_syncs(Hpa(so(queue_length=5)), {0: 50, 30: 10}, current=10, until=345)
    assert dict(history)[315] == 10  # the proposal of 10 made at t=15 is exactly 300 s old: still in
    assert dict(history)[330] == 2
    assert [t for t, n in history if n == 2][0] == 330


def test_with_a_behavior_the_window_is_strict():
    hpa = Hpa(so(queue_length=5, behavior=behavior(down=ScalingRules(stabilization_window_seconds=300))))
    history = run_syncs(hpa, {0: 50, 30: 10}, current=10, until=345)
    assert dict(history)[300] == 10 and dict(history)[315] == 2


@pytest.mark.parametrize("chosen, expected", [
    (None, [4, 8, 16, 20]),  # no behavior (KEDA's default HPA): max(2 x current, 4) per sync
    (behavior(), [5, 10, 20, 20]),  # the API's default behavior: max(+4 pods, +100 %) per 15 s
])
def test_the_scale_up_limit(chosen, expected):
    hpa = Hpa(so(queue_length=5, behavior=chosen))
    assert [n for _, n in run_syncs(hpa, {0: 100}, current=1, until=45)] == expected


def test_a_policy_period_counts_the_pods_already_added():
    slow = behavior(up=ScalingRules(policies=(pods(2, 60),)))
    history = dict(run_syncs(Hpa(so(queue_length=5, behavior=slow)), {0: 100}, current=1, until=75))
    assert [history[t] for t in (0, 15, 45, 60, 75)] == [3, 3, 3, 5, 5]


def test_clamped_to_max_replicas_and_min_replicas():
    capped = Hpa(so(queue_length=5, max_replica_count=6))
    decision = capped.sync(0, 4, 100)
    assert (decision.desired, decision.limit) == (6, "TooManyReplicas")
    floor = run_syncs(Hpa(so(queue_length=5, min_replica_count=3)), {0: 0}, current=5, until=315)
    assert floor[-1] == (315, 3)


def test_guards_before_the_metric():
    hpa = Hpa(so(queue_length=5, min_replica_count=3, max_replica_count=6))
    assert hpa.sync(0, 0, 100).desired == 0  # zero is KEDA's business
    assert hpa.sync(15, 8, 0).desired == 6  # above max: straight to max
    assert hpa.sync(30, 1, 100).desired == 3  # below min: straight to min


def test_a_value_target_scales_the_current_count():
    hpa = Hpa(so(queue_length=5, metric_type="Value"))
    assert hpa.propose(4, 20).replicas == 16  # ratio 4 x 4 replicas
    assert hpa.propose(4, 5).replicas == 4  # ratio 1.0, inside the band


def test_the_decision_explains_itself():
    decision = Hpa(so(queue_length=5)).sync(0, 1, 100)
    text = decision.reason()
    assert "usage ratio 20.000 outside 0.90-1.10" in text and "rate limit allows 4" in text and text.endswith("-> 4")
