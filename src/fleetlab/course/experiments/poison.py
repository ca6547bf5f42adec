"""Lab 03's experiments: poison messages, DLQs, triage, redrive, partial batches, FIFO lanes.

Each function runs one story on real queues of the backend and returns
what happened, for a table, a plot or a check: the receive at which a
poison message moved, the good work a small maxReceiveCount parked, the
receive a look used up, what a stale receipt handle deleted, which records
of a batch came back, and how far each FIFO message group got.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.composition.pipeline import Fleet, RunReport
from fleetlab.composition.topology import AgentClass, Topology, TopologySpec, WorkQueue, experiment_queue
from fleetlab.core.clock import side_by_side
from fleetlab.core.errors import InvalidInput, ModelError, PartlyRefused
from fleetlab.core.faults import Crash, CrashPoint, FaultPlan
from fleetlab.core.ledger import EffectsLedger
from fleetlab.core.tracing import Tracer
from fleetlab.core.units import duration
from fleetlab.services.agents.model import FakeModel, LatencyProfile
from fleetlab.services.events.envelope import Envelope
from fleetlab.services.sqs import dlq, messages
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.esm import BatchContext, BatchPoller, partial_batch_response
from fleetlab.services.sqs.groups import GroupProgress
from fleetlab.services.sqs.redrive import Drained
from fleetlab.services.sqs.worker import Outcome, QueueWorker
from fleetlab.services.state.responses import ResponseStore

POLL_SECONDS = 10
"""How often the experiments' workers poll an empty queue, in seconds of the backend's clock. Their
experiments send every step straight to the queue, so they receive without a long poll: the poll
interval paces them, where a long poll would be at least a whole second of service time (a minute
of lab time at x60), and a message requeued late is found at the next poll."""

LAB_SPEC = TopologySpec(agent_classes=(AgentClass("researcher", step_p95_seconds=40),
                                       AgentClass("coder", step_p95_seconds=40)))
"""Lab 03's topology: Lambda-sized steps, so a retry comes back after a 60 s visibility timeout."""

QUICK_STEPS = LatencyProfile(p50=5, p95=20)
"""Model latency of the lab's fleets: steps of seconds, as a Lambda consumer runs them."""


def step_body(trace_id: str, agent_class: str = "researcher") -> str:
    """The message body of one step (an envelope's detail), its conversation and step read from ``conv-C-step-S``."""
    parts = trace_id.split("-")
    conversation, step = (parts[1], int(parts[3])) if len(parts) == 4 and parts[3].isdigit() else (trace_id, 1)
    return json.dumps(Envelope(trace_id, conversation, step, agent_class).detail())


def send_steps(backend: Backend, queue_url: str, trace_ids: Iterable[str], *, group_of: Callable[[str], str] | None = None) -> None:
    """Send one step message per trace id, in order (on a FIFO queue, in ``group_of(trace_id)``'s group)."""
    sqs = backend.client("sqs")
    for trace_id in trace_ids:
        group = {"MessageGroupId": group_of(trace_id)} if group_of else {}
        sqs.send_message(QueueUrl=queue_url, MessageBody=step_body(trace_id), **group)


# ------------------------------------------------------------------ 1. poison and the receive that parks it


def receives_until_parked(backend: Backend, queue: WorkQueue, trace_id: str, *, limit: int = 10) -> list[dict[str, Any]]:
    """Send ``trace_id``, let a worker whose step always fails receive it until the queue parks it.

    One row per receive the worker attempted: the receive number and where
    the message was (the worker got it and failed, or it had moved to the DLQ).
    """
    def cannot_parse(delivery: Delivery) -> None:
        raise InvalidInput("tool output", "cannot be parsed")

    worker = QueueWorker(backend, queue.url, cannot_parse, name="worker")
    send_steps(backend, queue.url, [trace_id])
    rows = []
    for attempt in range(1, limit + 1):
        got = worker.poll_once()
        if got:
            rows.append({"receive": got[0].receive_count, "where": "source queue", "worker": str(got[0].status)})
        elif messages.depth(backend, queue.dlq_url):
            rows.append({"receive": attempt, "where": "DLQ", "worker": "found nothing"})
            break
        backend.clock.sleep(queue.visibility_timeout + 1)
    return rows


# ------------------------------------------------------------------ 2. maxReceiveCount is a budget


