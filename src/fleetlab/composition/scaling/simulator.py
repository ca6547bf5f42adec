"""The time-stepped fleet model: a queue, the pods that work it, and KEDA plus the HPA sizing them.

Emulated queues cannot hold thousands of messages quickly (moto's receive
slows with depth), so fleet scale runs here, on counts rather than messages,
with the very ``Autoscaler`` the small real loop uses. Every ``dt`` seconds:

1. conversations arrive (a steady rate, a function of time, or bursts); each
   is a chain of steps, and a step's message is sent when the previous step
   completes; with ``delay_seconds`` a first step waits as a delayed message;
2. messages whose wait is over come back: delayed ones, those a killed pod
   held (one visibility timeout after the kill: its last heartbeat had just
   extended it) and those a throttled pod released (after the backoff);
3. steps that have run ``step_seconds`` complete: deleted, next step sent;
4. KEDA and the HPA act on whatever is due, reading the counts as SQS would
   report them (visible, not visible = worked + held back, delayed);
5. pods requested ``startup_seconds`` ago become ready; on scale-down pending
   pods go first, then running ones: with ``scale_down="drain"`` they finish
   their steps first, with ``"kill"`` their share of the running steps is
   lost and the messages come back later (the newest work, as Kubernetes
   removes the newest pods first);
6. ready pods fill their free slots (``concurrency`` steps each) from the
   front of the queue; with a ``provider_concurrency`` cap, steps beyond it
   are throttled: the pod releases the message for ``throttle_backoff_seconds``.

The queue is first in, first out, and a step always takes ``step_seconds``:
so counts and ages are exact for a run without redeliveries, and close with
them. API calls are counted as the capacity arithmetic counts them (one
receive and one delete per step, one idempotency write per step started,
PutEvents in batches of 10) plus the waste: every throttled receive, every
killed step, and the empty long polls (one per ``long_poll_seconds``) of
pods with free slots and an empty queue.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from fleetlab.composition.scaling.autoscaler import Autoscaler
from fleetlab.composition.scaling.hpa import HpaSettings
from fleetlab.composition.scaling.manifest import ScaledObject
from fleetlab.composition.scaling.scaler import QueueAttributes
from fleetlab.core.errors import InvalidInput

SCALE_DOWN_MODES = ("drain", "kill")


@dataclass(frozen=True)
class Workload:
    """What arrives: conversations per minute (a number, or a function of seconds), bursts, delays."""

    conversations_per_minute: float | Callable[[float], float] = 0.0
    steps_per_conversation: int = 1
    bursts: tuple[tuple[float, int], ...] = ()
    delay_seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.steps_per_conversation < 1:
            raise InvalidInput("steps_per_conversation", f"must be at least 1, got {self.steps_per_conversation}")
        if not callable(self.conversations_per_minute) and self.conversations_per_minute < 0:
            raise InvalidInput("conversations_per_minute", f"must not be negative, got {self.conversations_per_minute}")
        if self.delay_seconds < 0:
            raise InvalidInput("delay_seconds", f"must not be negative, got {self.delay_seconds}")
        for at, count in self.bursts:
            if at < 0 or count < 0:
                raise InvalidInput("bursts", f"({at}, {count}): time and count must not be negative")

    def rate(self, t: float) -> float:
        """Conversations per minute at ``t``."""
        rate = self.conversations_per_minute
        return float(rate(t)) if callable(rate) else float(rate)


@dataclass(frozen=True)
class Pods:
    """How the pods work: step time, steps per pod, start-up, scale-down and the provider's cap."""

    step_seconds: float = 90.0
    concurrency: int = 1
    startup_seconds: float = 0.0
    scale_down: str = "drain"
    visibility_timeout: float = 900.0
    provider_concurrency: int | None = None
    throttle_backoff_seconds: float = 30.0
    long_poll_seconds: float = 20.0

    def __post_init__(self) -> None:
        if self.step_seconds <= 0:
            raise InvalidInput("step_seconds", f"must be positive, got {self.step_seconds}")
        if self.concurrency < 1:
            raise InvalidInput("concurrency", f"must be at least 1, got {self.concurrency}")
        if self.scale_down not in SCALE_DOWN_MODES:
            raise InvalidInput("scale_down", f"{self.scale_down!r} is not one of {', '.join(SCALE_DOWN_MODES)}")
        if self.provider_concurrency is not None and self.provider_concurrency < 1:
            raise InvalidInput("provider_concurrency", f"must be at least 1, got {self.provider_concurrency}")
        for name in ("startup_seconds", "visibility_timeout", "throttle_backoff_seconds", "long_poll_seconds"):
            if getattr(self, name) < 0 or (name == "long_poll_seconds" and self.long_poll_seconds == 0):
                raise InvalidInput(name, f"must be {'positive' if name == 'long_poll_seconds' else 'at least 0'}, "
                                         f"got {getattr(self, name)}")


