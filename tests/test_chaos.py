"""A seeded, bounded chaos run: 1,000 steps through the fleet with workers crashing at every point.

The idempotent fleet must lose nothing and duplicate nothing; the same run with a
naive consumer must show duplicates. Counts are exact: the faults are seeded and
the virtual clock makes the run deterministic.
"""

import json

import pytest

from fleetlab.aws.backends import open_backend
from fleetlab.events.envelope import Envelope
from fleetlab.faults import FaultPlan
from fleetlab.agents.model import FakeModel
from fleetlab.pipeline import Fleet
from fleetlab.aws.topology import new_prefix, provision

STEPS = 1_000
CHUNK = 50  # keep queues shallow: moto's calls slow down with queue depth
SEED = 20261130


@pytest.fixture(scope="module")
def backend():
    opened = open_backend("moto")
    yield opened
    opened.close()


def chaos_run(backend, *, naive: bool):
    topology = provision(backend, prefix=new_prefix("chaos"))
    fleet = Fleet(backend, topology, model=FakeModel(seed=SEED), faults=FaultPlan.chaos(seed=SEED, rate=0.05))
    if naive:
        for worker in fleet.workers.values():
            worker.handler = lambda delivery: delivery.record_effect(kind="step")
    steps = [
        Envelope(f"conv-{n}-step-1", str(n), 1, ("researcher", "coder")[n % 2]) for n in range(STEPS)
    ]
    advance = max(q.visibility_timeout for q in topology.queues.values()) + 1
    for start in range(0, STEPS, CHUNK):
        fleet.enqueue(*steps[start : start + CHUNK])
        fleet.run(advance=advance, idle_polls=6)
    parked = parked_traces(backend, topology)
    crashes = sum(1 for h in (hop for t in fleet.tracer.trace_ids() for hop in fleet.tracer.timeline(t)) if h.name == "crashed")
    summary = fleet.ledger.summary(expected={s.trace_id for s in steps} - parked)
    assert topology.teardown() == []
    return summary, parked, crashes


def parked_traces(backend, topology):
    sqs = backend.client("sqs")
    parked = set()
    for queue in topology.queues.values():
        while messages := sqs.receive_message(QueueUrl=queue.dlq_url, MaxNumberOfMessages=10).get("Messages", []):
            parked |= {json.loads(m["Body"])["detail"]["trace_id"] for m in messages}
            sqs.delete_message_batch(
                QueueUrl=queue.dlq_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
            )
    return parked


def test_the_idempotent_fleet_loses_and_duplicates_nothing(backend):
    summary, parked, crashes = chaos_run(backend, naive=False)
    assert crashes == 127  # seeded: the same crashes every run
    assert (summary.lost, summary.duplicated, len(parked)) == (0, 0, 0)
    assert summary.effects == STEPS


def test_the_same_chaos_duplicates_effects_without_idempotency(backend):
    summary, parked, crashes = chaos_run(backend, naive=True)
    assert crashes == 121
    assert (summary.lost, summary.duplicated, len(parked)) == (0, 44, 0)
