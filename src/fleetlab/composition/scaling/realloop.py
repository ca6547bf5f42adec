"""The small real loop: KEDA and the HPA read a real queue, simulated replicas consume its real messages.

At small scale (a burst of about a hundred documents) nothing is modelled
but the pods: the ``Autoscaler`` reads ApproximateNumberOfMessages,
...NotVisible and ...Delayed with GetQueueAttributes at every poll and sync,
and each replica it asks for is one ``QueueWorker`` that receives real
messages, works each for ``step_seconds`` of the loop's time, records the
step's effect in the ledger and deletes it.

One loop, one thread, a tick at a time (``tick`` seconds of the loop's
time): finish the steps that are due, let KEDA and the HPA act, start or
stop replicas, and let replicas with free slots receive (a replica that
finds the queue empty ends the tick's receiving, as the others would find
it empty too).

Time. The pods, their step time and the autoscaler are the library's own,
so the loop keeps its own time. On a virtual clock each tick passes on the
backend's clock too (free, and SQS's timers follow it). On a real clock
(LocalStack, AWS) the loop runs as fast as its calls, and waits for the
service only where the service keeps the time: when messages a killed pod
abandoned are due back (their visibility timeout runs on the service's
clock, so the wait is real; keep such timeouts short there). Replicas
receive without a long poll (the loop sends its documents itself, so none
arrive late, and a long poll is at least a whole second of service time,
many ticks at a scaled clock); only the first receive after abandoned
messages were due long-polls, as a backend may requeue them late (the
fidelity table's ``sqs.redelivery_delay``).

Scale-down either drains (the replica stops receiving and goes once its
steps are done) or kills (its steps are abandoned undeleted, so SQS hands
them out again after the queue's visibility timeout).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.composition.scaling.autoscaler import Autoscaler, Decision, HpaStep
from fleetlab.composition.scaling.hpa import HpaSettings
from fleetlab.composition.scaling.manifest import ScaledObject
from fleetlab.composition.scaling.scaler import ATTRIBUTE_NAMES, QueueAttributes
from fleetlab.composition.scaling.simulator import SCALE_DOWN_MODES, Sample
from fleetlab.core.clock import library_clock
from fleetlab.core.errors import FleetlabError, InvalidInput
from fleetlab.core.ledger import EffectsLedger
from fleetlab.services.events.envelope import Envelope
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.worker import HandleOutcome, QueueWorker

SEND_BATCH = 10  # SendMessageBatch entries


def read_queue(sqs: Any, queue_url: str) -> QueueAttributes:
    """One GetQueueAttributes call for the three counts KEDA reads.

    It asks for ``All``: the same counts, and the emulators work them out
    once per call instead of once per name asked for.
    """
    answer = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])
    attributes = answer.get("Attributes", {})
    return QueueAttributes.from_sqs({name: attributes[name] for name in ATTRIBUTE_NAMES if name in attributes})


def send_documents(backend: Backend, queue_url: str, count: int, *, prefix: str = "doc", first: int = 0) -> list[str]:
    """Send ``count`` one-step documents (envelope bodies), ten per SendMessageBatch; return their trace ids."""
    sqs = backend.client("sqs")
    ids = [f"{prefix}-{n}" for n in range(first, first + count)]
    for start in range(0, count, SEND_BATCH):
        entries = [
            {"Id": str(n), "MessageBody": json.dumps(
                Envelope(trace_id=trace, conversation_id=trace, step=1, agent_class="documents").detail())}
            for n, trace in enumerate(ids[start:start + SEND_BATCH])
        ]
        failed = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries).get("Failed", [])
        if failed:
            raise FleetlabError(f"SendMessageBatch refused {len(failed)} documents: {failed[0]}",
                                may_have_happened=True)
    return ids


@dataclass(frozen=True)
class _Job:
    """One step a replica is working on: when it is done (loop time), its message, when it was received."""

    done_at: float
    message: dict[str, Any]
    received_on_clock: float


@dataclass
class _Replica:
    """One simulated pod: a QueueWorker and the steps it is working on."""

    worker: QueueWorker
    ready_at: float
    draining: bool = False
    jobs: list[_Job] = field(default_factory=list)


@dataclass
class RealLoopRun:
    """What the loop did; times are seconds since it started, on the backend's clock."""

    samples: list[Sample] = field(default_factory=list)
    scaling: list[tuple[float, str, int, int]] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    outcomes: list[HandleOutcome] = field(default_factory=list)
    ledger: EffectsLedger = field(default_factory=EffectsLedger)
    sent: dict[str, float] = field(default_factory=dict)
    abandoned: int = 0
    seconds: float = 0.0
    finished: bool = False

    @property
    def peak_replicas(self) -> int:
        return max((s.replicas for s in self.samples), default=0)


