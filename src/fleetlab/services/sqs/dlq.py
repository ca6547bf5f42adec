"""Dead-letter queues: the record a failure leaves, and reading it without moving it.

``dead_letter`` parks a message on its DLQ with a diagnosis in the message
attributes EventBridge writes on a rule target's DLQ record (ERROR_CODE,
ERROR_MESSAGE, EXHAUSTED_RETRY_CONDITION, RETRY_ATTEMPTS, RULE_ARN,
TARGET_ARN), so every record the pipeline parks says what failed, after how
many attempts, on which route. A record SQS moved itself (its redrive
policy, after maxReceiveCount) carries none of them: triage counts it as
``UNKNOWN``.

Reading a queue is receiving from it: each ReceiveMessage counts towards
maxReceiveCount and hides the message. ``peek`` reads every message of a
queue and makes each visible again at once, deleting nothing; ``triage``
counts a DLQ's records by failure class that way, from the attributes, never
from the payloads. Moving records back to work is ``sqs.redrive``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.core.errors import EnvelopeError, InvalidInput, ModelError, Timeout, WorkerCrashed
from fleetlab.core.filled import Filled
from fleetlab.core.status import Status
from fleetlab.services.sqs import messages

ERROR_CODE = "ERROR_CODE"
ERROR_MESSAGE = "ERROR_MESSAGE"
EXHAUSTED_RETRY_CONDITION = "EXHAUSTED_RETRY_CONDITION"
RETRY_ATTEMPTS = "RETRY_ATTEMPTS"
RULE_ARN = "RULE_ARN"
TARGET_ARN = "TARGET_ARN"
DIAGNOSTIC_ATTRIBUTES = (ERROR_CODE, ERROR_MESSAGE, EXHAUSTED_RETRY_CONDITION, RETRY_ATTEMPTS, RULE_ARN, TARGET_ARN)
"""The message attributes of an EventBridge target DLQ record, in its order: every parked record carries them."""

NO_DIAGNOSIS = "UNKNOWN"
"""Triage's class for a record without ERROR_CODE (SQS moved it after maxReceiveCount)."""

ATTEMPTS_EXHAUSTED = "MaximumRetryAttempts"
"""EXHAUSTED_RETRY_CONDITION when the attempt budget ran out (EventBridge's name for the same condition)."""

NOT_ROUTED_BY_A_RULE = "none: sent to the queue directly"
"""RULE_ARN of work a producer sent to its queue without the bus (SQS refuses an empty attribute value)."""

MAX_ERROR_MESSAGE = 1_000
"""Characters of ERROR_MESSAGE kept: a diagnosis, not a stack trace."""

PEEK_HOLD_SECONDS = 60
"""How long ``peek`` hides what it has read, so one pass never reads a message twice."""


class FailureClass(Status):
    """ERROR_CODE values the pipeline writes, named as EventBridge names the same failures."""

    THROTTLING = "THROTTLING"
    """A dependency was throttled or down for every attempt: redrive once it is back."""
    TIMEOUT = "TIMEOUT"
    """The last attempt never reported (its worker crashed or overran): look for crashes, then redrive."""
    ERROR_FROM_TARGET = "ERROR_FROM_TARGET"
    """The step itself failed on this input: read the payload, fix the worker, redrive a canary first."""
    INVALID_PARAMETER = "INVALID_PARAMETER"
    """The event does not follow the envelope: fix the producer; redriving cannot help."""


def classify(error: BaseException | None) -> FailureClass:
    """The failure class of what the last attempt raised (None: it never reported)."""
    if error is None or isinstance(error, (Timeout, WorkerCrashed)):
        return FailureClass.TIMEOUT
    if isinstance(error, EnvelopeError):
        return FailureClass.INVALID_PARAMETER
    if isinstance(error, ModelError) and error.transient:
        return FailureClass.THROTTLING
    return FailureClass.ERROR_FROM_TARGET


@dataclass(frozen=True)
class Diagnosis:
    """Why a message was parked: one DLQ record's diagnostic attributes."""

    error_code: str
    error_message: str
    retry_attempts: int
    rule_arn: str
    target_arn: str
    exhausted_retry_condition: str = ATTEMPTS_EXHAUSTED

    @classmethod
    def of(cls, error: BaseException | None, *, attempts: int, rule_arn: str, target_arn: str) -> Diagnosis:
        """The diagnosis of a message given up on after ``attempts`` attempts; ``error`` is the last one's."""
        if attempts < 1:
            raise InvalidInput("attempts", f"a parked message was attempted at least once, got {attempts}")
        message = f"{type(error).__name__}: {error}" if error is not None else "the last attempt never reported"
        return cls(classify(error).value, message[:MAX_ERROR_MESSAGE], attempts - 1, rule_arn or NOT_ROUTED_BY_A_RULE,
                   target_arn)

    def message_attributes(self) -> dict[str, dict[str, str]]:
        """The record's SQS message attributes (all six, as EventBridge writes them)."""
        values = {
            ERROR_CODE: self.error_code,
            ERROR_MESSAGE: self.error_message,
            EXHAUSTED_RETRY_CONDITION: self.exhausted_retry_condition,
            RETRY_ATTEMPTS: str(self.retry_attempts),
            RULE_ARN: self.rule_arn,
            TARGET_ARN: self.target_arn,
        }
        return {name: {"DataType": "Number" if name == RETRY_ATTEMPTS else "String", "StringValue": values[name]}
                for name in DIAGNOSTIC_ATTRIBUTES}

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> Diagnosis | None:
        """The diagnosis a received record carries, or None when it has no ERROR_CODE."""
        attributes = message.get("MessageAttributes") or {}
        if ERROR_CODE not in attributes:
            return None

        def value(name: str, default: str = "") -> str:
            return str(attributes.get(name, {}).get("StringValue", default))

        return cls(value(ERROR_CODE), value(ERROR_MESSAGE), int(value(RETRY_ATTEMPTS, "0")), value(RULE_ARN),
                   value(TARGET_ARN), value(EXHAUSTED_RETRY_CONDITION))


