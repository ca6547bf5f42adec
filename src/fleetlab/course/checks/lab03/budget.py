"""Check ``03.budget``: ``choose_budget(retry_seconds, outage_seconds, poison_deadline_seconds,
source_retention_seconds, triage_seconds)`` returns ``(max_receive_count, dlq_retention_seconds)``.

The harness makes a real queue with the learner's maxReceiveCount (a failed
step comes back every ``retry_seconds``), sends good steps as a dependency
goes down for ``outage_seconds``, and runs a worker: every good step must be
done, none parked while the outage ran. A poison step must be parked within
the deadline, judged by SQS's rule (it is parked after maxReceiveCount
receives, one every ``retry_seconds``; lab 03 shows the backend's). The DLQ retention is
judged by SQS's rule for a standard queue (the harness's kind): a message's
age counts from its first enqueue, so a step that sat in the source queue for
its whole retention and was then parked must still be in the DLQ
``triage_seconds`` later. (A FIFO queue restarts the count when the message
moves to its DLQ; these cases do not use one.)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from fleetlab.backends.resources import Resources
from fleetlab.composition.topology import WorkQueue
from fleetlab.core.errors import InvalidInput, ModelError
from fleetlab.course.checks import hints
from fleetlab.core.ledger import EffectsLedger
from fleetlab.course.experiments.poison import send_steps
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab.course.grading.values import duration, seconds
from fleetlab.services.sqs import messages
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.worker import QueueWorker

MAX_RECEIVE_COUNT = 1_000
"""SQS's largest maxReceiveCount."""
RETENTION_RANGE = (60, 14 * 86_400)
"""SQS keeps a message for 1 minute to 14 days."""
GOOD_STEPS = ("conv-1-step-1", "conv-2-step-1", "conv-3-step-1")
DAY = 86_400


@dataclass(frozen=True)
class Facts(Case):
    """What the team knows: how often a failed step is retried, how long outages last, and the deadlines."""

    retry_seconds: int = 60
    outage_seconds: int = 240
    poison_deadline_seconds: int = 900
    source_retention_seconds: int = 4 * DAY
    triage_seconds: int = 3 * DAY


@register(
    "03.budget",
    title="Choose maxReceiveCount and the DLQ's retention",
    function="choose_budget",
    parameters="retry_seconds, outage_seconds, poison_deadline_seconds, source_retention_seconds, triage_seconds",
    points=2,
    public=[
        Facts("Lambda workers: a retry every minute, 4-minute outages, poison out within 15 min; "
              "the queue keeps 4 d, triage takes up to 3 d", 60, 240, 900, 4 * DAY, 3 * DAY),
        Facts("container workers: a retry every 2 min, outages up to 5 min, poison out within 1 h; "
              "the queue keeps 1 d, triage takes up to 2 d", 120, 300, 3_600, DAY, 2 * DAY),
    ],
    hidden_cases=2,
    timeout=30,
    side_by_side=True,
)
def check_budget(answer: Any, case: Facts, ctx: Any) -> CaseOutcome:
    """Read the two numbers; run the outage and the poison through a real queue; judge the retention by SQS's rule."""
    returned = answer(case.retry_seconds, case.outage_seconds, case.poison_deadline_seconds,
                      case.source_retention_seconds, case.triage_seconds)
    try:
        max_receive_count, retention = _read(returned)
    except InvalidInput as bad:
        return CaseOutcome(False, str(bad), READ_MISTAKES.get(bad.field, ""))
    run = _ride_out_the_outage(ctx, case, max_receive_count, retention)
    if run.parked_good:
        return CaseOutcome(False, _parked_good_work(case, max_receive_count, run), "good-work-parked-in-outage")
    parked_after = max_receive_count * case.retry_seconds
    if parked_after > case.poison_deadline_seconds:
        return CaseOutcome(False, f"with maxReceiveCount {max_receive_count} a poison step is received "
                                  f"{max_receive_count} times, one every {duration(case.retry_seconds)}, so it is parked "
                                  f"{duration(parked_after)} after it first failed; it must be parked within "
                                  f"{duration(case.poison_deadline_seconds)}", "poison-parked-too-late")
    needed = case.source_retention_seconds + case.triage_seconds
    if retention < needed:
        slip = hints.unit_slip(retention, needed, RETENTION_RANGE[1])
        return CaseOutcome(False, _too_short(case, retention) + slip,
                           "retention-in-another-unit" if slip else "dlq-expires-before-triage")
    return CaseOutcome(True, f"maxReceiveCount {max_receive_count} rides out a {duration(case.outage_seconds)} outage "
                             f"and parks poison after {duration(parked_after)}; the DLQ keeps {duration(retention)}")


READ_MISTAKES = {"choose_budget": "not-two-numbers", "max_receive_count": "receive-count-not-whole-or-allowed",
                 "dlq_retention_seconds": "retention-out-of-range"}
"""The mistake key of each field ``_read`` refuses."""