def run_real_loop(
    backend: Backend,
    queue_url: str,
    scaled: ScaledObject,
    *,
    arrivals: Sequence[tuple[float, int]] = (),
    step_seconds: float = 90.0,
    concurrency: int = 1,
    tick: float = 5.0,
    max_seconds: float = 3600.0,
    settings: HpaSettings | None = None,
    replicas: int = 0,
    scale_down: str = "drain",
    startup_seconds: float = 0.0,
    hpa_step: HpaStep | None = None,
) -> RealLoopRun:
    """Run the loop until every document sent is done and KEDA has scaled back to its floor, or ``max_seconds``.

    ``arrivals`` are (seconds after the start, documents) sent during the
    run. The queue's visibility timeout must exceed ``step_seconds`` (these
    replicas keep no heartbeat). ``hpa_step`` replaces the HPA model's sync
    (see ``Autoscaler``); what it raises propagates. Returns the run;
    ``finished`` is False when it stopped at ``max_seconds``.
    """
    if scale_down not in SCALE_DOWN_MODES:
        raise InvalidInput("scale_down", f"{scale_down!r} is not one of {', '.join(SCALE_DOWN_MODES)}")
    if tick <= 0 or step_seconds <= 0 or concurrency < 1:
        raise InvalidInput("tick" if tick <= 0 else "step_seconds" if step_seconds <= 0 else "concurrency",
                           "must be positive")
    loop = _Loop(backend, queue_url, scaled, settings or HpaSettings(), step_seconds=step_seconds,
                 concurrency=concurrency, scale_down=scale_down, startup_seconds=startup_seconds,
                 replicas=replicas, arrivals=sorted(arrivals), hpa_step=hpa_step)
    return loop.run(tick, max_seconds)


