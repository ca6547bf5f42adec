"""What every SQS consumer here shares: one receive, reading a message, queue depth, batch delete and release.

``QueueWorker`` (one message at a time, with a heartbeat) and ``BatchPoller``
(Lambda's batches) receive through the same ``receive``, read bodies with the
same ``parse_body`` and name a message's work with the same ``trace_id_of``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.backends.backend import Backend
from fleetlab.backends.responses import error_code
from fleetlab.core.errors import EnvelopeError
from fleetlab.services.events.envelope import Envelope

MAX_RECEIVE_BATCH = 10
"""SQS hands out at most ten messages per ReceiveMessage, and deletes at most ten per batch."""


def receive(
    backend: Backend, queue_url: str, *, max_messages: int = 1, wait_seconds: int | None = None,
    visibility_timeout: int | None = None,
) -> list[dict[str, Any]]:
    """One ReceiveMessage of up to ``max_messages`` (capped at ten), every attribute included.

    ``wait_seconds`` (lab seconds) defaults to the backend's ``receive_wait``:
    at once on moto, a one-second long poll where delivery is asynchronous.
    ``visibility_timeout`` hides what it returns for that long instead of the
    queue's own timeout. Runs under the backend's receive lock, so concurrent
    receivers on an emulator never get the same message inside its visibility window.
    """
    hidden = {} if visibility_timeout is None else {"VisibilityTimeout": visibility_timeout}
    with backend.receive_lock(queue_url):
        response = backend.client("sqs").receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=min(max_messages, MAX_RECEIVE_BATCH),
            WaitTimeSeconds=backend.receive_wait if wait_seconds is None else wait_seconds,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            **hidden,
        )
    return response.get("Messages", [])


def parse_body(raw: str) -> tuple[Any, Envelope | None, EnvelopeError | None]:
    """Decode a message body: an EventBridge event (envelope in ``detail``) or a bare detail.

    Returns (decoded body, envelope or None, why it is not an envelope or None).
    """
    try:
        body = json.loads(raw)
    except json.JSONDecodeError:
        return raw, None, EnvelopeError("body", "is not JSON")
    detail = body.get("detail", body) if isinstance(body, dict) else body
    try:
        return body, Envelope.from_detail(detail), None
    except EnvelopeError as exc:
        return body, None, exc


def trace_id_of(message: dict[str, Any], envelope: Envelope | None) -> str:
    """The work's trace id, or the message id for a body that is not an envelope."""
    return envelope.trace_id if envelope else message["MessageId"]


def receive_count(message: dict[str, Any]) -> int:
    """How many times SQS has handed this message out (1 on its first delivery)."""
    return int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))


def depth(backend: Backend, queue_url: str) -> int:
    """Messages waiting in the queue (SQS's approximate count; exact on the emulators)."""
    attributes = backend.client("sqs").get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def held(backend: Backend, queue_url: str) -> int:
    """Messages in the queue, visible or in flight (SQS's approximate counts; exact on the emulators)."""
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = backend.client("sqs").get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
    return sum(int(attributes.get(name, "0")) for name in names)


def delete_batch(backend: Backend, queue_url: str, messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Delete ``messages`` (received from ``queue_url``), ten per DeleteMessageBatch.

    Returns the messages SQS did not delete (a stale receipt handle, ...):
    they come back after their visibility timeout, as at-least-once allows.
    """
    sqs = backend.client("sqs")
    kept: list[dict[str, Any]] = []
    for start in range(0, len(messages), MAX_RECEIVE_BATCH):
        chunk = messages[start : start + MAX_RECEIVE_BATCH]
        response = sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
        )
        kept += [chunk[int(failure["Id"])] for failure in response.get("Failed", [])]
    return kept


def release(backend: Backend, queue_url: str, messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Make ``messages`` (received from ``queue_url``) visible again at once, ten per call; none is deleted.

    Returns the messages the service would not release: they come back on their own when
    the visibility timeout of their receive runs out. (moto counts SQS's 12-hour visibility
    limit from a message's send, not its receive, and refuses any change to a message sent
    more than 12 hours ago, 0 included; AWS accepts 0.)
    """
    sqs = backend.client("sqs")
    held: list[dict[str, Any]] = []
    for start in range(0, len(messages), MAX_RECEIVE_BATCH):
        chunk = messages[start : start + MAX_RECEIVE_BATCH]
        try:
            response = sqs.change_message_visibility_batch(
                QueueUrl=queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                         for i, m in enumerate(chunk)],
            )
        except ClientError as exc:
            if error_code(exc) != "InvalidParameterValue":
                raise
            held += [m for m in chunk if not _release_one(sqs, queue_url, m)]
            continue
        held += [chunk[int(failure["Id"])] for failure in response.get("Failed", [])]
    return held


def _release_one(sqs: Any, queue_url: str, message: dict[str, Any]) -> bool:
    """Make one message visible again; False where the service refuses the change."""
    try:
        sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    except ClientError as exc:
        if error_code(exc) != "InvalidParameterValue":
            raise
        return False
    return True