@dataclass(frozen=True)
class Sample:
    """The fleet at one instant: the queue as KEDA and the HPA read it, and the pods they left, before receiving."""

    t: float
    visible: int
    in_flight: int
    delayed: int
    replicas: int
    ready: int
    working: int
    age_of_oldest: float
    completed: int
    throttled: int

    @property
    def depth(self) -> int:
        """Messages not yet deleted: visible, in flight and delayed."""
        return self.visible + self.in_flight + self.delayed


@dataclass
class FleetRun:
    """What a run did: samples over time, every scaling change, totals and the step-latency histogram."""

    samples: list[Sample] = field(default_factory=list)
    scaling: list[tuple[float, str, int, int]] = field(default_factory=list)
    waits: Counter[int] = field(default_factory=Counter)
    step_seconds: float = 0.0
    steps_started: int = 0
    steps_completed: int = 0
    conversations_completed: int = 0
    steps_interrupted: int = 0
    throttled: int = 0
    receives: int = 0
    empty_receives: float = 0.0
    pod_seconds: float = 0.0

    @property
    def peak_replicas(self) -> int:
        return max((s.replicas for s in self.samples), default=0)

    @property
    def peak_visible(self) -> int:
        return max((s.visible for s in self.samples), default=0)

    @property
    def peak_depth(self) -> int:
        return max((s.depth for s in self.samples), default=0)

    @property
    def peak_age(self) -> float:
        return max((s.age_of_oldest for s in self.samples), default=0.0)

    def latency(self, quantile: float) -> float:
        """Step latency (wait in the queue + the step) at ``quantile`` over every step started."""
        total = sum(self.waits.values())
        if not total:
            return 0.0
        rank = max(1, math.ceil(quantile * total))
        seen = 0
        for wait in sorted(self.waits):
            seen += self.waits[wait]
            if seen >= rank:
                return wait + self.step_seconds
        return max(self.waits) + self.step_seconds

    def api_calls(self) -> dict[str, float]:
        """Calls made, by kind: the per-step ones and the waste (throttles, kills, empty polls)."""
        return {
            "sqs_receive": self.receives + self.empty_receives,
            "sqs_delete": self.steps_completed,
            "events_put_events": math.ceil(self.steps_completed / 10),
            "dynamodb_idempotency_write": self.steps_started,
        }


def simulate(scaled: ScaledObject, workload: Workload, pods: Pods | None = None, *, seconds: float,
             dt: float = 1.0, settings: HpaSettings | None = None, replicas: int = 0,
             sample_every: float = 15.0) -> FleetRun:
    """Run the fleet for ``seconds`` in steps of ``dt``, starting with ``replicas`` pods; return the run."""
    if dt <= 0 or seconds <= 0 or sample_every <= 0:
        raise InvalidInput("dt" if dt <= 0 else "seconds" if seconds <= 0 else "sample_every",
                           "must be positive")
    model = _Fleet(scaled, workload, pods or Pods(), settings or HpaSettings(), replicas)
    ticks = int(round(seconds / dt))
    sample_ticks = max(1, int(round(sample_every / dt)))
    for tick in range(ticks + 1):  # the last tick only takes the closing sample's readings
        model.step(tick * dt, dt if tick < ticks else 0.0, sample=tick % sample_ticks == 0 or tick == ticks)
    return model.run


