"""``fleetlab.start`` refuses a lab the course does not have, before it opens or makes anything."""

from pathlib import Path

import pytest

import fleetlab
from fleetlab.core.errors import InvalidInput
from fleetlab.course import lab

NOTEBOOK_LABS = sorted(path.name[:2] for path in (Path(__file__).resolve().parents[1] / "labs").glob("*.ipynb"))


@pytest.fixture
def nothing_opens(monkeypatch):
    monkeypatch.setattr(lab, "open_backend", lambda backend=None: pytest.fail("an unknown lab opened a backend"))


@pytest.mark.parametrize("lab_id", ["99", "100", -1, "lab01", "1.0", True])
def test_an_unknown_lab_is_refused_naming_lab_and_listing_the_labs(nothing_opens, lab_id):
    with pytest.raises(InvalidInput) as refused:
        fleetlab.start(lab_id, quiet=True)
    assert refused.value.field == "lab"
    assert f"there is no lab {lab_id!r}; the labs are {', '.join(NOTEBOOK_LABS)}" in str(refused.value)


def test_an_unknown_lab_is_refused_before_the_real_aws_gate(nothing_opens, monkeypatch):
    monkeypatch.delenv("FLEETLAB_ALLOW_REAL_AWS", raising=False)
    with pytest.raises(InvalidInput, match="there is no lab '99'"):
        fleetlab.start("99", backend="aws", quiet=True)



@pytest.mark.parametrize("given", ["3", 3, "03", " 3 "])
def test_a_lab_is_found_by_one_digit_or_two(given):
    started = fleetlab.start(given, quiet=True)
    try:
        assert started.id == "03"
        assert started.topology.prefix.startswith("fl-03-")
    finally:
        started.close()
