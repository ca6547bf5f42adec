"""The fleet: bus -> rules -> queues -> workers -> idempotency store -> callbacks.

``Fleet`` wires the library's parts into the reference pipeline on one
provisioned topology. A step enters either on the bus (``submit``: the
message loop) or through the orchestrator state machine (``orchestrate``: the
token loop, where the event carries a task token and the worker closes the
loop with SendTaskSuccess). Every hop is recorded on the tracer under the
step's trace_id, and the step's side effect lands in the effects ledger.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from .agents.model import FakeModel
from .aws.backends import Backend
from .aws.topology import Topology
from .errors import EnvelopeError, FleetlabError, ModelError
from .events.envelope import Envelope, batches
from .faults import FaultPlan
from .ledger import EffectsLedger
from .sqs.worker import Delivery, HandleOutcome, QueueWorker
from .state.claimcheck import ClaimCheck
from .state.idempotency import Completed, IdempotencyStore
from .stepfunctions import callbacks, executions
from .tracing import Tracer


# On moto every SQS call slows as its queue grows (a receive takes ~5 ms empty,
# ~70 ms at 1,000 messages): past this many waiting steps, a run says why it is slow.
DEEP_QUEUE = 500
SLOWS_WITH_DEPTH = ("moto", "moto-server")


class DeepQueueWarning(UserWarning):
    """A run starts with so many steps waiting that the emulator's calls slow down."""


@dataclass
class RunReport:
    """What ``Fleet.run`` did: outcomes by status and how many polls it took."""

    outcomes: list[HandleOutcome] = field(default_factory=list)
    polls: int = 0

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)


