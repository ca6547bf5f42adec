"""Check ``03.redrive``: ``canary_redrive(sqs, dlq_url, queue_url, canary_size, process)`` moves
a canary of at most ``canary_size`` parked messages back to the work queue, runs ``process()``,
and moves the rest only if no canary message failed again.

The harness parks real steps on a DLQ, hands the learner a client that
records every call, and a ``process()`` that runs the workers (fixed for
some steps, still broken for others) over the work queue until it is empty,
parking what fails again. It judges the order of the learner's moves and
``process()`` calls, and the end state through the effects ledger: after a
healthy canary every parked step took effect exactly once; after a failed
one nothing more was moved; never a step lost or run twice.

One case kills the redrive right after its first send or delete once the
canary's ``process()`` has run (the library's ``CrashAfter``), between two
calls of a move of the rest, and lets the workers run on: no step may be
lost. A redrive that stops (or fails) before that point is judged as if
nothing had crashed, so it passes only by redriving every step. A step both on the work queue and back in the
DLQ is fine there: SQS delivers at least once, so a consumer deletes a
message only once what it asks for is done (here: the send), and the
idempotent worker downstream absorbs the duplicate.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fleetlab.composition.topology import experiment_queue
from fleetlab.core.errors import ModelError, WorkerCrashed
from fleetlab.core.faults import CrashAfter
from fleetlab.core.ledger import EffectsLedger
from fleetlab.course.experiments.poison import drain, step_body
from fleetlab.course.grading.calls import CallLog
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab.services.sqs import dlq
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.redrive import Drained


MOVES = ("send_message", "send_message_batch", "delete_message", "delete_message_batch")
"""The two calls of a move (one at a time or in batches): a crash case kills the redrive right after the first."""


@dataclass(frozen=True)
class Parked(Case):
    """``parked`` steps in the DLQ; the fix covers all but every ``still_failing``-th of them (0: all fixed).

    With ``crash`` the redrive is killed right after its first send or delete after the canary's process().
    """

    parked: int = 30
    canary_size: int = 5
    still_failing: int = 0
    crash: bool = False

    def fails(self, index: int) -> bool:
        return self.still_failing == 1 or (self.still_failing > 1 and index % self.still_failing != 0)


@register(
    "03.redrive",
    title="Redrive a DLQ with a canary",
    function="canary_redrive",
    parameters="sqs, dlq_url, queue_url, canary_size, process",
    points=3,
    public=[
        Parked("the fix works: 30 parked steps, a canary of 5", 30, 5, 0),
        Parked("the fix does not work yet: 30 parked steps, a canary of 5", 30, 5, 1),
        Parked("the redrive is killed moving the rest, right after a send or delete: 12 parked steps, a canary of 4",
               12, 4, 0, crash=True),
    ],
    hidden_cases=3,
    timeout=40,
    side_by_side=True,
    implemented_by=(
        "fleetlab.services.sqs.redrive.canary_redrive",
        "fleetlab.services.sqs.redrive.redrive",
        "fleetlab.services.sqs.redrive.move",
    ),
)
def check_redrive(answer: Any, case: Parked, ctx: Any) -> CaseOutcome:
    """Park the steps, run the learner's redrive against recorded calls and a real process(), judge the story."""
    backend = ctx.backend
    steps = [f"conv-{n}-step-1" for n in range(1, case.parked + 1)]
    broken = {trace for index, trace in enumerate(steps) if case.fails(index)}
    journal = _Journal()
    with experiment_queue(backend, ctx.fresh_prefix(), visibility_timeout=60, max_receive_count=3) as queue:
        target = queue.dead_letter_target()
        for n, trace in enumerate(steps):
            diagnosis = dlq.Diagnosis("ERROR_FROM_TARGET", f"{trace}: rejected", 2, dlq.NOT_ROUTED_BY_A_RULE, queue.arn)
            dlq.dead_letter(backend, target, {"MessageId": f"m-{n}", "Body": step_body(trace)}, diagnosis)

        def step(delivery: Delivery) -> None:
            if delivery.trace_id in broken:
                raise ModelError(f"{delivery.trace_id}: the model still rejects it", transient=False)
            delivery.record_effect(kind="step")

        def process() -> Drained:
            if killer is not None:
                killer.check_alive()  # a killed redrive calls nothing more
            journal.events.append(("process", journal.sent(log)))
            result = drain(backend, queue, step, ledger=journal.ledger)
            journal.results.append(result)
            if killer is not None:
                killer.arm()  # the crash lands in moving the rest
            return result

        log = CallLog(backend.client("sqs"), backend.clock)
        killer = CrashAfter(log.client, MOVES, who="the redrive", armed=False) if case.crash else None
        try:
            answer(killer or log.client, queue.dlq_url, queue.url, case.canary_size, process)
        except WorkerCrashed:
            if killer is None or killer.crashed_after is None:
                raise
        journal.events.append(("end", journal.sent(log)))
        log.close()
        drain(backend, queue, step, ledger=journal.ledger)  # whatever is left on the work queue still runs
        hidden_for = max([c.params.get("VisibilityTimeout", 0) for c in log.of("receive_message")] + [30])
        backend.clock.sleep(hidden_for + 1)  # what the learner received and kept is visible again
        parked = [record.trace_id for record in dlq.parked(backend, queue.dlq_url)]
    if killer is not None and killer.crashed_after is not None:
        return _judge_crash(killer.crashed_after, steps, journal, parked)
    return _judge(case, steps, broken, journal, parked)


