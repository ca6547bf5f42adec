"""Lab 05 checks: queueLength from a pod's measured concurrency (``queue_length``), the HPA's sync
over a burst (``burst``), a fleet capped below the provider's quota (``max_replicas``), and a
fleet's in-flight steps and daily API bill (``bill``). Each module registers its check on import;
``manifests`` reads a learner's setting as KEDA reads an applied ScaledObject."""

from fleetlab.course.checks.lab05 import bill, burst, max_replicas, queue_length

__all__ = ["bill", "burst", "max_replicas", "queue_length"]
