"""Run a chaos day: the whole fleet on one backend through one seeded schedule, scored on invariants and budgets.

The fleet is the reference pipeline (``Fleet``: bus -> rules -> queues and
DLQs -> idempotent workers, answering callers through a response store),
with a router in front of the fake model (a primary group with the
schedule's outage window, a fallback group) and every model call paid for
from the token governor through an allowance. Work is fed a chunk at a time
(the burst at once), and each batch is worked until no work queue holds a
message: in rounds where each queue gets as many receives as the
autoscaler's replicas (KEDA's formula on the backlog), each receive's
finished messages deleted in one DeleteMessageBatch, the virtual clock
moving one visibility timeout when a round finds nothing. On moto the
virtual clock is held still (``clock.still``): time moves only by the day's
own waits, so a seed gives the same day on a busy machine. On a scaled clock
(LocalStack, AWS) each of the day's own waits skips (``clock.skip``: model
steps, held steps, quota windows, the replay's reach, a visibility timeout
waited out), and before each receive a ``VisibilityCatchUp`` gives back
every message whose visibility timeout lab time has passed: the day keeps
to lab time without sleeping through it. While a held
step runs (the slow one, the heartbeat crash's), a standby replica per
queue keeps polling, so a step that outlives its visibility timeout is
taken over by a second worker as on a real fleet (and so is a received step
still waiting its turn behind it). At the end, the events published in the
hour before the last batch are published again (the replay); with the
schedule's ``replay_reach``, once the oldest is that old, leaving out any that
are older by then. The fleet is sampled at every publish and after every
round (``series``: steps waiting, replicas, the oldest step's age, errors by
class), from the day's own records, for the day's dashboard.

What this day does not do yet (said on purpose): the replicas bound how
many messages a round takes, but the steps of a round run one after
another on the clock, so a caller's wait (which the scoreboard holds to its
deadline) also counts the steps ahead of it in its round, longer than on a
fleet whose replicas work at once; the replay republishes the
day's own events instead of replaying an EventBridge archive (``replay_reach``
moves the clock to when an operator would replay it); the
orchestrator (Step Functions callbacks) is not on the day's path.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.composition.chaos.calls import CallCounter
from fleetlab.composition.chaos.config import FleetConfig
from fleetlab.composition.chaos.schedule import AGENT_CLASSES, ChaosSchedule, trace_id
from fleetlab.composition.chaos.scoreboard import Budgets, Scoreboard
from fleetlab.composition.chaos.scoring import DayRecord, score
from fleetlab.composition.chaos.series import SeriesRecorder
from fleetlab.composition.pipeline import Fleet
from fleetlab.composition.topology import AgentClass, Topology, TopologySpec, new_prefix, provision
from fleetlab.core.clock import Clock
from fleetlab.core.collector import fewer_collections
from fleetlab.services.agents.model import FakeModel, ModelResult
from fleetlab.services.agents.router import ModelGroup, Router, RouterSettings
from fleetlab.services.events.envelope import Envelope
from fleetlab.services.sqs import dlq, messages
from fleetlab.services.sqs.catchup import VisibilityCatchUp
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.worker import HandleOutcome, Outcome
from fleetlab.services.state.governor import Allowance, TokenGovernor
from fleetlab.services.state.idempotency import IdempotencyStore
from fleetlab.services.state.responses import ResponseStore

MAX_ROUNDS_PER_BATCH = 5_000
MESSAGES_PER_RECEIVE = 10
STANDBY_POLL_SECONDS = 30.0
DELIVERY_TIMEOUT = 10.0  # real seconds a published step may take to reach its queue
FINISHED = (Outcome.DONE, Outcome.PARKED)


def run_chaos_day(backend: Backend, config: FleetConfig | None = None, schedule: ChaosSchedule | None = None, *,
                  budgets: Budgets | None = None,
                  progress: Callable[[int, int], None] | None = None) -> Scoreboard:
    """Provision a fleet built from ``config``, run ``schedule``'s day on it, tear it down; the scoreboard.

    ``progress(fed, steps)`` is called after each batch settles. Defaults: a
    correct ``FleetConfig()``, ``ChaosSchedule.draw(0)``, ``Budgets()``.
    """
    config = config or FleetConfig()
    schedule = schedule or ChaosSchedule.draw(0)
    started = time.perf_counter()
    topology = provision(backend, _spec(config), prefix=new_prefix("chaosday"))
    try:
        with backend.clock.still(), fewer_collections():
            day = _Day(backend, topology, config, schedule)
            day.run(progress)
            return day.scoreboard(budgets or Budgets(), run_seconds=time.perf_counter() - started)
    finally:
        topology.teardown()


def _spec(config: FleetConfig) -> TopologySpec:
    """The topology: one queue per agent class with the config's visibility timeout and maxReceiveCount."""
    p95 = config.visibility_timeout / 1.5
    if math.ceil(p95 * 1.5) != config.visibility_timeout:  # float rounding: land on the timeout exactly
        p95 = (config.visibility_timeout - 0.5) / 1.5
    classes = tuple(AgentClass(name, step_p95_seconds=p95, max_receive_count=config.max_receives)
                    for name in AGENT_CLASSES)
    return TopologySpec(agent_classes=classes, orchestrator=False)


