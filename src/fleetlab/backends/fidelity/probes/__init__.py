"""Every probe, one module per AWS service, and running them in table order.

Each probe makes its own resources under a fresh ``flprobe-<6 hex>-`` prefix
(its ``Scratch``) and deletes them afterwards, also when it fails. A probe
that fails is recorded as ``probe failed: <error>`` (not matching AWS); the
table is still built.
"""

from __future__ import annotations

from fleetlab.backends.backend import Backend
from fleetlab.backends.fidelity.probes import dynamodb, events, sqs, stepfunctions
from fleetlab.backends.fidelity.probes.base import Feature, Observation, Probe
from fleetlab.backends.fidelity.probes.scratch import Scratch
from fleetlab.backends.fidelity.table import Finding
from fleetlab.core.errors import MeasurementFailed

PROBE_FAILED = "probe failed: "

PROBES: list[Probe] = [*sqs.PROBES, *events.PROBES, *stepfunctions.PROBES, *dynamodb.PROBES]
"""Every probe, in the order its findings appear in a table."""


def features() -> tuple[Feature, ...]:
    """Every feature the probes report on, in table order."""
    return tuple(feature for probe_ in PROBES for feature in probe_.features)


def feature_ids() -> tuple[str, ...]:
    """Every feature id the probes report, in table order."""
    return tuple(feature.id for feature in features())


def measure(backend: Backend) -> tuple[Finding, ...]:
    """Every registered probe, run once on ``backend``, in registry order.

    Probes measure the services themselves: on a scaled clock they run on
    plain real time with clients that convert nothing (``at_service_time``).
    Leaves the backend's clock where it found it: the days a virtual clock
    jumps (to see TTL deletion) are taken back afterwards.
    """
    backend = backend.at_service_time()
    with backend.clock.excursion():
        return tuple(finding for probe_ in PROBES for finding in _run(probe_, backend))


def _run(probe_: Probe, backend: Backend) -> tuple[Finding, ...]:
    """Run one probe in its own scratch space; a failure becomes its findings' observation."""
    try:
        with Scratch(backend) as scratch:
            result = probe_.measure(scratch)
        observations = result if isinstance(result, tuple) else (result,)
        if len(observations) != len(probe_.features):
            raise MeasurementFailed(f"{len(observations)} observations for {len(probe_.features)} features")
    except Exception as exc:  # a probe must never take the table down with it
        failed = Observation(f"{PROBE_FAILED}{type(exc).__name__}: {exc}", False)
        observations = (failed,) * len(probe_.features)
    return tuple(feature.finding(o) for feature, o in zip(probe_.features, observations, strict=True))
