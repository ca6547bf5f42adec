"""SQS probes: the visibility timeout, the redrive receive, StartMessageMoveTask, FIFO deduplication."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from .base import Feature, Observation, Probe, register
from ...aws.backends import mute_server_traceback
from ...aws.responses import error_code, http_status
from ...errors import Timeout
from .scratch import Scratch

PROBES: list[Probe] = []
"""This service's probes, in the order their findings appear in a table."""

_probes = partial(register, PROBES)


@_probes(
    Feature(
        "sqs.visibility_timeout",
        "A received message stays hidden for the visibility timeout, then comes back",
        aws="hidden until the timeout passes, then redelivered with ApproximateReceiveCount 2",
        workaround="labs 01 and 03 need this contract: run them on moto, moto-server or LocalStack",
    )
)
def _visibility_timeout(scratch: Scratch) -> Observation:
    timeout = scratch.visibility_timeout
    queue = scratch.queue("visibility", VisibilityTimeout=str(timeout))
    scratch.client("sqs").send_message(QueueUrl=queue.url, MessageBody="probe")
    if scratch.receive(queue.url, wait=2) is None:
        return Observation("a message just sent was not received", False)
    scratch.let_pass(timeout - 1)
    if scratch.receive(queue.url, wait=0) is not None:
        return Observation(f"visible again {timeout - 1} s into a {timeout} s timeout", False)
    scratch.let_pass(2)
    late = scratch.receive(queue.url, wait=2)
    if late is None:
        return Observation(f"still hidden {timeout + 1} s after a {timeout} s timeout", False)
    count = _receive_count(late)
    return Observation(
        f"hidden at +{timeout - 1} s, back at +{timeout + 1} s with ApproximateReceiveCount {count}", count == 2
    )


@_probes(
    Feature(
        "sqs.redrive_receive",
        "Receive at which a message is dead-lettered (maxReceiveCount=3)",
        aws="moved after 3 receives: receive 4 no longer gets it from the source, it is in the DLQ",
        workaround="set the app's receive limit one below the receive measured here, not one below an assumed 4",
    )
)
def _redrive_receive(scratch: Scratch) -> Observation:
    timeout = scratch.visibility_timeout
    dlq = scratch.queue("redrive-dlq")
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})
    source = scratch.queue("redrive", VisibilityTimeout=str(timeout), RedrivePolicy=policy)
    scratch.client("sqs").send_message(QueueUrl=source.url, MessageBody="poison")
    for receive_number in range(1, 7):
        if scratch.receive(source.url, wait=2 if receive_number == 1 else scratch.quiet_wait) is not None:
            scratch.let_pass(timeout + 1)
            continue
        if scratch.receive(dlq.url, wait=2) is None:
            return Observation(f"receive {receive_number} found it in neither the source nor the DLQ", False)
        return Observation(
            f"receive {receive_number} finds it in the DLQ (receives 1-{receive_number - 1} delivered it)",
            receive_number == 4,
        )
    return Observation("still delivered from the source at receive 6: never dead-lettered", False)


@_probes(
    Feature(
        "sqs.start_message_move_task",
        "StartMessageMoveTask (DLQ redrive by the service)",
        aws="supported: moves a DLQ's messages back to their source queue",
        workaround="fleetlab redrives by receive + send + delete, which works on every backend",
    )
)
def _start_message_move_task(scratch: Scratch) -> Observation:
    dlq = scratch.queue("move-dlq")
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})
    source = scratch.queue("move", RedrivePolicy=policy)
    scratch.client("sqs").send_message(QueueUrl=dlq.url, MessageBody="parked")
    sqs = scratch.unretried_client("sqs")
    try:
        mute_server_traceback("start_message_move_task")
        sqs.start_message_move_task(SourceArn=dlq.arn)
    except NotImplementedError:
        return Observation("not implemented: the call raises Python NotImplementedError", False)
    except ClientError as exc:
        if http_status(exc) >= 500:
            return Observation(f"not implemented: the server answers HTTP {http_status(exc)}", False)
        return Observation(f"rejected: {error_code(exc)}", False)
    try:
        scratch.wait_until(lambda: scratch.receive(source.url, wait=1), seconds=10, what="the moved message")
    except Timeout:
        return Observation("the task started but the message did not reach the source within 10 s", False)
    return Observation("supported: the parked message moved back to its source", True)


@_probes(
    Feature(
        "sqs.fifo_dedup_after_delete",
        "FIFO deduplication id re-sent after the original was received and deleted (within 5 min)",
        aws="dropped: the id is remembered for 5 minutes, also after the original is deleted",
        workaround="FIFO dedup is an ingress convenience; the idempotency table is the real guard (lab 02)",
    )
)
def _fifo_dedup_after_delete(scratch: Scratch) -> Observation:
    queue = scratch.queue("dedup.fifo", FifoQueue="true")
    sqs = scratch.client("sqs")

    def send(body: str) -> None:
        sqs.send_message(QueueUrl=queue.url, MessageBody=body, MessageGroupId="g", MessageDeduplicationId="d1")

    send("original")
    original = scratch.receive(queue.url, wait=2)
    if original is None:
        return Observation("the original message was not received", False)
    scratch.delete_message(queue.url, original)
    send("resent")
    if scratch.receive(queue.url, wait=scratch.quiet_wait) is None:
        return Observation("dropped: the re-sent message was never delivered", True)
    return Observation("accepted again: the re-sent message was delivered", False)


def _receive_count(message: dict[str, Any]) -> int:
    return int(message.get("Attributes", {}).get("ApproximateReceiveCount", "0"))
