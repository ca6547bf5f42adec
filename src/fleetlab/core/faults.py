"""Fault injection: named crash points, seeded fault plans, a process killed between two calls, network latency.

A worker asks its plan at each crash point whether to die there. A crash is
a ``WorkerCrashed`` exception: the worker drops the message without deleting
it, exactly as a killed process would, and the queue redelivers it after the
visibility timeout. ``CrashAfter`` kills the code that holds a client right
after a chosen call took effect, so whatever it meant to do next never happens.

A plan is deterministic: explicit crashes (``Crash``) match by point, trace
and receive count; rates draw from a hash of (seed, point, trace, receive),
so the same seed gives the same crashes however workers interleave.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from fleetlab.core.clock import Clock
from fleetlab.core.errors import InvalidInput, WorkerCrashed


class CrashPoint(str, Enum):
    """Where in handling a message a worker can die."""

    BEFORE_EFFECT = "before_effect"
    AFTER_EFFECT_BEFORE_DELETE = "after_effect_before_delete"
    DURING_HEARTBEAT = "during_heartbeat"


@dataclass(frozen=True)
class Crash:
    """Die at ``point`` for ``trace_id`` (any trace when None) on receive number ``receive``."""

    point: CrashPoint
    trace_id: str | None = None
    receive: int = 1


@dataclass(frozen=True)
class FaultPlan:
    """Which crashes happen. ``FaultPlan()`` injects nothing."""

    crashes: tuple[Crash, ...] = ()
    rates: dict[CrashPoint, float] = field(default_factory=dict)
    seed: int = 0

    def __post_init__(self) -> None:
        for point, rate in self.rates.items():
            if not isinstance(point, CrashPoint):
                raise InvalidInput("rates", f"{point!r} is not a CrashPoint", hint=f"one of {[p.value for p in CrashPoint]}")
            if not 0.0 <= rate <= 1.0:
                raise InvalidInput(f"rates[{point.value}]", f"must be within 0..1, got {rate}")

    @classmethod
    def chaos(cls, seed: int, rate: float = 0.05) -> FaultPlan:
        """The same crash rate at every point: the capstone's chaos profile."""
        return cls(rates={point: rate for point in CrashPoint}, seed=seed)

    def should_crash(self, point: CrashPoint, trace_id: str, receive_count: int) -> bool:
        """Whether the plan kills the worker here."""
        for crash in self.crashes:
            if crash.point is point and crash.receive == receive_count and crash.trace_id in (None, trace_id):
                return True
        rate = self.rates.get(point, 0.0)
        return rate > 0 and _unit_draw(self.seed, point, trace_id, receive_count) < rate

    def check(self, point: CrashPoint, trace_id: str, receive_count: int) -> None:
        """Raise WorkerCrashed when the plan kills the worker here."""
        if self.should_crash(point, trace_id, receive_count):
            raise WorkerCrashed(point.value, trace_id, receive_count)


def _unit_draw(seed: int, point: CrashPoint, trace_id: str, receive_count: int) -> float:
    digest = hashlib.sha256(f"{seed}|{point.value}|{trace_id}|{receive_count}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class CrashAfter:
    """A boto3 client whose holder is killed right after its first call to one of ``operations``.

    That call takes effect on the service, but its answer never comes back:
    the client raises WorkerCrashed instead (``who`` names the holder), and
    again at every later call, since a killed process makes none.
    ``crashed_after`` names the call it died after (None while it lives).
    With ``armed=False`` the calls go through unharmed until ``arm()``.
    """

    def __init__(self, client: Any, operations: Collection[str], *, who: str, armed: bool = True) -> None:
        self._client = client
        self._operations = frozenset(operations)
        self._who = who
        self._armed = armed
        self.crashed_after: str | None = None

    def arm(self) -> None:
        """Kill the holder right after its next call to one of the operations."""
        self._armed = True

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute) or name.startswith("_") or name in ("meta", "exceptions"):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self.check_alive()
            response = attribute(*args, **kwargs)
            if self._armed and name in self._operations:
                self.crashed_after = name
                self.check_alive()
            return response

        return call

    def check_alive(self) -> None:
        """Raise WorkerCrashed once the holder has been killed."""
        if self.crashed_after is not None:
            raise WorkerCrashed(f"the return of {self.crashed_after}", self._who, None)


class Latency:
    """A boto3 client whose every call first spends ``seconds`` on ``clock``.

    On the virtual clock this is what lets two actors interleave between a
    read and a write, exactly as two workers do across a real network: the
    race a check-then-put leaves open becomes visible, every run.
    """

    def __init__(self, client: Any, clock: Clock, seconds: float = 0.02) -> None:
        self._client = client
        self._clock = clock
        self._seconds = seconds

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute) or name.startswith("_") or name in ("meta", "exceptions"):
            return attribute

        def delayed(*args: Any, **kwargs: Any) -> Any:
            self._clock.sleep(self._seconds)
            return attribute(*args, **kwargs)

        return delayed
