"""Suite-wide rules."""

import re

import pytest

from fleetlab.course import lab

SPLIT_BY_LAB = "tests/grading/test_catalogues.py"
"""The one module too long for one worker: its items go out one lab and one backend at a time."""

LONGEST_FIRST = {
    "tests/e2e/test_browser.py": 140,
    f"{SPLIT_BY_LAB}::moto-server-03": 100,
    f"{SPLIT_BY_LAB}::moto-04": 95,
    "tests/test_chaos_day.py": 80,
    "tests/test_chaos_day_server.py": 60,
    "tests/grading/test_lab_notebooks.py": 60,
    "tests/grading/test_lab05_checks.py": 50,
    "tests/grading/test_notebook_conventions.py": 40,
}
"""Seconds a scope takes on a quiet two-core machine (``--durations``), for the scopes over half a minute.

Only their order matters: they go out first, so no long scope starts last and leaves the other
workers idle at the end. Every other scope is weighed at a quarter of a second per test.
"""


def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist: one module at a time per worker, so a module's fixtures are set up once,
    the longest scopes first (``LONGEST_FIRST``).

    A worker tears a module's fixtures down whenever it runs out of queued tests, so
    sending tests one by one would start the browser test's JupyterLab, the probes
    and the packaging build again and again. The catalogues go out per lab and backend.
    """
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            lab = re.search(r"\[((?:moto-server|moto)-\d\d)\.", nodeid) if module == SPLIT_BY_LAB else None
            return f"{module}::{lab.group(1)}" if lab else module

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "_longest_first", False):  # once, before the first scope goes out
                ordered = sorted(self.workqueue.items(), key=lambda item: -_weight(*item))
                self.workqueue.clear()
                self.workqueue.update(ordered)
                self._longest_first = True
            super()._assign_work_unit(node)

    return ModuleScheduling(config, log)


def _weight(scope: str, tests: dict) -> float:
    return LONGEST_FIRST.get(scope, 0.25 * len(tests))


OPT_IN = {
    "loaded_grader": "minutes of a loaded machine: `make test-loaded-grader` runs it",
    "hub": "a real JupyterHub and three learners' servers: `make test-hub` runs it",
    "sealed": "a hostile room graded by the real fleetlab grade, as root and as nobody: `make test-sealed` runs it",
}
"""Markers whose tests run only when ``-m`` names them (their make targets, which ``.ci/run`` runs)."""


def pytest_collection_modifyitems(config, items):
    """Skip the opt-in tests (``OPT_IN``) unless the marker expression asks for them."""
    asked = config.option.markexpr or ""
    for item in items:
        for marker, reason in OPT_IN.items():
            if marker not in asked and item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))


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
