"""The chaos day on a real clock: LocalStack's code path (a scaled clock, boto3 over HTTP) on a moto server.

The day's own waits (model steps, held steps, quota windows, the replay's reach, a visibility timeout to wait
out) skip, and the visibility catch-up makes SQS give back each message whose timeout lab time has passed.
So a day of hours runs in seconds and holds its invariants by the counts its schedule fixes; every wait
here is bounded by a wall-clock assertion, none is slept through.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from fleetlab.composition import DayFacts, FleetConfig, run_chaos_day
from fleetlab.composition.topology import experiment_queue, new_prefix
from fleetlab.core.errors import InvalidInput
from fleetlab.core.faults import CrashPoint
from fleetlab.services.sqs import messages
from fleetlab.services.sqs.catchup import VisibilityCatchUp

DAY = 86_400
VISIBILITY = 900  # lab seconds: 15 real seconds of service time at x60


@pytest.fixture
def queue(real_clock_backend):
    with experiment_queue(real_clock_backend, new_prefix("catchup"), visibility_timeout=VISIBILITY) as made:
        yield made


@pytest.fixture
def catch_up(real_clock_backend):
    watching = VisibilityCatchUp(real_clock_backend)
    yield watching
    watching.close()


def _send_and_receive(backend, queue_url: str) -> dict:
    backend.client("sqs").send_message(QueueUrl=queue_url, MessageBody="{}")
    (message,) = messages.receive(backend, queue_url, max_messages=1)
    return message


def test_a_message_comes_back_once_lab_time_passes_its_visibility_timeout(real_clock_backend, queue, catch_up):
    backend = real_clock_backend
    started = time.monotonic()
    message = _send_and_receive(backend, queue.url)
    assert catch_up.in_flight == 1
    backend.clock.skip(VISIBILITY - 60)
    assert catch_up.release_due() == 0 and messages.receive(backend, queue.url, wait_seconds=0) == []
    backend.clock.skip(61)
    assert catch_up.release_due() == 1 and catch_up.in_flight == 0
    (again,) = messages.receive(backend, queue.url, wait_seconds=0)
    assert again["MessageId"] == message["MessageId"] and messages.receive_count(again) == 2
    assert time.monotonic() - started < VISIBILITY / backend.clock.scale  # the service's own 15 s never ran


def test_a_heartbeat_moves_the_instant_on_and_a_delete_forgets_the_message(real_clock_backend, queue, catch_up):
    backend, sqs = real_clock_backend, real_clock_backend.client("sqs")
    message = _send_and_receive(backend, queue.url)
    backend.clock.skip(600)
    sqs.change_message_visibility(QueueUrl=queue.url, ReceiptHandle=message["ReceiptHandle"],
                                  VisibilityTimeout=VISIBILITY)
    backend.clock.skip(600)  # 1,200 s after the receive, 600 s after the heartbeat
    assert catch_up.release_due() == 0 and catch_up.in_flight == 1
    sqs.delete_message(QueueUrl=queue.url, ReceiptHandle=message["ReceiptHandle"])
    backend.clock.skip(VISIBILITY)
    assert catch_up.in_flight == 0 and catch_up.release_due() == 0


def test_a_release_the_service_refuses_is_dropped(real_clock_backend, queue, catch_up):
    backend = real_clock_backend
    message = _send_and_receive(backend, queue.url)
    backend.unretried_client("sqs").delete_message(QueueUrl=queue.url, ReceiptHandle=message["ReceiptHandle"])
    backend.clock.skip(VISIBILITY + 1)  # the catch-up never saw the delete: it releases a message that is gone
    assert catch_up.release_due() == 1 and catch_up.in_flight == 0


def test_a_virtual_clock_needs_no_catch_up():
    with pytest.raises(InvalidInput) as refused:
        VisibilityCatchUp(SimpleNamespace(name="moto", clock=SimpleNamespace(virtual=True)))
    assert refused.value.field == "backend"


def test_a_seeded_chaos_day_on_a_real_clock_holds_every_invariant_by_exact_counts(real_clock_backend):
    facts = DayFacts(slowest_step_seconds=1_200, replay_reach_seconds=3 * DAY, quota_tokens=10_000,
                     quota_window=3_600)
    schedule = facts.schedule(7, 20, poison=2)
    config = FleetConfig(idempotency_window=4 * DAY, quota_tokens=10_000, batch_tokens=1_800)
    started = time.monotonic()
    board = run_chaos_day(real_clock_backend, config, schedule, budgets=facts.budgets)
    wall = time.monotonic() - started
    counts = board.counts
    assert [result.name for result in board.invariants if not result.ok] == []
    assert (counts.accepted, counts.completed, counts.lost, counts.duplicated) == (20, 18, 0, 0)
    assert (counts.parked, counts.hung, counts.traced) == (2, 0, 20)
    assert board.diagnoses == {"ERROR_FROM_TARGET": 2}
    assert counts.replayed == 10
    # Every count above follows from the schedule on any backend. How often a worker crashed does not: whether a
    # step's first receive reaches its crash point depends on where lab time puts it against the outage, and on
    # a real clock lab time also runs on during every call (x60), more on a loaded machine.
    assert set(board.crashes) <= {point.value for point in CrashPoint} and sum(board.crashes.values()) >= 1
    assert counts.virtual_seconds > 3 * DAY  # the replay came three lab days after its events...
    assert wall < 90  # ...in well under a real minute and a half (a virtual day's waits slept through: hours)
