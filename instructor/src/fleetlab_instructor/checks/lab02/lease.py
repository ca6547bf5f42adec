"""``02.lease``: the hidden story, the reference claim and both catalogues.

The public stories all claim one key with a 15-minute lease; the first hidden
one uses other keys and a shorter lease, so a claim with a hard-coded key or
lease fails it. The second has two workers reclaim an expired lease at once (a
read, then an unconditional put, lets both win); the third throttles a claim's
write (taking every error for a lost race returns False).
"""

from __future__ import annotations

import math
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.course.checks.lab02.lease import LEASE, LeaseStory, lease_item
from fleetlab.services.state.idempotency import COMPLETED, INPROGRESS
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    LeaseStory("another key, another lease",
               (("claim", "alert-42"), ("claim", "alert-43"), ("wait", 301), ("claim", "alert-42"),
                ("claim", "alert-42")), lease=300),
    LeaseStory("two workers reclaim an expired lease at the same moment",
               (("claim", "alert-51"), ("wait", LEASE + 1), ("together", "alert-51"))),
    LeaseStory("DynamoDB throttles a claim's write", (("throttled", "alert-52"), ("claim", "alert-52"))),
)


def reference_claim(ddb: Any, table: str, key: str, owner: str, now: float, lease_seconds: float) -> bool:
    """One conditional put: a free key, or an in-progress claim whose lease has run out."""
    try:
        ddb.put_item(
            TableName=table,
            Item={"pk": {"S": key}, "sk": {"S": "lease"}, "status": {"S": INPROGRESS},
                  "owner": {"S": owner}, "lease_until": {"N": str(now + lease_seconds)}},
            ConditionExpression="attribute_not_exists(pk) OR (#s = :running AND lease_until < :now)",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":running": {"S": INPROGRESS}, ":now": {"N": str(now)}},
        )
    except ClientError as error:
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return False
        raise
    return True


def _put(ddb: Any, table: str, key: str, owner: str, now: float, lease: float, condition: str | None,
         names: dict[str, str] | None = None, catch_all: bool = False) -> bool:
    request: dict[str, Any] = {
        "TableName": table,
        "Item": {"pk": {"S": key}, "sk": {"S": "lease"}, "status": {"S": INPROGRESS},
                 "owner": {"S": owner}, "lease_until": {"N": str(now + lease)}},
    }
    if condition:
        request["ConditionExpression"] = condition
        values = {":now": {"N": str(now)}, ":running": {"S": INPROGRESS}, ":done": {"S": COMPLETED}}
        if used := {name: value for name, value in values.items() if name in condition}:
            request["ExpressionAttributeValues"] = used
        if names:
            request["ExpressionAttributeNames"] = names
    try:
        ddb.put_item(**request)
    except ClientError as error:
        if catch_all or error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return False
        raise
    return True


def _read_then_put(ddb: Any, table: str, key: str, owner: str, now: float, lease: float) -> bool:
    item = lease_item(ddb, table, key)
    if item and (item["status"]["S"] == COMPLETED or float(item["lease_until"]["N"]) > now):
        return False
    return _put(ddb, table, key, owner, now, lease, None)


def _update_instead(ddb: Any, table: str, key: str, owner: str, now: float, lease: float) -> bool:
    try:
        ddb.update_item(
            TableName=table,
            Key={"pk": {"S": key}, "sk": {"S": "lease"}},
            UpdateExpression="SET #s = :running, #o = :owner, lease_until = :until",
            ConditionExpression="attribute_not_exists(sk) OR (lease_until < :now AND #s <> :done)",
            ExpressionAttributeNames={"#s": "status", "#o": "owner"},
            ExpressionAttributeValues={":running": {"S": INPROGRESS}, ":owner": {"S": owner},
                                       ":until": {"N": str(math.ceil(now + lease))}, ":now": {"N": str(now)},
                                       ":done": {"S": COMPLETED}},
        )
    except ddb.exceptions.ConditionalCheckFailedException:
        return False
    return True


def _read_then_conditional_put(ddb: Any, table: str, key: str, owner: str, now: float, lease: float) -> bool:
    if lease_item(ddb, table, key).get("status", {}).get("S") == COMPLETED:
        return False  # a cheap early answer; the conditional write below still decides every race
    return reference_claim(ddb, table, key, owner, now, lease)


def _reclaims_after_reading(ddb: Any, table: str, key: str, owner: str, now: float, lease: float) -> bool:
    if _put(ddb, table, key, owner, now, lease, "attribute_not_exists(pk)"):
        return True
    item = lease_item(ddb, table, key)
    if item["status"]["S"] == INPROGRESS and float(item["lease_until"]["N"]) < now:
        return _put(ddb, table, key, owner, now, lease, None)  # two readers of one expired lease both get here
    return False


