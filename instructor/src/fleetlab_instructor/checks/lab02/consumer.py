"""``02.consumer``: the hidden chaos, the reference consumer and both catalogues.

The public cases each bring one kind of trouble (a crash at one point, or
an alert published twice); the hidden case brings them all at once, on
other alerts.
"""

from __future__ import annotations

from typing import Any

from fleetlab.core.errors import AlreadyInProgress
from fleetlab.core.faults import Crash, CrashPoint
from fleetlab.course.checks.lab02.consumer import Chaos
from fleetlab.services.state.idempotency import COMPLETED, Claim, Completed, IdempotencyStore
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

CONSUMER = "ticketing"

HIDDEN = (
    Chaos("crashes at both points, twice, and duplicate publishes",
          crashes=(Crash(CrashPoint.BEFORE_EFFECT, "alert-1"), Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-1", 2),
                   Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-5")),
          republished=("alert-5", "alert-6")),
)


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


def _swallows_busy(delivery: Any, store: IdempotencyStore) -> Any:
    try:
        return _keyed(delivery, store, delivery.trace_id)
    except AlreadyInProgress:
        return "someone else is on it"


def _waits_for_the_holder(delivery: Any, store: IdempotencyStore) -> Any:
    while True:
        try:
            return _keyed(delivery, store, delivery.trace_id)
        except AlreadyInProgress:
            store.clock.sleep(1)


_REMEMBERED: dict[str, set[str]] = {}


def _in_memory(delivery: Any, store: IdempotencyStore) -> Any:
    seen = _REMEMBERED.setdefault(store.table, set())  # what one process remembers, for one run's table
    if delivery.trace_id not in seen:
        seen.add(delivery.trace_id)
        delivery.record_effect(kind="ticket")
    return "filed"


RIGHT_ANSWERS = (
    RightAnswer("another key format and consumer name",
                lambda d, store: _keyed(d, store, f"ticketing:{d.trace_id}", "tickets")),
    RightAnswer("the key from the envelope", lambda d, store: _keyed(d, store, d.envelope.trace_id)),
    RightAnswer("conversation and step together",
                lambda d, store: _keyed(d, store, f"{d.envelope.conversation_id}/step-{d.envelope.step}")),
    RightAnswer("releases the claim when the ticket fails, saves a dict", _releases_on_failure),
    RightAnswer("waits for the holder to finish, then returns its result", _waits_for_the_holder),
)

WRONG_ANSWERS = (
    WrongAnswer("no idempotency at all", lambda d, store: d.record_effect(kind="ticket"), "nothing told a later delivery",
                mistake="no-claim-before-the-ticket"),
    WrongAnswer("keyed by the SQS MessageId", lambda d, store: _keyed(d, store, d.message_id), "that key names the delivery",
                mistake="key-names-the-delivery"),
    WrongAnswer("keyed by the receipt handle", lambda d, store: _keyed(d, store, d.receipt_handle),
                "that key names the delivery", mistake="key-names-the-delivery"),
    WrongAnswer("keyed by the conversation", lambda d, store: _keyed(d, store, d.envelope.conversation_id),
                "two alerts share that key", mistake="key-shared-by-several-alerts"),
    WrongAnswer("marks the work done before the ticket", _done_first, "completed before its ticket was filed",
                mistake="completed-before-the-ticket"),
    WrongAnswer("checks the record, then acts", _check_then_act, "claim first, and file only when the claim is won",
                mistake="files-before-claiming"),
    WrongAnswer("never completes the claim", _never_completes, "none completed it",
                mistake="never-completes-the-claim"),
    WrongAnswer("remembers alerts in memory", _in_memory, "remembers in memory dies with it",
                mistake="remembers-work-outside-the-store"),
    WrongAnswer("swallows AlreadyInProgress and returns", _swallows_busy, "let AlreadyInProgress through",
                mistake="returns-while-the-work-is-held"),
    WrongAnswer("one consumer name per worker", lambda d, store: _keyed(d, store, d.trace_id, d.worker),
                "that key names the delivery or the worker", mistake="consumer-name-per-worker"),
)

SHARED_MISTAKES = {"key-names-the-delivery": "keyed by the delivery (a MessageId or a receipt handle), not the work"}

SIDE = InstructorSide("02.consumer", hidden=HIDDEN, reference=reference_consumer,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS, shared_mistakes=SHARED_MISTAKES)
