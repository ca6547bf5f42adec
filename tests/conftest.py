"""Suite-wide rules."""

import pytest

from fleetlab import lab


@pytest.fixture(autouse=True, scope="module")
def _no_backend_outlives_its_module():
    """A check or a lab opens a backend on demand; only one virtual clock may run per process."""
    yield
    lab.shutdown()
