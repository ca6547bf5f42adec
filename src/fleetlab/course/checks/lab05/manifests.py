"""The smallest ScaledObject around a learner's setting, read as KEDA reads an applied manifest.

So an answer KEDA would refuse (queueLength "5.0", maxReplicaCount 0) is
refused here with KEDA's own rule, naming the manifest field.
"""

from __future__ import annotations

from typing import Any

from fleetlab.composition.scaling.manifest import ScaledObject, from_manifest
from fleetlab.course.experiments.scaling import MODEL_QUEUE


def applied(*, queue_length: str = "5", max_replicas: Any = 100) -> ScaledObject:
    """A ScaledObject with this queueLength (trigger metadata: a string) and maxReplicaCount. Raises InvalidInput."""
    return from_manifest({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "documents"},
        "spec": {"scaleTargetRef": {"name": "documents"}, "maxReplicaCount": max_replicas, "triggers": [{
            "type": "aws-sqs-queue",
            "metadata": {"queueURL": MODEL_QUEUE, "awsRegion": "us-east-1", "queueLength": queue_length}}]},
    })
