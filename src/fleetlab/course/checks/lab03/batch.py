"""Check ``03.batch``: ``batch_response(event, process, fifo)`` runs ``process(record)`` on a
Lambda SQS batch and returns the partial batch response: ``{"batchItemFailures":
[{"itemIdentifier": messageId}, ...]}``. On a FIFO queue the first failure ends the batch: that
record and every later one (of its message group, at least) are reported, and none of them runs.

The harness sends steps to a real standard or FIFO queue, runs the learner's
function inside fleetlab's event source mapping (which deletes what the
response does not name, as Lambda does) until the queue is empty, and judges
each invocation from what happened in it: a failed record not reported is
lost, a succeeded record reported runs twice, and on FIFO a record that ran
after an earlier record of its group failed in the same batch broke the
group's order. The effects ledger backs it up: every good step exactly once,
every poison step parked, never run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from fleetlab.composition.topology import experiment_queue
from fleetlab.core.errors import StepFailed
from fleetlab.core.ledger import EffectsLedger
from fleetlab.course.experiments.poison import POLL_SECONDS, send_steps
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab.services.sqs import dlq, messages
from fleetlab.services.sqs.esm import BatchContext, BatchPoller

POISON = 99
"""Attempts a poison step fails: all of them."""


@dataclass(frozen=True)
class Batch(Case):
    """Steps sent in order to a standard or FIFO queue; ``failing`` says how many attempts of a step fail."""

    fifo: bool = False
    steps: tuple[str, ...] = ()
    failing: tuple[tuple[str, int], ...] = ()


def interleaved_steps(steps: int, conversations: int = 1) -> tuple[str, ...]:
    """Step trace ids, interleaved across conversations: conv-1-step-1, conv-2-step-1, conv-1-step-2, ..."""
    return tuple(f"conv-{c}-step-{s}" for s in range(1, steps + 1) for c in range(1, conversations + 1))


@register(
    "03.batch",
    title="Partial batch responses, standard and FIFO",
    function="batch_response",
    parameters="event, process, fifo",
    points=3,
    public=[
        Batch("a standard queue: a batch of ten steps, step 4 is poison", False, interleaved_steps(10),
              (("conv-1-step-4", POISON),)),
        Batch("a FIFO queue: one conversation of ten steps, step 4 fails once", True, interleaved_steps(10),
              (("conv-1-step-4", 1),)),
    ],
    hidden_cases=4,
    timeout=40,
    side_by_side=True,
    implemented_by=("fleetlab.services.sqs.esm.partial_batch_response",),
)
def check_batch(answer: Any, case: Batch, ctx: Any) -> CaseOutcome:
    """Run the learner's response builder inside the event source mapping on a real queue until it is empty;
    judge each invocation."""
    backend = ctx.backend
    failing = dict(case.failing)
    run = _Run()
    with experiment_queue(backend, ctx.fresh_prefix(), visibility_timeout=60, max_receive_count=3,
                          fifo=case.fifo) as queue:
        send_steps(backend, queue.url, case.steps, group_of=_group if case.fifo else None)

        def handler(event: dict[str, Any], context: BatchContext) -> Any:
            invocation = _Invocation([_trace(r) for r in event["Records"]], {r["messageId"]: _trace(r)
                                                                               for r in event["Records"]})
            run.invocations.append(invocation)

            def process(record: dict[str, Any]) -> None:
                trace = _trace(record)
                invocation.ran.append(trace)
                run.attempts[trace] = run.attempts.get(trace, 0) + 1
                if run.attempts[trace] <= failing.get(trace, 0):
                    invocation.failed.append(trace)
                    raise StepFailed("ToolOutputUnparseable", f"{trace}: the tool output is unparseable")
                context.record_effect(record, kind="step")

            try:
                invocation.response = answer(event, process, case.fifo)
            except (StepFailed, BatchProcessingError) as whole_batch:
                invocation.raised = whole_batch
                raise
            except Exception as error:  # the learner's own bug: reported after the case
                run.errors.append(error)
                raise
            return invocation.response

        poller = BatchPoller(backend, queue.url, queue.arn, handler, batch_size=10, ledger=run.ledger)
        horizon = backend.clock.now() + (len(case.steps) + 6) * (queue.visibility_timeout + POLL_SECONDS)
        while messages.held(backend, queue.url) and backend.clock.now() < horizon and not run.errors:
            outcome = poller.poll_once()
            backend.clock.sleep(queue.visibility_timeout + 1 if outcome.received else POLL_SECONDS)
        parked = {record.trace_id for record in dlq.parked(backend, queue.dlq_url)}
    if run.errors:
        raise run.errors[0]
    return _judge(case, run, parked)


def _trace(record: dict[str, Any]) -> str:
    return json.loads(record["body"])["trace_id"]


def _group(trace: str) -> str:
    return trace.rsplit("-step-", 1)[0]


@dataclass
class _Invocation:
    """One invocation: its records in order, which ran, which failed, and what the function answered."""

    records: list[str]
    by_id: dict[str, str]
    ran: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    response: Any = None
    raised: BaseException | None = None


@dataclass
class _Run:
    invocations: list[_Invocation] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)
    ledger: EffectsLedger = field(default_factory=EffectsLedger)
    errors: list[Exception] = field(default_factory=list)


def _judge(case: Batch, run: _Run, parked: set[str]) -> CaseOutcome:
    for number, invocation in enumerate(run.invocations, 1):
        problem, mistake = _judge_invocation(case, invocation)
        if problem:
            return CaseOutcome(False, f"batch {number} ({_span(invocation.records)}): {problem}", mistake)
    poison = {trace for trace, attempts in case.failing if attempts >= POISON}
    for trace in case.steps:
        done, receives = run.ledger.count(trace), sum(trace in i.records for i in run.invocations)
        if trace in poison and (done or trace not in parked):
            return CaseOutcome(False, f"{trace} fails every time, yet it {'took effect' if done else 'is not in the DLQ'}"
                                      ": it must be reported each time it fails, until SQS parks it",
                               "poison-step-not-parked")
        if trace in poison:
            continue
        if done > 1:
            return CaseOutcome(False, f"{trace} took effect {done} times", "step-ran-twice")
        if not done and trace in parked and not case.fifo:
            return CaseOutcome(False, f"{trace} never ran and was parked: your responses reported it in each of its "
                                      f"{receives} batches although it had not failed, so its receive count reached "
                                      "maxReceiveCount. On a standard queue, report only the records that failed",
                               "standard-queue-stops-at-first-failure")
        if not done and trace not in parked:
            return CaseOutcome(False, f"{trace} never took effect and is not in the DLQ: it is lost",
                               "step-lost")
    held_back = sorted(trace for trace in case.steps if trace not in poison and trace in parked)
    behind = f"; {len(held_back)} later step(s) of its conversation were parked with it, in order" if held_back else ""
    return CaseOutcome(True, f"{len(run.invocations)} batches: no step lost or run twice, "
                             f"{len(poison)} poison step(s) parked{behind}")


def _judge_invocation(case: Batch, invocation: _Invocation) -> tuple[str, str]:
    """What went wrong in one invocation, in the learner's terms, and the mistake's key (("", "") when nothing
    did)."""
    if invocation.raised is not None:
        if isinstance(invocation.raised, BatchProcessingError) and not invocation.ran:
            why = _first_child(invocation.raised)
            return (f"no record reached process(record): Powertools found every record failed ({why}), so the "
                    "whole batch returns. Check the record handler you gave it"), "record-handler-never-called"
        if isinstance(invocation.raised, BatchProcessingError) and set(invocation.failed) >= set(invocation.ran):
            return "", ""  # Powertools fails the invocation when every record failed: the whole batch returns, rightly
        ok = [trace for trace in invocation.ran if trace not in invocation.failed]
        return (f"process(record) raised for {invocation.failed[0]} and your function let the exception out, so "
                f"Lambda returned the whole batch: {', '.join(ok) or 'the other records'} ran and will run again. "
                "Catch the failure and report that record in batchItemFailures"), "lets-the-failure-through"
    reported, problem, mistake = _reported(invocation)
    if problem:
        return problem, mistake
    if case.fifo:
        for index, trace in enumerate(invocation.records):
            earlier = [t for t in invocation.records[:index] if t in invocation.failed and _group(t) == _group(trace)]
            if earlier and trace in invocation.ran:
                return (f"{trace} ran after {earlier[0]} had failed in the same batch, which broke the order of "
                        f"{_group(trace)}: on a FIFO queue, stop at the first failure and report it and every "
                        "record after it, unprocessed"), "fifo-runs-on-after-a-failure"
            stopped = any(t in invocation.failed for t in invocation.records[:index])  # of any group: allowed
            if not stopped and trace not in invocation.ran and trace in reported:
                return (f"your response returned {trace} unprocessed, though no earlier record had failed in this "
                        "batch: it comes back in every batch and, never run, reaches maxReceiveCount and is parked. "
                        "On a FIFO queue, run the records in order until one fails"), "fifo-returns-records-unrun"
    for trace in invocation.records:
        if trace in invocation.failed and trace not in reported:
            return (f"{trace} failed, and your response did not report it: the event source mapping deleted it as "
                    "done, so it is lost (never retried, never parked)"), "failed-record-not-reported"
        if trace not in invocation.ran and trace not in reported:
            return (f"{trace} never ran and your response did not report it: the event source mapping deleted it "
                    "unprocessed, so it is lost"), "reports-only-the-failed-record"
        if trace in invocation.ran and trace not in invocation.failed and trace in reported:
            return (f"you reported {trace} failed though it succeeded: it comes back and runs again (a duplicate)",
                    "reports-a-record-that-succeeded")
    return "", ""


def _reported(invocation: _Invocation) -> tuple[set[str], str, str]:
    """The traces the response names, or why the event source mapping could not read it (then it retries the
    whole batch) and the mistake's key."""
    response = invocation.response
    if response is None or response == {}:
        return set(), "", ""
    failures = response.get("batchItemFailures") if isinstance(response, dict) else None
    if not isinstance(failures, list):
        return set(), (f"your function returned {_short(response)}, not {{'batchItemFailures': [...]}}: the event "
                       "source mapping cannot read it and returns the whole batch. Return {'batchItemFailures': "
                       "[{'itemIdentifier': record['messageId']}, ...]}"), "response-not-batch-item-failures"
    not_objects = [entry for entry in failures if not isinstance(entry, dict)]
    if not_objects:
        return set(), (f"batchItemFailures holds {_short(not_objects[0])}, not an object, so the event source "
                       "mapping cannot read it and returns the whole batch; each entry is "
                       "{'itemIdentifier': record['messageId']}"), "failures-not-objects"
    names = [entry.get("itemIdentifier") for entry in failures]
    unknown = [name for name in names if name not in invocation.by_id]
    if unknown:
        return set(), (f"batchItemFailures names {_short(unknown[0])}, which is no messageId of this batch, so the "
                       "event source mapping returns the whole batch; each entry is "
                       "{'itemIdentifier': record['messageId']}"), "failures-name-no-message-id"
    return {invocation.by_id[name] for name in names}, "", ""


def _first_child(error: BatchProcessingError) -> str:
    """The first record's exception inside Powertools' BatchProcessingError, as ``TypeError: ...``."""
    for info in getattr(error, "child_exceptions", None) or ():
        if isinstance(info, tuple) and len(info) > 1 and isinstance(info[1], BaseException):
            return f"{type(info[1]).__name__}: {info[1]}"
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _span(traces: list[str]) -> str:
    return traces[0] if len(traces) == 1 else f"{traces[0]} .. {traces[-1]}, {len(traces)} records"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
