"""Lambda's SQS event source mapping, in miniature: batches and partial batch responses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..aws.backends import Backend
from ..errors import InvalidInput
from ..tracing import Tracer
from .worker import MAX_RECEIVE_BATCH


@dataclass(frozen=True)
class BatchOutcome:
    """What one ESM-style invocation did with its batch."""

    received: int
    deleted: int
    failed_ids: tuple[str, ...]
    error: str = ""


class BatchPoller:
    """Lambda's SQS event source mapping, in miniature.

    Gathers up to ``batch_size`` messages for at most ``batching_window``
    seconds, calls ``handler(event, context)`` with a Lambda SQS event, and
    deletes what succeeded. With ``report_batch_item_failures`` the handler
    returns ``{"batchItemFailures": [{"itemIdentifier": id}, ...]}`` and only
    those stay; an identifier not in the batch fails the whole batch, as on
    AWS. Without it, any exception returns the whole batch to the queue.
    """

    def __init__(
        self,
        backend: Backend,
        queue_url: str,
        queue_arn: str,
        handler: Callable[[dict[str, Any], Any], Any],
        *,
        batch_size: int = 10,
        batching_window: float = 0.0,
        report_batch_item_failures: bool = True,
        name: str = "esm",
        tracer: Tracer | None = None,
    ) -> None:
        if not 1 <= batch_size <= 10_000:
            raise InvalidInput("batch_size", f"must be within 1..10000, got {batch_size}")
        if not 0 <= batching_window <= 300:
            raise InvalidInput("batching_window", f"must be within 0..300 s, got {batching_window}")
        if batch_size > 10 and batching_window < 1:
            raise InvalidInput("batching_window", "must be at least 1 s when batch_size exceeds 10 (as on AWS)")
        self.backend = backend
        self.sqs = backend.client("sqs")
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self.handler = handler
        self.batch_size = batch_size
        self.batching_window = batching_window
        self.report_batch_item_failures = report_batch_item_failures
        self.name = name
        self.tracer = tracer

    def poll_once(self) -> BatchOutcome:
        """Gather one batch, invoke the handler once, delete the successes."""
        messages = self._gather()
        if not messages:
            return BatchOutcome(0, 0, ())
        event = {"Records": [self._record(m) for m in messages]}
        try:
            response = self.handler(event, None)
        except Exception as exc:  # the invocation failed: the whole batch goes back
            return BatchOutcome(len(messages), 0, tuple(m["MessageId"] for m in messages), f"{type(exc).__name__}: {exc}")
        failed, error = self._failed_ids(response, messages)
        keep = set(failed)
        done = [m for m in messages if m["MessageId"] not in keep]
        self._delete(done)
        return BatchOutcome(len(messages), len(done), tuple(failed), error)

    def _gather(self) -> list[dict[str, Any]]:
        clock = self.backend.clock
        deadline = clock.now() + self.batching_window
        messages: list[dict[str, Any]] = []
        while len(messages) < self.batch_size:
            with self.backend.receive_lock(self.queue_url):
                got = self.sqs.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=min(MAX_RECEIVE_BATCH, self.batch_size - len(messages)),
                    AttributeNames=["All"],
                    MessageAttributeNames=["All"],
                ).get("Messages", [])
            messages += got
            remaining = deadline - clock.now()
            if remaining <= 0:
                break
            if not got:
                clock.sleep(min(remaining, 1.0))
        return messages

    def _failed_ids(self, response: Any, messages: list[dict[str, Any]]) -> tuple[list[str], str]:
        every_id = [m["MessageId"] for m in messages]
        if not self.report_batch_item_failures:
            return [], ""
        if response is None or response == {}:
            return [], ""
        failures = response.get("batchItemFailures") if isinstance(response, dict) else None
        if not isinstance(failures, list):
            return every_id, "response has no batchItemFailures list: the whole batch is retried"
        ids = [f.get("itemIdentifier") if isinstance(f, dict) else None for f in failures]
        if any(i not in every_id for i in ids):
            return every_id, "a batchItemFailures entry names no message of this batch: the whole batch is retried"
        return [i for i in ids if i is not None], ""

    def _delete(self, messages: list[dict[str, Any]]) -> None:
        for start in range(0, len(messages), MAX_RECEIVE_BATCH):
            chunk = messages[start : start + MAX_RECEIVE_BATCH]
            self.sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": message.get("MessageAttributes", {}),
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": self.queue_arn,
            "awsRegion": self.backend.region,
        }
