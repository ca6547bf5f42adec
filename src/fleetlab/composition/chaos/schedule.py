"""A chaos day's schedule: every fault drawn from one seed, printable, the same for the same seed.

The day is ``steps`` steps in conversations of ``steps_per_conversation``,
fed ``chunk`` at a time (moto's calls slow as a queue grows). The faults:
worker crashes at every named crash point (a rate at each, plus one sure
crash at each point on a drawn step), one step slower than any visibility
timeout on its first attempt (and the step of the sure heartbeat crash held
long enough for a heartbeat), poison inputs the model rejects every time,
throttling now and then, an outage window of the primary model group, a
burst fed at once, and a replay of the last hour of events at the end (or,
with ``replay_reach``, once its oldest event is that old, and only the events
that are at most that old: an operator replaying an archive days later).
``provider_quota`` is the model provider's own quota (tokens per window),
which the scoreboard holds the day's spend to.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from rich import box
from rich.table import Table

from fleetlab.core.errors import InvalidInput
from fleetlab.core.faults import Crash, CrashPoint, FaultPlan
from fleetlab.core.rendering import plain_text

AGENT_CLASSES = ("researcher", "coder")
MIN_STEPS = 20  # room for the sure crashes, the slow step, the poison and a burst on distinct steps
DEFAULT_BURST = 200
TOKENS_PER_CALL = (200, 1_200)  # a model call's tokens, drawn per (trace, attempt)


def trace_id(index: int, steps_per_conversation: int) -> str:
    """The trace id of step number ``index`` (from 0): ``conv-<c>-step-<k>``."""
    conversation, step = divmod(index, steps_per_conversation)
    return f"conv-{conversation}-step-{step + 1}"


@dataclass(frozen=True)
class ChaosSchedule:
    """Every fault of one day, drawn by ``draw`` from ``seed``.

    ``crashes`` are the sure crashes (point, trace); ``crash_rate`` strikes at
    every point besides; the step of the sure heartbeat crash takes
    ``heartbeat_step_seconds`` on its first attempt (a heartbeat falls due).
    ``slow_trace`` takes ``slow_seconds`` on its first attempt. ``poison`` fails every time. The primary group is down from
    ``outage_start`` to ``outage_start + outage_seconds`` seconds into the day.
    ``burst_at`` is where ``burst`` steps are fed at once. The replay
    republishes the events of the last ``replay_seconds`` at the end, once the
    oldest of them was published ``replay_reach`` seconds before, and only
    those published at most ``replay_reach`` before it comes (None: at once,
    all of them). ``provider_quota`` is (tokens, window seconds), the provider's
    quota (None: the configuration's own quota is taken as the provider's).
    """

    seed: int
    steps: int
    chunk: int
    steps_per_conversation: int
    crash_rate: float
    crashes: tuple[tuple[CrashPoint, str], ...]
    heartbeat_step_seconds: float
    slow_trace: str
    slow_seconds: float
    poison: frozenset[str]
    transient_failure_rate: float
    outage_start: float
    outage_seconds: float
    burst_at: int
    burst: int
    replay_seconds: float
    replay_reach: float | None = None
    provider_quota: tuple[int, float] | None = None

    @classmethod
    def draw(cls, seed: int, steps: int = 1_000, *, chunk: int = 50, steps_per_conversation: int = 5,
             crash_rate: float = 0.03, poison: int = 5, slow_seconds: float = 2_700.0,
             heartbeat_step_seconds: float = 600.0,
             transient_failure_rate: float = 0.02, outage_seconds: float = 7_200.0, burst: int | None = None,
             replay_seconds: float = 3_600.0, replay_reach: float | None = None,
             provider_quota: tuple[int, float] | None = None) -> ChaosSchedule:
        """The day of ``seed``: the same arguments give the same schedule. InvalidInput names a bad argument.

        ``burst`` defaults to 200 steps, or half the day when that is less.
        """
        _check("steps", steps, MIN_STEPS, 10**6)
        burst = min(DEFAULT_BURST, steps // 2) if burst is None else burst
        _check("chunk", chunk, 1, 1_000)
        _check("steps_per_conversation", steps_per_conversation, 1, 100)
        _check("poison", poison, 0, steps // 4)
        _check("burst", burst, 1, steps // 2)
        for name, value in (("crash_rate", crash_rate), ("transient_failure_rate", transient_failure_rate)):
            if not 0 <= value <= 0.2:
                raise InvalidInput(name, f"must be within 0..0.2 (a chaos day, not a dead fleet), got {value!r}")
        for name, value in (("slow_seconds", slow_seconds), ("heartbeat_step_seconds", heartbeat_step_seconds),
                            ("outage_seconds", outage_seconds),
                            ("replay_seconds", replay_seconds)):
            if not value > 0:
                raise InvalidInput(name, f"must be positive seconds, got {value!r}")
        _check_reach(replay_reach, replay_seconds)
        _check_quota(provider_quota)
        rng = random.Random(seed)
        picked = rng.sample(range(steps), len(CrashPoint) + 1 + poison)
        names = [trace_id(index, steps_per_conversation) for index in picked]
        crashes = tuple(zip(CrashPoint, names[: len(CrashPoint)]))
        day_estimate = steps * 60.0  # virtual seconds: a step takes a minute or more
        return cls(
            seed=seed, steps=steps, chunk=chunk, steps_per_conversation=steps_per_conversation,
            crash_rate=crash_rate, crashes=crashes, heartbeat_step_seconds=heartbeat_step_seconds,
            slow_trace=names[len(CrashPoint)], slow_seconds=slow_seconds,
            poison=frozenset(names[len(CrashPoint) + 1:]), transient_failure_rate=transient_failure_rate,
            outage_start=round(rng.uniform(0.1, 0.5) * day_estimate), outage_seconds=outage_seconds,
            burst_at=rng.randrange(steps // 4, steps // 2) // chunk * chunk, burst=burst,
            replay_seconds=replay_seconds, replay_reach=replay_reach, provider_quota=provider_quota,
        )

    @property
    def trace_ids(self) -> list[str]:
        """Every step's trace id, in the order the day feeds them."""
        return [trace_id(index, self.steps_per_conversation) for index in range(self.steps)]

    def held(self, trace: str, attempt: int) -> float:
        """Seconds ``trace``'s ``attempt`` is held before its model call: the slow step's and the heartbeat
        crash's first attempts, else 0."""
        if attempt != 1:
            return 0.0
        if trace == self.slow_trace:
            return self.slow_seconds
        heartbeat_crash = dict(self.crashes).get(CrashPoint.DURING_HEARTBEAT)
        return self.heartbeat_step_seconds if trace == heartbeat_crash else 0.0

    @property
    def conversations(self) -> int:
        return -(-self.steps // self.steps_per_conversation)

    def fault_plan(self) -> FaultPlan:
        """The crashes as a FaultPlan: the rate at every point, and each sure crash on its step's first receive."""
        return FaultPlan(crashes=tuple(Crash(point, trace) for point, trace in self.crashes),
                         rates={point: self.crash_rate for point in CrashPoint}, seed=self.seed)

    def feeds(self) -> list[tuple[int, int]]:
        """(start, stop) of each batch fed: ``chunk`` at a time, and the burst at once at ``burst_at``."""
        batches: list[tuple[int, int]] = []
        start = 0
        while start < self.steps:
            stop = min(start + (self.burst if start == self.burst_at else self.chunk), self.steps)
            batches.append((start, stop))
            start = stop
        return batches

    def tokens(self, trace: str, attempt: int) -> int:
        """The tokens one model call of ``trace``'s ``attempt`` costs (seeded)."""
        digest = hashlib.sha256(f"{self.seed}|tokens|{trace}|{attempt}".encode()).digest()
        low, high = TOKENS_PER_CALL
        return low + int.from_bytes(digest[:4], "big") % (high - low + 1)

    def table(self) -> Table:
        """The schedule as a table, seed first."""
        table = Table(title=f"chaos schedule, seed {self.seed}", box=box.SIMPLE_HEAD)
        table.add_column("fault")
        table.add_column("when / where")
        table.add_row("steps", f"{self.steps:,} in {self.conversations:,} conversations, fed {self.chunk} at a time")
        table.add_row("crashes", f"{self.crash_rate:.0%} at each of {', '.join(p.value for p in CrashPoint)}")
        for point, trace in self.crashes:
            held = f" (held {self.heartbeat_step_seconds:,.0f} s)" if point is CrashPoint.DURING_HEARTBEAT else ""
            table.add_row("  sure crash", f"{point.value} on {trace}, first receive{held}")
        table.add_row("slow step", f"{self.slow_trace} takes {self.slow_seconds:,.0f} s on its first attempt")
        table.add_row("poison", ", ".join(sorted(self.poison)) or "none")
        table.add_row("throttling", f"{self.transient_failure_rate:.0%} of model calls")
        table.add_row("primary outage", f"from {self.outage_start:,.0f} s for {self.outage_seconds:,.0f} s")
        table.add_row("burst", f"{self.burst} steps at once from step {self.burst_at}")
        reach = "" if self.replay_reach is None else f", once the oldest is {self.replay_reach:,.0f} s old"
        table.add_row("replay", f"the last {self.replay_seconds:,.0f} s of events, at the end{reach}")
        if self.provider_quota is not None:
            tokens, window = self.provider_quota
            table.add_row("provider quota", f"{tokens:,} tokens per {window:,.0f} s")
        return table

    def __str__(self) -> str:
        return plain_text(self.table())


def _check(name: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(name, f"must be a whole number within {low}..{high}, got {value!r}")


def _check_reach(reach: float | None, replay_seconds: float) -> None:
    if reach is None:
        return
    if isinstance(reach, bool) or not isinstance(reach, (int, float)) or not reach >= replay_seconds:
        raise InvalidInput("replay_reach", f"must be None or at least replay_seconds ({replay_seconds:g} s), "
                                           f"got {reach!r}")


def _check_quota(quota: tuple[int, float] | None) -> None:
    if quota is None:
        return
    tokens, window = quota if isinstance(quota, tuple) and len(quota) == 2 else (None, None)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise InvalidInput("provider_quota", f"must be None or (tokens, window seconds) with a positive whole number "
                                             f"of tokens, got {quota!r}")
    if isinstance(window, bool) or not isinstance(window, (int, float)) or not window > 0:
        raise InvalidInput("provider_quota", f"must have a positive window in seconds, got {quota!r}")
