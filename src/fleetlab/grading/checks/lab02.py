"""Lab 02 checks: an idempotent consumer, a lease that can be reclaimed, the idempotency window.

``02.consumer``: ``consumer(delivery, store)`` files one ticket per alert
however often the alert arrives. The harness delivers six alerts (steps of
three incidents, so a key on the conversation collides) through a real
queue to two workers that crash at named points, and through a producer
that published one alert twice (a key on the MessageId, or a read before the
claim, files it twice). It demands exactly one ticket per alert, each filed
by a delivery that won its claim on the store, and explains a wrong count
from what each delivery did (its claims, its ticket, its crash).

``02.lease``: ``claim(ddb, table, key, owner, now, lease_seconds)`` is the
conditional write itself: win a free key, wait on a live lease, reclaim an
expired one, never reclaim finished work, and let exactly one of two
simultaneous claims win. Each claim is judged against the state of the key
just before it, and a won claim must leave the item the statement names.
The hidden case uses another key and another lease length.

``02.window``: ``idempotency_window(retry_window, retention, replay_horizon)``
must cover the latest moment the same work can come back (their sum), and
stay within ten times it. Pure arithmetic: it never touches the backend.
"""

from __future__ import annotations

import math
import threading
import weakref
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy
from botocore.exceptions import ClientError

from ...aws.topology import experiment_queue, experiment_table
from ...errors import AlreadyInProgress, FleetlabError, InvalidInput
from ...experiments.delivery import deliver_under_chaos
from ...faults import Crash, CrashPoint, FaultPlan, Latency
from ...state.idempotency import COMPLETED, INPROGRESS, Claim, Completed, IdempotencyStore
from ..calls import CallLog
from ..registry import Case, CaseOutcome, RightAnswer, WrongAnswer, register
from ..values import duration, seconds

CONSUMER = "ticketing"
INCIDENTS = {"alert-1": ("inc-7", 1), "alert-2": ("inc-7", 2), "alert-3": ("inc-7", 3),
             "alert-4": ("inc-8", 1), "alert-5": ("inc-8", 2), "alert-6": ("inc-9", 1)}
ALERTS = list(INCIDENTS)
VISIBILITY = 120


@dataclass(frozen=True)
class Chaos(Case):
    """How the alerts arrive: crashes at named points, and alerts published twice."""

    crashes: tuple[Crash, ...] = ()
    republished: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Entry:
    """One thing a delivery did: claimed (won, done, busy), filed its ticket, completed."""

    seq: int
    alert: str
    delivery: str  # "<message id>#<receive>"
    what: str
    key: str = ""
    consumer: str = ""

    @property
    def record(self) -> str:
        """The record a claim named, shortly: ``'alert-2'`` (consumer 'ticketing')."""
        key = self.key if len(self.key) <= 24 else self.key[:20] + "…"
        return f"{key!r} (consumer {self.consumer!r})"


@dataclass
class _Journal:
    """What every delivery did, in order; the consumer wrapper says which delivery is running."""

    entries: list[_Entry] = field(default_factory=list)
    current: threading.local = field(default_factory=threading.local)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def log(self, what: str, key: str = "", consumer: str = "") -> None:
        alert, delivery = getattr(self.current, "delivery", ("", ""))
        with self.lock:
            self.entries.append(_Entry(len(self.entries), alert, delivery, what, key, consumer))

    def of(self, alert: str) -> list[_Entry]:
        return [entry for entry in self.entries if entry.alert == alert]