class _Rekeyed:
    """A client that writes under sk 'LEASE' (a learner who mistyped the sort key)."""

    def __init__(self, ddb: Any) -> None:
        self._ddb = ddb

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ddb, name)

    def put_item(self, **request: Any) -> Any:
        request["Item"] = {**request["Item"], "sk": {"S": "LEASE"}}
        return self._ddb.put_item(**request)


RIGHT_ANSWERS = (
    RightAnswer("update_item with the condition, caught by its exception class", _update_instead),
    RightAnswer("a read first, then the conditional put", _read_then_conditional_put),
    RightAnswer("every attribute named, attribute_not_exists on the sort key",
                lambda ddb, t, k, o, now, lease: _put(ddb, t, k, o, now, lease,
                                                      "attribute_not_exists(#k) OR (#s = :running AND #l < :now)",
                                                      {"#k": "sk", "#s": "status", "#l": "lease_until"})),
    RightAnswer("an integer lease_until, checking the status is not done",
                lambda ddb, t, k, o, now, lease: _put(ddb, t, k, o, int(now), lease,
                                                      "attribute_not_exists(pk) OR (lease_until < :now AND #s <> :done)",
                                                      {"#s": "status"})),
)


def the_librarys_store(ddb, table, key, owner, now, lease_seconds):
    from types import SimpleNamespace

    from fleetlab.services.state.idempotency import IdempotencyStore

    return IdempotencyStore(ddb, table, SimpleNamespace(now=lambda: now), lease_seconds=lease_seconds).claim(key, "lease")


WRONG_ANSWERS = (
    WrongAnswer("an unconditional put", lambda ddb, t, k, o, now, lease: _put(ddb, t, k, o, now, lease, None),
                "the write needs a condition", mistake="wins-a-live-lease"),
    WrongAnswer("no lease: only attribute_not_exists", lambda ddb, t, k, o, now, lease: _put(
        ddb, t, k, o, now, lease, "attribute_not_exists(pk)"), "would stay blocked",
                mistake="expired-lease-not-reclaimed"),
    WrongAnswer("reclaims whatever is past its lease", lambda ddb, t, k, o, now, lease: _put(
        ddb, t, k, o, now, lease, "attribute_not_exists(pk) OR lease_until < :now"), "never reclaim finished work",
                mistake="reclaims-finished-work"),
    WrongAnswer("reads, then writes without a condition", _read_then_put, "both got True",
                mistake="both-win-a-free-key"),
    WrongAnswer("a condition on the lease only", lambda ddb, t, k, o, now, lease: _put(
        ddb, t, k, o, now, lease, "lease_until < :now"), "a free key must be won", mistake="free-key-not-won"),
    WrongAnswer("status unescaped, every error taken for a lost race", lambda ddb, t, k, o, now, lease: _put(
        ddb, t, k, o, now, lease, "attribute_not_exists(pk) OR (status = :running AND lease_until < :now)",
        catch_all=True), "DynamoDB refused your put_item", mistake="error-taken-for-a-lost-race"),
    WrongAnswer("the item under another key", lambda ddb, t, k, o, now, lease: reference_claim(
        _Rekeyed(ddb), t, k, o, now, lease), "no item with pk", mistake="no-lease-item-under-the-key"),
    WrongAnswer("returns a string", lambda ddb, t, k, o, now, lease: "won", "return True", mistake="claim-not-a-bool"),
    WrongAnswer("a free key won by a condition, an expired lease reclaimed after a read", _reclaims_after_reading,
                "ran out 1 s ago, at the same instant and both got True", public=False,
                mistake="both-reclaim-an-expired-lease"),
    WrongAnswer("every error taken for a lost race", lambda ddb, t, k, o, now, lease: _put(
        ddb, t, k, o, now, lease, "attribute_not_exists(pk) OR (#s = :running AND lease_until < :now)",
        {"#s": "status"}, catch_all=True), "ProvisionedThroughputExceededException", public=False,
                mistake="error-taken-for-a-lost-race"),
    WrongAnswer("a hard-coded 15-minute lease", lambda ddb, t, k, o, now, lease: reference_claim(
        ddb, t, k, o, now, LEASE), "it must be now + lease_seconds", public=False,
                mistake="lease-until-not-now-plus-lease"),
    WrongAnswer("a hard-coded key", lambda ddb, t, k, o, now, lease: reference_claim(
        ddb, t, "alert-7", o, now, lease), "no item with pk 'alert-42'", public=False,
                mistake="no-lease-item-under-the-key"),
    WrongAnswer("the library's IdempotencyStore", the_librarys_store,
                "calls `fleetlab.services.state.idempotency.IdempotencyStore.claim`"),
)

SHARED_MISTAKES = {
    "error-taken-for-a-lost-race": "every DynamoDB error taken for a lost race (only "
                                   "ConditionalCheckFailedException is one)",
    "no-lease-item-under-the-key": "the lease item written under another key than the one claimed",
}

SIDE = InstructorSide("02.lease", hidden=HIDDEN, reference=reference_claim,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS, shared_mistakes=SHARED_MISTAKES)