@dataclass(frozen=True)
class BudgetRun:
    """What an outage did to a queue with one maxReceiveCount: steps done, good steps parked."""

    max_receive_count: int
    done: int
    parked: int
    ledger: EffectsLedger


def outage_budget(
    backend: Backend, prefix: str, *, max_receive_count: int, outage_seconds: float, steps: int = 10,
    visibility_timeout: int = 60,
) -> BudgetRun:
    """``steps`` good steps arrive as a dependency goes down for ``outage_seconds``; each attempt then fails.

    A worker polls every ``POLL_SECONDS``; a failed step comes back after the
    visibility timeout. Returns how many were done and how many the queue
    parked (good work, every one of them).
    """
    ledger = EffectsLedger()
    with experiment_queue(backend, prefix, visibility_timeout=visibility_timeout,
                          max_receive_count=max_receive_count) as queue:
        back_at = backend.clock.now() + outage_seconds

        def step(delivery: Delivery) -> None:
            if backend.clock.now() < back_at:
                raise ModelError(f"{delivery.trace_id}: throttled (the provider is down)", transient=True)
            delivery.record_effect(kind="step")

        send_steps(backend, queue.url, [f"conv-{n}-step-1" for n in range(1, steps + 1)])
        worker = QueueWorker(backend, queue.url, step, name="worker", ledger=ledger)
        _drain(backend, queue, worker, settled=lambda: len(ledger.effects()) + messages.depth(backend, queue.dlq_url) >= steps)
        return BudgetRun(max_receive_count, len(ledger.effects()), messages.depth(backend, queue.dlq_url), ledger)


def outage_budgets(backend: Backend, prefix: str, *, max_receive_counts: Iterable[int],
                   outage_seconds: float) -> list[BudgetRun]:
    """``outage_budget`` once per maxReceiveCount, each on its own queue, side by side (``clock.side_by_side``)."""
    return side_by_side(backend.clock, *(
        functools.partial(outage_budget, backend, f"{prefix}m{count}-", max_receive_count=count,
                          outage_seconds=outage_seconds)
        for count in max_receive_counts))


def _drain(backend: Backend, queue: WorkQueue, worker: QueueWorker, *, settled: Callable[[], bool],
           poll: float = POLL_SECONDS) -> list[Any]:
    """Poll (every ``poll`` seconds when idle) until ``settled()``, within (maxReceiveCount + 2) visibility timeouts."""
    horizon = backend.clock.now() + (queue.max_receive_count + 2) * (queue.visibility_timeout + poll)
    outcomes: list[Any] = []
    while not settled() and backend.clock.now() < horizon:
        found = worker.poll_once(max_messages=messages.MAX_RECEIVE_BATCH, wait_seconds=0)
        outcomes += found
        if not found:
            backend.clock.sleep(poll)
    return outcomes


def drain(backend: Backend, queue: WorkQueue, handler: Callable[[Delivery], Any], *, ledger: EffectsLedger,
          tracer: Tracer | None = None) -> Drained:
    """Run a worker with ``handler`` over ``queue`` until it is empty; how many steps were done, how many parked again.

    What a redrive's ``process`` does: the moved messages either succeed or,
    failing ``maxReceiveCount`` times, go back to the DLQ.
    """
    worker = QueueWorker(backend, queue.url, handler, name="fixed-worker", ledger=ledger, tracer=tracer)
    outcomes = _drain(backend, queue, worker, settled=lambda: messages.held(backend, queue.url) == 0,
                      poll=max(POLL_SECONDS, queue.visibility_timeout / 2))
    done = {o.message_id for o in outcomes if o.status == Outcome.DONE}
    failed = {o.message_id for o in outcomes if o.status != Outcome.DONE} - done
    return Drained(len(done), len(failed))


# ------------------------------------------------------------------ 3. looking is receiving


