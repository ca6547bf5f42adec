"""The fleet: bus -> rules -> queues -> workers -> idempotency store -> callbacks.

``Fleet`` wires the library's parts into the reference pipeline on one
provisioned topology. A step enters either on the bus (``submit``: the
message loop) or through the orchestrator state machine (``orchestrate``: the
token loop, where the event carries a task token and the worker closes the
loop with SendTaskSuccess). Every hop is recorded on the tracer under the
step's trace_id, and the step's side effect lands in the effects ledger.

With ``last_attempt`` the workers give up one receive before the queue
would park a step: they answer the caller through ``responses`` (a
``state.responses.ResponseStore``, which also gets every result) and park
the step with its diagnosis. The fleet refuses a step no rule routes before
publishing anything, except on a topology with the catch-all rule: there a
run settles such a step as ``unrouted`` instead of waiting for it.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.composition.topology import Topology
from fleetlab.core.errors import ConfigError, EnvelopeError, InvalidInput, ModelError, PartlyRefused, Timeout
from fleetlab.core.faults import FaultPlan
from fleetlab.core.ledger import EffectsLedger
from fleetlab.core.tracing import Tracer
from fleetlab.services.agents.model import FakeModel
from fleetlab.services.events.envelope import Envelope, batches
from fleetlab.services.sqs import dlq, messages
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.lastattempt import LastAttempt
from fleetlab.services.sqs.worker import HandleOutcome, Outcome, QueueWorker
from fleetlab.services.state.claimcheck import ClaimCheck
from fleetlab.services.state.idempotency import Claim, Completed, IdempotencyStore
from fleetlab.services.state.responses import ResponseStore
from fleetlab.services.stepfunctions import callbacks, executions

TRANSIENT_BACKOFF = 15
"""Seconds before a transiently failed step is visible again on its first receive; doubles per receive."""


# On moto every SQS call slows as its queue grows (a receive takes ~5 ms empty,
# ~70 ms at 1,000 messages): past this many waiting steps, a run says why it is slow.
DEEP_QUEUE = 500
SLOWS_WITH_DEPTH = ("moto", "moto-server")


class DeepQueueWarning(UserWarning):
    """A run starts with so many steps waiting that the emulator's calls slow down."""


@dataclass
class RunReport:
    """What ``Fleet.run`` did: outcomes by status, steps found unrouted, and how many polls it took."""

    outcomes: list[HandleOutcome] = field(default_factory=list)
    polls: int = 0
    unrouted: list[str] = field(default_factory=list)

    def count(self, status: Outcome | str) -> int:
        """How many outcomes ended with ``status`` (an Outcome, or its string such as ``"done"``)."""
        return sum(1 for o in self.outcomes if o.status == status)


