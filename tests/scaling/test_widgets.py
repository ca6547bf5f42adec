"""Lab 05's explorer: a slider move reruns the model and changes what it shows; a refused setting says why."""

from __future__ import annotations

from fleetlab.display.scaling_widgets import tradeoff_explorer


def controls(explorer) -> tuple[dict, object]:
    sliders = {child.description: child for child in explorer.children if hasattr(child, "step")}
    (text,) = [child for child in explorer.children if type(child).__name__ == "HTML"]
    return sliders, text


def test_moving_queue_length_changes_latency_and_cost():
    explorer = tradeoff_explorer(minutes=20)
    sliders, text = controls(explorer)
    first = text.value
    assert "p95 step latency" in first and "pod-hours" in first
    sliders["queueLength"].value = 25
    assert text.value != first


def test_a_refused_setting_shows_its_reason():
    sliders, text = controls(tradeoff_explorer(minutes=5))
    sliders["maxReplicaCount"].value = 2
    sliders["minReplicaCount"].value = 5
    assert "not a valid setting" in text.value and "spec.minReplicaCount" in text.value