def looking_is_receiving(backend: Backend, queue: WorkQueue, trace_id: str, *, failures: int, looks: int) -> list[dict[str, Any]]:
    """A step fails ``failures`` times; then someone looks at the queue ``looks`` times; then the worker, healthy again, polls.

    Each look is a ReceiveMessage (the console's "poll for messages", ``aws
    sqs receive-message``). One row per receive, and where the step ended.
    """
    healthy = {"now": False}

    def step(delivery: Delivery) -> str:
        if not healthy["now"]:
            raise ModelError(f"{delivery.trace_id}: throttled", transient=True)
        delivery.record_effect(kind="step")
        return "done"

    worker = QueueWorker(backend, queue.url, step, name="worker")
    send_steps(backend, queue.url, [trace_id])
    rows = []
    for _ in range(failures):
        got = worker.poll_once()
        rows.append({"receive": got[0].receive_count, "by": "worker", "what happened": "failed (provider down)"})
        backend.clock.sleep(queue.visibility_timeout + 1)
    sqs = backend.client("sqs")
    for _ in range(looks):
        seen = sqs.receive_message(QueueUrl=queue.url, AttributeNames=["All"]).get("Messages", [])
        count = messages.receive_count(seen[0]) if seen else "-"
        rows.append({"receive": count, "by": "on-call engineer", "what happened": "looked at it (ReceiveMessage)"})
        backend.clock.sleep(queue.visibility_timeout + 1)
    healthy["now"] = True
    got = worker.poll_once()
    if got:
        rows.append({"receive": got[0].receive_count, "by": "worker", "what happened": f"provider back: {got[0].status}"})
    else:
        where = "in the DLQ" if messages.depth(backend, queue.dlq_url) else "nowhere"
        rows.append({"receive": "-", "by": "worker", "what happened": f"provider back, but the step is {where}"})
    return rows


# ------------------------------------------------------------------ 4. a stale receipt handle


@dataclass(frozen=True)
class StaleDelete:
    """What deleting with an earlier receive's handle did while a second worker held the message."""

    left_in_queue: bool
    second_worker: str


def stale_delete(backend: Backend, queue: WorkQueue, trace_id: str) -> StaleDelete:
    """Worker 1 receives a step, overruns its visibility timeout; worker 2 receives it; worker 1 deletes with its old handle.

    Then worker 2 extends its visibility with its own, current handle.
    Returns whether the message was still in the queue after the stale
    delete, and what worker 2's extension got.
    """
    sqs = backend.client("sqs")
    send_steps(backend, queue.url, [trace_id])
    first = messages.receive(backend, queue.url)[0]
    backend.clock.sleep(queue.visibility_timeout + 1)  # worker 1's step overruns
    second = messages.receive(backend, queue.url)[0]
    sqs.delete_message(QueueUrl=queue.url, ReceiptHandle=first["ReceiptHandle"])
    left = messages.held(backend, queue.url) > 0
    try:
        sqs.change_message_visibility(QueueUrl=queue.url, ReceiptHandle=second["ReceiptHandle"],
                                      VisibilityTimeout=queue.visibility_timeout)
        extension = "extended its visibility"
    except Exception as exc:  # the service's refusal is the finding
        extension = f"refused: {getattr(exc, 'response', {}).get('Error', {}).get('Code', type(exc).__name__)}"
    if left:
        sqs.delete_message(QueueUrl=queue.url, ReceiptHandle=second["ReceiptHandle"])
    return StaleDelete(left, extension)


# ------------------------------------------------------------------ 5. partial batch responses


@dataclass
class BatchRun:
    """A batch poller's run: each invocation's records, what ran, what it reported; effects; steps parked."""

    ledger: EffectsLedger = field(default_factory=EffectsLedger)
    invocations: list[dict[str, Any]] = field(default_factory=list)
    parked: int = 0

    @property
    def order(self) -> list[str]:
        """Step numbers in the order they took effect."""
        return [effect.key.rsplit("-", 1)[1] for effect in self.ledger.effects()]


HANDLERS = {
    "raise": "no partial responses: raise when a record failed",
    "standard": "partial responses, the standard way",
    "fifo": "partial responses, the FIFO way",
}


