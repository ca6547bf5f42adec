"""Check ``02.lease``: ``claim(ddb, table, key, owner, now, lease_seconds)`` is the
conditional write itself: win a free key, wait on a live lease, reclaim an
expired one, never reclaim finished work, let exactly one of two
simultaneous claims win, and let a write DynamoDB refuses for another reason
(throttling) through. Each claim is judged against the state of the key
just before it, and a won claim must leave the item the statement names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.composition.topology import experiment_table
from fleetlab.core.faults import Latency
from fleetlab.course.grading.calls import CallLog
from fleetlab.course.grading.registry import Case, CaseOutcome, Diagnosis, register
from fleetlab.course.grading.values import duration
from fleetlab.services.state.idempotency import COMPLETED, INPROGRESS

LEASE = 900
LEASE_KEY_HINT = '{"pk": {"S": key}, "sk": {"S": "lease"}}'


@dataclass(frozen=True)
class LeaseStory(Case):
    """Steps on keys, in order: ("claim", key), ("wait", seconds), ("complete", key), ("together", key),
    ("throttled", key): a claim whose write DynamoDB refuses with ProvisionedThroughputExceededException.

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


def lease_item(ddb: Any, table: str, key: str) -> dict[str, Any]:
    """The lease item of ``key`` as a consistent read returns it (low-level shapes), or {} when there is none."""
    return ddb.get_item(TableName=table, Key={"pk": {"S": key}, "sk": {"S": "lease"}}, ConsistentRead=True).get("Item", {})


THROTTLED = "ProvisionedThroughputExceededException"
WRITES = {"put_item": "PutItem", "update_item": "UpdateItem", "transact_write_items": "TransactWriteItems"}


class _Throttle:
    """The learner's DynamoDB client: once ``armed``, its next write is refused with THROTTLED."""

    def __init__(self, client: Any) -> None:
        self._client, self.armed = client, False

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name not in WRITES or not self.armed:
            return attribute

        def refused(**params: Any) -> Any:
            self.armed = False
            raise ClientError({"Error": {"Code": THROTTLED, "Message": "The level of configured provisioned "
                                         "throughput for the table was exceeded."}}, WRITES[name])

        return refused


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
    throttle: _Throttle
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


def _claim_diagnosis(run: _LeaseRun, key: str, owner: str, won: bool, errors: list[Any]) -> Diagnosis:
    """Why a claim's answer was wrong for the key's state, with the mistake's key; a False that DynamoDB's refusal
    of the write (``errors``, not a failed condition) produced is that error taken for a lost race."""
    words, _ = _state_words(run, key)
    state = run.keys.get(key)
    if won:
        if state is not None and state.done:
            return Diagnosis(f"{owner} reclaimed {words}: its ticket would be filed again; never reclaim finished work",
                             "reclaims-finished-work")
        return Diagnosis(f"{owner} claimed {words} and got True: two workers would run it; the write needs a condition "
                         "that refuses a live lease", "wins-a-live-lease")
    refused = f" (DynamoDB refused your {errors[-1].operation}: {errors[-1].error}: {errors[-1].message})" if errors else ""
    if state is None:
        return Diagnosis(f"{owner} claimed {words} and got False: a free key must be won{refused}",
                         "error-taken-for-a-lost-race" if errors else "free-key-not-won")
    return Diagnosis(f"{owner} claimed {words} and got False: {key} would stay blocked until the record expires; "
                     f"reclaim a lease once lease_until has passed{refused}",
                     "error-taken-for-a-lost-race" if errors else "expired-lease-not-reclaimed")


def _item_problem(run: _LeaseRun, key: str, owner: str, claimed_at: float) -> str:
    """What is wrong with the item a won claim left, with the mistake's key, or ""."""
    item = lease_item(run.ddb, run.table, key)
    where = f"after {owner}'s winning claim"
    if not item:
        return Diagnosis(f"{where} there is no item with pk {key!r} and sk 'lease': write the claim under the key "
                         f"{LEASE_KEY_HINT} (the low-level client's shapes)", "no-lease-item-under-the-key")
    status = item.get("status", {}).get("S")
    if status != INPROGRESS:
        return Diagnosis(f"{where} the item's status is {status!r}, not 'INPROGRESS' (a string, {{'S': 'INPROGRESS'}})",
                         "item-status-not-inprogress")
    if item.get("owner", {}).get("S") != owner:
        return Diagnosis(f"{where} the item's owner is {item.get('owner')!r}, not {{'S': {owner!r}}}",
                         "item-owner-not-the-claimant")
    if "N" not in item.get("lease_until", {}):
        return Diagnosis(f"{where} the item has no lease_until number ({{'N': str(now + lease_seconds)}})",
                         "item-has-no-lease-until")
    ahead = float(item["lease_until"]["N"]) - claimed_at
    if abs(ahead - run.lease) > 1:
        return Diagnosis(f"{where} lease_until is {duration(round(ahead))} after now; it must be now + lease_seconds "
                         f"({duration(run.lease)})", "lease-until-not-now-plus-lease")
    return ""


