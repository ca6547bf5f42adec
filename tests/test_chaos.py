"""A seeded, bounded chaos run through the fleet: workers crash at every crash point, the model
throttles now and then, and a few inputs are poison.

The idempotent fleet loses nothing (every step took effect, or sits in a DLQ after exhausting its
receives), duplicates nothing, and parks every poison message without its effect; the same chaos
against a naive consumer duplicates. Faults are seeded and the virtual clock bounds the run, so
each count is exact. (The 1,000-step run that holds every invariant is the chaos day's:
tests/test_chaos_day.py.)
"""

import json
from collections import Counter
from dataclasses import dataclass

import pytest

from fleetlab.backends.backend import open_backend
from fleetlab.composition.pipeline import Fleet
from fleetlab.composition.topology import new_prefix, provision
from fleetlab.core.faults import FaultPlan
from fleetlab.core.ledger import LedgerSummary
from fleetlab.services.agents.model import FakeModel
from fleetlab.services.events.envelope import Envelope
from fleetlab.services.sqs import dlq
from fleetlab.services.state.responses import ResponseStore

STEPS = 300  # enough for the seed's chaos to reach every crash point and two poison inputs
NAIVE_STEPS = 200  # enough for the naive consumer's duplicates to show
CHUNK = 50  # keep queues shallow: moto's calls slow down with queue depth
SEED = 20261130
POISON = frozenset(f"conv-{n}-step-1" for n in (7, 123, 456, 789, 998))


@dataclass(frozen=True)
class Chaos:
    summary: LedgerSummary
    parked: set[str]
    took_effect: set[str]
    crashes: Counter
    transient_failures: int
    failed_for_good: set[str]
    diagnoses: dict[str, str]
    answers: dict[str, object]


@pytest.fixture(scope="module")
def backend():
    opened = open_backend("moto")
    yield opened
    opened.close()


def chaos_run(backend, steps, *, naive: bool, last_attempt: bool = False) -> Chaos:
    topology = provision(backend, prefix=new_prefix("chaos"))
    model = FakeModel(seed=SEED, transient_failure_rate=0.02, poison=POISON)
    responses = ResponseStore(backend.client("dynamodb"), topology.table_name, backend.clock) if last_attempt else None
    fleet = Fleet(backend, topology, model=model, faults=FaultPlan.chaos(seed=SEED, rate=0.05), responses=responses,
                  last_attempt=last_attempt)
    if naive:
        for worker in fleet.workers.values():
            worker.handler = lambda delivery: delivery.record_effect(kind="step")
    envelopes = [Envelope(f"conv-{n}-step-1", str(n), 1, ("researcher", "coder")[n % 2]) for n in range(steps)]
    advance = max(q.visibility_timeout for q in topology.queues.values()) + 1
    for start in range(0, steps, CHUNK):
        fleet.enqueue(*envelopes[start : start + CHUNK])
        fleet.run(advance=advance, idle_polls=6)
    hops = [hop for trace in fleet.tracer.trace_ids() for hop in fleet.tracer.timeline(trace)]
    # read before parked_traces empties the DLQs (only the budget's run asks: its records are under 12 hours old)
    diagnoses = {record.trace_id: record.error_code for q in topology.queues.values()
                 for record in dlq.parked(backend, q.dlq_url)} if last_attempt else {}
    answers = {e.trace_id: responses.get(e.trace_id) for e in envelopes} if responses else {}
    chaos = Chaos(
        summary=fleet.ledger.summary(expected={e.trace_id for e in envelopes} - POISON),
        parked=parked_traces(backend, topology),
        diagnoses=diagnoses,
        answers=answers,
        took_effect={effect.key for effect in fleet.ledger.effects()},
        crashes=Counter(h.attrs["point"] for h in hops if h.name == "crashed"),
        transient_failures=sum(1 for h in hops if h.name == "model_failed" and h.attrs["transient"]),
        failed_for_good={h.trace_id for h in hops if h.name == "model_failed" and not h.attrs["transient"]},
    )
    assert topology.teardown() == []
    return chaos


def parked_traces(backend, topology) -> set[str]:
    sqs = backend.client("sqs")
    parked = set()
    for queue in topology.queues.values():
        while messages := sqs.receive_message(QueueUrl=queue.dlq_url, MaxNumberOfMessages=10).get("Messages", []):
            parked |= {json.loads(m["Body"])["trace_id"] for m in messages}
            sqs.delete_message_batch(
                QueueUrl=queue.dlq_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
            )
    return parked


def test_the_idempotent_fleet_loses_nothing_duplicates_nothing_and_parks_the_poison(backend):
    chaos = chaos_run(backend, STEPS, naive=False)
    poison = {"conv-7-step-1", "conv-123-step-1"}  # the seed's poison inputs among the first 300
    assert chaos.crashes == {"before_effect": 20, "after_effect_before_delete": 17, "during_heartbeat": 2}
    assert chaos.transient_failures == 8
    assert chaos.summary == LedgerSummary(effects=298, distinct=298, duplicated=0, lost=0)
    assert chaos.took_effect == {f"conv-{n}-step-1" for n in range(STEPS)} - poison  # nothing healthy lost
    assert chaos.parked == poison and chaos.failed_for_good == poison  # each trace says why: rejected every time


def test_a_fleet_with_an_attempt_budget_parks_everything_with_its_diagnosis_and_answers_every_caller(backend):
    chaos = chaos_run(backend, NAIVE_STEPS, naive=False, last_attempt=True)
    poison = {"conv-7-step-1", "conv-123-step-1"}
    assert chaos.summary == LedgerSummary(effects=198, distinct=198, duplicated=0, lost=0)
    assert chaos.diagnoses == dict.fromkeys(poison, "ERROR_FROM_TARGET") and chaos.parked == poison
    assert all(answer is not None for answer in chaos.answers.values())  # a result or a graceful error: nobody hangs
    assert {trace for trace, answer in chaos.answers.items() if not answer.ok} == poison


def test_the_same_chaos_duplicates_effects_without_idempotency(backend):
    chaos = chaos_run(backend, NAIVE_STEPS, naive=True)
    assert chaos.crashes == {"before_effect": 14, "after_effect_before_delete": 12}
    assert chaos.summary == LedgerSummary(effects=212, distinct=200, duplicated=12, lost=0)  # one per crash after