def batch_of_ten(
    backend: Backend, prefix: str, *, failing: dict[str, int], response: str, fifo: bool = False,
    steps: int = 10, visibility_timeout: int = 60, max_receive_count: int = 3,
) -> BatchRun:
    """One conversation's ``steps`` steps through an ESM in batches of ten, polled until the queue is empty.

    ``failing`` maps a trace id to how many attempts fail (a large number:
    poison). ``response`` is how the handler answers (``HANDLERS``): it
    raises when a record failed (no ReportBatchItemFailures), or returns a
    partial batch response, the standard or the FIFO way.
    """
    if response not in HANDLERS:
        raise InvalidInput("response", f"{response!r} is not one of {sorted(HANDLERS)}")
    run = BatchRun()
    attempts: dict[str, int] = {}
    with experiment_queue(backend, prefix, visibility_timeout=visibility_timeout, max_receive_count=max_receive_count,
                          fifo=fifo) as queue:
        trace_ids = [f"conv-1-step-{n}" for n in range(1, steps + 1)]
        send_steps(backend, queue.url, trace_ids, group_of=(lambda _: "conv-1") if fifo else None)

        def handler(event: dict[str, Any], context: BatchContext) -> Any:
            invocation: dict[str, Any] = {"records": [_step_of(r) for r in event["Records"]], "ran": []}
            run.invocations.append(invocation)

            def process(record: dict[str, Any]) -> None:
                trace_id = json.loads(record["body"])["trace_id"]
                attempts[trace_id] = attempts.get(trace_id, 0) + 1
                if attempts[trace_id] <= failing.get(trace_id, 0):
                    raise InvalidInput("tool output", f"the output of {trace_id} cannot be parsed")
                context.record_effect(record, kind="step")
                invocation["ran"].append(_step_of(record))

            answer = partial_batch_response(event, process, fifo=response == "fifo")
            by_id = {r["messageId"]: _step_of(r) for r in event["Records"]}
            invocation["back"] = [by_id[f["itemIdentifier"]] for f in answer["batchItemFailures"]]
            if response == "raise":
                if answer["batchItemFailures"]:
                    invocation["back"] = invocation["records"]
                    refused = [failure["itemIdentifier"] for failure in answer["batchItemFailures"]]
                    raise PartlyRefused(f"{len(refused)} record(s) failed", refused=refused)
                return None
            return answer

        poller = BatchPoller(backend, queue.url, queue.arn, handler, batch_size=steps, ledger=run.ledger,
                             report_batch_item_failures=response != "raise")
        horizon = backend.clock.now() + (max_receive_count + steps) * (visibility_timeout + POLL_SECONDS)
        while messages.held(backend, queue.url) and backend.clock.now() < horizon:
            outcome = poller.poll_once()
            backend.clock.sleep(POLL_SECONDS if not outcome.received else visibility_timeout + 1)
        run.parked = messages.held(backend, queue.dlq_url)
    return run


def batches_of_ten(backend: Backend, prefix: str, *, responses: Iterable[str], failing: dict[str, int],
                   fifo: bool = False) -> dict[str, BatchRun]:
    """``batch_of_ten`` once per handler in ``responses``, each on its own queue, side by side; keyed by handler."""
    responses = list(responses)
    runs = side_by_side(backend.clock, *(
        functools.partial(batch_of_ten, backend, f"{prefix}{n}-", failing=failing, response=response, fifo=fifo)
        for n, response in enumerate(responses)))
    return dict(zip(responses, runs))


def _step_of(record: dict[str, Any]) -> str:
    return json.loads(record["body"])["trace_id"].rsplit("-", 1)[1]


def beside_powertools(backend: Backend, prefix: str, *, failing_step: int = 4) -> list[dict[str, Any]]:
    """One real batch of ten from a standard and from a FIFO queue, step ``failing_step`` failing:
    the records fleetlab's ``partial_batch_response`` reports beside those Powertools' processor reports."""
    from aws_lambda_powertools.utilities.batch import (
        BatchProcessor,
        EventType,
        SqsFifoPartialProcessor,
        process_partial_response,
    )

    rows = []
    for fifo in (False, True):
        with experiment_queue(backend, prefix, visibility_timeout=60, fifo=fifo) as queue:
            send_steps(backend, queue.url, [f"conv-1-step-{n}" for n in range(1, 11)],
                       group_of=(lambda _: "conv-1") if fifo else None)
            events: list[dict[str, Any]] = []
            BatchPoller(backend, queue.url, queue.arn, lambda event, context: events.append(event) or {},
                        batch_size=10, batching_window=0 if backend.clock.virtual else 2).poll_once()
        event = events[0]
        by_id = {r["messageId"]: _step_of(r) for r in event["Records"]}

        def process(record: dict[str, Any]) -> None:
            if _step_of(record) == str(failing_step):
                raise InvalidInput("tool output", "cannot be parsed")

        processor = SqsFifoPartialProcessor() if fifo else BatchProcessor(event_type=EventType.SQS)
        theirs = process_partial_response(event=event, record_handler=lambda record: process(record.raw_event),
                                          processor=processor)
        ours = partial_batch_response(event, process, fifo=fifo)
        rows.append({
            "queue": "FIFO" if fifo else "standard",
            "fleetlab reports steps": " ".join(by_id[f["itemIdentifier"]] for f in ours["batchItemFailures"]),
            "Powertools reports steps": " ".join(by_id[f["itemIdentifier"]] for f in theirs["batchItemFailures"]),
            "Powertools' processor": type(processor).__name__,
            "same response": ours == theirs,
        })
    return rows