class _ChaosModel:
    """The model as the workers see it: the slow step, a governor draw, then the router."""

    def __init__(self, day: _Day) -> None:
        self.day = day

    def invoke(self, trace_id: str, attempt: int, clock: Clock) -> ModelResult:
        schedule = self.day.schedule
        held = schedule.held(trace_id, attempt)
        if held:
            with clock.every(STANDBY_POLL_SECONDS, self.day.standby_poll):
                clock.skip(held)
        self.day.pay(schedule.tokens(trace_id, attempt))
        return self.day.router.invoke(trace_id, attempt, _Skipping(clock))


class _Skipping:
    """A clock whose ``sleep`` is ``skip``: the model's own time, which no service timer needs to see.

    On moto the same as the clock itself; on a scaled clock no real time passes.
    """

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def now(self) -> float:
        return self.clock.now()

    def sleep(self, seconds: float) -> None:
        self.clock.skip(seconds)


class _Day:
    """One chaos day in progress: the fleet, its router and governor, and what the day has seen."""

    def __init__(self, backend: Backend, topology: Topology, config: FleetConfig, schedule: ChaosSchedule) -> None:
        self.backend, self.topology, self.config, self.schedule = backend, topology, config, schedule
        self.clock = backend.clock
        self.clock.skip(-self.clock.now() % config.quota_window)  # start on a quota window, as every day does
        self.start = self.clock.now()
        self.router = Router(self._router_settings())
        dynamodb = backend.client("dynamodb")
        self.governor = TokenGovernor(dynamodb, topology.table_name, self.clock, config.quota())
        self.allowance = Allowance(self.governor, batch=config.batch_tokens)
        self.spend_by_window: Counter[float] = Counter()
        responses = ResponseStore(dynamodb, topology.table_name, self.clock)
        model: Any = _ChaosModel(self)  # FakeModel's invoke, duck-typed (as the router's is)
        self.fleet = Fleet(backend, topology, model=model, faults=schedule.fault_plan(),
                           heartbeat=config.heartbeat_seconds is not None, responses=responses,
                           last_attempt=config.park_with_diagnosis)
        self.fleet.store = IdempotencyStore(dynamodb, topology.table_name, self.clock,
                                            lease_seconds=config.visibility_timeout,
                                            window_seconds=config.idempotency_window)
        self.standbys = [self.fleet.worker(name, name=f"{name}-standby") for name in topology.queues]
        for worker in (*self.fleet.workers.values(), *self.standbys):
            worker.heartbeat_every = config.heartbeat_seconds
            worker.batch_deletes = True
            if not config.idempotency:
                worker.handler = self._naive_step
        self._standby_busy = False
        self.outcomes: list[HandleOutcome] = []
        self.finished = 0
        self.published = 0
        self.published_at: dict[str, float] = {}
        self.last_published = self.start
        self.unreceived: set[str] = set()
        self.replayed_traces: list[str] = []
        self.replicas_peak = 0
        self.replicas_now = config.min_replicas
        self.series = SeriesRecorder(self.start)
        self.calls = CallCounter(backend)
        self.catch_up = None if self.clock.virtual else VisibilityCatchUp(backend)

    def _router_settings(self) -> RouterSettings:
        config, schedule = self.config, self.schedule
        down_from = self.start + schedule.outage_start
        def deployment(name: str, *, down_from: float = 0.0, down_until: float = 0.0) -> FakeModel:
            return FakeModel(seed=schedule.seed, transient_failure_rate=schedule.transient_failure_rate,
                             poison=schedule.poison, name=name, down_from=down_from, down_until=down_until)

        primary = ModelGroup("primary", tuple(
            deployment(f"primary-{n}", down_from=down_from, down_until=down_from + schedule.outage_seconds)
            for n in range(config.primary_deployments)))
        fallback = ModelGroup("fallback", (deployment("fallback-0"),))
        return RouterSettings(groups=(primary, fallback), primary="primary",
                              fallbacks={"primary": "fallback"} if config.fallback else {},
                              num_retries=config.num_retries, allowed_fails=config.allowed_fails,
                              cooldown=config.cooldown, seed=schedule.seed)

    def _envelope(self, index: int) -> Envelope:
        trace = trace_id(index, self.schedule.steps_per_conversation)
        conversation, step = trace.removeprefix("conv-").split("-step-")
        return Envelope(trace, f"conv-{conversation}", int(step), AGENT_CLASSES[index % len(AGENT_CLASSES)])

    def run(self, progress: Callable[[int, int], None] | None) -> None:
        """Feed every batch and settle it, then replay the last hour and settle that; stop watching the clients."""
        try:
            self._feed_and_replay(progress)
        finally:
            self.calls.close()
            if self.catch_up is not None:
                self.catch_up.close()

    def _feed_and_replay(self, progress: Callable[[int, int], None] | None) -> None:
        envelopes = [self._envelope(index) for index in range(self.schedule.steps)]
        for start, stop in self.schedule.feeds():
            self._publish(envelopes[start:stop])
            self._settle()
            if progress is not None:
                progress(stop, self.schedule.steps)
        cutoff = self.last_published - self.schedule.replay_seconds
        replay = self._within_reach([e for e in envelopes if self.published_at[e.trace_id] >= cutoff])
        self.replayed_traces = [e.trace_id for e in replay]
        for start in range(0, len(replay), self.schedule.chunk):
            self._publish(replay[start:start + self.schedule.chunk])
            self._settle()

    def _within_reach(self, replay: list[Envelope]) -> list[Envelope]:
        """With a ``replay_reach``: move the clock until the oldest of ``replay`` is that old (at once when it is
        older), and keep only the events published within the reach of that instant."""
        reach = self.schedule.replay_reach
        if reach is None or not replay:
            return replay
        replay_at = max(self.clock.now(), min(self.published_at[e.trace_id] for e in replay) + reach)
        self.clock.skip(replay_at - self.clock.now())
        return [e for e in replay if self.published_at[e.trace_id] >= replay_at - reach]

    def _publish(self, envelopes: list[Envelope]) -> None:
        self.fleet.submit(*envelopes)
        self.published += len(envelopes)
        now = self.last_published = self.clock.now()
        for envelope in envelopes:
            self.published_at[envelope.trace_id] = now
            self.unreceived.add(envelope.trace_id)
        self.series.published((envelope.trace_id for envelope in envelopes), now)
        self.series.sample((), at=now, replicas=self.replicas_now)

    def _settle(self) -> None:
        """Work the queues in autoscaled rounds until no work queue holds a message.

        A round that finds nothing waits for what was published and not yet
        delivered (in real time), else moves the clock one visibility timeout
        while a queue still holds messages in flight (a crashed step comes back).
        """
        for _ in range(MAX_ROUNDS_PER_BATCH):
            replicas = self._replicas(max(self.published - self.finished, 0))
            if self._round(replicas):
                continue
            if self.unreceived:  # the bus delivers after PutEvents returns on some backends: wait, in real time
                self.clock.wait_until(lambda: self._round(replicas), timeout=DELIVERY_TIMEOUT, interval=0.02,
                                      what=f"chaos day: {len(self.unreceived)} steps published, never received")
                continue
            if not self._held():
                return
            self._wait_out_visibility(replicas)

    def _held(self) -> bool:
        """True while a work queue holds a message, visible or in flight."""
        return any(messages.held(self.backend, queue.url) for queue in self.topology.queues.values())

    def _wait_out_visibility(self, replicas: int) -> None:
        """Move the clock one visibility timeout, so that what crashed or failed comes back.

        On moto SQS follows the virtual clock. On a scaled clock the clock
        skips, and rounds (each first releasing what lab time has passed) go
        on in real time until one finds work or nothing is held: the
        service's own timer brings back whatever the catch-up does not hold.
        """
        if self.catch_up is None:
            self.clock.sleep(self.config.visibility_timeout + 1)
            return
        self.clock.skip(self.config.visibility_timeout + 1)
        self.clock.wait_until(lambda: self._round(replicas) or not self._held(),
                              timeout=self.config.visibility_timeout / self.clock.scale + DELIVERY_TIMEOUT,
                              interval=0.05, what="chaos day: messages in flight never came back")

    def _replicas(self, waiting: int) -> int:
        """KEDA's count: one replica per ``backlog_per_replica`` waiting, within min..max (one at least for work)."""
        config = self.config
        wanted = math.ceil(waiting / config.backlog_per_replica)
        replicas = max(min(max(wanted, config.min_replicas), config.max_replicas), 1)
        self.replicas_peak = max(self.replicas_peak, replicas)
        self.replicas_now = replicas
        return replicas

    def _round(self, replicas: int) -> list[HandleOutcome]:
        """Each queue gets up to ``replicas`` receives, stopping at the first that comes back short."""
        if self.catch_up is not None:
            self.catch_up.release_due()
        found: list[HandleOutcome] = []
        for worker in self.fleet.workers.values():
            for _ in range(replicas):
                handled = worker.poll_once(MESSAGES_PER_RECEIVE, wait_seconds=0)
                found += handled
                if len(handled) < MESSAGES_PER_RECEIVE:
                    break
        self._record(found)
        return found

    def _record(self, outcomes: list[HandleOutcome]) -> None:
        self.outcomes += outcomes
        self.finished += sum(1 for outcome in outcomes if outcome.status in FINISHED)
        self.unreceived.difference_update(outcome.trace_id for outcome in outcomes)
        self.series.sample(outcomes, at=self.clock.now(), replicas=self.replicas_now)

    def standby_poll(self) -> None:
        """One receive by each queue's standby replica (skipped while they are already handling one).

        It runs on a thread of its own, joined at once: on the virtual clock a
        thread's sleeps fire only its own timers, so the held step's heartbeat
        (and a crash in it) stays with the held step instead of firing inside
        the standby's step.
        """
        if self._standby_busy:
            return
        self._standby_busy = True
        for worker in self.fleet.workers.values():  # on a fleet their own timers would, while the standby works
            worker.delete_finished()
        handled: list[HandleOutcome] = []
        failed: list[BaseException] = []

        def poll() -> None:
            try:
                if self.catch_up is not None:
                    self.catch_up.release_due()
                for standby in self.standbys:
                    handled.extend(standby.poll_once(MESSAGES_PER_RECEIVE, wait_seconds=0))
            except BaseException as error:  # handed to the caller's thread below
                failed.append(error)

        try:
            thread = threading.Thread(target=poll, name="chaos-day-standby")
            thread.start()
            thread.join()
        finally:
            self._standby_busy = False
        if failed:
            raise failed[0]
        self._record(handled)

    def pay(self, tokens: int) -> None:
        """Take ``tokens`` from the allowance, waiting for the next window while the governor refuses."""
        while not self.allowance.ensure(tokens):
            self.clock.skip(self.governor.next_window() - self.clock.now())
        self.allowance.spend(tokens)
        self.spend_by_window[self._quota_window_start()] += tokens

    def _quota_window_start(self) -> float:
        """The start of the quota window the day's spend is held to: the provider's, else the governor's."""
        if self.schedule.provider_quota is None:
            return self.governor.window_start()
        window = self.schedule.provider_quota[1]
        return math.floor(self.clock.now() / window) * window

    def _naive_step(self, delivery: Delivery) -> Any:
        """The step without idempotency: call the model, take effect, answer. A redelivery does it again."""
        step = delivery.envelope
        assert step is not None  # the day publishes envelopes only
        answer = self.fleet.model.invoke(step.trace_id, delivery.receive_count, self.clock)
        delivery.record_effect(kind="step")
        result = {"trace_id": step.trace_id, "text": answer.text}
        self.fleet.tracer.record(step.trace_id, "completed", at=self.clock.now(), component=delivery.worker)
        assert self.fleet.responses is not None
        self.fleet.responses.answer(step.trace_id, result, attempt=delivery.receive_count)
        return result

    def scoreboard(self, budgets: Budgets, *, run_seconds: float) -> Scoreboard:
        """Read the ledger, the traces and the DLQs into the scoreboard."""
        parked = {record.trace_id: record.error_code for queue in self.topology.queues.values()
                  for record in dlq.parked(self.backend, queue.dlq_url)}
        record = DayRecord(
            schedule=self.schedule, config=self.config, tracer=self.fleet.tracer, ledger=self.fleet.ledger,
            router=self.router, calls=self.calls, spend_by_window=self.spend_by_window, parked=parked,
            replayed_traces=tuple(self.replayed_traces), replicas_peak=self.replicas_peak,
            virtual_seconds=self.clock.now() - self.start, samples=tuple(self.series.samples))
        return score(record, budgets, run_seconds=run_seconds)
