"""Suite-wide rules."""

import pytest

ONE_WORKER = {"tests/e2e/test_browser.py"}
"""Modules a pytest-xdist run keeps whole on one worker: the browser test shares one JupyterLab and one Chromium."""


def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist: test by test across the workers, but each module of ``ONE_WORKER`` whole on one.

    (xdist's own ``--dist loadgroup`` does not group under pytest 9, which ignores the
    node id suffix it relies on.)
    """
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in ONE_WORKER else nodeid

    return OneWorkerModules(config, log)

from fleetlab.course import lab


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """pytest-xdist's workers set COLUMNS=80; without it, output is what a plain run (and a CI log) sees."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(autouse=True, scope="module")
def _no_backend_outlives_its_module():
    """A check or a lab opens a backend on demand; only one virtual clock may run per process."""
    yield
    lab.shutdown()


@pytest.fixture
def real_clock_backend(monkeypatch):
    """The ``localstack`` backend (real clock, plain boto3 over HTTP) pointed at a moto server on loopback.

    It takes LocalStack's code path, minus LocalStack: for tests that must run on wall time.
    """
    from moto.server import ThreadedMotoServer

    from fleetlab.backends.backend import open_backend

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    monkeypatch.setenv("LOCALSTACK_ENDPOINT", f"http://{host}:{port}")
    for variable in ("FLEETLAB_DYNAMODB_ENDPOINT", "FLEETLAB_S3_ENDPOINT"):
        monkeypatch.delenv(variable, raising=False)
    backend = open_backend("localstack")
    try:
        yield backend
    finally:
        backend.close()
        server.stop()