# ------------------------------------------------------------------ 6. FIFO head-of-line blocking




def head_of_line(
    backend: Backend, prefix: str, *, conversations: int = 3, steps: int = 6, stuck: str = "conv-2-step-2",
    step_seconds: float = 30, visibility_timeout: int = 60, max_receive_count: int = 4, workers: int = 3,
) -> GroupProgress:
    """``conversations`` FIFO message groups of ``steps`` steps; the step ``stuck`` fails every time.

    ``workers`` workers (actors on the clock) each take one message at a
    time. Returns when each group finished each step, and when the stuck
    step was parked.
    """
    groups = [f"conv-{n}" for n in range(1, conversations + 1)]
    finished: dict[str, list[float]] = {group: [] for group in groups}
    with experiment_queue(backend, prefix, visibility_timeout=visibility_timeout, max_receive_count=max_receive_count,
                          fifo=True) as queue:
        start = backend.clock.now()
        order = [f"{group}-step-{s}" for s in range(1, steps + 1) for group in groups]
        send_steps(backend, queue.url, order, group_of=lambda trace_id: trace_id.rsplit("-step-", 1)[0])
        total = conversations * steps

        def step(delivery: Delivery) -> None:
            backend.clock.sleep(step_seconds)
            if delivery.trace_id == stuck:
                raise ModelError(f"{stuck}: the model rejects this input every time", transient=False)
            finished[delivery.trace_id.rsplit("-step-", 1)[0]].append(backend.clock.now() - start)

        def settled() -> bool:
            return sum(map(len, finished.values())) + messages.depth(backend, queue.dlq_url) >= total

        parked: list[float] = []

        def work(worker: QueueWorker) -> None:
            horizon = start + total * step_seconds + (max_receive_count + 2) * (visibility_timeout + POLL_SECONDS)
            while not settled() and backend.clock.now() < horizon:
                found = worker.poll_once(wait_seconds=0)
                if not parked and messages.depth(backend, queue.dlq_url):
                    parked.append(backend.clock.now() - start)
                if not found:
                    backend.clock.sleep(POLL_SECONDS)

        team = [QueueWorker(backend, queue.url, step, name=f"worker-{n}") for n in range(1, workers + 1)]
        backend.clock.run_together(*(lambda w=w: work(w) for w in team))
        horizon = backend.clock.now() - start
    return GroupProgress(finished, steps, stuck, parked[0] if parked else None, horizon)


# ------------------------------------------------------------------ 7. an incident to triage, and its redrive


@dataclass(frozen=True)
class Incident:
    """A bad hour: the fleet that lived through it, and which steps it sent, by what went wrong with them."""

    fleet: Fleet
    throttled: list[str]
    poison: list[str]
    crashed: list[str]
    malformed: list[str]
    healthy: list[str]

    @property
    def researcher_steps(self) -> list[str]:
        """The steps on the researcher queue (the malformed messages went to the coder queue)."""
        return self.throttled + self.poison + self.crashed + self.healthy


def incident(backend: Backend, topology: Topology, *, responses: ResponseStore, seed: int = 3,
             outage_seconds: float = 600) -> Incident:
    """A bad hour for a fleet that gives up on its last attempt, run until every step is done or parked.

    Six researcher steps arrive while the model's provider is down (for
    ``outage_seconds``); after it, three poison steps, one step whose worker
    crashes on every attempt, eight healthy steps, and two malformed messages
    a buggy producer sent to the coder queue. Every parked step carries its diagnosis.
    """
    clock = backend.clock
    throttled = [f"conv-{n}-step-1" for n in range(1, 7)]
    poisoned = [f"conv-{n}-step-1" for n in (7, 8, 9)]
    crashed = ["conv-10-step-1"]
    model = FakeModel(seed=seed, latency=QUICK_STEPS, poison=frozenset(poisoned), down_until=clock.now() + outage_seconds)
    crashes = FaultPlan(crashes=tuple(Crash(CrashPoint.BEFORE_EFFECT, crashed[0], n) for n in (1, 2, 3)))
    fleet = Fleet(backend, topology, model=model, responses=responses, last_attempt=True, faults=crashes)
    fleet.enqueue(*(_researcher_step(t) for t in throttled))
    fleet.run(advance=60, idle_polls=2)
    clock.skip(outage_seconds)  # every throttled step is parked by now: only the model's time needs the outage over
    malformed = []
    for n in (1, 2):  # no envelope, so the worker names each by its MessageId
        body = json.dumps({"conversation": f"c-{n}", "note": "a producer bug dropped the envelope"})
        malformed.append(backend.client("sqs").send_message(QueueUrl=topology.queue("coder").url, MessageBody=body)["MessageId"])
    fleet.submitted += malformed
    healthy = [f"conv-{n}-step-1" for n in range(11, 19)]
    fleet.enqueue(*(_researcher_step(t) for t in poisoned + crashed + healthy))
    fleet.run(advance=max(q.visibility_timeout for q in topology.queues.values()) + 1, idle_polls=6)
    return Incident(fleet, throttled, poisoned, crashed, malformed, healthy)


