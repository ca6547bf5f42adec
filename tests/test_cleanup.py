"""What a dead kernel leaves behind, and the sweep that removes it (``fleetlab cleanup``)."""

import json

import pytest

from fleetlab.backends import sweep
from fleetlab.backends.backend import Backend, open_backend
from fleetlab.backends.fidelity import probe
from fleetlab.backends.resources import Resources
from fleetlab.cli import cleanup as cleanup_command
from fleetlab.cli import main
from fleetlab.composition.topology import Topology, TopologySpec, new_prefix, provision
from fleetlab.core.clock import RealClock
from fleetlab.core.errors import InvalidInput
from fleetlab.course import lab as labs


@pytest.fixture
def backend(monkeypatch):
    """In-process moto, handed to ``fleetlab cleanup`` as if it had opened it (it stays open)."""
    opened = open_backend("moto")
    monkeypatch.setattr(cleanup_command, "open_backend", lambda name: opened)
    monkeypatch.setattr(opened, "close", lambda: None)
    yield opened
    Backend.close(opened)


def leftovers(backend, prefix):
    """What a killed kernel leaves: the topology, an archive and a role, never torn down."""
    topology = provision(backend, prefix=prefix)
    extra = Resources(backend, prefix)
    extra.archive("archive", source_arn=topology.bus_arn)
    allow = {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}
    extra.role("worker", service="lambda.amazonaws.com", policy={"Version": "2012-10-17", "Statement": [allow]})
    return topology.resources() + extra.made()


def test_the_sweep_finds_and_removes_everything_a_prefix_names_and_nothing_else(backend):
    prefix, other = new_prefix("01"), new_prefix("01")
    left = leftovers(backend, prefix)
    kept = leftovers(backend, other)

    found = sweep.find(backend, prefix)

    assert {item.kind for item in found} == {kind for kind, _ in left} | {"archive", "role"}
    assert sorted(item.name.split(" ")[0] for item in found) == sorted(name for _, name in left)
    assert sweep.remove(backend, found) == []
    assert sweep.find(backend, prefix) == []
    assert len(sweep.find(backend, other)) == len(kept)


def test_a_learners_prefixes_carry_the_learner_so_one_sweep_removes_that_learners_resources_only(
    backend, monkeypatch
):
    monkeypatch.setenv("FLEETLAB_LEARNER", "Learner12345")
    mine = [new_prefix("01"), new_prefix("03")]
    monkeypatch.setenv("FLEETLAB_LEARNER", "bob")
    theirs = new_prefix("01")
    for prefix in mine:
        leftovers(backend, prefix)
    kept = leftovers(backend, theirs)

    assert all(prefix.startswith("fl-learner12345-") for prefix in mine) and theirs.startswith("fl-bob-01-")
    found = sweep.find(backend, "fl-learner12345-")
    assert {item.name.split(" ")[0][: len(mine[0])] for item in found} == set(mine)
    assert sweep.remove(backend, found) == []
    assert sweep.find(backend, "fl-learner12345-") == []
    assert len(sweep.find(backend, theirs)) == len(kept)


@pytest.mark.parametrize("prefix", ["", "fl-", "  fl-0 "])
def test_an_empty_or_short_prefix_is_refused(backend, prefix):
    with pytest.raises(InvalidInput) as refused:
        sweep.find(backend, prefix)
    assert refused.value.field == "prefix"


def test_cleanup_lists_without_yes_and_deletes_with_it(backend, capsys):
    prefix = new_prefix("02")
    left = leftovers(backend, prefix)

    assert main(["cleanup", "--prefix", prefix]) == 0
    listed = capsys.readouterr().out
    assert f"run again with --yes to delete these {len(left)}" in listed
    assert len(sweep.find(backend, prefix)) == len(left)  # listing deletes nothing

    assert main(["cleanup", "--prefix", prefix, "--yes"]) == 0
    assert f"deleted {len(left)} of {len(left)}" in capsys.readouterr().out
    assert sweep.find(backend, prefix) == []


def test_cleanup_refuses_a_short_prefix_naming_the_flag(capsys):
    assert main(["cleanup", "--prefix", "fl"]) == 2
    assert "'--prefix': must be at least 6 characters" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "shown"), [("aws", True), ("localstack", True), ("moto", False)])
def test_the_banner_prints_the_cleanup_command_where_resources_outlive_the_kernel(monkeypatch, name, shown):
    def refuse(service, config):
        raise AssertionError(f"the banner must not call {service}")

    backend = Backend(name=name, region="us-east-1", clock=RealClock(), make_client=refuse)
    aws_table = probe(Backend(name="aws", region="us-east-1", clock=RealClock(), make_client=refuse))
    monkeypatch.setattr(labs.Lab, "fidelity", lambda self: aws_table)
    monkeypatch.setattr(labs, "cached", lambda backend: aws_table)
    topology = Topology(backend=backend, prefix="fl-01-abc123-", spec=TopologySpec())
    text = labs.banner(labs.Lab(id="01", backend=backend, topology=topology, fleet=None))
    command = f"fleetlab cleanup --prefix fl-01-abc123- --backend {name} --yes"
    assert (command in text) is shown
    assert json.dumps(text)  # one printable string
