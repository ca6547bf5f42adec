"""The response store: where a caller finds the answer to a request that went through a queue.

A caller that enqueued a request (and holds its request id) reads the
answer here: a result when the work succeeded, or a graceful error when
the worker gave up. The worker writes the error on its last attempt, one
receive below the queue's maxReceiveCount, before the message is parked, so
a caller waiting on the answer never just hangs.

Records live in a DynamoDB table keyed like the idempotency store's (``pk``
= request id, ``sk`` = ``"response"``), so both can share one table, and
expire after ``ttl_seconds`` (``expires_at``, checked by the store itself).
The writes are conditional: an error is written only where there is no
answer yet, and a result replaces nothing but an error (a request that was
redriven and then succeeded). Lab 07 uses the same store for request/response.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.backends.responses import error_code
from fleetlab.core.clock import Clock
from fleetlab.core.errors import InvalidInput, ResponseTimeout
from fleetlab.services.state.conditions import (
    ANSWERABLE,
    FAILED,
    FAILED_VALUE,
    NOW,
    SUCCEEDED,
    UNANSWERED,
    attribute_names,
    key,
    number,
    string,
)

SORT_KEY = "response"


@dataclass(frozen=True)
class Response:
    """The answer to one request: a result (``ok``) or a graceful error."""

    request_id: str
    ok: bool
    answered_at: float
    attempt: int
    result: Any = None
    error_code: str = ""
    error_message: str = ""


class ResponseStore:
    """Answers to requests, by request id, in one DynamoDB table (pk, sk; TTL on ``expires_at``).

    ``clock`` dates the answers and runs ``wait``. Raises InvalidInput for a
    ``ttl_seconds`` that is not positive.
    """

    def __init__(self, dynamodb: Any, table: str, clock: Clock, *, ttl_seconds: float = 86_400) -> None:
        if ttl_seconds <= 0:
            raise InvalidInput("ttl_seconds", f"must be positive, got {ttl_seconds}")
        self.dynamodb = dynamodb
        self.table = table
        self.clock = clock
        self.ttl_seconds = ttl_seconds

    def answer(self, request_id: str, result: Any, *, attempt: int = 1) -> bool:
        """Write the request's result; False (nothing written) when it already has one.

        A graceful error written earlier is replaced: the caller polling
        later gets the real answer.
        """
        item = {"status": string(SUCCEEDED), "result": string(json.dumps(result))}
        return self._write(request_id, item, attempt, condition=ANSWERABLE)

    def fail(self, request_id: str, error_code: str, message: str, *, attempt: int) -> bool:
        """Write a graceful error; False (nothing written) when the request already has an answer."""
        item = {"status": string(FAILED), "error_code": string(error_code), "error_message": string(message)}
        return self._write(request_id, item, attempt, condition=UNANSWERED)

    def get(self, request_id: str) -> Response | None:
        """The request's answer, or None (none yet, or it expired)."""
        item = self.dynamodb.get_item(
            TableName=self.table, Key=key(request_id, SORT_KEY), ConsistentRead=True
        ).get("Item")
        if item is None or float(item["expires_at"]["N"]) < self.clock.now():
            return None
        ok = item["status"]["S"] == SUCCEEDED
        return Response(
            request_id=request_id,
            ok=ok,
            answered_at=float(item["answered_at"]["N"]),
            attempt=int(item["attempt"]["N"]),
            result=json.loads(item["result"]["S"]) if ok else None,
            error_code="" if ok else item["error_code"]["S"],
            error_message="" if ok else item["error_message"]["S"],
        )

    def wait(
        self, request_id: str, *, timeout: float, every: float = 5.0, while_waiting: Callable[[], Any] | None = None,
    ) -> Response:
        """Poll for the answer every ``every`` seconds of the clock; ResponseTimeout after ``timeout`` seconds of it.

        ``while_waiting()`` runs before each look: on one thread, what answers
        the request (the workers' own poll); its time counts towards
        ``timeout``. The ResponseTimeout (a Timeout naming the request and the
        timeout) is the hung caller: the request may still be answered later.
        Raises InvalidInput naming ``timeout`` or ``every`` when it is not positive.
        """
        for name, value in (("timeout", timeout), ("every", every)):
            if value <= 0:
                raise InvalidInput(name, f"must be a positive number of seconds, got {value}")
        deadline = self.clock.now() + timeout
        while True:
            if while_waiting is not None:
                while_waiting()
            if (answer := self.get(request_id)) is not None:
                return answer
            left = deadline - self.clock.now()
            if left <= 0:
                raise ResponseTimeout(request_id, timeout)
            self.clock.sleep(min(every, left))

    def _write(self, request_id: str, item: dict[str, Any], attempt: int, *, condition: str) -> bool:
        now = self.clock.now()
        values = {NOW: number(now), FAILED_VALUE: string(FAILED)}
        names = attribute_names(condition)
        try:
            self.dynamodb.put_item(
                TableName=self.table,
                Item={**key(request_id, SORT_KEY), **item, "attempt": number(attempt), "answered_at": number(now),
                      "expires_at": number(now + self.ttl_seconds)},
                ConditionExpression=condition,
                ExpressionAttributeValues={name: value for name, value in values.items() if name in condition},
                **({"ExpressionAttributeNames": names} if names else {}),
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            return False
        return True
