"""Check ``02.consumer``: ``consumer(delivery, store)`` files one ticket per alert
however often the alert arrives. The harness delivers six alerts (steps of
three incidents, so a key on the conversation collides) through a real
queue to two workers that crash at named points, and through a producer
that published one alert twice (a key on the MessageId, or a read before the
claim, files it twice). It demands exactly one ticket per alert, each filed
by a delivery that won its claim on the store, and no delivery that returned
(its message deleted) while the work was held elsewhere; it explains a wrong
count from what each delivery did (its claims, its ticket, its crash).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from fleetlab.composition.topology import experiment_queue, experiment_table
from fleetlab.core.errors import AlreadyInProgress, FleetlabError
from fleetlab.core.faults import Crash, CrashPoint, FaultPlan, Latency
from fleetlab.course.experiments.idempotency import deliver_under_chaos
from fleetlab.course.grading.registry import Case, CaseOutcome, Diagnosis, register
from fleetlab.services.state.idempotency import Claim, Completed, IdempotencyStore

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


def _consumer_diagnosis(alert: str, tickets: int, journal: _Journal, result: Any) -> Diagnosis:
    """Why ``alert`` filed ``tickets`` tickets, from what each of its deliveries did, with the mistake's key."""
    mine = journal.of(alert)
    head = f"{alert} filed {tickets} ticket{'' if tickets == 1 else 's'}"
    story = f" ({_story(result, alert)})"
    claims = [entry for entry in mine if entry.what in ("won", "done", "busy")]
    filers = [entry.delivery for entry in mine if entry.what == "ticket"]
    if tickets == 0:
        why = _why_none(mine, journal)
        return Diagnosis(head + why + story, why.mistake)
    unclaimed = [d for d in filers if not any(e.delivery == d and e.what == "won" for e in mine)]
    if unclaimed:
        why = _why_unclaimed(unclaimed, mine, tickets)
        return Diagnosis(head + why + story, why.mistake)
    filing_claims = [entry for entry in claims if entry.delivery in filers]
    records = sorted({entry.record for entry in filing_claims})
    if len(records) > 1:
        one_key = len({entry.key for entry in filing_claims}) == 1  # then only the consumer names differ
        return Diagnosis(
            head + f": its deliveries claimed different records ({' and '.join(records[:2])}), so each won: "
            "that key names the delivery or the worker (a MessageId or a receipt handle changes when the work comes "
            "back); key the work itself, delivery.trace_id, under one consumer name" + story,
            "consumer-name-per-worker" if one_key else "key-names-the-delivery")
    if not any(entry.what == "complete" for entry in mine):
        return Diagnosis(head + f": each delivery won the claim on {records[0]} because none completed it; call "
                         "store.complete(claim, result) after the ticket" + story, "never-completes-the-claim")
    return Diagnosis(head + ": the same work ran its effect again" + story, "effect-ran-twice")


def _why_unclaimed(unclaimed: list[str], mine: list[_Entry], tickets: int) -> Diagnosis:
    """Why a ticket was filed by a delivery that won no claim: a claim after the ticket, no claim at all (more than
    one ticket), or a single ticket with nothing on the store (the work remembered elsewhere)."""
    if any(e.delivery in unclaimed and e.what in ("done", "busy") for e in mine):
        return Diagnosis(": a delivery filed its ticket before its claim found the work taken (a read, then the "
                         "ticket, then the claim): two deliveries at once both see no record; claim first, and file "
                         "only when the claim is won", "files-before-claiming")
    if tickets > 1:
        return Diagnosis(": none of its deliveries claimed the work on the store before filing, so nothing told a "
                         "later delivery it was done; claim the key with store.claim(key, name) before the ticket",
                         "no-claim-before-the-ticket")
    return Diagnosis(": a ticket was filed by a delivery that never won a claim on the store; what one worker "
                     "remembers in memory dies with it and never reaches the other workers: claim the key with "
                     "store.claim first", "remembers-work-outside-the-store")


