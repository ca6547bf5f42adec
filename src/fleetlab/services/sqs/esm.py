"""Lambda's SQS event source mapping (ESM), in miniature: batches and partial batch responses.

``BatchPoller`` is the Lambda-shaped worker (``worker.QueueWorker`` is the
container one). It gathers a batch (``batch_size`` messages, waiting up to
``batching_window`` seconds of the backend's clock), invokes
``handler(event, context)`` once with a Lambda SQS event, and deletes what
succeeded:

* with ``report_batch_item_failures`` the handler returns
  ``{"batchItemFailures": [{"itemIdentifier": message_id}, ...]}``, as
  Powertools' ``BatchProcessor`` and ``SqsFifoPartialProcessor`` do, and only
  those records stay; a response without that list, or naming a message not
  in the batch, fails the whole batch, as on AWS;
* without it, or when the handler raises, the whole batch goes back.

``partial_batch_response`` builds that response from a per-record handler,
for a standard queue (every record runs, the failed ones are reported, as
Powertools' ``BatchProcessor``) and a FIFO queue (records run in order and
the first failure stops the batch: it and every later record are reported,
as ``SqsFifoPartialProcessor``).

Like ``QueueWorker`` it is a whole worker: the handler takes its side effect
through ``context.record_effect(record)`` (counted in the effects ledger), a
``FaultPlan`` can kill it at ``BEFORE_EFFECT`` (inside ``record_effect``) and
at ``AFTER_EFFECT_BEFORE_DELETE`` (after the handler returned, before any
delete: the whole batch, successes included, comes back), and every record's
hops (received, effect, failed, crashed, deleted) go to the tracer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.core.errors import InvalidInput, WorkerCrashed
from fleetlab.core.faults import CrashPoint, FaultPlan
from fleetlab.core.ledger import Effect, EffectsLedger
from fleetlab.core.tracing import Tracer
from fleetlab.services.sqs import messages
from fleetlab.services.sqs.messages import MAX_RECEIVE_BATCH
from fleetlab.services.sqs.worker import Outcome


def partial_batch_response(
    event: dict[str, Any], record_handler: Callable[[dict[str, Any]], Any], *, fifo: bool = False,
    skip_group_on_error: bool = False,
) -> dict[str, list[dict[str, str]]]:
    """Run ``record_handler(record)`` on each record of a Lambda SQS ``event``; report the failed ones.

    A record failed when its handler raised. On a FIFO queue the first
    failure ends the batch: that record and every later one are reported,
    in order, and the later ones never run, so no message overtakes an
    earlier one of its group (``skip_group_on_error`` skips only the later
    records of the failed record's message group, as Powertools' option
    does). Where every record failed, Powertools raises BatchProcessingError
    instead; the ESM returns the whole batch to the queue either way.
    """
    records = event["Records"]
    failed: list[str] = []
    stopped_groups: set[str | None] = set()
    for record in records:
        group = record.get("attributes", {}).get("MessageGroupId")
        if fifo and (group in stopped_groups or (failed and not skip_group_on_error)):
            failed.append(record["messageId"])
            continue
        try:
            record_handler(record)
        except Exception:  # the record failed: report it, the ESM keeps it on the queue
            failed.append(record["messageId"])
            stopped_groups.add(group)
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}


@dataclass(frozen=True)
class BatchOutcome:
    """What one invocation did with its batch.

    ``status`` is DONE when every record was deleted, FAILED when some came
    back (``failed_ids``; ``error`` says why), CRASHED when an injected fault
    killed the invocation (nothing deleted).
    """

    received: int
    deleted: int
    failed_ids: tuple[str, ...]
    error: str = ""
    status: Outcome = Outcome.DONE


class _InvocationKilled(BaseException):
    """Carries an injected crash out of the handler: a killed process runs no ``except Exception``."""

    def __init__(self, crash: WorkerCrashed) -> None:
        super().__init__(str(crash))
        self.crash = crash


@dataclass
class _Received:
    """One message of the batch, with the work it carries."""

    message: dict[str, Any]
    trace_id: str
    receive_count: int

    @property
    def message_id(self) -> str:
        return self.message["MessageId"]


@dataclass
class BatchContext:
    """The handler's ``context``: the attributes of a Lambda context, and ``record_effect``.

    ``record_effect(record, kind, key)`` performs a record's side effect:
    the fault plan's BEFORE_EFFECT crash point first, then one entry in the
    effects ledger. ``record`` is the event's record dict or a Powertools
    record (anything with ``raw_event``).
    """

    function_name: str
    aws_request_id: str
    invoked_function_arn: str
    deadline: float
    _poller: BatchPoller = field(repr=False)
    _batch: dict[str, _Received] = field(repr=False)
    memory_limit_in_mb: int = 128

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the invocation would time out, on the backend's clock."""
        return max(0, int((self.deadline - self._poller.backend.clock.now()) * 1000))

    def record_effect(self, record: Any, kind: str = "effect", key: str | None = None) -> Effect:
        """Take ``record``'s side effect (ledger entry), after the BEFORE_EFFECT crash point."""
        raw = getattr(record, "raw_event", record)
        message_id = raw.get("messageId") if isinstance(raw, dict) else None
        if message_id not in self._batch:
            raise InvalidInput("record", "is not a record of this invocation's batch")
        return self._poller._record_effect(self._batch[message_id], kind, key)


