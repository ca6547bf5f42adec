"""DynamoDB condition clauses, each named once, as Powertools' persistence layer names its own.

A conditional write is only as right as its condition, so the clauses live
here, with the attribute names they use, and every writer (the idempotency
store, the overhead benchmark's raw step, the token governor) composes the
same ones::

    ConditionExpression=CLAIMABLE,
    ExpressionAttributeNames=attribute_names(CLAIMABLE),
    ExpressionAttributeValues={NOW: number(now), INPROGRESS_VALUE: string(INPROGRESS)},

The record's attributes: ``pk`` (the work's key), ``sk`` (the consumer),
``status`` (INPROGRESS / COMPLETED), ``owner`` (the claim's random id),
``lease_until`` (the in-progress expiry), ``expires_at`` (the idempotency
window, also the table's TTL attribute) and ``result`` (JSON). A response
record (``state.responses``) has the same key and ``expires_at``, with
``status`` SUCCEEDED / FAILED.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

INPROGRESS = "INPROGRESS"
COMPLETED = "COMPLETED"
SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"

# Value placeholders the clauses use.
NOW = ":now"
OWNER = ":owner"
INPROGRESS_VALUE = ":inprogress"
FAILED_VALUE = ":failed"
SEEN = ":seen"
WINDOW = ":window"
ROOM = ":room"
TOKENS = ":tokens"

# Attribute names that are DynamoDB reserved words go through a placeholder.
_NAMES = {"#status": "status", "#owner": "owner", "#result": "result"}

RECORD_ABSENT = "attribute_not_exists(pk)"
"""No record for this key and consumer yet."""

WINDOW_EXPIRED = f"expires_at < {NOW}"
"""The record outlived its idempotency window (DynamoDB's TTL deletes late, some emulators never)."""

IN_PROGRESS = f"#status = {INPROGRESS_VALUE}"
"""The work has been claimed and not completed."""

LEASE_EXPIRED = f"{IN_PROGRESS} AND lease_until < {NOW}"
"""Claimed, but the holder's lease ran out: the holder is presumed dead."""

OWNED = f"#owner = {OWNER}"
"""The record still belongs to the claim that made it."""

CLAIMABLE = f"{RECORD_ABSENT} OR {WINDOW_EXPIRED} OR ({LEASE_EXPIRED})"
"""A claim may take the key: no record, an expired one, or an abandoned claim."""

OWNED_IN_PROGRESS = f"{OWNED} AND {IN_PROGRESS}"
"""Our claim, still running: the lease may be extended or released."""

ANSWERED_WITH_ERROR = f"#status = {FAILED_VALUE}"
"""The request's answer so far is a graceful error."""

UNANSWERED = f"{RECORD_ABSENT} OR {WINDOW_EXPIRED}"
"""No live answer to the request yet: an error may be written."""

ANSWERABLE = f"{UNANSWERED} OR {ANSWERED_WITH_ERROR}"
"""A result may be written: no live answer, or only an error (a redriven request that then succeeded)."""

# The token governor's counter (``state.governor``): ``window_start``, ``quota_used``, ``quota_version``.

UNCHANGED_SINCE_READ = f"quota_version = {SEEN}"
"""Nobody wrote the counter since this worker last saw it (a compare-and-set on its version)."""

SAME_WINDOW = f"window_start = {WINDOW}"
"""The counter still counts the current quota window."""

ROOM_FOR_DRAW = f"quota_used <= {ROOM}"
"""The draw fits: ``:room`` is the usable quota minus the tokens drawn."""

DRAWABLE = f"{UNCHANGED_SINCE_READ} AND {SAME_WINDOW} AND {ROOM_FOR_DRAW}"
"""A draw in the current window: unchanged since read, and the counter stays within the quota."""

WINDOW_ROLLED_OVER = f"{RECORD_ABSENT} OR ({UNCHANGED_SINCE_READ} AND window_start < {WINDOW})"
"""A draw that opens the window: no counter yet, or an unchanged one still counting an older window."""

RETURNABLE = f"{SAME_WINDOW} AND quota_used >= {TOKENS}"
"""Unspent tokens go back only into the window they were drawn from (afterwards they expired)."""


def attribute_names(*expressions: str) -> dict[str, str]:
    """ExpressionAttributeNames for exactly the ``#placeholders`` the expressions use.

    DynamoDB rejects a name placeholder that no expression uses, so a call
    passes only these.
    """
    used = {name for expression in expressions for name in re.findall(r"#\w+", expression)}
    return {placeholder: _NAMES[placeholder] for placeholder in sorted(used)}


def number(value: float) -> dict[str, str]:
    """A DynamoDB number attribute value, rounded to the millisecond."""
    return {"N": str(Decimal(str(round(value, 3))))}


def string(value: str) -> dict[str, str]:
    """A DynamoDB string attribute value."""
    return {"S": value}


def key(work: str, consumer: str) -> dict[str, Any]:
    """The record's primary key."""
    return {"pk": string(work), "sk": string(consumer)}
