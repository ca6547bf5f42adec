"""The backend contract suite: the same pipeline behaviours on every backend.

Backends come from ``FLEETLAB_CONTRACT_BACKENDS`` (comma-separated; default
``moto,moto-server``). ``make test-localstack`` sets it to ``localstack``.
One backend is open at a time: the fixture is module-scoped and pytest
finishes one parameter before opening the next.
"""

import os

import pytest

from fleetlab.aws.backends import open_backend
from fleetlab.aws.topology import AgentClass, TopologySpec, new_prefix, provision

CONTRACT_BACKENDS = [
    name.strip() for name in os.environ.get("FLEETLAB_CONTRACT_BACKENDS", "moto,moto-server").split(",") if name.strip()
]


@pytest.fixture(scope="module", params=CONTRACT_BACKENDS)
def backend(request):
    opened = open_backend(request.param)
    yield opened
    opened.close()


@pytest.fixture
def topology(backend):
    """A fresh topology per test. On a real clock, short timeouts keep tests quick."""
    if backend.clock.virtual:
        spec = TopologySpec(agent_classes=(AgentClass("researcher", max_receive_count=3), AgentClass("coder")))
    else:
        spec = TopologySpec(
            agent_classes=(
                AgentClass("researcher", step_p95_seconds=2, max_receive_count=3),
                AgentClass("coder", step_p95_seconds=2),
            )
        )
    made = provision(backend, spec, prefix=new_prefix("ct"))
    yield made
    assert made.teardown() == []
