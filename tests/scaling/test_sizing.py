"""One reading explained (what ``fleetlab keda-size`` prints)."""

from __future__ import annotations

import pytest

from fleetlab.composition.scaling.scaler import QueueAttributes
from fleetlab.composition.scaling.sizing import size
from fleetlab.core.errors import InvalidInput

from .builders import so


def texts(sizing) -> dict[str, str]:
    return {step.name: step.text for step in sizing.steps}


def test_without_a_current_count_the_target_and_the_clamp():
    sizing = size(so(queue_length=10, min_replica_count=2, max_replica_count=60), QueueAttributes(30, 25))
    assert sizing.desired == 6
    assert texts(sizing)["target"] == "ceil(55 / queueLength 10) = 6 replicas"
    assert texts(sizing)["clamp"] == "HPA bounds [2, 60] -> 6"
    capped = size(so(queue_length=10, max_replica_count=4), QueueAttributes(300))
    assert capped.desired == 4


def test_inactive_with_min_zero_means_zero():
    sizing = size(so(activation_queue_length=5), QueueAttributes(3))
    assert not sizing.active and sizing.desired == 0 and "scales to 0" in texts(sizing)["zero"]


def test_with_a_current_count_the_tolerance_band_keeps_it():
    sizing = size(so(queue_length=5), QueueAttributes(53), current=10)
    assert sizing.desired == 10 and "inside the tolerance band 0.90-1.10" in texts(sizing)["hpa"]


def test_from_zero_activation_then_the_rate_limit():
    sizing = size(so(queue_length=5), QueueAttributes(100), current=0)
    assert sizing.desired == 4
    assert texts(sizing)["keda"].endswith("scale 0 -> 1")
    assert "rate limit allows 4" in texts(sizing)["hpa"]
    assert (sizing.settles_at, sizing.settle_seconds) == (20, 45)
    assert [step[1:] for step in sizing.path] == [("keda", 0, 1), ("hpa", 1, 4), ("hpa", 4, 8), ("hpa", 8, 16),
                                                  ("hpa", 16, 20)]


def test_a_scale_down_waits_for_the_window():
    sizing = size(so(queue_length=5), QueueAttributes(2), current=10)
    assert sizing.desired == 10 and (sizing.settles_at, sizing.settle_seconds) == (1, 315)
    assert "300 s" in texts(sizing)["stabilisation"]


def test_a_quiet_queue_cools_down_to_zero():
    sizing = size(so(queue_length=5), QueueAttributes(0), current=4)
    assert sizing.settles_at == 0 and sizing.path[-1] == (330, "keda", 1, 0)


def test_a_value_target_needs_the_current_count():
    with pytest.raises(InvalidInput) as raised:
        size(so(metric_type="Value"), QueueAttributes(10))
    assert raised.value.field == "current"


def test_json_is_plain_data():
    data = size(so(queue_length=5), QueueAttributes(100), current=0).to_json()
    assert data["desired"] == 4 and data["path"][0] == {"at": 0.0, "actor": "keda", "from": 0, "to": 1}
    assert data["steps"][0] == {"step": "metric", "text": "100 = 100 visible + 0 in flight"}
