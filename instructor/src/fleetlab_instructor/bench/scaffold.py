"""What the backend measurements stand on: a backend with a throwaway topology, and a fast model."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from fleetlab.backends.backend import Backend, open_backend
from fleetlab.composition.topology import Topology, TopologySpec, new_prefix, provision
from fleetlab.services.agents.model import LatencyProfile

TINY_LATENCY = LatencyProfile(p50=0.001, p95=0.002)  # seconds: the model's clock must not dominate


@contextlib.contextmanager
def provisioned(backend_name: str, label: str, spec: TopologySpec) -> Iterator[tuple[Backend, Topology]]:
    """Open ``backend_name``, provision ``spec`` under a fresh prefix; tear down and close after."""
    backend = open_backend(backend_name)
    try:
        topology = provision(backend, spec, prefix=new_prefix(label))
        try:
            yield backend, topology
        finally:
            topology.teardown()
    finally:
        backend.close()