def _researcher_step(trace_id: str) -> Envelope:
    return Envelope(trace_id, trace_id.split("-")[1], 1, "researcher")


def drained(report: RunReport) -> Drained:
    """A fleet run as a redrive's ``process`` result: steps done, and steps parked again."""
    return Drained(report.count(Outcome.DONE), report.count(Outcome.PARKED))


def retention_rows(record: dlq.ParkedRecord, *, parked_at: float, source_retention: float,
                   dlq_retentions: Iterable[float]) -> list[dict[str, str]]:
    """For each DLQ retention: when SQS deletes this parked record, and what is left for triage.

    SQS counts a message's age from its first enqueue (``SentTimestamp``,
    which travels to the DLQ), so the worst case is a step that waited the
    source queue's whole retention before it was parked.
    """
    rows = []
    waited = 60 * round((parked_at - record.sent_at) / 60)  # to the minute
    for retention in dlq_retentions:
        rows.append({
            "DLQ keeps": duration(retention),
            "this record is deleted": f"{duration(retention - waited)} after parking",
            "a step that waited the queue's whole retention first": (
                f"{duration(max(0.0, retention - source_retention))} after parking"),
        })
    return rows


# ------------------------------------------------------------------ 8. the caller who waits for an answer


def caller_waits(fleet: Fleet, responses: ResponseStore, trace_id: str, *, patience: float = 900) -> dict[str, Any]:
    """A caller enqueues ``trace_id`` and waits up to ``patience`` seconds for its answer while the fleet works.

    The caller and the fleet run side by side on the clock. Returns what the
    caller got (the answer or a hang), after how long, and on which receive
    the answer was written.
    """
    clock = fleet.clock
    start = clock.now()
    fleet.enqueue(_researcher_step(trace_id))
    visibility = fleet.topology.queue("researcher").visibility_timeout

    workers_done = threading.Event()

    def caller() -> dict[str, Any]:
        deadline = start + patience
        while (answer := responses.get(trace_id)) is None:
            left = deadline - clock.now()
            if left <= 0:
                return {"the caller got": f"nothing: still waiting after {duration(patience)}",
                        "after": duration(patience), "written on receive": "-"}
            if workers_done.is_set():  # nobody is left to answer: the rest of the wait is the caller's own time
                clock.skip(left)
            else:
                clock.sleep(min(30, left))
        what = "the result" if answer.ok else f"a graceful error ({answer.error_code})"
        return {"the caller got": what, "after": duration(60 * round((clock.now() - start) / 60)),
                "written on receive": answer.attempt}

    def workers() -> None:
        try:
            fleet.run(advance=visibility + 1, idle_polls=5)
        finally:
            workers_done.set()

    story, _ = clock.run_together(caller, workers)
    return story


def callers(backend: Backend, topology: Topology, responses: ResponseStore) -> list[dict[str, Any]]:
    """A caller per worker kind waits on a poison step: a worker without an attempt budget, and one with it."""
    rows = []
    for n, budget in ((50, False), (51, True)):
        trace_id = f"conv-{n}-step-1"
        fleet = Fleet(backend, topology, model=FakeModel(seed=4, latency=QUICK_STEPS, poison=frozenset({trace_id})),
                      responses=responses, last_attempt=budget)
        kind = "gives up one receive below maxReceiveCount" if budget else "no attempt budget (the queue parks it)"
        rows.append({"worker": kind, **caller_waits(fleet, responses, trace_id)})
    return rows