def _play(run: _LeaseRun, step: tuple[Any, ...]) -> str:
    """Play one step of a story; a problem in words (a ``Diagnosis`` with its mistake's key), or ""."""
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
    elif action == "throttled":
        return _play_throttled(run, step[1])
    return ""


def _play_claim(run: _LeaseRun, key: str) -> str:
    owner = run.next_owner()
    _, must = _state_words(run, key)
    before, claimed_at = len(run.log.calls), run.clock.now()
    won = run.claim(key, owner)
    if not isinstance(won, bool):
        return Diagnosis(f"claim returned {won!r}; return True (you may run the work) or False", "claim-not-a-bool")
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
    words, must = _state_words(run, key)
    claimed_at = run.clock.now()
    results = run.clock.run_together(*(lambda o=o: run.claim(key, o) for o in owners))
    if any(not isinstance(won, bool) for won in results):
        not_bool = next(won for won in results if not isinstance(won, bool))
        return Diagnosis(f"claim returned {not_bool!r}; return True or False", "claim-not-a-bool")
    if results.count(True) == 2:
        return Diagnosis(f"{owners[0]} and {owners[1]} claimed {words} at the same instant and both got True: a read "
                         "followed by a write lets both see the key free; only a condition DynamoDB checks with the "
                         "write picks exactly one",
                         _both_won_mistake(run, key, must))
    if must == "refused":  # a live lease, or finished work: both must wait
        return _claim_diagnosis(run, key, owners[results.index(True)], True, []) if True in results else ""
    if results.count(True) == 0:
        return Diagnosis(f"{owners[0]} and {owners[1]} claimed {words} at the same instant and neither won: one must",
                         "neither-wins-a-simultaneous-claim")
    winner = owners[results.index(True)]
    if problem := _item_problem(run, key, winner, claimed_at):
        return problem
    run.keys[key] = _KeyState(winner, claimed_at + run.lease)
    return ""


def _both_won_mistake(run: _LeaseRun, key: str, must: str | None) -> str:
    """The key of two simultaneous claims both winning, by the key's state before them."""
    state = run.keys.get(key)
    if state is None:
        return "both-win-a-free-key"
    if must == "won":
        return "both-reclaim-an-expired-lease"
    return "reclaims-finished-work" if state.done else "wins-a-live-lease"


def _play_throttled(run: _LeaseRun, key: str) -> str:
    owner = run.next_owner()
    run.throttle.armed = True
    try:
        won = run.claim(key, owner)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == THROTTLED:
            return ""
        raise
    finally:
        run.throttle.armed = False
    return Diagnosis(f"{owner} claimed {key}, DynamoDB refused the write with {THROTTLED} (throttling, not a lost "
                     f"race), and your claim returned {won!r}: the worker would "
                     f"{'run with no claim written' if won else 'give up a key nobody holds'}; return False only for "
                     "ConditionalCheckFailedException and let any other error through",
                     "wins-though-the-write-was-refused" if won else "error-taken-for-a-lost-race")


@register(
    "02.lease",
    title="A conditional claim with a lease",
    function="claim",
    parameters="ddb, table, key, owner, now, lease_seconds",
    points=3,
    public=[
        LeaseStory("the first claim wins, a second waits", (("claim", "alert-7"), ("claim", "alert-7"))),
        LeaseStory("a crashed worker's lease runs out", (("claim", "alert-7"), ("wait", LEASE + 1), ("claim", "alert-7"))),
        LeaseStory("a live lease is respected", (("claim", "alert-7"), ("wait", LEASE // 2), ("claim", "alert-7"))),
        LeaseStory("finished work is never reclaimed",
                   (("claim", "alert-7"), ("complete", "alert-7"), ("wait", LEASE + 1), ("claim", "alert-7"))),
        LeaseStory("two workers claim at the same moment", (("together", "alert-7"),)),
    ],
    hidden_cases=3,
    timeout=15,
    implemented_by=("fleetlab.services.state.idempotency.IdempotencyStore.claim",),
)
def check_lease(answer: Any, case: LeaseStory, ctx: Any) -> CaseOutcome:
    """Play the story's claims on a fresh table; judge each against the key's state just before it."""
    backend = ctx.backend
    with experiment_table(backend, ctx.fresh_prefix()) as table:
        throttle = _Throttle(Latency(backend.client("dynamodb"), backend.clock, 0.05))
        log = CallLog(throttle, backend.clock)
        run = _LeaseRun(answer, backend.client("dynamodb"), table, backend.clock, case.lease, log, throttle)
        try:
            for step in case.steps:
                if problem := _play(run, step):
                    return CaseOutcome(False, problem)
        finally:
            log.close()
    return CaseOutcome(True, f"{run.owners} claims, each as it must be")
