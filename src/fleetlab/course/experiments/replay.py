"""Replay hazards, for real: an archive on a bus, targets that take a replay differently, a ledger.

A ``ReplayBench`` puts an archive on a bus (the lab's fleet bus, or one of its
own) and gives every ``Target`` a rule, a queue and a consumer on it. Publish
step-completed events, deliver them, replay the archive, deliver again: the
effects ledger says how often each step took effect at each target, and
``deliveries`` what arrived (event id, ``replay-name``, what the target did).

A target's consumer behaves as its ``dedupes_on`` says: no key (every
delivery takes effect: a webhook that charges a card), the event's ``id``,
the SQS MessageId, or the ``trace_id`` of the work, each through the lab 02
idempotency store whose records live ``window_seconds``.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.backends.resources import Resources
from fleetlab.composition.topology import IDEMPOTENCY_KEYS
from fleetlab.core.clock import Clock, OffsetClock, library_clock
from fleetlab.core.errors import InvalidInput, PartlyRefused, Timeout
from fleetlab.core.ledger import EffectsLedger
from fleetlab.display.tables import Table
from fleetlab.services.events import replay as replays
from fleetlab.services.events.envelope import COMPLETED, SOURCE, Envelope, batches
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.worker import QueueWorker
from fleetlab.services.state.idempotency import Claim, IdempotencyStore

DAY = 86_400
COMPLETED_STEPS = {"source": [SOURCE], "detail-type": [COMPLETED]}
"""The events the lab archives and its targets act on: completed agent steps."""

DEDUPE_KEYS = (None, "trace_id", "event id", "SQS MessageId")
VISIBILITY = 60
SETTLE_SECONDS = 1.0  # real clock: a quiet second after the last delivery ends a round


@dataclass(frozen=True)
class Target:
    """A rule target: what one delivery does, and what (if anything) it deduplicates on."""

    name: str
    effect: str
    dedupes_on: str | None = None
    window_seconds: float = 30 * DAY

    def __post_init__(self) -> None:
        if self.dedupes_on not in DEDUPE_KEYS:
            raise InvalidInput("dedupes_on", f"{self.dedupes_on!r} is not one of {DEDUPE_KEYS}")
        if self.window_seconds <= 0:
            raise InvalidInput("window_seconds", f"must be positive, got {self.window_seconds}")

    def key_of(self, delivery: Delivery) -> str:
        """The idempotency key this target uses for ``delivery``."""
        keys = {"trace_id": delivery.trace_id, "event id": delivery.body.get("id", ""),
                "SQS MessageId": delivery.message_id}
        return keys[str(self.dedupes_on)]


RESULTS_STORE = Target("results-store", "saves the step's result", "trace_id")
BILLING_WEBHOOK = Target("billing-webhook", "charges the customer for the step")
AUDIT_LOG = Target("audit-log", "appends a row to the audit log", "event id")
LAB_TARGETS = (RESULTS_STORE, BILLING_WEBHOOK, AUDIT_LOG)


@dataclass(frozen=True)
class Delivered:
    """One event as one target's consumer received it, and what the target did with it."""

    target: str
    trace_id: str
    detail_type: str
    event_id: str
    event_time: str
    replay_name: str | None
    outcome: str  # "effect", "suppressed" (its key was done) or "lost" (the target was down)
    at: float