def _why_none(mine: list[_Entry], journal: _Journal) -> Diagnosis:
    """Why an alert filed no ticket: its key completed by another alert, its record completed before a crash
    took the ticket, no claim at all, or none of its deliveries filing."""
    for entry in mine:
        if entry.what == "done":
            owner = next((e.alert for e in journal.entries if e.what == "complete" and e.key == entry.key), "")
            if owner and owner != entry.alert:
                return Diagnosis(f": its claim on {entry.record} found {owner}'s completed record: two alerts share "
                                 "that key; key each alert's own work, delivery.trace_id, not its incident "
                                 "(conversation)", "key-shared-by-several-alerts")
    completed_first = [e for e in mine if e.what == "complete" and not any(
        t.what == "ticket" and t.delivery == e.delivery and t.seq < e.seq for t in mine)]
    if completed_first:
        return Diagnosis(": its record was completed before its ticket was filed, and the worker crashed in "
                         "between, so every later delivery found the work done; file the ticket, then complete",
                         "completed-before-the-ticket")
    if not any(entry.what in ("won", "done", "busy") for entry in mine):
        return Diagnosis(": its deliveries returned without claiming the work or filing a ticket",
                         "returns-without-claiming")
    return Diagnosis(": no delivery filed it", "alert-never-filed")


@register(
    "02.consumer",
    title="An idempotent consumer: one ticket per alert",
    function="consumer",
    parameters="delivery, store",
    points=3,
    public=[
        Chaos("a crash after the ticket, before the delete",
              crashes=(Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-2"),)),
        Chaos("a crash before the ticket", crashes=(Crash(CrashPoint.BEFORE_EFFECT, "alert-3"),)),
        Chaos("a producer that published alert-4 twice", republished=("alert-4",)),
    ],
    hidden_cases=1,
    timeout=30,
)
def check_consumer(answer: Any, case: Chaos, ctx: Any) -> CaseOutcome:
    """Deliver the alerts under the case's chaos; one ticket each, each after a won claim."""
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
                returned = answer(_WatchedDelivery(delivery, journal), store)
            except FleetlabError:  # crashes, busy keys, lost leases: the harness's faults, handled by the worker
                raise
            except Exception as error:  # the learner's own bug: report it, not its symptoms
                learner_errors.append(error)
                raise
            journal.log("returned")
            return returned

        result = deliver_under_chaos(
            backend, queue, consumer, _sending_order(case), faults=FaultPlan(crashes=case.crashes),
            conversation_of=INCIDENTS.__getitem__, stop_when=lambda: bool(learner_errors),  # the verdict is known
        )
    if learner_errors:
        raise learner_errors[0]
    miscounted = [alert for alert in ALERTS if result.ledger.count(alert) != 1]
    unclaimed = [alert for alert in ALERTS if not any(entry.what == "won" for entry in journal.of(alert))]
    if wrong := miscounted or unclaimed:
        return CaseOutcome(False, _consumer_diagnosis(wrong[0], result.ledger.count(wrong[0]), journal, result))
    if swallowed := _returned_while_busy(journal):
        return CaseOutcome(False, f"{swallowed}: a delivery found the work held by another worker "
                                  "(AlreadyInProgress) and returned anyway, so its worker deleted the message; had "
                                  "the holder died before its ticket, no message was left to bring the work back: "
                                  "let AlreadyInProgress through, and the worker leaves the message for later",
                           "returns-while-the-work-is-held")
    return CaseOutcome(True, f"{len(ALERTS)} alerts, {len(ALERTS)} tickets")


def _returned_while_busy(journal: _Journal) -> str:
    """The first alert one of whose deliveries returned normally when its last claim found the work busy."""
    last_claim: dict[str, str] = {}
    for entry in journal.entries:
        if entry.what in ("won", "done", "busy"):
            last_claim[entry.delivery] = entry.what
        elif entry.what == "returned" and last_claim.get(entry.delivery) == "busy":
            return entry.alert
    return ""


def _sending_order(case: Chaos) -> list[str]:
    """The messages to send: each alert published twice first, both copies side by side, so two workers
    take them at the same moment; then the rest."""
    twice = [alert for alert in case.republished for _ in range(2)]
    return twice + [alert for alert in ALERTS if alert not in case.republished]
