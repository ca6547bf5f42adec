"""Builders the scaling tests share."""

from __future__ import annotations

from fleetlab.composition.scaling.manifest import Behavior, ScalingPolicy, ScalingRules, scaled_object

QUEUE = "https://sqs.us-east-1.amazonaws.com/111122223333/agent-researcher"


def so(**settings):
    """A ScaledObject on a placeholder queue with ``settings`` (queue_length=10, max_replica_count=6, ...)."""
    return scaled_object("worker", QUEUE, **settings)


def behavior(up: ScalingRules | None = None, down: ScalingRules | None = None) -> Behavior:
    return Behavior(scale_up=up, scale_down=down)


def pods(value: int, period: int) -> ScalingPolicy:
    return ScalingPolicy("Pods", value, period)