@dataclass
class _Loop:
    """The loop's settings and state: the replicas, the autoscaler and what it has recorded."""

    backend: Backend
    queue_url: str
    scaled: ScaledObject
    settings: HpaSettings
    step_seconds: float
    concurrency: int
    scale_down: str
    startup_seconds: float
    replicas: int
    arrivals: list[tuple[float, int]]
    hpa_step: HpaStep | None = None

    def __post_init__(self) -> None:
        self.clock = self.backend.clock  # the service's time: receives, visibility timeouts
        self.loop_clock = library_clock(self.clock)  # the loop's own: the backend's clock itself when virtual
        self.sqs = self.backend.client("sqs")
        self.result = RealLoopRun()
        self.autoscaler = Autoscaler(self.scaled, self.settings, replicas=self.replicas, hpa_step=self.hpa_step)
        self.pods: list[_Replica] = []
        self.made = 0
        self.t0 = self.now = self.loop_clock.now()  # ``now``: the current tick's time, on the loop's clock
        self.reading: QueueAttributes | None = None
        self.returning: list[tuple[float, float]] = []  # abandoned messages due back: (loop time, clock time)
        self.returns_due = False  # abandoned messages are due back: the next receive long-polls for them
        self.visibility = self._check_visibility()
        for _ in range(self.replicas):
            self._add_replica(self.t0)

    def run(self, tick: float, max_seconds: float) -> RealLoopRun:
        result = self.result
        ticks = 0
        while True:
            since = ticks * tick  # the tick's own time: the loop runs on a grid, as the simulator does
            self.now = now = self.t0 + since
            self._send_due(since)
            self._finish_due(now)
            self.reading = None
            for decision in self.autoscaler.advance(since, self._read):
                result.decisions.append(decision)
                if decision.changed:
                    result.scaling.append((decision.at, decision.actor, decision.current, decision.desired))
            self._resize(now)
            if self.reading is not None:
                result.samples.append(self._sample(self.reading))
            self._receive(now)
            if self._done() or since >= max_seconds:
                result.finished = self._done()
                result.seconds = since
                return result
            ticks += 1
            self._pace(ticks * tick)

    def _pace(self, since: float) -> None:
        """Bring the loop's clock to the next tick; on a real clock, first wait for the messages due back by then."""
        tick_at = self.t0 + since
        if not self.clock.virtual:
            due = [on_clock for in_loop, on_clock in self.returning if in_loop <= tick_at]
            self.returning = [(in_loop, on_clock) for in_loop, on_clock in self.returning if in_loop > tick_at]
            if due:
                self.clock.sleep(max(max(due) - self.clock.now(), 0.0))
                self.returns_due = True
        self.loop_clock.sleep(max(tick_at - self.loop_clock.now(), 0.0))

    # --- the queue ------------------------------------------------------------------

    def _check_visibility(self) -> float:
        answer = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["VisibilityTimeout"])
        visibility = float(answer["Attributes"]["VisibilityTimeout"])
        if visibility <= self.step_seconds:
            raise InvalidInput("step_seconds", f"{self.step_seconds} s is not shorter than the queue's visibility "
                                               f"timeout {visibility:g} s", hint="these replicas keep no heartbeat")
        return visibility

    def _read(self) -> QueueAttributes:
        self.reading = read_queue(self.sqs, self.queue_url)
        return self.reading

    def _sample(self, reading: QueueAttributes) -> Sample:
        """The tick's last reading, with the replicas KEDA and the HPA left and the pods before they receive."""
        now = self.now
        waiting = [at for trace, at in self.result.sent.items() if self.result.ledger.count(trace) == 0]
        return Sample(
            t=now - self.t0, visible=reading.visible, in_flight=reading.in_flight, delayed=reading.delayed,
            replicas=self.autoscaler.replicas,
            ready=sum(1 for r in self.pods if r.ready_at <= now and not r.draining),
            working=sum(len(r.jobs) for r in self.pods),
            age_of_oldest=now - min(waiting) if waiting else 0.0,
            completed=len(self.result.ledger.effects()), throttled=0)

    def _send_due(self, since: float) -> None:
        while self.arrivals and self.arrivals[0][0] <= since:
            _, count = self.arrivals.pop(0)
            first = len(self.result.sent)
            for trace in send_documents(self.backend, self.queue_url, count, first=first):
                self.result.sent[trace] = self.now

    def _done(self) -> bool:
        floor = self.scaled.idle_replica_count if self.scaled.idle_replica_count is not None \
            else self.scaled.min_replica_count
        everything_done = not self.arrivals and all(self.result.ledger.count(t) for t in self.result.sent)
        return everything_done and self.autoscaler.replicas == floor and not any(r.jobs for r in self.pods)

    # --- the replicas ----------------------------------------------------------------

    def _add_replica(self, now: float) -> None:
        self.made += 1

        def step(delivery: Delivery) -> None:
            delivery.record_effect(kind="document")

        worker = QueueWorker(self.backend, self.queue_url, step, name=f"replica-{self.made}",
                             ledger=self.result.ledger)
        self.pods.append(_Replica(worker, ready_at=now + self.startup_seconds))

    def _resize(self, now: float) -> None:
        serving = [r for r in self.pods if not r.draining]
        extra = self.autoscaler.replicas - len(serving)
        for _ in range(max(extra, 0)):
            self._add_replica(now)
        if extra >= 0:
            return
        # Kubernetes removes pods that are not ready first, then the newest.
        doomed = sorted(serving, key=lambda r: (r.ready_at <= now, -self.pods.index(r)))[:-extra]
        for replica in doomed:
            if self.scale_down == "kill" or not replica.jobs:
                self._abandon(replica.jobs)
                self.pods.remove(replica)
            else:
                replica.draining = True

    def _abandon(self, jobs: list[_Job]) -> None:
        """A killed replica's steps: never deleted, so SQS offers them again one visibility timeout after receipt."""
        self.result.abandoned += len(jobs)
        self.returning += [(job.done_at - self.step_seconds + self.visibility, job.received_on_clock + self.visibility)
                           for job in jobs]

    def _finish_due(self, now: float) -> None:
        for replica in list(self.pods):
            due = [job for job in replica.jobs if job.done_at <= now]
            for job in due:
                replica.jobs.remove(job)
                self.result.outcomes.append(replica.worker.handle(job.message))
            if replica.draining and not replica.jobs:
                self.pods.remove(replica)

    def _receive(self, now: float) -> None:
        for replica in self.pods:
            free = self.concurrency - len(replica.jobs)
            if replica.draining or replica.ready_at > now or free <= 0:
                continue
            # None: the backend's long poll, for messages due back that the service may requeue late.
            messages = replica.worker.receive(free, wait_seconds=None if self.returns_due else 0)
            self.returns_due = False
            if not messages:
                return
            received = self.clock.now()
            replica.jobs += [_Job(now + self.step_seconds, message, received) for message in messages]