@dataclass
class _Journal:
    """The order of the learner's moves and process() calls, what each process() found, and the effects."""

    events: list[tuple[str, int]] = field(default_factory=list)  # ("process" | "end", messages sent so far)
    results: list[Drained] = field(default_factory=list)
    ledger: EffectsLedger = field(default_factory=EffectsLedger)

    @staticmethod
    def sent(log: CallLog) -> int:
        """Messages sent to the work queue so far."""
        single = len([c for c in log.of("send_message") if c.ok])
        batched = sum(len(c.params.get("Entries", [])) for c in log.of("send_message_batch") if c.ok)
        return single + batched


def _judge(case: Parked, steps: list[str], broken: set[str], journal: _Journal, in_dlq: list[str]) -> CaseOutcome:
    parked = set(in_dlq)
    processes = [sent for what, sent in journal.events if what == "process"]
    total_sent = journal.events[-1][1]
    if not processes:
        return CaseOutcome(False, f"you moved {total_sent} steps and never called process(): move a canary, "
                                  "process() it, and look at what it says before moving the rest",
                           "never-calls-process")
    canary = processes[0]
    if canary > case.canary_size:
        what = "all of them" if canary >= case.parked else f"{canary} of them"
        if canary >= case.parked:
            return CaseOutcome(False, f"you moved {what} ({canary} steps) before the first process(): with no canary, "
                                      "a fix that does not work sends every parked step through the broken worker "
                                      f"again; move at most canary_size ({case.canary_size}) first", "no-canary")
        return CaseOutcome(False, f"your canary was {canary} steps, more than the canary of {case.canary_size} asked "
                                  "for; take at most canary_size messages in the first moves (MaxNumberOfMessages "
                                  "caps a receive)", "canary-larger-than-asked")
    first_failed = next((i for i, result in enumerate(journal.results) if result.failed), None)
    if first_failed is not None and total_sent > processes[first_failed]:
        result = journal.results[first_failed]
        return CaseOutcome(False, f"the canary failed again ({result.failed} of {result.done + result.failed} steps "
                                  f"back in the DLQ) and you moved {total_sent - processes[first_failed]} more: stop "
                                  "when process() reports failures", "goes-on-after-a-failed-canary")
    twice = sorted(trace for trace in steps if journal.ledger.count(trace) > 1)
    if twice:
        return CaseOutcome(False, f"{twice[0]} took effect {journal.ledger.count(twice[0])} times: it was sent to the "
                                  "queue more than once; delete each parked message (its ReceiptHandle) right after "
                                  "sending it, so the next receive cannot move it again", "step-ran-twice")
    doubled = sorted(trace for trace, count in Counter(in_dlq).items() if count > 1)
    if doubled:
        return CaseOutcome(False, f"{doubled[0]} is parked twice in the DLQ ({len(doubled)} steps like it): the copy you "
                                  "sent failed again and was parked, and the original was never deleted; delete each "
                                  "parked message (its ReceiptHandle) right after sending it", "parked-twice")
    copies = sorted(trace for trace in parked if journal.ledger.count(trace))
    if copies:
        return CaseOutcome(False, f"{copies[0]} took effect, and a copy of it is still in the DLQ ({len(copies)} steps "
                                  "like it): the next redrive runs it again; delete each parked message (its "
                                  "ReceiptHandle) right after sending it", "sends-without-deleting")
    lost = sorted(trace for trace in steps if journal.ledger.count(trace) == 0 and trace not in parked)
    if lost:
        return CaseOutcome(False, f"{lost[0]} is gone: it never took effect and is not in the DLQ any more ({len(lost)} "
                                  "steps like it); send each message to the queue before you delete it from the DLQ",
                           "deletes-without-sending")
    if first_failed is None:
        waiting = sorted(parked - broken)  # a step the fix does not cover may rightly end parked again
        if waiting:
            return CaseOutcome(False, f"{len(waiting)} steps are still parked after a healthy canary (e.g. {waiting[0]}):"
                                      " move the rest, receiving until the DLQ is empty", "stops-after-the-canary")
        return CaseOutcome(True, f"canary of {canary} passed; all {case.parked} steps redriven, each done once")
    return CaseOutcome(True, f"canary of {canary} failed again; the redrive stopped with {len(parked)} steps parked")


def _judge_crash(crashed_after: str, steps: list[str], journal: _Journal, in_dlq: list[str]) -> CaseOutcome:
    """The redrive was killed moving the rest, right after ``crashed_after``: no step may be lost."""
    parked = set(in_dlq)
    lost = sorted(trace for trace in steps if journal.ledger.count(trace) == 0 and trace not in parked)
    if lost:
        more = f" (and {len(lost) - 1} more)" if len(lost) > 1 else ""
        return CaseOutcome(False, f"your redrive was killed moving the rest, right after a {crashed_after}, between "
                                  f"a move's two calls, and {lost[0]}{more} is gone: deleted from the DLQ and never "
                                  "sent to the queue. Send each message to the queue first and delete it from the DLQ after: a "
                                  "crash in between then leaves a copy in both, and the idempotent worker absorbs the "
                                  "duplicate. SQS delivers at least once, so AWS's rule holds for every consumer: "
                                  "delete a message only once what it asks for is done", "loses-a-step-in-a-crash")
    both = sum(1 for trace in parked if journal.ledger.count(trace))
    return CaseOutcome(True, f"killed moving the rest, right after a {crashed_after}: no step lost (steps that ran "
                             f"and are back in the DLQ too: {both}, duplicates the idempotent worker absorbs)")
