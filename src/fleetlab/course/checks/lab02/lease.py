"""Check ``02.lease``: ``claim(ddb, table, key, owner, now, lease_seconds)`` is the
conditional write itself: win a free key, wait on a live lease, reclaim an
expired one, never reclaim finished work, and let exactly one of two
simultaneous claims win. Each claim is judged against the state of the key
just before it, and a won claim must leave the item the statement names.
The hidden case uses another key and another lease length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.composition.topology import experiment_table
from fleetlab.core.faults import Latency
from fleetlab.course.grading.calls import CallLog
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab_instructor.checks import RightAnswer, WrongAnswer  # MIGRATION: the catalogues move to the instructor's side
from fleetlab.course.grading.values import duration
from fleetlab.services.state.idempotency import COMPLETED, INPROGRESS

LEASE = 900
LEASE_KEY_HINT = '{"pk": {"S": key}, "sk": {"S": "lease"}}'


@dataclass(frozen=True)
class LeaseStory(Case):
    """Steps on keys, in order: ("claim", key), ("wait", seconds), ("complete", key), ("together", key).

    What each claim must return follows from the key's state just before it.
    """

    steps: tuple[tuple[Any, ...], ...] = ()
    lease: int = LEASE


@dataclass
class _KeyState:
    """What the harness knows of one key: free, held by ``owner`` until ``until``, or done."""

    owner: str = ""
    until: float = 0.0
    done: bool = False


def _item(ddb: Any, table: str, key: str) -> dict[str, Any]:
    return ddb.get_item(TableName=table, Key={"pk": {"S": key}, "sk": {"S": "lease"}}, ConsistentRead=True).get("Item", {})


def _complete(ddb: Any, table: str, key: str) -> None:
    ddb.update_item(
        TableName=table, Key={"pk": {"S": key}, "sk": {"S": "lease"}},
        UpdateExpression="SET #s = :done", ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":done": {"S": COMPLETED}},
    )


@dataclass
class _LeaseRun:
    """One lease story being played: the key states, the owners so far, the learner's calls."""

    answer: Any
    ddb: Any
    table: str
    clock: Any
    lease: int
    log: CallLog
    keys: dict[str, _KeyState] = field(default_factory=dict)
    owners: int = 0

    def next_owner(self) -> str:
        self.owners += 1
        return f"worker-{self.owners}"

    def claim(self, key: str, owner: str) -> Any:
        return self.answer(self.log.client, self.table, key, owner, self.clock.now(), self.lease)


def _state_words(run: _LeaseRun, key: str) -> tuple[str, str | None]:
    """The key's state in words, and what a claim on it must return (None: any single winner)."""
    state = run.keys.get(key)
    now = run.clock.now()
    if state is None:
        return f"{key}, which nobody held,", "won"
    if state.done:
        return f"{key} after {state.owner} had finished it (status COMPLETED)", "refused"
    if state.until > now:
        return f"{key} while {state.owner}'s lease had {duration(round(state.until - now))} to run", "refused"
    return f"{key}, whose lease (held by {state.owner}, never finished) ran out {duration(round(now - state.until))} ago,", "won"


def _claim_diagnosis(run: _LeaseRun, key: str, owner: str, won: bool, errors: list[Any]) -> str:
    words, _ = _state_words(run, key)
    state = run.keys.get(key)
    if won:
        if state is not None and state.done:
            return f"{owner} reclaimed {words}: its ticket would be filed again; never reclaim finished work"
        return f"{owner} claimed {words} and got True: two workers would run it; the write needs a condition that refuses a live lease"
    refused = f" (DynamoDB refused your {errors[-1].operation}: {errors[-1].error}: {errors[-1].message})" if errors else ""
    if state is None:
        return f"{owner} claimed {words} and got False: a free key must be won{refused}"
    return (f"{owner} claimed {words} and got False: {key} would stay blocked until the record expires; "
            f"reclaim a lease once lease_until has passed{refused}")


