"""KEDA's scaler and executor against hand-worked cases: the metric, activation, from zero, cooldown to zero."""

from __future__ import annotations

import pytest

from fleetlab.composition.scaling.keda import KedaOperator
from fleetlab.composition.scaling.scaler import QueueAttributes, explain_metric, is_active, queue_length
from fleetlab.core.errors import InvalidInput

from .builders import so


@pytest.mark.parametrize("settings, expected", [
    ({}, 12 + 5),  # default: visible + in flight
    ({"scale_on_in_flight": False}, 12),
    ({"scale_on_delayed": True}, 12 + 5 + 3),
    ({"scale_on_in_flight": False, "scale_on_delayed": True}, 12 + 3),
])
def test_the_metric_counts_what_the_trigger_says(settings, expected):
    assert queue_length(so(**settings).trigger, QueueAttributes(12, 5, 3)) == expected


def test_the_metric_is_spelled_out():
    text = explain_metric(so().trigger, QueueAttributes(12, 5, 3))
    assert text == "17 = 12 visible + 5 in flight (3 delayed not counted: scaleOnDelayed is false)"


@pytest.mark.parametrize("activation, metric, active", [(0, 0, False), (0, 1, True), (10, 10, False), (10, 11, True)])
def test_activation_is_strictly_above_the_threshold(activation, metric, active):
    assert is_active(so(activation_queue_length=activation).trigger, metric) is active


def test_bad_attributes_are_named():
    with pytest.raises(InvalidInput) as raised:
        QueueAttributes.from_sqs({"ApproximateNumberOfMessages": "3", "ApproximateNumberOfMessagesNotVisible": "1"})
    assert raised.value.field == "ApproximateNumberOfMessagesDelayed"
    with pytest.raises(InvalidInput, match="in_flight"):
        QueueAttributes(1, -2)


@pytest.mark.parametrize("minimum, expected", [(0, 1), (3, 3)])
def test_from_zero_keda_sets_the_larger_of_min_and_one(minimum, expected):
    decision = KedaOperator(so(min_replica_count=minimum), created_at=0).poll(0, 0, 7)
    assert decision.active and decision.target == expected


def polls(operator: KedaOperator, metrics: dict[float, int], replicas: int, until: float, every: float = 30):
    """Poll every ``every`` s; return the first time KEDA changed the count, and the count."""
    t = 0.0
    while t <= until:
        metric = metrics[max(k for k in metrics if k <= t)]
        decision = operator.poll(t, replicas, metric)
        if decision.target is not None and decision.target != replicas:
            return t, decision.target
        t += every
    return None


def test_cooldown_to_zero_runs_strictly_after_the_last_active_poll():
    # active at 0, 30, 60; quiet from 90. 60 + 300 = 360 is not past the cooldown: zero at 390.
    operator = KedaOperator(so(), created_at=0)
    assert polls(operator, {0: 4, 90: 0}, replicas=3, until=600) == (390, 0)


def test_a_shorter_cooldown_scales_to_zero_sooner():
    operator = KedaOperator(so(cooldown_period=60), created_at=0)
    assert polls(operator, {0: 4, 90: 0}, replicas=3, until=600) == (150, 0)


def test_before_any_activity_the_initial_cooldown_counts_from_creation():
    operator = KedaOperator(so(initial_cooldown_period=120), created_at=0)
    assert polls(operator, {0: 0}, replicas=2, until=600) == (150, 0)


def test_with_min_replicas_keda_never_scales_to_zero_and_restores_the_minimum():
    operator = KedaOperator(so(min_replica_count=2), created_at=0)
    assert polls(operator, {0: 0}, replicas=2, until=3600) is None
    assert operator.poll(0, 1, 0).target == 2


def test_idle_replica_count_goes_to_idle_then_straight_to_min():
    operator = KedaOperator(so(min_replica_count=2, idle_replica_count=0, cooldown_period=60), created_at=0)
    assert polls(operator, {0: 3, 30: 0}, replicas=4, until=600) == (90, 0)
    assert operator.poll(120, 0, 5).target == 2