class Fleet:
    """The reference pipeline on one topology.

    The step handler is idempotent: it claims (trace_id, agent_class) in the
    store before the effect, returns the saved result to duplicates, renews
    its lease on every heartbeat, and sends the task token back when the
    step came from the orchestrator.
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
    ) -> None:
        self.backend = backend
        self.topology = topology
        self.clock = backend.clock
        self.model = model or FakeModel()
        self.faults = faults or FaultPlan()
        self.ledger = ledger if ledger is not None else EffectsLedger()
        self.tracer = tracer if tracer is not None else Tracer()
        self.heartbeat = heartbeat
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

        Raises EnvelopeError (nothing published) for a bad envelope, and
        FleetlabError naming the entries EventBridge refused.
        """
        prepared = [self.claimcheck.offload(e) for e in envelopes]
        entries = [e.entry(self.topology.bus_name) for e in prepared]
        event_ids: list[str] = []
        for request in batches(entries):
            response = self.events.put_events(Entries=request)
            failed = [(i, r) for i, r in enumerate(response["Entries"]) if "EventId" not in r]
            if failed:
                codes = ", ".join(f"entries[{i}]: {r.get('ErrorCode')}" for i, r in failed)
                raise FleetlabError(f"EventBridge refused {codes}; the others were published", may_have_happened=True)
            event_ids += [r["EventId"] for r in response["Entries"]]
        for env, event_id in zip(prepared, event_ids):
            self.submitted.append(env.trace_id)
            self.tracer.record(env.trace_id, "published", at=self.clock.now(), component="bus", event_id=event_id)
        return event_ids

    def enqueue(self, *envelopes: Envelope) -> list[str]:
        """Send steps straight to their agent class's queue, bypassing the bus. Returns message ids.

        What a producer that owns the queue does (an API handler writing to its
        input queue). Raises EnvelopeError (nothing sent) for a bad envelope.
        """
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
                    raise FleetlabError(f"SQS refused {response['Failed']}; the others were sent", may_have_happened=True)
                for (_, env, _), sent in zip(entries, response["Successful"]):
                    message_ids.append(sent["MessageId"])
                    self.submitted.append(env.trace_id)
                    self.tracer.record(env.trace_id, "enqueued", at=self.clock.now(), component="producer")
        return message_ids

    def orchestrate(self, envelope: Envelope) -> str:
        """Start the orchestrator for one step (payload always claim-checked). Returns the execution ARN."""
        if not self.topology.state_machine_arn:
            raise FleetlabError("this topology has no orchestrator; provision with TopologySpec(orchestrator=True)")
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
        )

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
            except ModelError:
                self.store.release(claim)
                raise
            delivery.record_effect(kind="step")
            result = {"trace_id": step.trace_id, "text": answer.text, "latency_s": round(answer.latency, 3)}
            self.store.complete(claim, result)
            self._trace(step, "completed", delivery, latency_s=round(answer.latency, 1))
        if step.task_token:
            callback = callbacks.send_success(self.sfn, step.task_token, result)
            self._trace(step, "callback", delivery, accepted=callback.accepted, error=callback.error_code)
            if callback.accepted:
                self.callbacks[step.trace_id] = step.task_token
        return result

    def unsettled(self) -> list[str]:
        """Submitted traces whose message has not been deleted yet."""
        settled = {h.trace_id for t in set(self.submitted) for h in self.tracer.timeline(t) if h.name == "deleted"}
        return [t for t in dict.fromkeys(self.submitted) if t not in settled]

    def run(
        self,
        *,
        advance: float = 0.0,
        idle_polls: int = 3,
        max_polls: int = 1_000,
        settle_timeout: float = 10.0,
    ) -> RunReport:
        """Poll every worker in turn until every submitted trace is settled.

        A trace never received yet (a state machine publishes asynchronously)
        is waited for, up to ``settle_timeout`` real seconds. Otherwise, when
        a round finds nothing, ``advance`` moves the clock that far (one
        visibility timeout brings crashed messages back) and the run ends
        after ``idle_polls`` such rounds; without ``advance`` it ends at once.
        Bounded by ``max_polls``.
        """
        self._warn_if_deep()
        report = RunReport()
        deadline = time.monotonic() + settle_timeout
        idle = 0
        while report.polls < max_polls:
            report.polls += 1
            found = [o for w in self.workers.values() for o in w.poll_once(max_messages=10)]
            report.outcomes += found
            if found:
                idle = 0
                continue
            unsettled = self.unsettled()
            if not unsettled:
                break
            if self._awaiting_first_delivery(unsettled) and time.monotonic() < deadline:
                time.sleep(0.02)  # a state machine's event is still on its way to the queue
                continue
            idle += 1
            if advance:
                if idle > idle_polls:
                    break
                self.clock.sleep(advance)
            else:
                break
        return report

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
        then and this never fires. Raises FleetlabError if one is still
        running after ``timeout`` real seconds.
        """
        statuses: dict[str, str] = {}
        for trace_id, execution_arn in self.executions.items():
            status = self._await_execution(trace_id, execution_arn, timeout=timeout, grace=grace)
            statuses[trace_id] = status
            self.tracer.record(trace_id, f"execution_{status.lower()}", at=self.clock.now(), component="orchestrator")
        return statuses

    def _await_execution(self, trace_id: str, execution_arn: str, *, timeout: float, grace: float) -> str:
        token = self.callbacks.get(trace_id)
        if token is None:
            return executions.wait_for_execution(self.sfn, execution_arn, timeout=timeout)["status"]
        try:
            return executions.wait_for_execution(self.sfn, execution_arn, timeout=grace)["status"]
        except FleetlabError:
            nudge = callbacks.send_heartbeat(self.sfn, token)
            self.tracer.record(trace_id, "callback_nudged", at=self.clock.now(), component="orchestrator",
                               accepted=nudge.accepted)
        return executions.wait_for_execution(self.sfn, execution_arn, timeout=max(timeout - grace, 0.1))["status"]

    def _awaiting_first_delivery(self, trace_ids: list[str]) -> bool:
        return any(all(h.name != "received" for h in self.tracer.timeline(t)) for t in trace_ids)

    def _trace(self, step: Envelope, hop: str, delivery: Delivery, **attrs: Any) -> None:
        self.tracer.record(step.trace_id, hop, at=self.clock.now(), component=delivery.worker, **attrs)