def _item_problem(run: _LeaseRun, key: str, owner: str, claimed_at: float) -> str:
    """What is wrong with the item a won claim left, or ""."""
    item = _item(run.ddb, run.table, key)
    where = f"after {owner}'s winning claim"
    if not item:
        return (f"{where} there is no item with pk {key!r} and sk 'lease': write the claim under the key "
                f"{LEASE_KEY_HINT} (the low-level client's shapes)")
    status = item.get("status", {}).get("S")
    if status != INPROGRESS:
        return f"{where} the item's status is {status!r}, not 'INPROGRESS' (a string, {{'S': 'INPROGRESS'}})"
    if item.get("owner", {}).get("S") != owner:
        return f"{where} the item's owner is {item.get('owner')!r}, not {{'S': {owner!r}}}"
    if "N" not in item.get("lease_until", {}):
        return f"{where} the item has no lease_until number ({{'N': str(now + lease_seconds)}})"
    ahead = float(item["lease_until"]["N"]) - claimed_at
    if abs(ahead - run.lease) > 1:
        return (f"{where} lease_until is {duration(round(ahead))} after now; it must be now + lease_seconds "
                f"({duration(run.lease)})")
    return ""


def _play(run: _LeaseRun, step: tuple[Any, ...]) -> str:
    """Play one step of a story; a problem in words, or ""."""
    action = step[0]
    if action == "wait":
        run.clock.skip(step[1])  # only the `now` the claims are given counts it: no service timer needs to see it
    elif action == "complete":
        _complete(run.ddb, run.table, step[1])
        run.keys[step[1]].done = True
    elif action == "claim":
        return _play_claim(run, step[1])
    elif action == "together":
        return _play_together(run, step[1])
    return ""


def _play_claim(run: _LeaseRun, key: str) -> str:
    owner = run.next_owner()
    _, must = _state_words(run, key)
    before, claimed_at = len(run.log.calls), run.clock.now()
    won = run.claim(key, owner)
    if not isinstance(won, bool):
        return f"claim returned {won!r}; return True (you may run the work) or False"
    errors = [call for call in run.log.calls[before:] if call.error and call.error != "ConditionalCheckFailedException"]
    if won != (must == "won"):
        return _claim_diagnosis(run, key, owner, won, errors)
    if won:
        if problem := _item_problem(run, key, owner, claimed_at):
            return problem
        run.keys[key] = _KeyState(owner, claimed_at + run.lease)
    return ""


def _play_together(run: _LeaseRun, key: str) -> str:
    owners = [run.next_owner(), run.next_owner()]
    claimed_at = run.clock.now()
    results = run.clock.run_together(*(lambda o=o: run.claim(key, o) for o in owners))
    if any(not isinstance(won, bool) for won in results):
        return f"claim returned {next(w for w in results if not isinstance(w, bool))!r}; return True or False"
    if results.count(True) == 2:
        return (f"{owners[0]} and {owners[1]} claimed {key} at the same instant and both got True: a read followed by "
                "a write lets both see a free key; only a condition DynamoDB checks with the write picks exactly one")
    if results.count(True) == 0:
        return f"{owners[0]} and {owners[1]} claimed the free key {key} at the same instant and neither won: one must"
    winner = owners[results.index(True)]
    if problem := _item_problem(run, key, winner, claimed_at):
        return problem
    run.keys[key] = _KeyState(winner, claimed_at + run.lease)
    return ""


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
    item = _item(ddb, table, key)
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
    if _item(ddb, table, key).get("status", {}).get("S") == COMPLETED:
        return False  # a cheap early answer; the conditional write below still decides every race
    return reference_claim(ddb, table, key, owner, now, lease)