def _read(returned: Any) -> tuple[int, float]:
    """(maxReceiveCount, DLQ retention) from a pair or a dict; InvalidInput says what to return."""
    if isinstance(returned, Mapping):
        keys = ("max_receive_count", "dlq_retention_seconds")
        if not all(key in returned for key in keys):
            raise InvalidInput("choose_budget", f"returned a dict with keys {sorted(returned)}",
                               hint="return two numbers: (max_receive_count, dlq_retention_seconds)")
        returned = [returned[key] for key in keys]
    if isinstance(returned, (str, bytes)) or not hasattr(returned, "__len__") or len(returned) != 2:
        raise InvalidInput("choose_budget", f"returned {returned!r}",
                           hint="return two numbers: (max_receive_count, dlq_retention_seconds)")
    count, retention = returned
    if isinstance(count, bool) or not isinstance(count, (numbers.Real, Decimal)) or count != int(count):
        raise InvalidInput("max_receive_count", f"is {count!r}; it counts receives, so it is a whole number")
    if not 1 <= int(count) <= MAX_RECEIVE_COUNT:
        raise InvalidInput("max_receive_count", f"is {int(count)}; SQS accepts 1 to {MAX_RECEIVE_COUNT}")
    retention = seconds(retention, returned_by="dlq_retention_seconds", example="14 * 86_400")
    low, high = RETENTION_RANGE
    if not low <= retention <= high:
        raise InvalidInput("dlq_retention_seconds", f"is {duration(retention)}; SQS keeps a message for 1 min to 14 d "
                                                    f"({low} to {high} seconds)", hint="give seconds")
    return int(count), retention


@dataclass(frozen=True)
class _Outage:
    """What the worker saw: each good step's receives that failed, and the good steps that ended parked."""

    failed_receives: dict[str, list[tuple[int, float]]]
    parked_good: list[str]


def _ride_out_the_outage(ctx: Any, case: Facts, max_receive_count: int, retention: float) -> _Outage:
    backend, clock = ctx.backend, ctx.backend.clock
    with Resources(backend, ctx.fresh_prefix()) as made:
        source, dlq = made.queue_with_dlq(
            "budget", max_receive_count=max_receive_count,
            attributes={"VisibilityTimeout": str(case.retry_seconds),
                        "MessageRetentionPeriod": str(case.source_retention_seconds)},
            dlq_attributes={"MessageRetentionPeriod": str(int(retention))},
        )
        queue = WorkQueue("budget", source.url, source.arn, dlq.url, dlq.arn, case.retry_seconds, max_receive_count)
        start = clock.now()
        back_at = start + case.outage_seconds
        failed: dict[str, list[tuple[int, float]]] = {}
        ledger = EffectsLedger()

        def step(delivery: Delivery) -> None:
            if clock.now() < back_at:
                failed.setdefault(delivery.trace_id, []).append((delivery.receive_count, clock.now() - start))
                raise ModelError(f"{delivery.trace_id}: throttled (the provider is down)", transient=True)
            delivery.record_effect(kind="step")

        send_steps(backend, queue.url, GOOD_STEPS)
        worker = QueueWorker(backend, queue.url, step, name="worker", ledger=ledger)
        horizon = start + (max_receive_count + 2) * (case.retry_seconds + 1)
        while messages.held(backend, queue.url) and clock.now() < horizon:
            worker.poll_once(max_messages=messages.MAX_RECEIVE_BATCH)
            clock.sleep(case.retry_seconds + 1)  # everything received together comes back together
        return _Outage(failed, [trace for trace in GOOD_STEPS if ledger.count(trace) == 0])


def _parked_good_work(case: Facts, max_receive_count: int, run: _Outage) -> str:
    first = run.parked_good[0]
    receives = run.failed_receives.get(first, [])
    when = ", ".join(f"+{duration(round(at))}" for _, at in receives) or "never"
    failing = math.ceil(case.outage_seconds / case.retry_seconds)
    last = receives[-1][1] if receives else 0.0
    next_receive = last + case.retry_seconds + 1  # the harness polls once a visibility timeout and a second
    after_outage = next_receive >= case.outage_seconds
    parked = (f"its next receive, at +{duration(round(next_receive))}, came after the outage and would have "
              "succeeded, but SQS moved it to the DLQ instead" if after_outage else
              f"SQS moved it to the DLQ on its next receive, at +{duration(round(next_receive))}, still in the outage")
    return (f"{len(run.parked_good)} good steps parked: with maxReceiveCount {max_receive_count}, {first} failed on "
            f"receives at {when} while the provider was down ({duration(case.outage_seconds)}); {parked}. With a "
            f"retry every {duration(case.retry_seconds)}, up to {failing} receives can fall in the outage: allow "
            "those and one more")


def _too_short(case: Facts, retention: float) -> str:
    left = retention - case.source_retention_seconds
    gone = f"{duration(left)} after it is parked" if left > 0 else "as soon as it is parked"
    return (f"a step can wait {duration(case.source_retention_seconds)} in the source queue (its retention) before it "
            f"fails and is parked. On a standard queue like this one, SQS counts its age from when it was first sent "
            f"(its SentTimestamp travels to the DLQ), so a DLQ that keeps {duration(retention)} deletes it {gone}, and triage "
            f"can take {duration(case.triage_seconds)}: keep at least "
            f"{duration(case.source_retention_seconds + case.triage_seconds)}")