class Fleet:
    """The reference pipeline on one topology.

    The step handler is idempotent: it claims (trace_id, agent_class) in the
    store before the effect, returns the saved result to duplicates, renews
    its lease on every heartbeat, and sends the task token back when the
    step came from the orchestrator. ``responses`` gets each step's result
    (under its trace id); ``last_attempt`` turns on the workers' attempt
    budget (see the module docstring).
    """

    def __init__(
        self,
        backend: Backend,
        topology: Topology,
        *,
        model: FakeModel | None = None,
        faults: FaultPlan | None = None,
        ledger: EffectsLedger | None = None,
        tracer: Tracer | None = None,
        heartbeat: bool = True,
        responses: ResponseStore | None = None,
        last_attempt: bool = False,
    ) -> None:
        self.backend = backend
        self.topology = topology
        self.clock = backend.clock
        self.model = model or FakeModel()
        self.faults = faults or FaultPlan()
        self.ledger = ledger if ledger is not None else EffectsLedger()
        self.tracer = tracer if tracer is not None else Tracer()
        self.heartbeat = heartbeat
        self.responses = responses
        self.last_attempt = last_attempt
        self.events = backend.client("events")
        self.sfn = backend.client("stepfunctions")
        lease = max(q.visibility_timeout for q in topology.queues.values())
        self.store = IdempotencyStore(backend.client("dynamodb"), topology.table_name, self.clock, lease_seconds=lease)
        self.claimcheck = ClaimCheck(backend.client("s3"), topology.bucket)
        self.workers = {name: self.worker(name) for name in topology.queues}
        self.submitted: list[str] = []
        self.executions: dict[str, str] = {}
        self.callbacks: dict[str, str] = {}

    def submit(self, *envelopes: Envelope) -> list[str]:
        """Publish step requests on the bus (claim-checking large payloads). Returns event ids.

        Raises InvalidInput naming ``agent_class`` (nothing published) for a
        step whose agent class no rule routes, unless the topology has the
        catch-all rule (which parks it as unrouted); PartlyRefused naming the
        entries EventBridge refused (the others were published).
        """
        self._refuse_unroutable(envelopes, via_bus=True)
        prepared = [self.claimcheck.offload(e) for e in envelopes]
        entries = [e.entry(self.topology.bus_name) for e in prepared]
        event_ids: list[str] = []
        for request in batches(entries):
            response = self.events.put_events(Entries=request)
            refused = [f"entries[{i}]: {r.get('ErrorCode')}" for i, r in enumerate(response["Entries"]) if "EventId" not in r]
            if refused:
                raise PartlyRefused(f"EventBridge refused {', '.join(refused)}; the others were published", refused=refused)
            event_ids += [r["EventId"] for r in response["Entries"]]
        for env, event_id in zip(prepared, event_ids):
            self.submitted.append(env.trace_id)
            self.tracer.record(env.trace_id, "published", at=self.clock.now(), component="bus", event_id=event_id)
        return event_ids

    def enqueue(self, *envelopes: Envelope) -> list[str]:
        """Send steps straight to their agent class's queue, bypassing the bus. Returns message ids.

        What a producer that owns the queue does (an API handler writing to its
        input queue). Raises InvalidInput naming ``agent_class`` (nothing sent)
        for a step whose agent class has no queue, PartlyRefused naming the
        entries SQS refused (the others were sent).
        """
        self._refuse_unroutable(envelopes, via_bus=False)
        sqs = self.backend.client("sqs")
        details = [(e, json.dumps(self.claimcheck.offload(e).detail())) for e in envelopes]
        message_ids: list[str] = []
        for start in range(0, len(details), 10):
            chunk = details[start : start + 10]
            by_queue: dict[str, list[tuple[int, Envelope, str]]] = {}
            for index, (env, body) in enumerate(chunk):
                by_queue.setdefault(self.topology.queue(env.agent_class).url, []).append((index, env, body))
            for url, entries in by_queue.items():
                response = sqs.send_message_batch(
                    QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": body} for i, _, body in entries]
                )
                if response.get("Failed"):
                    refused = [f"{f['Id']}: {f.get('Code')}" for f in response["Failed"]]
                    raise PartlyRefused(f"SQS refused {refused}; the others were sent", refused=refused)
                for (_, env, _), sent in zip(entries, response["Successful"]):
                    message_ids.append(sent["MessageId"])
                    self.submitted.append(env.trace_id)
                    self.tracer.record(env.trace_id, "enqueued", at=self.clock.now(), component="producer")
        return message_ids

    def orchestrate(self, envelope: Envelope) -> str:
        """Start the orchestrator for one step (payload always claim-checked). Returns the execution ARN.

        Raises ConfigError when the topology was provisioned without an
        orchestrator, InvalidInput naming ``agent_class`` (nothing started) for
        a step whose agent class no rule routes: no worker would ever call back.
        """
        if not self.topology.state_machine_arn:
            raise ConfigError("this topology has no orchestrator; provision with TopologySpec(orchestrator=True)")
        self._refuse_unroutable([envelope], via_bus=False)
        detail = self.claimcheck.offload(envelope, always=True).detail()
        execution_arn = executions.start_execution(self.sfn, self.topology.state_machine_arn, detail)
        self.submitted.append(envelope.trace_id)
        self.executions[envelope.trace_id] = execution_arn
        self.tracer.record(
            envelope.trace_id,
            "execution_started",
            at=self.clock.now(),
            component="orchestrator",
            execution=execution_arn.rsplit(":", 1)[-1][:8],
        )
        return execution_arn

    def _refuse_unroutable(self, envelopes: Sequence[Envelope], *, via_bus: bool) -> None:
        """InvalidInput naming ``agent_class`` and the routed classes when a step has no rule (checked before anything is sent).

        On the bus, the catch-all rule (``via_bus`` and a topology with it) takes any class.
        """
        if via_bus and self.topology.unrouted_url:
            return
        unroutable = [f"{e.agent_class!r} ({e.trace_id})" for e in envelopes if e.agent_class not in self.topology.queues]
        if not unroutable:
            return
        routed = ", ".join(sorted(self.topology.queues))
        raise InvalidInput(
            "agent_class",
            f"this fleet routes {routed}; no rule routes {', '.join(unroutable)}",
            hint="nothing was sent. On AWS, PutEvents accepts an event no rule matches and it is dropped silently, "
            "unless a catch-all rule catches it: add_unrouted(topology) adds one that parks it on the unrouted "
            "queue (lab 03)",
        )

    def worker(self, agent_class: str, *, name: str | None = None) -> QueueWorker:
        """A worker on ``agent_class``'s queue running the idempotent step handler."""
        queue = self.topology.queue(agent_class)
        return QueueWorker(
            self.backend,
            queue.url,
            self.handle_step,
            name=name or f"{agent_class}-worker",
            ledger=self.ledger,
            tracer=self.tracer,
            faults=self.faults,
            heartbeat_every=queue.visibility_timeout / 3 if self.heartbeat else None,
            visibility_timeout=queue.visibility_timeout,
            last_attempt=self._last_attempt(agent_class) if self.last_attempt else None,
        )

    def _last_attempt(self, agent_class: str) -> LastAttempt:
        queue = self.topology.queue(agent_class)
        return LastAttempt(self.backend, self.topology.dead_letter_target(agent_class),
                           max_receive_count=queue.max_receive_count, responses=self.responses)

    def handle_step(self, delivery: Delivery) -> Any:
        """The reference step: claim, run the model, take effect, save, call back."""
        if delivery.envelope is None:
            raise delivery.envelope_error or EnvelopeError("body", "is not an envelope")
        step = delivery.envelope
        outcome = self.store.claim(step.trace_id, step.agent_class)
        if isinstance(outcome, Completed):
            self._trace(step, "duplicate_suppressed", delivery)
            result = outcome.result
        else:
            self._trace(step, "claimed", delivery, reclaimed=bool(outcome.reclaimed_from))
            claim = outcome
            delivery.on_heartbeat(lambda: self.store.extend(claim))
            try:
                answer = self.model.invoke(step.trace_id, delivery.receive_count, self.clock)
            except ModelError as failure:
                self._model_failed(step, delivery, claim, failure)
                raise
            delivery.record_effect(kind="step")
            result = {"trace_id": step.trace_id, "text": answer.text, "latency_s": round(answer.latency, 3)}
            self.store.complete(claim, result)
            self._trace(step, "completed", delivery, latency_s=round(answer.latency, 1))
            if self.responses is not None:
                self.responses.answer(step.trace_id, result, attempt=delivery.receive_count)
        if step.task_token:
            callback = callbacks.send_success(self.sfn, step.task_token, result)
            self._trace(step, "callback", delivery, accepted=callback.accepted, error=callback.error_code)
            if callback.accepted:
                self.callbacks[step.trace_id] = step.task_token
        return result

    def _model_failed(self, step: Envelope, delivery: Delivery, claim: Claim, failure: ModelError) -> None:
        """Release the claim; a transient failure comes back soon, a permanent one is left for the DLQ.

        Either way the message stays on the queue (the worker does not delete
        it). A transient failure (throttling) is made visible again after a
        short backoff that doubles per receive; a permanent one (the model
        rejects this input every time) keeps its whole visibility timeout, so
        it reaches maxReceiveCount and SQS parks it in the DLQ. The trace says which.
        """
        self.store.release(claim)
        if failure.transient:
            backoff = min(TRANSIENT_BACKOFF * 2 ** (delivery.receive_count - 1), self._visibility(step))
            self.backend.client("sqs").change_message_visibility(
                QueueUrl=delivery.queue_url, ReceiptHandle=delivery.receipt_handle, VisibilityTimeout=int(backoff)
            )
            self._trace(step, "model_failed", delivery, transient=True, retry_in=int(backoff))
        else:
            self._trace(step, "model_failed", delivery, transient=False, next="dlq after maxReceiveCount")

    def _visibility(self, step: Envelope) -> int:
        return self.topology.queue(step.agent_class).visibility_timeout

    def unsettled(self) -> list[str]:
        """Submitted traces whose message has not been deleted yet (nor found unrouted)."""
        settled = {h.trace_id for t in set(self.submitted) for h in self.tracer.timeline(t)
                   if h.name in ("deleted", "unrouted")}
        return [t for t in dict.fromkeys(self.submitted) if t not in settled]

    def unrouted(self) -> list[dict[str, str]]:
        """What the catch-all parked: each step's trace id, agent class and why no rule took it.

        Reads the ``unrouted`` queue without consuming it ([] when the topology has no catch-all).
        """
        if not self.topology.unrouted_url:
            return []
        known = ", ".join(sorted(self.topology.queues))
        rows = []
        for message in dlq.peek(self.backend, self.topology.unrouted_url):
            body, envelope, _ = messages.parse_body(message["Body"])
            detail = body.get("detail", {}) if isinstance(body, dict) else {}
            agent_class = detail.get("agent_class") if isinstance(detail, dict) else None
            why = (f"no rule routes agent_class {agent_class!r} (rules exist for {known})" if agent_class
                   else "the event has no agent_class")
            rows.append({"trace_id": messages.trace_id_of(message, envelope), "agent_class": str(agent_class), "why": why})
        return rows

    def run(
        self,
        *,
        advance: float = 0.0,
        idle_polls: int = 3,
        max_polls: int = 1_000,
        settle_timeout: float = 10.0,
    ) -> RunReport:
        """Poll every worker in turn until every submitted trace is settled.

        A trace never received yet (the bus or a state machine delivers
        asynchronously) is waited for, polling on real time, up to
        ``settle_timeout`` real seconds at a time; one the catch-all parked
        is settled as unrouted (``RunReport.unrouted``). Timeout if it has
        still not arrived (it may yet arrive: run again; or its class's rule was changed and matches it no more).
        Otherwise, when a round finds nothing, ``advance`` moves the clock
        that far (one visibility timeout brings crashed messages back) and
        the run ends after ``idle_polls`` such rounds (on a real clock sooner,
        once no work queue holds a message); without ``advance`` it ends at once. Bounded by ``max_polls``.
        """
        self._warn_if_deep()
        report = RunReport()
        idle = 0
        while report.polls < max_polls:
            if self._poll_round(report):
                idle = 0
                continue
            unsettled = self.unsettled()
            if not unsettled:
                break
            waiting = [t for t in unsettled if self._never_received(t)]
            if waiting:
                self._await_first_delivery(report, waiting, timeout=settle_timeout, max_polls=max_polls)
                idle = 0
                continue
            idle += 1
            if not advance or idle > idle_polls or self._nothing_to_come_back():
                break
            if self._wait_for_work(advance, report, max_polls):
                idle = 0
        return report

    def drain(self, *, advance: float, max_polls: int = 1_000) -> RunReport:
        """Poll every worker until every work queue is empty: nothing visible, nothing in flight.

        For work that did not come through ``submit`` or ``enqueue`` (a
        redrive moves messages straight into a queue). When a round finds
        nothing, the clock moves ``advance`` (a visibility timeout brings
        failed steps back). Bounded by ``max_polls``.
        """
        report = RunReport()
        while report.polls < max_polls:
            if self._poll_round(report):
                continue
            if not any(messages.held(self.backend, queue.url) for queue in self.topology.queues.values()):
                break
            self._wait_for_work(advance, report, max_polls)
        return report

    def _wait_for_work(self, seconds: float, report: RunReport, max_polls: int) -> list[HandleOutcome]:
        """Let ``seconds`` pass after a round that found nothing; what turned up meanwhile (handled).

        On the virtual clock the time jumps and nothing turns up. On a real
        clock the workers keep polling (each round long-polls) and stop
        waiting at the first work: a message is receivable again some time
        after its visibility timeout (up to a second late on LocalStack), and
        a sleep of the whole timeout would add that lateness to every retry.
        """
        if self.clock.virtual:
            self.clock.sleep(seconds)
            return []
        until = self.clock.now() + seconds
        while self.clock.now() < until and report.polls < max_polls:
            if found := self._poll_round(report):
                return found
        return []

    def _nothing_to_come_back(self) -> bool:
        """On a real clock, True once no work queue holds a message (visible, in flight or delayed): an idle
        round costs real time there, and none can find anything (a step SQS parked is in a DLQ). On the
        virtual clock idle rounds are free, so the run keeps its ``idle_polls``."""
        if self.clock.virtual:
            return False
        counts = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                  "ApproximateNumberOfMessagesDelayed"]
        sqs = self.backend.client("sqs")
        return not any(int(value) for queue in self.topology.queues.values()
                       for value in sqs.get_queue_attributes(QueueUrl=queue.url, AttributeNames=counts)["Attributes"].values())

    def _warn_if_deep(self) -> None:
        """Warn (once per call site) when the queues are deep enough to make this backend slow."""
        if self.backend.name not in SLOWS_WITH_DEPTH or len(self.submitted) < DEEP_QUEUE:
            return
        waiting = len(self.unsettled())
        if waiting >= DEEP_QUEUE:
            warnings.warn(DeepQueueWarning(
                f"{waiting:,} steps are waiting in the queues: on {self.backend.name} every SQS call slows as "
                "a queue grows (a receive takes ~5 ms on an empty queue, ~70 ms at 1,000 messages), so this "
                "run is slow. Submit in smaller batches with a fleet.run() between them "
                "(docs/troubleshooting.md#a-slow-cell-the-queue-is-deep)."), stacklevel=3)

    def finish_executions(self, *, timeout: float = 10.0, grace: float = 2.0) -> dict[str, str]:
        """Wait for every orchestrated step's execution to end; record and return each status.

        An execution still RUNNING ``grace`` seconds after its callback was
        accepted gets one SendTaskHeartbeat with the same token. That wakes
        moto's waitForTaskToken, which can miss a callback that arrives
        before its heartbeat timer starts (it would otherwise wait out the
        whole HeartbeatSeconds); on AWS the execution has long ended by
        then and this never fires. Raises Timeout if one is still running
        after ``timeout`` real seconds.
        """
        statuses: dict[str, str] = {}
        for trace_id, execution_arn in self.executions.items():
            status = self._await_execution(trace_id, execution_arn, timeout=timeout, grace=grace)
            statuses[trace_id] = status
            self.tracer.record(trace_id, f"execution_{status.lower()}", at=self.clock.now(), component="orchestrator")
        return statuses

    def _poll_round(self, report: RunReport) -> list[HandleOutcome]:
        """One poll of every worker; the outcomes are added to ``report``.

        Only the first worker long-polls (where the backend delivers late): once
        it has waited, or found work, the others' late messages have had the
        same time to arrive, so they receive at once and a round waits once,
        not once per queue.
        """
        report.polls += 1
        found: list[HandleOutcome] = []
        for index, worker in enumerate(self.workers.values()):
            found += worker.poll_once(max_messages=10, wait_seconds=None if index == 0 else 0)
        report.outcomes += found
        return found

    def _await_first_delivery(self, report: RunReport, waiting: list[str], *, timeout: float, max_polls: int) -> None:
        """Poll on real time until a round finds work (or ``max_polls`` is reached); Timeout after ``timeout``."""
        named = ", ".join(waiting[:3]) + (f" and {len(waiting) - 3} more" if len(waiting) > 3 else "")
        self.clock.wait_until(
            lambda: self._poll_round(report) or self._settle_unrouted(report, waiting) or report.polls >= max_polls,
            timeout=timeout,
            interval=0.02,
            what=f"Fleet.run: {named} published but never received (is there a rule for its agent class?)",
        )

    def _never_received(self, trace_id: str) -> bool:
        return all(h.name not in ("received", "unrouted") for h in self.tracer.timeline(trace_id))

    def _settle_unrouted(self, report: RunReport, waiting: list[str]) -> list[str]:
        """Settle the waiting traces the catch-all parked (a hop ``unrouted``, with why); those traces."""
        found = [row for row in self.unrouted() if row["trace_id"] in waiting and row["trace_id"] not in report.unrouted]
        for row in found:
            self.tracer.record(row["trace_id"], "unrouted", at=self.clock.now(), component="bus",
                               agent_class=row["agent_class"], why=row["why"])
            report.unrouted.append(row["trace_id"])
        return [row["trace_id"] for row in found]

    def _await_execution(self, trace_id: str, execution_arn: str, *, timeout: float, grace: float) -> str:
        token = self.callbacks.get(trace_id)
        if token is not None:
            try:
                return self._execution_status(execution_arn, timeout=grace)
            except Timeout:  # the callback may have been missed: nudge, then wait out the rest
                nudge = callbacks.send_heartbeat(self.sfn, token)
                self.tracer.record(trace_id, "callback_nudged", at=self.clock.now(), component="orchestrator",
                                   accepted=nudge.accepted)
            timeout = max(timeout - grace, 0.1)
        return self._execution_status(execution_arn, timeout=timeout)

    def _execution_status(self, execution_arn: str, *, timeout: float) -> str:
        return executions.wait_for_execution(self.sfn, execution_arn, clock=self.clock, timeout=timeout)["status"]

    def _trace(self, step: Envelope, hop: str, delivery: Delivery, **attrs: Any) -> None:
        self.tracer.record(step.trace_id, hop, at=self.clock.now(), component=delivery.worker, **attrs)