class _WatchedStore(IdempotencyStore):
    """The learner's store: the real one, with every claim and completion written in the journal."""

    def __init__(self, *args: Any, journal: _Journal, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.journal = journal

    def claim(self, key: str, consumer: str) -> Claim | Completed:
        try:
            outcome = super().claim(key, consumer)
        except AlreadyInProgress:
            self.journal.log("busy", key, consumer)
            raise
        self.journal.log("won" if isinstance(outcome, Claim) else "done", key, consumer)
        return outcome

    def complete(self, claim: Claim, result: Any) -> None:
        super().complete(claim, result)
        self.journal.log("complete", claim.key, claim.consumer)


class _WatchedDelivery:
    """The delivery as the learner sees it; filing the ticket is written in the journal."""

    def __init__(self, delivery: Any, journal: _Journal) -> None:
        self._delivery = delivery
        self._journal = journal

    def __getattr__(self, name: str) -> Any:
        return getattr(self._delivery, name)

    def record_effect(self, *args: Any, **kwargs: Any) -> Any:
        effect = self._delivery.record_effect(*args, **kwargs)
        self._journal.log("ticket")
        return effect


def _story(result: Any, alert: str) -> str:
    receives = [h for h in result.tracer.timeline(alert) if h.name in ("received", "crashed")]
    steps = ", ".join(
        f"{h.name} by {h.component}" + (f" (receive {h.attrs['receive']})" if "receive" in h.attrs else "")
        for h in receives
    )
    return steps or "never received"


def _consumer_diagnosis(alert: str, tickets: int, journal: _Journal, result: Any) -> str:
    """Why ``alert`` filed ``tickets`` tickets, from what each of its deliveries did."""
    mine = journal.of(alert)
    head = f"{alert} filed {tickets} ticket{'' if tickets == 1 else 's'}"
    story = f" ({_story(result, alert)})"
    claims = [entry for entry in mine if entry.what in ("won", "done", "busy")]
    filers = [entry.delivery for entry in mine if entry.what == "ticket"]
    if tickets == 0:
        return head + _why_none(mine, journal) + story
    unclaimed = [d for d in filers if not any(e.delivery == d and e.what == "won" for e in mine)]
    if unclaimed:
        return head + _why_unclaimed(unclaimed, mine, tickets) + story
    records = sorted({entry.record for entry in claims if entry.delivery in filers})
    if len(records) > 1:
        return head + f": its deliveries claimed different records ({' and '.join(records[:2])}), so each won: " \
            "that key names the delivery or the worker (a MessageId or a receipt handle changes when the work comes " \
            "back); key the work itself, delivery.trace_id, under one consumer name" + story
    if not any(entry.what == "complete" for entry in mine):
        return head + f": each delivery won the claim on {records[0]} because none completed it; call " \
            "store.complete(claim, result) after the ticket" + story
    return head + ": the same work ran its effect again" + story


def _why_unclaimed(unclaimed: list[str], mine: list[_Entry], tickets: int) -> str:
    if any(e.delivery in unclaimed and e.what in ("done", "busy") for e in mine):
        return (": a delivery filed its ticket before its claim found the work taken (a read, then the ticket, then "
                "the claim): two deliveries at once both see no record; claim first, and file only when the claim is won")
    if tickets > 1:
        return (": none of its deliveries claimed the work on the store before filing, so nothing told a later "
                "delivery it was done; claim the key with store.claim(key, name) before the ticket")
    return (": a ticket was filed by a delivery that never won a claim on the store; what one worker remembers in "
            "memory dies with it and never reaches the other workers: claim the key with store.claim first")


def _why_none(mine: list[_Entry], journal: _Journal) -> str:
    for entry in mine:
        if entry.what == "done":
            owner = next((e.alert for e in journal.entries if e.what == "complete" and e.key == entry.key), "")
            if owner and owner != entry.alert:
                return (f": its claim on {entry.record} found {owner}'s completed record: two alerts share that key; "
                        "key each alert's own work, delivery.trace_id, not its incident (conversation)")
    completed_first = [e for e in mine if e.what == "complete" and not any(
        t.what == "ticket" and t.delivery == e.delivery and t.seq < e.seq for t in mine)]
    if completed_first:
        return (": its record was completed before its ticket was filed, and the worker crashed in between, so "
                "every later delivery found the work done; file the ticket, then complete")
    if not any(entry.what in ("won", "done", "busy") for entry in mine):
        return ": its deliveries returned without claiming the work or filing a ticket"
    return ": no delivery filed it"


def _keyed(delivery: Any, store: IdempotencyStore, key: str, consumer: str = CONSUMER) -> Any:
    outcome = store.claim(key, consumer)
    if isinstance(outcome, Completed):
        return outcome.result
    delivery.record_effect(kind="ticket")
    store.complete(outcome, "filed")
    return "filed"


def reference_consumer(delivery: Any, store: IdempotencyStore) -> Any:
    """Claim the work's key (its trace_id); file only on a won claim; complete with the result."""
    return _keyed(delivery, store, delivery.trace_id)


def _releases_on_failure(delivery: Any, store: IdempotencyStore) -> Any:
    outcome = store.claim(delivery.trace_id, "tickets")
    if isinstance(outcome, Completed):
        return outcome.result
    try:
        delivery.record_effect(kind="ticket")
    except Exception:
        store.release(outcome)
        raise
    store.complete(outcome, {"ticket": f"T-{delivery.trace_id}"})
    return "filed"


def _done_first(delivery: Any, store: IdempotencyStore) -> Any:
    outcome = store.claim(delivery.trace_id, CONSUMER)
    if isinstance(outcome, Completed):
        return outcome.result
    store.complete(outcome, "filed")
    delivery.record_effect(kind="ticket")
    return "filed"


def _check_then_act(delivery: Any, store: IdempotencyStore) -> Any:
    record = store.record(delivery.trace_id, CONSUMER)
    if record is not None and record.get("status") == COMPLETED:
        return record["result"]
    delivery.record_effect(kind="ticket")
    outcome = store.claim(delivery.trace_id, CONSUMER)
    if isinstance(outcome, Claim):
        store.complete(outcome, "filed")
    return "filed"


def _never_completes(delivery: Any, store: IdempotencyStore) -> Any:
    outcome = store.claim(delivery.trace_id, CONSUMER)
    if isinstance(outcome, Claim):
        delivery.record_effect(kind="ticket")
    return "filed"


_REMEMBERED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def _in_memory(delivery: Any, store: IdempotencyStore) -> Any:
    seen = _REMEMBERED.setdefault(store, set())  # what one process remembers, for the life of one run
    if delivery.trace_id not in seen:
        seen.add(delivery.trace_id)
        delivery.record_effect(kind="ticket")
    return "filed"


CONSUMER_RIGHT = (
    RightAnswer("another key format and consumer name",
                lambda d, store: _keyed(d, store, f"ticketing:{d.trace_id}", "tickets")),
    RightAnswer("the key from the envelope", lambda d, store: _keyed(d, store, d.envelope.trace_id)),
    RightAnswer("conversation and step together",
                lambda d, store: _keyed(d, store, f"{d.envelope.conversation_id}/step-{d.envelope.step}")),
    RightAnswer("releases the claim when the ticket fails, saves a dict", _releases_on_failure),
)

CONSUMER_WRONG = (
    WrongAnswer("no idempotency at all", lambda d, store: d.record_effect(kind="ticket"), "nothing told a later delivery"),
    WrongAnswer("keyed by the SQS MessageId", lambda d, store: _keyed(d, store, d.message_id), "that key names the delivery"),
    WrongAnswer("keyed by the receipt handle", lambda d, store: _keyed(d, store, d.receipt_handle),
                "that key names the delivery"),
    WrongAnswer("keyed by the conversation", lambda d, store: _keyed(d, store, d.envelope.conversation_id),
                "two alerts share that key"),
    WrongAnswer("marks the work done before the ticket", _done_first, "completed before its ticket was filed"),
    WrongAnswer("checks the record, then acts", _check_then_act, "claim first, and file only when the claim is won"),
    WrongAnswer("never completes the claim", _never_completes, "none completed it"),
    WrongAnswer("remembers alerts in memory", _in_memory, "remembers in memory dies with it"),
    WrongAnswer("one consumer name per worker", lambda d, store: _keyed(d, store, d.trace_id, d.worker),
                "that key names the delivery or the worker"),
)


@register(
    "02.consumer",
    title="An idempotent consumer: one ticket per alert",
    points=3,
    public=[
        Chaos("a crash after the ticket, before the delete",
              crashes=(Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-2"),)),
        Chaos("a crash before the ticket", crashes=(Crash(CrashPoint.BEFORE_EFFECT, "alert-3"),)),
        Chaos("a producer that published alert-4 twice", republished=("alert-4",)),
    ],
    hidden=[
        Chaos("crashes at both points, twice, and duplicate publishes",
              crashes=(Crash(CrashPoint.BEFORE_EFFECT, "alert-1"), Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-1", 2),
                       Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-5")),
              republished=("alert-5", "alert-6")),
    ],
    reference=reference_consumer,
    right_answers=CONSUMER_RIGHT,
    wrong_answers=CONSUMER_WRONG,
    timeout=30,
)
def check_consumer(answer: Any, case: Chaos, ctx: Any) -> CaseOutcome:
    """Deliver the alerts under the case's chaos; one ticket each, each after a won claim."""
    if not callable(answer):
        return CaseOutcome(False, "pass the function itself: check('02.consumer', consumer)")
    backend = ctx.backend
    prefix = ctx.fresh_prefix()
    journal = _Journal()
    with experiment_table(backend, prefix) as table, experiment_queue(
        backend, prefix, visibility_timeout=VISIBILITY, max_receive_count=5
    ) as queue:
        ddb = Latency(backend.client("dynamodb"), backend.clock, 0.05)
        store = _WatchedStore(ddb, table, backend.clock, lease_seconds=VISIBILITY, window_seconds=86_400,
                              journal=journal)
        learner_errors: list[Exception] = []

        def consumer(delivery: Any) -> Any:
            journal.current.delivery = (delivery.trace_id, f"{delivery.message_id}#{delivery.receive_count}")
            try:
                return answer(_WatchedDelivery(delivery, journal), store)
            except FleetlabError:  # crashes, busy keys, lost leases: the harness's faults, handled by the worker
                raise
            except Exception as error:  # the learner's own bug: report it, not its symptoms
                learner_errors.append(error)
                raise

        result = deliver_under_chaos(
            backend, queue, consumer, _sending_order(case), faults=FaultPlan(crashes=case.crashes),
            conversation_of=INCIDENTS.__getitem__,
        )
    if learner_errors:
        raise learner_errors[0]
    miscounted = [alert for alert in ALERTS if result.ledger.count(alert) != 1]
    unclaimed = [alert for alert in ALERTS if not any(entry.what == "won" for entry in journal.of(alert))]
    if wrong := miscounted or unclaimed:
        return CaseOutcome(False, _consumer_diagnosis(wrong[0], result.ledger.count(wrong[0]), journal, result))
    return CaseOutcome(True, f"{len(ALERTS)} alerts, {len(ALERTS)} tickets")


def _sending_order(case: Chaos) -> list[str]:
    """The messages to send: each alert published twice first, both copies side by side, so two workers
    take them at the same moment; then the rest."""
    twice = [alert for alert in case.republished for _ in range(2)]
    return twice + [alert for alert in ALERTS if alert not in case.republished]


LEASE = 900
LEASE_KEY_HINT = '{"pk": {"S": key}, "sk": {"S": "lease"}}'


@dataclass(frozen=True)
class LeaseStory(Case):
    """Claims on keys, in order: ("claim", key, expected), ("wait", seconds), ("complete", key), ("together", key)."""

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
        run.clock.sleep(step[1])
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
    if not callable(answer):
        return CaseOutcome(False, "pass the function itself: check('02.lease', claim)")
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


@dataclass(frozen=True)
class Horizon(Case):
    """How long the same work can keep coming back, in seconds."""

    retry_window: int = 3_600
    retention: int = 4 * 86_400
    replay_horizon: int = 0


MAX_WINDOW_FACTOR = 10


def reference_window(retry_window: float, retention: float, replay_horizon: float) -> float:
    """The latest a duplicate can arrive (retries, then the queue, then a replay), plus an hour."""
    return retry_window + retention + replay_horizon + 3_600


WINDOW_RIGHT = (
    RightAnswer("exactly the sum", lambda retry, retention, replay: retry + retention + replay),
    RightAnswer("the sum plus a day", lambda retry, retention, replay: retry + retention + replay + 86_400),
    RightAnswer("three times the sum", lambda retry, retention, replay: 3 * (retry + retention + replay)),
    RightAnswer("a numpy integer", lambda retry, retention, replay: numpy.int64(retry + retention + replay)),
    RightAnswer("a Fraction", lambda retry, retention, replay: Fraction(11, 10) * (retry + retention + replay)),
    RightAnswer("a Decimal", lambda retry, retention, replay: Decimal(retry + retention + replay)),
)

WINDOW_WRONG = (
    WrongAnswer("the retry window only", lambda retry, retention, replay: retry, "the duplicate runs again"),
    WrongAnswer("the queue's retention only", lambda retry, retention, replay: retention, "the duplicate runs again"),
    WrongAnswer("a flat 24 hours", lambda retry, retention, replay: 86_400, "the duplicate runs again"),
    WrongAnswer("the longest of the three", lambda retry, retention, replay: max(retry, retention, replay),
                "the duplicate runs again"),
    WrongAnswer("retries and retention, no replays", lambda retry, retention, replay: retry + retention,
                "the duplicate runs again"),
    WrongAnswer("forever, in practice", lambda retry, retention, replay: 10 * 365 * 86_400, "the table only grows"),
    WrongAnswer("a string", lambda retry, retention, replay: "30 days", "return a number of seconds"),
    WrongAnswer("NaN", lambda retry, retention, replay: float("nan"), "returned NaN"),
    WrongAnswer("a hard-coded 30 days", lambda retry, retention, replay: 30 * 86_400, "the duplicate runs again", public=False),
)


def _why_latest(case: Horizon) -> str:
    parts = [f"{duration(case.retry_window)} of bus retries", f"{duration(case.retention)} in the queue"]
    if case.replay_horizon:
        parts.append(f"a replay up to {duration(case.replay_horizon)} later")
    return ", ".join(parts)


@register(
    "02.window",
    title="Choose the idempotency window",
    points=2,
    public=[
        Horizon("bus retries for 1 h, queue keeps 4 days", 3_600, 4 * 86_400, 0),
        Horizon("bus retries for 24 h, queue keeps 14 days, replays up to 7 days later", 86_400, 14 * 86_400, 7 * 86_400),
    ],
    hidden=[
        Horizon("bus retries for 1 h, queue keeps 1 day, replays up to 30 days later", 3_600, 86_400, 30 * 86_400),
        Horizon("bus retries for 6 h, queue keeps 2 days, replays up to 3 days later", 6 * 3_600, 2 * 86_400, 3 * 86_400),
    ],
    reference=reference_window,
    right_answers=WINDOW_RIGHT,
    wrong_answers=WINDOW_WRONG,
    timeout=5,
)
def check_window(answer: Any, case: Horizon, ctx: Any) -> CaseOutcome:
    """Arithmetic only: the window covers retries + retention + replays, and stays within ten times that."""
    if not callable(answer):
        return CaseOutcome(False, "pass the function itself: check('02.window', idempotency_window)")
    try:
        window = seconds(answer(case.retry_window, case.retention, case.replay_horizon),
                         returned_by="idempotency_window", example="4 * 86_400")
    except InvalidInput as bad:
        return CaseOutcome(False, str(bad))
    latest = case.retry_window + case.retention + case.replay_horizon
    if window < latest:
        return CaseOutcome(False, f"a duplicate can arrive up to {duration(latest)} after the first run "
                                  f"({_why_latest(case)}); with a {duration(window)} window the record is gone "
                                  f"{duration(latest - window)} before then, and the duplicate runs again")
    if window > MAX_WINDOW_FACTOR * latest:
        return CaseOutcome(False, f"a window of {duration(window)} keeps records more than {MAX_WINDOW_FACTOR}x past the "
                                  f"last possible duplicate ({duration(latest)}): the table only grows")
    return CaseOutcome(True, f"{duration(window)} covers duplicates up to {duration(latest)} later")
