"""Lab 02 checks: an idempotent consumer, a lease that can be reclaimed, the idempotency window.

``02.consumer``: ``consumer(delivery, store)`` files one ticket per alert
however often the alert arrives. The harness delivers alerts through a real
queue to two workers that crash at named points, and (hidden) through a
producer that published one alert twice; it demands exactly one ticket per
alert, none lost.

``02.lease``: ``claim(ddb, table, key, owner, now, lease_seconds)`` is the
conditional write itself: win a free key, wait on a live lease, reclaim an
expired one, never reclaim finished work, and (hidden) let exactly one of two
simultaneous claims win.

``02.window``: ``idempotency_window(retry_window, retention, replay_horizon)``
must cover the latest moment the same work can come back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...errors import FleetlabError
from ...experiments.delivery import deliver_under_chaos
from ...faults import Crash, CrashPoint, FaultPlan, Latency
from ...state.idempotency import COMPLETED, Completed, IdempotencyStore
from ...aws.topology import experiment_queue, experiment_table
from ..registry import Case, CaseOutcome, WrongAnswer, register

CONSUMER = "ticketing"
ALERTS = [f"alert-{n}" for n in range(1, 7)]
VISIBILITY = 120


@dataclass(frozen=True)
class Chaos(Case):
    """How the alerts arrive: crashes at named points, and alerts published twice."""

    crashes: tuple[Crash, ...] = ()
    republished: tuple[str, ...] = ()


def _story(result: Any, alert: str) -> str:
    receives = [h for h in result.tracer.timeline(alert) if h.name in ("received", "crashed")]
    steps = ", ".join(
        f"{h.name} by {h.component}" + (f" (receive {h.attrs['receive']})" if "receive" in h.attrs else "")
        for h in receives
    )
    return steps or "never received"


@register(
    "02.consumer",
    title="An idempotent consumer: one ticket per alert",
    points=3,
    public=[
        Chaos("a crash after the ticket, before the delete",
              crashes=(Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-2"),)),
        Chaos("a crash before the ticket", crashes=(Crash(CrashPoint.BEFORE_EFFECT, "alert-3"),)),
    ],
    hidden=[
        Chaos("a producer that published alert-4 twice", republished=("alert-4",)),
        Chaos("crashes at both points, twice, and a duplicate publish",
              crashes=(Crash(CrashPoint.BEFORE_EFFECT, "alert-1"), Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-1", 2),
                       Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-5")),
              republished=("alert-5", "alert-6")),
    ],
    wrong_answers=(
        WrongAnswer("no idempotency at all", lambda d, store: d.record_effect(kind="ticket"), "filed 2 tickets"),
        WrongAnswer("keyed by the SQS MessageId", lambda d, store: _keyed(d, store, d.message_id),
                    "filed 2 tickets", public=False),
        WrongAnswer("marks the work done before the ticket", lambda d, store: _done_first(d, store), "filed 0 tickets"),
        WrongAnswer("checks the record, then acts", lambda d, store: _check_then_act(d, store),
                    "filed 2 tickets", public=False),
    ),
    timeout=20,
)
def check_consumer(answer: Any, case: Chaos, ctx: Any) -> CaseOutcome:
    if not callable(answer):
        return CaseOutcome(False, "pass the function itself: check('02.consumer', consumer)")
    backend = ctx.backend
    prefix = ctx.fresh_prefix()
    with experiment_table(backend, prefix) as table, experiment_queue(
        backend, prefix, visibility_timeout=VISIBILITY, max_receive_count=5
    ) as queue:
        ddb = Latency(backend.client("dynamodb"), backend.clock, 0.05)
        store = IdempotencyStore(ddb, table, backend.clock, lease_seconds=VISIBILITY, window_seconds=86_400)
        learner_errors: list[Exception] = []

        def consumer(delivery: Any) -> Any:
            try:
                return answer(delivery, store)
            except FleetlabError:  # crashes, busy keys, lost leases: the harness's faults, handled by the worker
                raise
            except Exception as error:  # the learner's own bug: report it, not its symptoms
                learner_errors.append(error)
                raise

        result = deliver_under_chaos(
            backend, queue, consumer, ALERTS, faults=FaultPlan(crashes=case.crashes), republished=case.republished,
        )
    if learner_errors:
        raise learner_errors[0]
    wrong = [(a, result.ledger.count(a)) for a in ALERTS if result.ledger.count(a) != 1]
    if wrong:
        alert, tickets = wrong[0]
        return CaseOutcome(False, f"{alert} filed {tickets} tickets ({_story(result, alert)}); every alert must file exactly 1")
    return CaseOutcome(True, f"{len(ALERTS)} alerts, {len(ALERTS)} tickets")


def _keyed(delivery: Any, store: IdempotencyStore, key: str) -> Any:
    outcome = store.claim(key, CONSUMER)
    if isinstance(outcome, Completed):
        return outcome.result
    delivery.record_effect(kind="ticket")
    store.complete(outcome, "filed")
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
        return json.loads(record["result"])
    delivery.record_effect(kind="ticket")
    outcome = store.claim(delivery.trace_id, CONSUMER)
    if not isinstance(outcome, Completed):
        store.complete(outcome, "filed")
    return "filed"


LEASE = 900


@dataclass(frozen=True)
class LeaseStory(Case):
    """A sequence of claims on one key, with what each must return."""

    steps: tuple[tuple[str, Any], ...] = field(default=())


def _item(ddb: Any, table: str, key: str) -> dict[str, Any]:
    return ddb.get_item(TableName=table, Key={"pk": {"S": key}, "sk": {"S": "lease"}}, ConsistentRead=True).get("Item", {})


def _complete(ddb: Any, table: str, key: str) -> None:
    ddb.update_item(
        TableName=table, Key={"pk": {"S": key}, "sk": {"S": "lease"}},
        UpdateExpression="SET #s = :done", ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":done": {"S": COMPLETED}},
    )


def _call_claim(answer: Any, ddb: Any, table: str, owner: str, clock: Any) -> Any:
    return answer(ddb, table, "alert-7", owner, clock.now(), LEASE)


@register(
    "02.lease",
    title="A conditional claim with a lease",
    points=3,
    public=[
        LeaseStory("the first claim wins, a second waits", (("claim", True), ("claim", False))),
        LeaseStory("a crashed worker's lease runs out", (("claim", True), ("wait", LEASE + 1), ("claim", True))),
        LeaseStory("a live lease is respected", (("claim", True), ("wait", LEASE // 2), ("claim", False))),
        LeaseStory("finished work is never reclaimed",
                   (("claim", True), ("complete", None), ("wait", LEASE + 1), ("claim", False))),
    ],
    hidden=[LeaseStory("two workers claim at the same moment", (("together", 1),))],
    wrong_answers=(
        WrongAnswer("an unconditional put", lambda ddb, t, k, o, now, lease: _put(ddb, t, k, o, now, lease, None) or True,
                    "second claim"),
        WrongAnswer("no lease: only attribute_not_exists", lambda ddb, t, k, o, now, lease: _put(
            ddb, t, k, o, now, lease, "attribute_not_exists(pk)"), "blocks"),
        WrongAnswer("reclaims whatever is past its lease", lambda ddb, t, k, o, now, lease: _put(
            ddb, t, k, o, now, lease, "attribute_not_exists(pk) OR lease_until < :now"), "finished"),
        WrongAnswer("reads, then writes without a condition", lambda ddb, t, k, o, now, lease: _read_then_put(
            ddb, t, k, o, now, lease), "both", public=False),
    ),
    timeout=10,
)
def check_lease(answer: Any, case: LeaseStory, ctx: Any) -> CaseOutcome:
    if not callable(answer):
        return CaseOutcome(False, "pass the function itself: check('02.lease', claim)")
    backend = ctx.backend
    clock = backend.clock
    with experiment_table(backend, ctx.fresh_prefix()) as table:
        ddb = Latency(backend.client("dynamodb"), clock, 0.05)
        owners = iter(f"worker-{n}" for n in range(1, 10))
        for action, expected in case.steps:
            if action == "wait":
                clock.sleep(expected)
            elif action == "complete":
                _complete(ddb, table, "alert-7")
            elif action == "claim":
                owner = next(owners)
                won = _call_claim(answer, ddb, table, owner, clock)
                if not isinstance(won, bool):
                    return CaseOutcome(False, f"claim returned {won!r}; return True (you may run the work) or False")
                if won != expected:
                    return CaseOutcome(False, _lease_diagnosis(case.name, owner, won))
            elif action == "together":
                results = clock.run_together(
                    lambda: _call_claim(answer, ddb, table, "worker-A", clock),
                    lambda: _call_claim(answer, ddb, table, "worker-B", clock),
                )
                if results.count(True) != 1:
                    return CaseOutcome(False, f"two workers claimed alert-7 at the same moment and both got {results[0]}: "
                                              "only a condition evaluated by DynamoDB itself can pick exactly one")
    return CaseOutcome(True, case.name)


def _lease_diagnosis(story: str, owner: str, won: bool) -> str:
    if "second waits" in story:
        return f"{owner}'s second claim on alert-7 also won while worker-1 still held it: the put needs a condition"
    if "crashed" in story:
        return f"worker-1 crashed holding alert-7; after its lease ran out {owner} still could not claim it: alert-7 blocks forever"
    if "live lease" in story:
        return f"{owner} took alert-7 while worker-1's lease was still live: two workers would run it"
    return f"{owner} reclaimed alert-7 after it had finished: its ticket would be filed again"


def _put(ddb: Any, table: str, key: str, owner: str, now: float, lease: float, condition: str | None) -> bool:
    from botocore.exceptions import ClientError

    request: dict[str, Any] = {
        "TableName": table,
        "Item": {"pk": {"S": key}, "sk": {"S": "lease"}, "status": {"S": "INPROGRESS"},
                 "owner": {"S": owner}, "lease_until": {"N": str(now + lease)}},
    }
    if condition:
        request["ConditionExpression"] = condition
        if ":now" in condition:
            request["ExpressionAttributeValues"] = {":now": {"N": str(now)}}
    try:
        ddb.put_item(**request)
    except ClientError:
        return False
    return True


def _read_then_put(ddb: Any, table: str, key: str, owner: str, now: float, lease: float) -> bool:
    item = _item(ddb, table, key)
    if item and (item["status"]["S"] == COMPLETED or float(item["lease_until"]["N"]) > now):
        return False
    return _put(ddb, table, key, owner, now, lease, None)


@dataclass(frozen=True)
class Horizon(Case):
    """How long the same work can keep coming back, in seconds."""

    retry_window: int = 3_600
    retention: int = 4 * 86_400
    replay_horizon: int = 0


def _days(seconds: float) -> str:
    return f"{seconds / 86_400:.1f} days" if seconds >= 86_400 else f"{seconds / 3_600:.1f} h"


@register(
    "02.window",
    title="Choose the idempotency window",
    points=2,
    public=[
        Horizon("bus retries for 1 h, queue keeps 4 days", 3_600, 4 * 86_400, 0),
        Horizon("bus retries for 24 h, queue keeps 14 days, replays up to 7 days later", 86_400, 14 * 86_400, 7 * 86_400),
    ],
    hidden=[Horizon("bus retries for 1 h, queue keeps 1 day, replays up to 30 days later", 3_600, 86_400, 30 * 86_400)],
    wrong_answers=(
        WrongAnswer("the retry window only", lambda retry, retention, replay: retry, "ran again"),
        WrongAnswer("the queue's retention only", lambda retry, retention, replay: retention, "ran again"),
        WrongAnswer("a flat 24 hours", lambda retry, retention, replay: 86_400, "ran again"),
        WrongAnswer("forever, in practice", lambda retry, retention, replay: 10 * 365 * 86_400, "grows"),
    ),
    timeout=10,
)
def check_window(answer: Any, case: Horizon, ctx: Any) -> CaseOutcome:
    if not callable(answer):
        return CaseOutcome(False, "pass the function itself: check('02.window', idempotency_window)")
    window = answer(case.retry_window, case.retention, case.replay_horizon)
    if isinstance(window, bool) or not isinstance(window, (int, float)) or window <= 0:
        return CaseOutcome(False, f"idempotency_window returned {window!r}; return a positive number of seconds")
    latest = case.retry_window + case.retention + case.replay_horizon
    if window > 2 * latest + 86_400:
        return CaseOutcome(False, f"a window of {_days(window)} keeps records far past the last possible duplicate "
                                  f"({_days(latest)}): the table only grows; choose the smallest window that covers it")
    backend = ctx.backend
    clock = backend.clock
    with experiment_table(backend, ctx.fresh_prefix()) as table:
        store = IdempotencyStore(backend.client("dynamodb"), table, clock, lease_seconds=60, window_seconds=max(window, 61))
        first = store.claim("alert-9", CONSUMER)
        store.complete(first, "filed")
        start = clock.now()
        for arrival in sorted({case.retry_window, case.retry_window + case.retention, latest}):
            clock.sleep(start + arrival - 1 - clock.now())
            again = store.claim("alert-9", CONSUMER)
            if not isinstance(again, Completed):
                return CaseOutcome(False, f"a duplicate arriving {_days(arrival)} after the first run ran again: "
                                          f"the record had expired after {_days(window)}")
    return CaseOutcome(True, f"{_days(window)} covers duplicates up to {_days(latest)} later")
