"""Admission control at the dispatcher: work leaves the queue only when the governor can pay for it.

Each worker of ``Dispatcher`` holds an ``Allowance`` on the shared token
governor. With admission on, a worker first makes sure its allowance covers
the dearest call (``call_tokens``) and only then takes a message; when the
governor refuses, it leaves the queue alone until the window rolls over, so
a spike waits on the queue (which is built for it) and no call fails. With
admission off, a worker takes a message and then asks for tokens, and a
refusal fails the call: the message comes back after its visibility timeout
and the worker tries again after ``poll_seconds``.

A message's body is ``{"tokens": ..., "seconds": ...}``: what its model
call costs and how long it takes. ``work_bodies`` draws them from a seed.
An ``AdaptiveConcurrency`` window, when given, caps how many workers take
work at once, shrinking on every refusal and growing on every paid call.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.composition.concurrency import AdaptiveConcurrency
from fleetlab.core.errors import InvalidInput, QuotaExhausted
from fleetlab.services.sqs.messages import MAX_RECEIVE_BATCH, depth, held, receive
from fleetlab.services.state.governor import Allowance, GovernorStats, TokenGovernor

TURN_SPREAD = 0.001
"""Within each millisecond, the sender, the workers and the sampler take their turns at instants of their own
(message durations are whole milliseconds), so no two actors are ever due at the same instant."""


@dataclass(frozen=True)
class DispatchRun:
    """What a dispatcher run did: model ``calls`` paid and finished, ``failed_calls`` refused tokens,
    ``holds`` (times a worker left the queue alone for want of allowance), queue ``depth`` samples
    and the concurrency ``limits`` (seconds since the start, value), tokens ``spent``, ``expired``
    (stranded in allowances when their window ended) and ``returned``, the governor's ``stats`` (since
    it was made: a fresh governor per run counts the run alone), and
    the messages ``left`` on the queue when the run stopped."""

    calls: int
    failed_calls: int
    holds: int
    depth: tuple[tuple[float, int], ...]
    limits: tuple[tuple[float, int], ...]
    spent: int
    expired: int
    returned: int
    stats: GovernorStats
    left: int
    seconds: float


def work_bodies(count: int, *, seed: int, tokens: tuple[int, int] = (1, 3),
                seconds: tuple[float, float] = (20.0, 60.0)) -> list[dict[str, Any]]:
    """``count`` message bodies, each a call of ``tokens`` (inclusive range) lasting ``seconds``, drawn from ``seed``."""
    rng = random.Random(seed)
    return [{"tokens": rng.randint(*tokens), "seconds": round(rng.uniform(*seconds), 3)} for _ in range(count)]


def send_bodies(backend: Backend, queue_url: str, bodies: Sequence[dict[str, Any]]) -> None:
    """Put ``bodies`` on the queue, ten a batch."""
    sqs = backend.client("sqs")
    for start in range(0, len(bodies), MAX_RECEIVE_BATCH):
        chunk = bodies[start:start + MAX_RECEIVE_BATCH]
        sqs.send_message_batch(QueueUrl=queue_url, Entries=[
            {"Id": str(n), "MessageBody": json.dumps(body)} for n, body in enumerate(chunk)
        ])


@dataclass
class _Tally:
    calls: int = 0
    failed_calls: int = 0
    holds: int = 0
    sending: bool = True
    depth: list[tuple[float, int]] = field(default_factory=list)
    limits: list[tuple[float, int]] = field(default_factory=list)
    allowances: list[Allowance] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, **increments: int) -> None:
        with self.lock:
            for name, amount in increments.items():
                setattr(self, name, getattr(self, name) + amount)


class Dispatcher:
    """``workers`` workers taking calls from ``queue_url``, paying for them through ``governor``.

    ``batch`` is each allowance's draw; ``call_tokens`` the most one call
    may cost (what admission makes sure of before taking a message).
    Raises InvalidInput naming the field for workers below 1, a
    ``batch`` or ``call_tokens`` outside the usable quota, or a
    ``poll_seconds`` that is not positive.
    """

    def __init__(self, backend: Backend, queue_url: str, governor: TokenGovernor, *, workers: int, batch: int,
                 call_tokens: int, admission: bool = True, poll_seconds: float = 5.0,
                 concurrency: AdaptiveConcurrency | None = None) -> None:
        if workers < 1:
            raise InvalidInput("workers", f"must be at least 1, got {workers!r}")
        governor.quota.check_draw("batch", batch)
        governor.quota.check_draw("call_tokens", call_tokens)
        if not poll_seconds > 0:
            raise InvalidInput("poll_seconds", f"must be positive, got {poll_seconds!r}")
        self.backend = backend
        self.queue_url = queue_url
        self.governor = governor
        self.workers = workers
        self.batch = batch
        self.call_tokens = call_tokens
        self.admission = admission
        self.poll_seconds = poll_seconds
        self.concurrency = concurrency

    def run(self, arrivals: Sequence[tuple[float, Sequence[dict[str, Any]]]], *, max_seconds: float,
            sample_seconds: float = 60.0, timeout: float = 300.0) -> DispatchRun:
        """Send each arrival's bodies at its second (from now) and work them until the queue is empty,
        or ``max_seconds`` passed; then each worker gives back its unspent tokens. Workers, sender and
        depth sampler run together on the backend's clock. Raises InvalidInput naming ``max_seconds``
        or ``sample_seconds`` when it is not positive."""
        for name, seconds in (("max_seconds", max_seconds), ("sample_seconds", sample_seconds)):
            if not seconds > 0:
                raise InvalidInput(name, f"must be positive, got {seconds!r}")
        clock = self.backend.clock
        start = float(math.ceil(clock.now()))  # the run's timeline starts on a whole second
        clock.sleep(start - clock.now())
        end = start + max_seconds
        lane = TURN_SPREAD / (self.workers + 2)
        tally = _Tally()

        def finished(at: float) -> bool:  # ``at``: the caller's due time, never ``now`` (it ticks while actors run)
            return at >= end or (not tally.sending and held(self.backend, self.queue_url) == 0)

        def sender() -> None:
            for at, bodies in sorted(arrivals, key=lambda arrival: arrival[0]):
                clock.sleep(start + at - clock.now())
                send_bodies(self.backend, self.queue_url, bodies)
            tally.sending = False

        def sampler() -> None:
            due = start
            for sample in itertools.count(1):
                tally.depth.append((round(clock.now() - start, 3), depth(self.backend, self.queue_url)))
                if finished(due):
                    return
                due = start + sample * sample_seconds + (self.workers + 1) * lane
                clock.sleep(due - clock.now())

        def worker(index: int) -> None:
            allowance = Allowance(self.governor, batch=self.batch)
            tally.allowances.append(allowance)
            offset = (index + 1) * lane
            when = start + offset
            while not finished(when):
                when = self._work_once(index, allowance, tally, start, when, offset)
                clock.sleep(when - clock.now())
            allowance.give_back(at=when)

        clock.run_together(sender, sampler, *[lambda i=i: worker(i) for i in range(self.workers)], timeout=timeout)
        return DispatchRun(
            calls=tally.calls, failed_calls=tally.failed_calls, holds=tally.holds,
            depth=tuple(tally.depth), limits=tuple(tally.limits),
            spent=sum(a.spent for a in tally.allowances), expired=sum(a.expired for a in tally.allowances),
            returned=sum(a.returned for a in tally.allowances), stats=self.governor.stats,
            left=held(self.backend, self.queue_url), seconds=round(clock.now() - start, 3),
        )

    def _work_once(self, index: int, allowance: Allowance, tally: _Tally, start: float, when: float,
                   offset: float) -> float:
        """One turn of one worker: wait for a slot or for allowance, or take one message and make its call.

        Returns when the worker's next turn is due. Turns are kept on the worker's own timeline (its
        last due time plus what the turn took, ``offset`` into each millisecond), never on ``now``,
        which ticks while actors run; the governor's window is read at the turn's due time too, so a
        slow turn near a window's end never draws from the next one. On the virtual clock the order of
        turns and draws then depends on the seed alone, so a seeded run replays exactly.
        """
        if self.concurrency is not None and index >= self.concurrency.limit:
            return when + self.poll_seconds
        if self.admission and not allowance.ensure(self.call_tokens, at=when):
            tally.add(holds=1)
            self._throttled(tally, start)
            return max(self.governor.next_window(at=when) + offset, when + self.poll_seconds)
        messages = receive(self.backend, self.queue_url, max_messages=1, wait_seconds=0)
        if not messages:
            return when + self.poll_seconds
        body = json.loads(messages[0]["Body"])
        try:
            allowance.spend(int(body["tokens"]), at=when)
        except QuotaExhausted:
            tally.add(failed_calls=1)
            self._throttled(tally, start)
            return when + self.poll_seconds
        if self.concurrency is not None:
            self.concurrency.on_success()
        self.backend.clock.sleep(when + float(body["seconds"]) - self.backend.clock.now())
        self.backend.client("sqs").delete_message(QueueUrl=self.queue_url, ReceiptHandle=messages[0]["ReceiptHandle"])
        tally.add(calls=1)
        return when + float(body["seconds"])

    def _throttled(self, tally: _Tally, start: float) -> None:
        if self.concurrency is not None:
            limit = self.concurrency.on_throttle()
            with tally.lock:
                tally.limits.append((round(self.backend.clock.now() - start, 3), limit))
