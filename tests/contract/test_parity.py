"""Parity: each behaviour is AWS's documented one, or the divergence the backend's fidelity table declares.

A backend that does something else, something its table does not declare,
fails here: the fidelity table is the only place a quirk may live.
"""

import json
import uuid

import pytest

from fleetlab.backends.fidelity import probe
from fleetlab.composition.pipeline import Fleet
from fleetlab.composition.topology import experiment_queue, new_prefix
from fleetlab.core.clock import RealClock
from fleetlab.services.events.envelope import Envelope
from fleetlab.services.sqs import redrive
from fleetlab.services.stepfunctions import asl, callbacks, executions

pytestmark = pytest.mark.contract


@pytest.fixture(scope="module")
def fidelity(backend):
    return probe(backend)


def expect(fidelity, feature, observed, *, aws):
    """``observed`` must equal AWS's value where the table says the backend matches AWS, and differ from it
    where the table declares a divergence: the table, not this test, says which."""
    finding = fidelity.get(feature)
    if finding.matches_aws:
        assert observed == aws, f"{feature}: AWS does {aws!r}, the table says this backend does too, but it did {observed!r}"
    else:
        assert observed != aws, f"{feature}: the table declares a divergence ({finding.observed}) that did not happen"


def test_fifo_keeps_group_order_and_blocks_the_group_while_in_flight(backend, fidelity):
    sqs = backend.client("sqs")
    name = f"{new_prefix('ct')}lane.fifo"
    url = sqs.create_queue(QueueName=name, Attributes={"FifoQueue": "true", "VisibilityTimeout": "60"})["QueueUrl"]
    try:
        for n in (1, 2, 3):
            sqs.send_message(QueueUrl=url, MessageBody=f"step-{n}", MessageGroupId="conv-8842", MessageDeduplicationId=f"d{n}")
        sqs.send_message(QueueUrl=url, MessageBody="step-2 again", MessageGroupId="conv-8842", MessageDeduplicationId="d2")
        first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
        assert [m["Body"] for m in first] == ["step-1"]
        assert sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []) == []  # head-of-line
        sqs.delete_message(QueueUrl=url, ReceiptHandle=first[0]["ReceiptHandle"])
        rest = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        assert [m["Body"] for m in rest] == ["step-2", "step-3"]  # the duplicate send was dropped
        for message in rest:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        sqs.send_message(QueueUrl=url, MessageBody="step-1 resent", MessageGroupId="conv-8842", MessageDeduplicationId="d1")
        resent = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        observed = "accepted again" if resent else "dropped"
        expect(fidelity, "sqs.fifo_dedup_after_delete", observed, aws="dropped")
    finally:
        sqs.delete_queue(QueueUrl=url)


def test_redrive_moves_parked_messages_back_without_probing(backend, fidelity, monkeypatch):
    import fleetlab.backends.fidelity

    monkeypatch.setattr(fleetlab.backends.fidelity, "probe", lambda *a, **k: pytest.fail("library code ran the probe"))
    sqs = backend.client("sqs")
    with experiment_queue(backend, new_prefix("ct"), visibility_timeout=30, max_receive_count=3) as queue:
        for n in range(3):
            sqs.send_message(QueueUrl=queue.dlq_url, MessageBody=json.dumps({"alert": n}))
        result = redrive.redrive(backend, queue)
        assert result.moved == 3
        bodies = sorted(m["Body"] for m in sqs.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=10)["Messages"])
        assert bodies == [json.dumps({"alert": n}) for n in range(3)]
        native = not fidelity.diverges(redrive.MOVE_TASK_FEATURE)
        assert result.method == ("StartMessageMoveTask" if native else "receive-send-delete")
        assert ("not implemented" in result.fallback_reason) is not native


def callback_machine(backend, queue_url, *, timeout, heartbeat=None):
    task = {
        "Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {"QueueUrl": queue_url, "MessageBody": {"token.$": "$$.Task.Token"}},
        "TimeoutSeconds": timeout,
        "Catch": [{"ErrorEquals": ["AgentFailed"], "ResultPath": "$.error", "Next": "Parked"}],
        "End": True,
    }
    if heartbeat:
        task["HeartbeatSeconds"] = heartbeat
    definition = {"StartAt": "Dispatch", "States": {"Dispatch": task, "Parked": {"Type": "Pass", "End": True}}}
    asl.validate_asl(definition)
    sfn = backend.client("stepfunctions")
    return sfn.create_state_machine(
        name=f"{new_prefix('ct')}callback", definition=json.dumps(definition),
        roleArn=asl.emulator_role_arn(backend.account_id),
    )["stateMachineArn"]


