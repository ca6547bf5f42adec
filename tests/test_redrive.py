"""``redrive.redrive`` tries StartMessageMoveTask and falls back on what the probe calls "not implemented",
or on a task that ends FAILED; it never probes. The service's answers are stood in for where moto has none."""

import json

import pytest
from botocore.exceptions import ClientError

from fleetlab.backends.backend import open_backend
from fleetlab.composition.topology import experiment_queue, new_prefix
from fleetlab.core.clock import RealClock
from fleetlab.core.errors import RedriveFailed, Timeout, WorkerCrashed
from fleetlab.core.faults import CrashAfter
from fleetlab.services.sqs import messages, redrive


class MoveTasks:
    """An SQS client that answers the move-task calls as a service would: each listing gives the next status."""

    def __init__(self, *statuses, moved=0, refuse=None):
        self.statuses = list(statuses)
        self.moved = moved
        self.refuse = refuse

    def start_message_move_task(self, SourceArn, DestinationArn):
        if self.refuse:
            raise ClientError({"Error": {"Code": self.refuse}, "ResponseMetadata": {"HTTPStatusCode": 400}},
                              "StartMessageMoveTask")
        return {"TaskHandle": "task-1"}

    def list_message_move_tasks(self, SourceArn):
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return {"Results": [{"TaskHandle": "task-1", "Status": status, "FailureReason": "no source ARN",
                             "ApproximateNumberOfMessagesMoved": self.moved}]}


@pytest.fixture
def parked():
    """A moto backend and a queue whose DLQ holds three messages."""
    backend = open_backend("moto")
    try:
        with experiment_queue(backend, new_prefix("dlq"), visibility_timeout=30, max_receive_count=3) as queue:
            for n in range(3):
                backend.client("sqs").send_message(QueueUrl=queue.dlq_url, MessageBody=json.dumps({"alert": n}))
            yield backend, queue
    finally:
        backend.close()


def stand_in(monkeypatch, backend, service_answers):
    monkeypatch.setattr(backend, "unretried_client", lambda service: service_answers)


def test_in_process_moto_falls_back_on_not_implemented(parked):
    backend, queue = parked
    result = redrive.redrive(backend, queue)
    assert (result.moved, result.method) == (3, "receive-send-delete")
    assert "NotImplementedError" in result.fallback_reason


def test_a_task_that_ends_failed_falls_back_and_counts_what_it_moved(parked, monkeypatch):
    backend, queue = parked
    stand_in(monkeypatch, backend, MoveTasks("RUNNING", "FAILED", moved=0))
    result = redrive.redrive(backend, queue)
    assert (result.moved, result.method) == (3, "receive-send-delete")
    assert result.fallback_reason == "the move task failed: no source ARN"


def test_a_completed_task_is_the_service_redrive(parked, monkeypatch):
    backend, queue = parked
    stand_in(monkeypatch, backend, MoveTasks("RUNNING", "COMPLETED", moved=3))
    assert redrive.redrive(backend, queue) == redrive.Redrive(3, redrive.RedriveMethod.MOVE_TASK)


def test_a_task_still_running_at_the_bound_is_a_timeout_that_may_have_happened(parked, monkeypatch):
    backend, queue = parked
    stand_in(monkeypatch, backend, MoveTasks("RUNNING"))
    real = {"now": 0.0}
    clock = RealClock(monotonic=lambda: real["now"], pause=lambda s: real.update(now=real["now"] + s))
    monkeypatch.setattr(backend, "clock", clock)
    with pytest.raises(Timeout, match="the move task task-1") as gave_up:
        redrive.redrive(backend, queue, timeout=60)
    assert gave_up.value.may_have_happened and real["now"] == 60  # bounded, without a second of sleep


def test_a_cancelled_task_is_reported_not_fallen_back_from(parked, monkeypatch):
    backend, queue = parked
    stand_in(monkeypatch, backend, MoveTasks("CANCELLED", moved=1))
    with pytest.raises(RedriveFailed, match="cancelled after moving 1"):
        redrive.redrive(backend, queue)


def test_a_refused_task_is_the_services_error(parked, monkeypatch):
    backend, queue = parked
    stand_in(monkeypatch, backend, MoveTasks("RUNNING", refuse="AccessDenied"))
    with pytest.raises(ClientError, match="AccessDenied"):
        redrive.redrive(backend, queue)


def test_a_redrive_killed_right_after_its_send_made_the_send_and_nothing_after(parked):
    backend, queue = parked
    killed = CrashAfter(backend.client("sqs"), ["send_message", "delete_message"], who="the redrive")
    message = killed.receive_message(QueueUrl=queue.dlq_url, VisibilityTimeout=30)["Messages"][0]
    assert killed.crashed_after is None  # a receive is not one of the calls it dies after
    with pytest.raises(WorkerCrashed, match="^worker crashed at the return of send_message while handling the redrive$"):
        killed.send_message(QueueUrl=queue.url, MessageBody=message["Body"])
    with pytest.raises(WorkerCrashed):
        killed.delete_message(QueueUrl=queue.dlq_url, ReceiptHandle=message["ReceiptHandle"])
    assert killed.crashed_after == "send_message"
    assert (messages.held(backend, queue.url), messages.held(backend, queue.dlq_url)) == (1, 3)  # sent, never deleted


def test_a_redrive_killed_right_after_its_delete_has_lost_the_message(parked):
    backend, queue = parked
    killed = CrashAfter(backend.client("sqs"), ["send_message", "delete_message"], who="the redrive")
    message = killed.receive_message(QueueUrl=queue.dlq_url, VisibilityTimeout=30)["Messages"][0]
    with pytest.raises(WorkerCrashed):
        killed.delete_message(QueueUrl=queue.dlq_url, ReceiptHandle=message["ReceiptHandle"])
    with pytest.raises(WorkerCrashed):
        killed.send_message(QueueUrl=queue.url, MessageBody=message["Body"])
    assert (messages.held(backend, queue.url), messages.held(backend, queue.dlq_url)) == (0, 2)  # in neither queue