class BatchPoller:
    """Lambda's SQS event source mapping, in miniature: see the module docstring.

    ``handler(event, context)`` is Lambda-shaped; ``timeout`` (seconds of the
    backend's clock) is the function's timeout its context reports. Raises
    InvalidInput for settings AWS would refuse.
    """

    def __init__(
        self,
        backend: Backend,
        queue_url: str,
        queue_arn: str,
        handler: Callable[[dict[str, Any], BatchContext], Any],
        *,
        batch_size: int = 10,
        batching_window: float = 0.0,
        report_batch_item_failures: bool = True,
        name: str = "esm",
        ledger: EffectsLedger | None = None,
        tracer: Tracer | None = None,
        faults: FaultPlan | None = None,
        timeout: float = 60.0,
    ) -> None:
        if not 1 <= batch_size <= 10_000:
            raise InvalidInput("batch_size", f"must be within 1..10000, got {batch_size}")
        if not 0 <= batching_window <= 300:
            raise InvalidInput("batching_window", f"must be within 0..300 s, got {batching_window}")
        if batch_size > 10 and batching_window < 1:
            raise InvalidInput("batching_window", "must be at least 1 s when batch_size exceeds 10 (as on AWS)")
        if not 1 <= timeout <= 900:
            raise InvalidInput("timeout", f"a Lambda function's timeout is 1..900 s, got {timeout}")
        self.backend = backend
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self.handler = handler
        self.batch_size = batch_size
        self.batching_window = batching_window
        self.report_batch_item_failures = report_batch_item_failures
        self.name = name
        self.ledger = ledger if ledger is not None else EffectsLedger()
        self.tracer = tracer
        self.faults = faults or FaultPlan()
        self.timeout = timeout

    def poll_once(self) -> BatchOutcome:
        """Gather one batch, invoke the handler once, delete the successes."""
        batch = [self._received(message) for message in self._gather()]
        if not batch:
            return BatchOutcome(0, 0, ())
        for item in batch:
            self._trace(item, "received", receive=item.receive_count)
        every_id = tuple(item.message_id for item in batch)
        try:
            response = self.handler({"Records": [self._record(item) for item in batch]}, self._context(batch))
            for item in batch:
                self.faults.check(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, item.trace_id, item.receive_count)
        except (_InvocationKilled, WorkerCrashed) as killed:
            crash = killed.crash if isinstance(killed, _InvocationKilled) else killed
            for item in batch:
                self._trace(item, "crashed", point=crash.point)
            return BatchOutcome(len(batch), 0, every_id, crash.point, Outcome.CRASHED)
        except Exception as exc:  # the invocation failed: the whole batch goes back
            for item in batch:
                self._trace(item, "failed", error=type(exc).__name__)
            return BatchOutcome(len(batch), 0, every_id, f"{type(exc).__name__}: {exc}", Outcome.FAILED)
        failed, error = self._failed_ids(response, every_id)
        return self._settle(batch, failed, error)

    def _settle(self, batch: list[_Received], failed: list[str], error: str) -> BatchOutcome:
        """Delete the successes; trace each record's end. SQS may refuse a delete: that record comes back."""
        keep = set(failed)
        done = [item for item in batch if item.message_id not in keep]
        refused = {m["MessageId"] for m in messages.delete_batch(self.backend, self.queue_url, [i.message for i in done])}
        for item in batch:
            if item.message_id in keep:
                self._trace(item, "failed", error=error or "reported in batchItemFailures")
            elif item.message_id in refused:
                self._trace(item, "failed", error="SQS refused the delete")
            else:
                self._trace(item, "deleted")
        left = tuple(failed) + tuple(sorted(refused))
        status = Outcome.DONE if not left else Outcome.FAILED
        return BatchOutcome(len(batch), len(done) - len(refused), left, error, status)

    def _gather(self) -> list[dict[str, Any]]:
        clock = self.backend.clock
        deadline = clock.now() + self.batching_window
        gathered: list[dict[str, Any]] = []
        while len(gathered) < self.batch_size:
            got = messages.receive(
                self.backend, self.queue_url, max_messages=min(MAX_RECEIVE_BATCH, self.batch_size - len(gathered))
            )
            gathered += got
            remaining = deadline - clock.now()
            if remaining <= 0:
                break
            if not got:
                clock.sleep(min(remaining, 1.0))
        return gathered

    def _failed_ids(self, response: Any, every_id: tuple[str, ...]) -> tuple[list[str], str]:
        if not self.report_batch_item_failures:
            return [], ""
        if response is None or response == {}:
            return [], ""
        failures = response.get("batchItemFailures") if isinstance(response, dict) else None
        if not isinstance(failures, list):
            return list(every_id), "response has no batchItemFailures list: the whole batch is retried"
        ids = [f.get("itemIdentifier") if isinstance(f, dict) else None for f in failures]
        if any(i not in every_id for i in ids):
            return list(every_id), "a batchItemFailures entry names no message of this batch: the whole batch is retried"
        return list(dict.fromkeys(ids)), ""

    def _context(self, batch: list[_Received]) -> BatchContext:
        account = self.queue_arn.split(":")[4] if self.queue_arn.count(":") >= 5 else "000000000000"
        return BatchContext(
            function_name=self.name,
            aws_request_id=str(uuid.uuid4()),
            invoked_function_arn=f"arn:aws:lambda:{self.backend.region}:{account}:function:{self.name}",
            deadline=self.backend.clock.now() + self.timeout,
            _poller=self,
            _batch={item.message_id: item for item in batch},
        )

    def _record_effect(self, item: _Received, kind: str, key: str | None) -> Effect:
        try:
            self.faults.check(CrashPoint.BEFORE_EFFECT, item.trace_id, item.receive_count)
        except WorkerCrashed as crash:
            raise _InvocationKilled(crash) from None
        effect = self.ledger.record(
            key or item.trace_id, kind=kind, actor=self.name, at=self.backend.clock.now(),
            receive_count=item.receive_count,
        )
        self._trace(item, "effect", kind=kind)
        return effect

    def _received(self, message: dict[str, Any]) -> _Received:
        _, envelope, _ = messages.parse_body(message["Body"])
        return _Received(message, messages.trace_id_of(message, envelope), messages.receive_count(message))

    def _record(self, item: _Received) -> dict[str, Any]:
        message = item.message
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

    def _trace(self, item: _Received, hop: str, **attrs: Any) -> None:
        if self.tracer is not None:
            self.tracer.record(item.trace_id, hop, at=self.backend.clock.now(), component=self.name, **attrs)