def take_token(backend, queue_url, *, seconds=15):
    sqs = backend.client("sqs")
    messages = backend.clock.wait_until(
        lambda: sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1).get("Messages"),
        timeout=seconds, what="the task token",
    )
    return json.loads(messages[0]["Body"])["token"]


def final_error(backend, execution_arn):
    rows = executions.history(backend.client("stepfunctions"), execution_arn)
    failed = [r for r in rows if r.type in ("ExecutionFailed", "TaskTimedOut", "TaskFailed")]
    return failed[-1].detail.split(":", 1)[0] if failed else ""


@pytest.fixture
def token_queue(backend):
    with experiment_queue(backend, new_prefix("ct"), visibility_timeout=30) as queue:
        yield queue


def test_a_callback_failure_is_caught_by_its_error_name(backend, token_queue):
    sfn = backend.client("stepfunctions")
    machine = callback_machine(backend, token_queue.url, timeout=30)
    execution = executions.start_execution(sfn, machine, {"alert": "alert-1"})
    token = take_token(backend, token_queue.url)
    assert callbacks.send_failure(sfn, token, "AgentFailed", "tool output unparseable").accepted
    assert executions.wait_for_execution(sfn, execution, clock=backend.clock)["status"] == "SUCCEEDED"  # via the Catch
    assert "AgentFailed" in [r.detail.split(":", 1)[0] for r in executions.history(sfn, execution)]


def test_a_task_with_no_callback_times_out(backend, token_queue):
    sfn = backend.client("stepfunctions")
    machine = callback_machine(backend, token_queue.url, timeout=2)
    execution = executions.start_execution(sfn, machine, {"alert": "alert-2"})
    assert executions.wait_for_execution(sfn, execution, clock=backend.clock, timeout=20)["status"] == "FAILED"
    assert final_error(backend, execution) == "States.Timeout"


def test_a_missed_heartbeat_fails_the_task(backend, token_queue, fidelity):
    sfn = backend.client("stepfunctions")
    machine = callback_machine(backend, token_queue.url, timeout=20, heartbeat=1)
    execution = executions.start_execution(sfn, machine, {"alert": "alert-3"})
    assert executions.wait_for_execution(sfn, execution, clock=backend.clock, timeout=20)["status"] == "FAILED"
    expect(fidelity, "stepfunctions.heartbeat_timeout_error", final_error(backend, execution),
           aws="States.HeartbeatTimeout")


def test_heartbeats_keep_a_long_task_alive(backend, token_queue):
    sfn = backend.client("stepfunctions")
    machine = callback_machine(backend, token_queue.url, timeout=30, heartbeat=1)
    execution = executions.start_execution(sfn, machine, {"alert": "alert-4"})
    token = take_token(backend, token_queue.url)
    beats = []
    real = RealClock()  # Step Functions' heartbeat timer runs in real time on every backend
    with real.every(0.2, lambda: beats.append(callbacks.send_heartbeat(sfn, token).accepted)):
        real.sleep(2)  # twice the heartbeat window: without the beats the task would have failed
    assert beats and all(beats)
    assert callbacks.send_success(sfn, token, {"ok": True}).accepted
    assert executions.wait_for_execution(sfn, execution, clock=backend.clock)["status"] == "SUCCEEDED"


def test_an_archived_event_replays_with_its_replay_name(backend, topology, fidelity):
    events = backend.client("events")
    archive = f"{topology.prefix}archive"
    events.create_archive(ArchiveName=archive, EventSourceArn=topology.bus_arn, RetentionDays=1)
    try:
        started = backend.clock.now() - 3_600  # an hour wide: a real minute on a scaled clock
        Fleet(backend, topology).submit(Envelope("alert-5", "conv-5", 1, "researcher"))
        queue = topology.queue("researcher")
        sqs = backend.client("sqs")
        original = sqs.receive_message(QueueUrl=queue.url, WaitTimeSeconds=2)["Messages"][0]
        sqs.delete_message(QueueUrl=queue.url, ReceiptHandle=original["ReceiptHandle"])
        replay = f"{topology.prefix}replay-{uuid.uuid4().hex[:6]}"
        events.start_replay(
            ReplayName=replay,
            EventSourceArn=events.describe_archive(ArchiveName=archive)["ArchiveArn"],
            EventStartTime=started, EventEndTime=backend.clock.now() + 3_600,
            Destination={"Arn": topology.bus_arn},
        )
        replayed = backend.clock.wait_until(
            lambda: sqs.receive_message(QueueUrl=queue.url, WaitTimeSeconds=1).get("Messages"),
            timeout=30, what="the replayed event",
        )
        event = json.loads(replayed[0]["Body"])
        assert event["detail"]["trace_id"] == "alert-5"
        expect(fidelity, "events.replay_name_field", event.get("replay-name") == replay, aws=True)
    finally:
        events.delete_archive(ArchiveName=archive)
