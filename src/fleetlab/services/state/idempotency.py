"""The idempotency store: DynamoDB conditional writes with a lease.

The key names the *work* (the envelope's trace_id plus the consumer's name),
never the delivery (an SQS MessageId changes on every redelivery). A worker
``claim``s a key before the effect; exactly one claim wins. The winner holds
a lease (``lease_until``); if it dies, the lease expires and the next
delivery reclaims the key. The winner ``complete``s the record with its
result, which every later duplicate gets back instead of running again.
Records live for the idempotency window (``expires_at``), which must outlive
every way the same work can come back: the bus's retry window, the queue's
retention, and any replay horizon.

Semantics match Powertools' idempotency utility where they overlap: status
values ``INPROGRESS``/``COMPLETED``, an in-progress expiry (here the lease),
an expiry checked by the store itself (DynamoDB's TTL deletes late, and some
emulators never do), and a record released when the work fails.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.backends.responses import error_code
from fleetlab.core.clock import Clock
from fleetlab.core.errors import AlreadyInProgress, InvalidInput, LeaseLost
from fleetlab.services.state.conditions import (
    CLAIMABLE,
    COMPLETED,
    INPROGRESS,
    INPROGRESS_VALUE,
    NOW,
    OWNED,
    OWNED_IN_PROGRESS,
    OWNER,
    attribute_names,
    number,
    string,
)
from fleetlab.services.state.conditions import key as record_key

EXTEND_UPDATE = "SET lease_until = :until"


@dataclass(frozen=True)
class Claim:
    """A won claim: this worker may run the work for ``key`` until ``lease_until``."""

    key: str
    consumer: str
    owner: str
    lease_until: float
    expires_at: float
    reclaimed_from: str | None = None


@dataclass(frozen=True)
class Completed:
    """The work was already done; ``result`` is what the first run saved."""

    key: str
    consumer: str
    result: Any


class IdempotencyStore:
    """Conditional-write idempotency records in one DynamoDB table (pk, sk).

    ``lease_seconds`` should be about one visibility timeout;
    ``window_seconds`` must exceed retry window + retention + replay horizon.
    The conditions are ``state.conditions``'s named clauses.
    """

    def __init__(
        self,
        dynamodb: Any,
        table: str,
        clock: Clock,
        *,
        lease_seconds: float = 900,
        window_seconds: float = 86_400,
    ) -> None:
        if lease_seconds <= 0:
            raise InvalidInput("lease_seconds", f"must be positive, got {lease_seconds}")
        if window_seconds <= lease_seconds:
            raise InvalidInput("window_seconds", f"{window_seconds} must exceed lease_seconds {lease_seconds}")
        self.dynamodb = dynamodb
        self.table = table
        self.clock = clock
        self.lease_seconds = lease_seconds
        self.window_seconds = window_seconds

    def claim(self, key: str, consumer: str) -> Claim | Completed:
        """Win the right to run ``key`` for ``consumer``, or learn it is done.

        Returns a Claim (run the work) or Completed (return its result).
        Raises AlreadyInProgress while another worker's lease is live.
        """
        now = self.clock.now()
        owner = uuid.uuid4().hex
        lease_until = now + self.lease_seconds
        try:
            response = self.dynamodb.put_item(
                TableName=self.table,
                Item=claim_item(key, consumer, owner=owner, now=now, lease_seconds=self.lease_seconds,
                                window_seconds=self.window_seconds),
                ConditionExpression=CLAIMABLE,
                ExpressionAttributeNames=attribute_names(CLAIMABLE),
                ExpressionAttributeValues={NOW: number(now), INPROGRESS_VALUE: string(INPROGRESS)},
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            return self._existing(key, consumer, exc.response.get("Item") or {})
        previous = response.get("Attributes", {})
        reclaimed = previous.get("owner", {}).get("S") if previous.get("status", {}).get("S") == INPROGRESS else None
        return Claim(key=key, consumer=consumer, owner=owner, lease_until=lease_until,
                     expires_at=now + self.window_seconds, reclaimed_from=reclaimed)

    def complete(self, claim: Claim, result: Any) -> None:
        """Save the result. Raises LeaseLost if another worker reclaimed the key meanwhile.

        A lease that ran out unnoticed is fine: nobody took it over, so the
        record is still ours. The completed record replaces the claim's whole
        (one conditional PutItem: no lease any more, the claim's window).
        """
        saved = _conditionally(lambda: self.dynamodb.put_item(TableName=self.table, **complete_write(claim, result)))
        if not saved:
            raise LeaseLost(
                f"{claim.key}/{claim.consumer} was reclaimed by another worker before the result was saved; "
                "leave the message for redelivery"
            )

    def extend(self, claim: Claim) -> Claim:
        """Renew the lease for another ``lease_seconds``. Raises LeaseLost if it is no longer ours."""
        lease_until = self.clock.now() + self.lease_seconds
        renewed = _conditionally(
            lambda: self.dynamodb.update_item(
                TableName=self.table,
                Key=record_key(claim.key, claim.consumer),
                UpdateExpression=EXTEND_UPDATE,
                ConditionExpression=OWNED_IN_PROGRESS,
                ExpressionAttributeNames=attribute_names(OWNED_IN_PROGRESS),
                ExpressionAttributeValues={
                    ":until": number(lease_until),
                    OWNER: string(claim.owner),
                    INPROGRESS_VALUE: string(INPROGRESS),
                },
            )
        )
        if not renewed:
            raise LeaseLost(f"lease on {claim.key}/{claim.consumer} is no longer held by this worker")
        return dataclasses.replace(claim, lease_until=lease_until)

    def release(self, claim: Claim) -> None:
        """Drop our in-progress record after a failure, so a retry can claim at once."""
        _conditionally(
            lambda: self.dynamodb.delete_item(
                TableName=self.table,
                Key=record_key(claim.key, claim.consumer),
                ConditionExpression=OWNED_IN_PROGRESS,
                ExpressionAttributeNames=attribute_names(OWNED_IN_PROGRESS),
                ExpressionAttributeValues={OWNER: string(claim.owner), INPROGRESS_VALUE: string(INPROGRESS)},
            )
        )

    def record(self, key: str, consumer: str) -> dict[str, Any] | None:
        """The stored record as plain values, or None."""
        item = self.dynamodb.get_item(TableName=self.table, Key=record_key(key, consumer), ConsistentRead=True).get("Item")
        return None if item is None else {name: _plain(value) for name, value in item.items()}

    def _existing(self, key: str, consumer: str, item: dict[str, Any]) -> Completed:
        if not item:  # an emulator that does not return the old item: read it
            item = self.dynamodb.get_item(TableName=self.table, Key=record_key(key, consumer), ConsistentRead=True).get("Item", {})
        if item.get("status", {}).get("S") == COMPLETED:
            return Completed(key=key, consumer=consumer, result=json.loads(item["result"]["S"]))
        lease_until = float(item.get("lease_until", {}).get("N", "0"))
        raise AlreadyInProgress(
            f"{key}/{consumer} is being handled by another worker (lease until "
            f"{lease_until - self.clock.now():+.0f} s from now); leave the message for redelivery"
        )


def claim_item(
    key: str, consumer: str, *, owner: str, now: float, lease_seconds: float, window_seconds: float
) -> dict[str, Any]:
    """The in-progress record a claim writes (with CLAIMABLE as its condition)."""
    return {
        **record_key(key, consumer),
        "status": string(INPROGRESS),
        "owner": string(owner),
        "lease_until": number(now + lease_seconds),
        "expires_at": number(now + window_seconds),
    }


def complete_write(claim: Claim, result: Any) -> dict[str, Any]:
    """PutItem's arguments (besides the table) that save ``result`` in place of ``claim``'s record, if still its."""
    return {
        "Item": {
            **record_key(claim.key, claim.consumer),
            "status": string(COMPLETED),
            "owner": string(claim.owner),
            "result": string(json.dumps(result)),
            "expires_at": number(claim.expires_at),
        },
        "ConditionExpression": OWNED,
        "ExpressionAttributeNames": attribute_names(OWNED),
        "ExpressionAttributeValues": {OWNER: string(claim.owner)},
    }


def _plain(value: dict[str, Any]) -> Any:
    (kind, raw), = value.items()
    return float(raw) if kind == "N" else raw


def _conditionally(write: Callable[[], Any]) -> bool:
    """Run one conditional write; False when DynamoDB found its condition false."""
    try:
        write()
    except ClientError as exc:
        if error_code(exc) != "ConditionalCheckFailedException":
            raise
        return False
    return True