class _Fleet:
    """The state of one simulated fleet; ``step`` advances it by one tick."""

    def __init__(self, scaled: ScaledObject, workload: Workload, pods: Pods, settings: HpaSettings,
                 replicas: int) -> None:
        self.workload = workload
        self.pods = pods
        self.autoscaler = Autoscaler(scaled, settings, replicas=replicas)
        self.run = FleetRun(step_seconds=pods.step_seconds)
        self.queue: deque[list] = deque()  # [sent, stage, count], oldest first
        self.visible = 0
        self.delayed_q: deque[list] = deque()  # [visible_at, sent, stage, count]
        self.delayed = 0
        self.killed_q: deque[list] = deque()  # [visible_at, sent, stage, count]
        self.throttled_q: deque[list] = deque()
        self.held = 0  # not visible, not worked: killed or throttled messages waiting to come back
        self.work: deque[list] = deque()  # [done_at, oldest_sent, {stage: count}]
        self.working = 0
        self.ready = replicas
        self.pending: deque[list] = deque()  # [ready_at, count]
        self.bursts = sorted(workload.bursts)
        self.arrival_credit = 0.0

    def step(self, t: float, dt: float, *, sample: bool) -> None:
        self._arrive(t, dt)
        self._release(t)
        self._complete(t)
        before = self.autoscaler.replicas
        for decision in self.autoscaler.advance(t, self._attributes):
            if decision.changed:
                self.run.scaling.append((decision.at, decision.actor, decision.current, decision.desired))
        if self.autoscaler.replicas != before:
            self._resize(t, before, self.autoscaler.replicas)
        self._start_pods(t)
        if sample:  # what the scaler read, and the pods it left, before they receive
            self.run.samples.append(self._sample(t))
        self._receive(t, dt)
        self.run.pod_seconds += (self.ready + self._pending_count() + self._draining()) * dt

    # --- the queue ----------------------------------------------------------------

    def _attributes(self) -> QueueAttributes:
        return QueueAttributes(self.visible, self.working + self.held, self.delayed)

    def _send(self, t: float, stage: int, count: int, delay: float = 0.0) -> None:
        if count <= 0:
            return
        if delay > 0:
            self.delayed_q.append([t + delay, t, stage, count])
            self.delayed += count
        else:
            self.queue.append([t, stage, count])
            self.visible += count

    def _arrive(self, t: float, dt: float) -> None:
        rate = self.workload.rate(t)
        if rate:
            self.arrival_credit += rate / 60.0 * dt
        arriving = int(self.arrival_credit)
        self.arrival_credit -= arriving
        while self.bursts and self.bursts[0][0] <= t:
            arriving += self.bursts.pop(0)[1]
        self._send(t, 1, arriving, self.workload.delay_seconds)

    def _release(self, t: float) -> None:
        while self.delayed_q and self.delayed_q[0][0] <= t:
            _, sent, stage, count = self.delayed_q.popleft()
            self.delayed -= count
            self.queue.append([sent, stage, count])
            self.visible += count
        for waiting in (self.killed_q, self.throttled_q):
            while waiting and waiting[0][0] <= t:
                _, sent, stage, count = waiting.popleft()
                self.held -= count
                self.queue.appendleft([sent, stage, count])  # older than anything queued since
                self.visible += count

    def _complete(self, t: float) -> None:
        last = self.workload.steps_per_conversation
        while self.work and self.work[0][0] <= t:
            _, _, stages = self.work.popleft()
            for stage, count in stages.items():
                self.working -= count
                self.run.steps_completed += count
                if stage < last:
                    self._send(t, stage + 1, count)
                else:
                    self.run.conversations_completed += count

    # --- the pods -----------------------------------------------------------------

    def _pending_count(self) -> int:
        return sum(count for _, count in self.pending)

    def _draining(self) -> int:
        """Pods removed by a scale-down that are still finishing their steps (drain mode)."""
        busy_pods = -(-self.working // self.pods.concurrency)
        return max(0, busy_pods - self.ready)

    def _resize(self, t: float, before: int, after: int) -> None:
        if after > before:
            self.pending.append([t + self.pods.startup_seconds, after - before])
            return
        removing = before - after
        while removing and self.pending:  # pods not yet started go first
            take = min(removing, self.pending[-1][1])
            self.pending[-1][1] -= take
            removing -= take
            if not self.pending[-1][1]:
                self.pending.pop()
        if not removing:
            return
        running_before = self.ready
        self.ready -= removing
        if self.pods.scale_down == "kill" and running_before:
            self._interrupt(t, self.working * removing // running_before)

    def _interrupt(self, t: float, count: int) -> None:
        """Killed pods lose their steps; the messages come back one visibility timeout later."""
        back_at = t + self.pods.visibility_timeout
        while count and self.work:
            _, sent, stages = self.work[-1]  # the newest work sits on the newest pods
            for stage in sorted(stages, reverse=True):
                take = min(count, stages[stage])
                stages[stage] -= take
                count -= take
                self.working -= take
                self.held += take
                self.run.steps_interrupted += take
                self.killed_q.append([back_at, sent, stage, take])
                if not stages[stage]:
                    del stages[stage]
                if not count:
                    break
            if not stages:
                self.work.pop()

    def _start_pods(self, t: float) -> None:
        while self.pending and self.pending[0][0] <= t:
            self.ready += self.pending.popleft()[1]

    def _receive(self, t: float, dt: float) -> None:
        free = self.ready * self.pods.concurrency - self.working
        if free <= 0:
            return
        take = min(free, self.visible)
        startable = take
        cap = self.pods.provider_concurrency
        if cap is not None:
            startable = max(0, min(take, cap - self.working))
        throttled = take - startable
        stages: dict[int, int] = {}
        oldest = t
        while take:
            head = self.queue[0]
            sent, stage, count = head
            piece = min(take, count)
            starting = min(piece, startable)
            if starting:  # a throttled receive starts nothing: its wait goes on until a later receive
                self.run.waits[int(t - sent)] += starting
                oldest = min(oldest, sent)
                stages[stage] = stages.get(stage, 0) + starting
                startable -= starting
            if piece - starting:
                self.throttled_q.append([t + self.pods.throttle_backoff_seconds, sent, stage, piece - starting])
                self.held += piece - starting
            take -= piece
            self.visible -= piece
            if piece == count:
                self.queue.popleft()
            else:
                head[2] -= piece
        started = sum(stages.values())
        if started:
            self.work.append([t + self.pods.step_seconds, oldest, stages])
            self.working += started
        self.run.steps_started += started
        self.run.throttled += throttled
        self.run.receives += started + throttled
        if not self.visible:
            idle_slots = self.ready * self.pods.concurrency - self.working
            polling_pods = -(-max(idle_slots, 0) // self.pods.concurrency)
            self.run.empty_receives += polling_pods * dt / self.pods.long_poll_seconds

    def _sample(self, t: float) -> Sample:
        fronts = [self.queue[0][0]] if self.queue else []
        fronts += [q[0][1] for q in (self.work, self.delayed_q, self.killed_q, self.throttled_q) if q]
        age = t - min(fronts) if fronts else 0.0
        return Sample(t=t, visible=self.visible, in_flight=self.working + self.held, delayed=self.delayed,
                      replicas=self.autoscaler.replicas, ready=self.ready, working=self.working,
                      age_of_oldest=age, completed=self.run.steps_completed, throttled=self.run.throttled)
