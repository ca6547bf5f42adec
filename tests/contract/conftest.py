"""The backend contract suite: the same pipeline behaviours on every backend.

Backends come from ``FLEETLAB_CONTRACT_BACKENDS`` (comma-separated; default
``moto,moto-server``). ``make test-localstack`` sets it to ``localstack``.
``aws`` runs it on a real account behind the same opt-in as the labs: the run
prints the suite's cost estimate first, and without ``FLEETLAB_ALLOW_REAL_AWS=1``
(or without credentials) it stops there with the reason, before any test runs.
One backend is open at a time: the fixture is module-scoped and pytest
finishes one parameter before opening the next.
"""

import pytest

from fleetlab.backends.backend import open_backend
from fleetlab.composition.cost import require_opt_in
from fleetlab.composition.topology import AgentClass, TopologySpec, new_prefix, provision
from fleetlab.core.errors import FleetlabError
from fleetlab.core.settings import settings

CONTRACT_BACKENDS = list(settings().contract_backends)


@pytest.fixture(scope="module", params=CONTRACT_BACKENDS)
def backend(request):
    opened = _open_real_aws(request.config) if request.param == "aws" else open_backend(request.param)
    yield opened
    opened.close()


def _open_real_aws(config):
    """Print the suite's estimate and open ``aws``; stop the whole run (exit 2) when that is refused."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")

    def show(text):
        with capture.global_and_fixture_disabled():
            reporter.write_line("\n" + text)

    try:
        require_opt_in("contract", say=show)
        return open_backend("aws")
    except FleetlabError as exc:
        pytest.exit(f"the backend contract suite on aws: {exc}", returncode=2)


@pytest.fixture
def topology(backend):
    """A fresh topology per test. On a real clock, 2 s visibility timeouts of service time keep tests quick."""
    if backend.clock.virtual:
        spec = TopologySpec(agent_classes=(AgentClass("researcher", max_receive_count=3), AgentClass("coder")))
    else:
        p95 = 4 * backend.clock.scale // 3  # x1.5: two seconds of service time, in lab seconds
        spec = TopologySpec(
            agent_classes=(
                AgentClass("researcher", step_p95_seconds=p95, max_receive_count=3),
                AgentClass("coder", step_p95_seconds=p95),
            )
        )
    made = provision(backend, spec, prefix=new_prefix("ct"))
    yield made
    assert made.teardown() == []