@dataclass(frozen=True)
class DeadLetterTarget:
    """Where a work queue parks its failures, and the route a diagnosis names.

    ``rule_arn`` is the rule that routed the work to the queue ("" when
    producers send to the queue directly); ``target_arn`` is the work queue.
    """

    dlq_url: str
    target_arn: str
    rule_arn: str = ""

    def diagnose(self, error: BaseException | None, *, attempts: int) -> Diagnosis:
        return Diagnosis.of(error, attempts=attempts, rule_arn=self.rule_arn, target_arn=self.target_arn)


def dead_letter(backend: Backend, target: DeadLetterTarget, message: Mapping[str, Any], diagnosis: Diagnosis) -> str:
    """Send ``message``'s body to ``target``'s DLQ with ``diagnosis`` as its attributes; the new MessageId.

    The caller deletes the original from the work queue afterwards (send
    first: a crash in between parks a copy and redelivers the original,
    never loses it). On a FIFO DLQ the record keeps its message group and
    is deduplicated on the original MessageId.
    """
    fifo = {}
    if target.dlq_url.endswith(".fifo"):
        group = message.get("Attributes", {}).get("MessageGroupId") or "dead-letters"
        fifo = {"MessageGroupId": group, "MessageDeduplicationId": message["MessageId"]}
    sent = backend.client("sqs").send_message(
        QueueUrl=target.dlq_url, MessageBody=message["Body"], MessageAttributes=diagnosis.message_attributes(), **fifo
    )
    return sent["MessageId"]


@dataclass(frozen=True)
class ParkedRecord:
    """One DLQ record as triage sees it: what failed, and when the work was first sent."""

    message_id: str
    trace_id: str
    diagnosis: Diagnosis | None
    sent_at: float
    receive_count: int

    @property
    def error_code(self) -> str:
        return self.diagnosis.error_code if self.diagnosis else NO_DIAGNOSIS


def peek(backend: Backend, queue_url: str, *, hold_seconds: int = PEEK_HOLD_SECONDS) -> list[dict[str, Any]]:
    """Every message of ``queue_url``, each made visible again before returning; nothing is deleted.

    Each message is received once (hidden ``hold_seconds`` while the pass
    runs), so its receive count goes up by one: on a queue with a redrive
    policy, looking can push a message over maxReceiveCount.
    """
    seen: dict[str, dict[str, Any]] = {}
    wait = 0 if backend.clock.virtual else 1  # a short poll on a real service can come back empty too soon
    try:
        while batch := messages.receive(backend, queue_url, max_messages=messages.MAX_RECEIVE_BATCH,
                                        wait_seconds=wait, visibility_timeout=hold_seconds):
            fresh = {m["MessageId"]: m for m in batch if m["MessageId"] not in seen}
            if not fresh:
                break
            seen.update(fresh)
    finally:
        messages.release(backend, queue_url, list(seen.values()))
    return list(seen.values())


def parked(backend: Backend, dlq_url: str) -> Filled[ParkedRecord]:
    """The records of ``dlq_url`` with their diagnoses (read by ``peek``: nothing moves)."""
    records = (_parked_record(message) for message in peek(backend, dlq_url))
    return Filled(records, what=f"the records parked in {dlq_url.rsplit('/', 1)[-1]}")


def triage(backend: Backend, dlq_url: str) -> Counter[str]:
    """How many records of ``dlq_url`` failed by each class (ERROR_CODE; UNKNOWN without one)."""
    return Counter(record.error_code for record in parked(backend, dlq_url))


def _parked_record(message: dict[str, Any]) -> ParkedRecord:
    _, envelope, _ = messages.parse_body(message["Body"])
    return ParkedRecord(
        message_id=message["MessageId"],
        trace_id=messages.trace_id_of(message, envelope),
        diagnosis=Diagnosis.from_message(message),
        sent_at=int(message.get("Attributes", {}).get("SentTimestamp", "0")) / 1000,
        receive_count=messages.receive_count(message),
    )