@dataclass
class ReplayBench:
    """An archive on a bus, and one rule, queue and consumer per target. Open it with ``ReplayBench.open``."""

    backend: Backend
    prefix: str
    bus_name: str
    archive: replays.Archive
    targets: dict[str, Target]
    rules: dict[str, str]
    store_clock: Clock | OffsetClock
    ledger: EffectsLedger = field(default_factory=EffectsLedger)
    deliveries: list[Delivered] = field(default_factory=list)
    _workers: dict[str, QueueWorker] = field(default_factory=dict, repr=False)
    _lost: dict[str, set[str]] = field(default_factory=dict, repr=False)
    _replays: int = 0

    @classmethod
    @contextlib.contextmanager
    def open(
        cls,
        backend: Backend,
        prefix: str,
        targets: Iterable[Target],
        *,
        bus: tuple[str, str] | None = None,
        patterns: Mapping[str, Mapping[str, Any]] | None = None,
        archive_pattern: Mapping[str, Any] | None = COMPLETED_STEPS,
        store_clock: Clock | OffsetClock | None = None,
    ) -> Iterator[ReplayBench]:
        """Make the bench under ``prefix``; everything it made is removed when the block ends.

        ``bus`` is (name, ARN) of a bus to use, else one is made. ``patterns``
        gives a target's rule its own pattern (default ``COMPLETED_STEPS``).
        ``store_clock`` runs the targets' idempotency stores (default: the
        backend's clock where it is virtual, else an OffsetClock, so records
        can age by days on a real-clock backend too).
        """
        chosen = list(targets)
        if len({t.name for t in chosen}) != len(chosen):
            raise InvalidInput("targets", f"names must be unique, got {[t.name for t in chosen]}")
        with Resources(backend, prefix) as made:
            bus_name, bus_arn = bus or made.bus("bus")
            pattern = None if archive_pattern is None else dict(archive_pattern)
            archive = replays.Archive(made.name("archive"), made.archive("archive", source_arn=bus_arn, pattern=pattern),
                                      bus_arn, pattern, retention_days=0)
            table = made.table("idempotency", **IDEMPOTENCY_KEYS)
            bench = cls(backend, prefix, bus_name, archive, {t.name: t for t in chosen}, {},
                        store_clock or library_clock(backend.clock))
            for target in chosen:
                bench._add_target(target, (patterns or {}).get(target.name, COMPLETED_STEPS), table, made)
            yield bench

    def _add_target(self, target: Target, pattern: Mapping[str, Any], table: str, made: Resources) -> None:
        queue = made.queue(target.name, {"VisibilityTimeout": str(VISIBILITY)})
        made.allow_eventbridge(queue, self.archive.bus_arn)
        self.rules[target.name] = made.rule(target.name, bus=self.bus_name, pattern=dict(pattern),
                                            targets=[{"Id": "queue", "Arn": queue.arn}])
        store = None
        if target.dedupes_on:
            lease = min(VISIBILITY, target.window_seconds / 2)
            store = IdempotencyStore(self.backend.client("dynamodb"), table, self.store_clock,
                                     lease_seconds=lease, window_seconds=target.window_seconds)
        self._workers[target.name] = QueueWorker(
            self.backend, queue.url, self._consumer(target, store), name=target.name, ledger=self.ledger
        )

    def _consumer(self, target: Target, store: IdempotencyStore | None) -> Any:
        def consume(delivery: Delivery) -> str:
            if delivery.trace_id in self._lost.get(target.name, ()):
                return self._note(target, delivery, "lost")
            claim = store.claim(target.key_of(delivery), target.name) if store else None
            if store and not isinstance(claim, Claim):
                return self._note(target, delivery, "suppressed")
            delivery.record_effect(kind=target.name)
            if isinstance(claim, Claim):
                store.complete(claim, "done")
            return self._note(target, delivery, "effect")

        return consume

    def _note(self, target: Target, delivery: Delivery, outcome: str) -> str:
        body = delivery.body if isinstance(delivery.body, dict) else {}
        self.deliveries.append(Delivered(
            target.name, delivery.trace_id, str(body.get("detail-type", "")), str(body.get("id", "")),
            str(body.get("time", "")), body.get(replays.REPLAY_NAME), outcome, self.store_clock.now(),
        ))
        return outcome

    # running it

    def publish(self, trace_ids: Iterable[str], *, agent_class: str = "researcher", detail_type: str = COMPLETED) -> list[str]:
        """Publish one event per trace on the bus; their event ids."""
        events = self.backend.client("events")
        entries = [Envelope(t, t, 1, agent_class).entry(self.bus_name, detail_type=detail_type) for t in trace_ids]
        ids: list[str] = []
        for request in batches(entries):
            response = events.put_events(Entries=request)
            refused = [str(entry.get("ErrorCode")) for entry in response["Entries"] if "EventId" not in entry]
            if refused:
                raise PartlyRefused(f"EventBridge refused {len(refused)} events ({refused[0]}); the others were "
                                    "published", refused=refused)
            ids += [entry["EventId"] for entry in response["Entries"]]
        return ids

    def deliver(self, *, expected: int = 0, lost: Mapping[str, Iterable[str]] | None = None,
                timeout: float = 5.0) -> list[Delivered]:
        """Run every target's consumer until the queues stay empty; what arrived this time.

        ``lost`` names, per target, traces it misses this time (it was down:
        the message goes, nothing takes effect). On a real clock EventBridge
        delivers asynchronously: this waits for ``expected`` deliveries, then
        for a quiet second, within ``timeout`` seconds.
        """
        self._lost = {name: set(traces) for name, traces in (lost or {}).items()}
        before = len(self.deliveries)
        clock = self.backend.clock
        quiet_since: list[float] = []

        def settled() -> bool:
            if sum(len(worker.poll_once(max_messages=10)) for worker in self._workers.values()):
                quiet_since.clear()
                return False
            if clock.virtual:  # moto (both virtual-clock backends) delivers inside PutEvents and StartReplay
                return True
            quiet_since[:] = quiet_since or [time.monotonic()]
            return len(self.deliveries) - before >= expected and time.monotonic() - quiet_since[0] >= SETTLE_SECONDS

        try:
            clock.wait_until(settled, timeout=timeout, what="deliveries to the bench's targets", interval=0.1)
        except Timeout:
            pass  # fewer arrived than expected: the caller judges what did
        finally:
            self._lost = {}
        return self.deliveries[before:]

    def replay(self, *, since: float, until: float | None = None) -> replays.Replay:
        """Replay the archive's events from ``since`` (epoch seconds) to ``until`` (now) onto the bus; wait for it."""
        self._replays += 1
        clock = self.backend.clock
        end = until if until is not None else clock.now()
        name = f"{self.prefix}replay-{self._replays}"
        return replays.replay(self.backend.client("events"), self.archive, name, clock, start=since, end=end)

    # what happened

    def effects(self, target: str) -> Counter[str]:
        """How many times each trace took effect at ``target``."""
        return Counter(e.key for e in self.ledger.effects() if e.kind == target)

    def duplicates(self, target: str) -> dict[str, int]:
        """Traces that took effect more than once at ``target``, with their counts."""
        return {trace: n for trace, n in self.effects(target).items() if n > 1}

    def summary(self, deliveries: Sequence[Delivered] | None = None, *, title: str = "what each target received") -> Table:
        """Per target: originals and replays received, and how many took effect or were suppressed.

        Counts ``deliveries`` (one ``deliver`` round's) or, by default, every delivery so far.
        """
        chosen = self.deliveries if deliveries is None else deliveries
        rows = []
        for name, target in self.targets.items():
            got = [d for d in chosen if d.target == name]
            rows.append({
                "target": name,
                "dedupes on": target.dedupes_on or "nothing",
                "originals": sum(1 for d in got if d.replay_name is None),
                "replays": sum(1 for d in got if d.replay_name is not None),
                "took effect": sum(1 for d in got if d.outcome == "effect"),
                "suppressed": sum(1 for d in got if d.outcome == "suppressed"),
            })
        return Table(rows, title=title)

    def set_pattern(self, target: str, pattern: Mapping[str, Any]) -> None:
        """Change the pattern of ``target``'s rule (PutRule on the same name updates it)."""
        if target not in self.targets:
            raise InvalidInput("target", f"{target!r} is not on this bench", hint=f"known: {sorted(self.targets)}")
        self.backend.client("events").put_rule(
            Name=f"{self.prefix}{target}", EventBusName=self.bus_name, EventPattern=json.dumps(pattern)
        )

    def ids_of(self, trace_id: str, target: str) -> Table:
        """Every delivery of one trace to one target: event id, replay-name and outcome."""
        rows = [{"delivery": n, "event id": d.event_id, "replay-name": d.replay_name or "-", "outcome": d.outcome}
                for n, d in enumerate((d for d in self.deliveries if d.trace_id == trace_id and d.target == target), 1)]
        return Table(rows, title=f"{trace_id} at {target}")


def configuration_facts(
    backend: Backend,
    *,
    bus_name: str,
    rule: str,
    queue_url: str,
    archive_name: str | None,
    replay_horizon_days: float | None,
) -> dict[str, Any]:
    """What decides the idempotency window, read back from the backend as AWS returns it.

    ``retry_policy``: the rule's first target's RetryPolicy (None: it sets
    none, the default applies); ``queue``: the queue's attributes (strings);
    ``archive``: DescribeArchive's fields (None: no archive);
    ``replay_horizon_days``: how far back the runbook allows a replay.
    """
    events = backend.client("events")
    target = events.list_targets_by_rule(Rule=rule, EventBusName=bus_name)["Targets"][0]
    queue = backend.client("sqs").get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    archive = None
    if archive_name:
        described = events.describe_archive(ArchiveName=archive_name)
        archive = {k: described[k] for k in ("ArchiveName", "EventSourceArn", "RetentionDays", "State") if k in described}
    return {
        "retry_policy": target.get("RetryPolicy"),
        "queue": {k: queue[k] for k in ("MessageRetentionPeriod", "VisibilityTimeout") if k in queue},
        "archive": archive,
        "replay_horizon_days": replay_horizon_days,
    }
