"""Autoscaling on queue depth: KEDA's SQS scaler and the Kubernetes HPA, exactly, and what stands on them.

=============== ================================================================
``manifest``    ScaledObject manifests read and written with PyYAML, KEDA's
                defaults filled, bad fields named by their path
``scaler``      KEDA's aws-sqs-queue scaler: the metric and activation
``keda``        KEDA's executor: scale from zero, cooldown to zero
``hpa``         the HPA controller: tolerance band, stabilisation, rate limits
``autoscaler``  KEDA and the HPA on one timeline
``sizing``      one reading explained (``fleetlab keda-size``)
``simulator``   the time-stepped fleet model for fleet-scale runs
``capacity``    Little's law and the API-call arithmetic (``fleetlab capacity``)
``tradeoff``    queueLength, step time, arrivals and bounds -> latency and cost
``realloop``    the small real loop: real queue attributes, simulated replicas
=============== ================================================================

The model and the simulator import no boto3, moto or time-machine: a
simulated fleet day has to run in seconds. Only ``realloop`` talks to a
backend.
"""

from fleetlab.composition.scaling.autoscaler import Autoscaler, replicas_over_time
from fleetlab.composition.scaling.hpa import HpaSettings
from fleetlab.composition.scaling.manifest import (
    ScaledObject,
    load_scaled_object,
    parse_scaled_object,
    save_scaled_object,
    scaled_object,
)
from fleetlab.composition.scaling.scaler import QueueAttributes
from fleetlab.composition.scaling.sizing import size

__all__ = [
    "Autoscaler",
    "HpaSettings",
    "QueueAttributes",
    "ScaledObject",
    "load_scaled_object",
    "parse_scaled_object",
    "replicas_over_time",
    "save_scaled_object",
    "scaled_object",
    "size",
]