LEASE_RIGHT = (
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

LEASE_WRONG = (
    WrongAnswer("an unconditional put", lambda ddb, t, k, o, now, lease: _put(ddb, t, k, o, now, lease, None),
                "the write needs a condition"),
    WrongAnswer("no lease: only attribute_not_exists", lambda ddb, t, k, o, now, lease: _put(
        ddb, t, k, o, now, lease, "attribute_not_exists(pk)"), "would stay blocked"),
    WrongAnswer("reclaims whatever is past its lease", lambda ddb, t, k, o, now, lease: _put(
        ddb, t, k, o, now, lease, "attribute_not_exists(pk) OR lease_until < :now"), "never reclaim finished work"),
    WrongAnswer("reads, then writes without a condition", _read_then_put, "both got True"),
    WrongAnswer("a condition on the lease only", lambda ddb, t, k, o, now, lease: _put(
        ddb, t, k, o, now, lease, "lease_until < :now"), "a free key must be won"),
    WrongAnswer("status unescaped, every error taken for a lost race", lambda ddb, t, k, o, now, lease: _put(
        ddb, t, k, o, now, lease, "attribute_not_exists(pk) OR (status = :running AND lease_until < :now)",
        catch_all=True), "DynamoDB refused your put_item"),
    WrongAnswer("the item under another key", lambda ddb, t, k, o, now, lease: reference_claim(
        _Rekeyed(ddb), t, k, o, now, lease), "no item with pk"),
    WrongAnswer("returns a string", lambda ddb, t, k, o, now, lease: "won", "return True"),
    WrongAnswer("a hard-coded 15-minute lease", lambda ddb, t, k, o, now, lease: reference_claim(
        ddb, t, k, o, now, LEASE), "it must be now + lease_seconds", public=False),
    WrongAnswer("a hard-coded key", lambda ddb, t, k, o, now, lease: reference_claim(
        ddb, t, "alert-7", o, now, lease), "no item with pk 'alert-42'", public=False),
)


class _Rekeyed:
    """A client that writes under sk 'LEASE' (a learner who mistyped the sort key)."""

    def __init__(self, ddb: Any) -> None:
        self._ddb = ddb

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ddb, name)

    def put_item(self, **request: Any) -> Any:
        request["Item"] = {**request["Item"], "sk": {"S": "LEASE"}}
        return self._ddb.put_item(**request)


@register(
    "02.lease",
    title="A conditional claim with a lease",
    function="claim",
    points=3,
    public=[
        LeaseStory("the first claim wins, a second waits", (("claim", "alert-7"), ("claim", "alert-7"))),
        LeaseStory("a crashed worker's lease runs out", (("claim", "alert-7"), ("wait", LEASE + 1), ("claim", "alert-7"))),
        LeaseStory("a live lease is respected", (("claim", "alert-7"), ("wait", LEASE // 2), ("claim", "alert-7"))),
        LeaseStory("finished work is never reclaimed",
                   (("claim", "alert-7"), ("complete", "alert-7"), ("wait", LEASE + 1), ("claim", "alert-7"))),
        LeaseStory("two workers claim at the same moment", (("together", "alert-7"),)),
    ],
    hidden=[
        LeaseStory("another key, another lease",
                   (("claim", "alert-42"), ("claim", "alert-43"), ("wait", 301), ("claim", "alert-42"),
                    ("claim", "alert-42")), lease=300),
    ],
    reference=reference_claim,
    right_answers=LEASE_RIGHT,
    wrong_answers=LEASE_WRONG,
    timeout=15,
)
def check_lease(answer: Any, case: LeaseStory, ctx: Any) -> CaseOutcome:
    """Play the story's claims on a fresh table; judge each against the key's state just before it."""
    backend = ctx.backend
    with experiment_table(backend, ctx.fresh_prefix()) as table:
        ddb = Latency(backend.client("dynamodb"), backend.clock, 0.05)
        log = CallLog(ddb, backend.clock)
        run = _LeaseRun(answer, backend.client("dynamodb"), table, backend.clock, case.lease, log)
        try:
            for step in case.steps:
                if problem := _play(run, step):
                    return CaseOutcome(False, problem)
        finally:
            log.close()
    return CaseOutcome(True, f"{run.owners} claims, each as it must be")
