"""EventBridge target retry policies, and what each one does to you during a target outage.

A rule target retries a failed delivery with exponential backoff until
either limit of its ``RetryPolicy`` is reached (``MaximumRetryAttempts``,
0-185; ``MaximumEventAgeInSeconds``, 60-86,400), then sends the event to its
dead-letter queue, or drops it when it has none. The classic bus's default is
185 attempts over 24 h; EventsV2 buses default to 5 attempts over 300 s.

AWS does not publish the backoff schedule. This module's model (``BACKOFF``)
is a simple one that fits both documented defaults: the first retry 5 s
after the failure, each wait twice the last, never more than 8 minutes. It
spends 5 attempts in 155 s and 185 attempts in about 23.9 h, each inside its
default's age limit. The age limit is the one bound AWS guarantees, so plan
detection on it; the model only says how much earlier a small attempt count
gives up.

``Posture`` puts a policy together with a DLQ and an alarm on it, and answers
for an outage of a given length: when is someone paged, how many events come
back late in one burst when the target recovers, how many wait in the DLQ
or were dropped.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.core.numbers import whole
from fleetlab.core.units import duration

MAX_ATTEMPTS = 185
MIN_AGE_SECONDS, MAX_AGE_SECONDS = 60, 86_400


def _whole_number_in(field: str, value: Any, low: int, high: int) -> int:
    number = whole(value)
    if number is None:
        raise InvalidInput(field, f"must be a whole number, got {value!r}")
    if not low <= number <= high:
        raise InvalidInput(field, f"{number} is outside EventBridge's range {low}-{high}")
    return number


@dataclass(frozen=True)
class Backoff:
    """The lab's model of EventBridge's retry schedule: waits double from ``first`` up to ``cap`` seconds."""

    first: float = 5.0
    cap: float = 480.0

    def waits(self, attempts: int) -> list[float]:
        """The wait before each of ``attempts`` retries, in seconds."""
        return [min(self.first * 2**n, self.cap) for n in range(attempts)]


BACKOFF = Backoff()


@dataclass(frozen=True)
class RetryPolicy:
    """A target's RetryPolicy. Raises InvalidInput, naming the field, outside EventBridge's ranges."""

    attempts: int
    max_age: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "attempts", _whole_number_in("MaximumRetryAttempts", self.attempts, 0, MAX_ATTEMPTS))
        object.__setattr__(
            self, "max_age", _whole_number_in("MaximumEventAgeInSeconds", self.max_age, MIN_AGE_SECONDS, MAX_AGE_SECONDS)
        )

    @classmethod
    def from_target(cls, target: Mapping[str, Any] | None) -> RetryPolicy:
        """The policy of a ``PutTargets`` target (or its ``RetryPolicy``); the classic default when it sets none."""
        policy = (target or {}).get("RetryPolicy", target) or {}
        return cls(
            attempts=policy.get("MaximumRetryAttempts", CLASSIC_DEFAULT.attempts),
            max_age=policy.get("MaximumEventAgeInSeconds", CLASSIC_DEFAULT.max_age),
        )

    def to_target(self) -> dict[str, int]:
        """The ``RetryPolicy`` field of a ``PutTargets`` target."""
        return {"MaximumRetryAttempts": self.attempts, "MaximumEventAgeInSeconds": self.max_age}

    @cached_property
    def attempt_times(self) -> tuple[float, ...]:
        """Seconds after the first failed delivery at which each retry is made, within both limits."""
        times: list[float] = []
        elapsed = 0.0
        for wait in BACKOFF.waits(self.attempts):
            elapsed += wait
            if elapsed > self.max_age:
                break
            times.append(elapsed)
        return tuple(times)

    @property
    def gives_up_after(self) -> float:
        """Seconds after the first failure at which the last retry fails and the event is given up."""
        return self.attempt_times[-1] if self.attempt_times else 0.0

    def rides_out(self, blip_seconds: float) -> bool:
        """True when a retry falls after a target blip of ``blip_seconds`` that began at the first failure."""
        index = bisect.bisect_left(self.attempt_times, blip_seconds)
        return index < len(self.attempt_times)

    def describe(self) -> str:
        return f"{self.attempts} attempts over {duration(self.max_age)}"


CLASSIC_DEFAULT = RetryPolicy(MAX_ATTEMPTS, MAX_AGE_SECONDS)
"""A classic bus's default: 185 attempts over 24 h."""
EVENTS_V2_DEFAULT = RetryPolicy(5, 300)
"""The default of the newer EventsV2 buses: 5 attempts over 300 s."""
BOUNDED = RetryPolicy(24, 3_600)
"""A bounded policy: 24 attempts over 1 h."""


@dataclass(frozen=True)
class OutageOutcome:
    """What a posture does through one target outage (event counts at a steady publish rate)."""

    outage_seconds: float
    paged_after: float | None
    delivered_late: int
    dead_lettered: int
    dropped: int

    @property
    def silent(self) -> bool:
        """Events were lost and nobody was paged."""
        return self.dropped > 0 and self.paged_after is None


@dataclass(frozen=True)
class Posture:
    """A retry policy, whether the target has a DLQ, and how long the DLQ's alarm takes to page."""

    name: str
    policy: RetryPolicy
    dead_letter_queue: bool = True
    alarm_delay: float = 60.0

    def __post_init__(self) -> None:
        if self.alarm_delay < 0:
            raise InvalidInput("alarm_delay", f"must be zero or more seconds, got {self.alarm_delay}")

    @property
    def time_to_page(self) -> float | None:
        """Seconds from the start of a long outage until the DLQ alarm pages; None without a DLQ."""
        if not self.dead_letter_queue:
            return None
        return self.policy.gives_up_after + self.alarm_delay

    def through_outage(self, outage_seconds: float, *, events_per_minute: float) -> OutageOutcome:
        """The outcome of a target outage of ``outage_seconds`` while events arrive steadily.

        An event published ``r`` seconds before the target recovers is delivered
        late if one of its retries falls at or after ``r``: that holds for the
        events of the last ``gives_up_after`` seconds, which all arrive in a
        burst within one backoff cap of the recovery. Earlier events are given
        up: dead-lettered (the first one pages) or dropped.
        """
        if outage_seconds < 0:
            raise InvalidInput("outage_seconds", f"must be zero or more, got {outage_seconds}")
        if events_per_minute < 0:
            raise InvalidInput("events_per_minute", f"must be zero or more, got {events_per_minute}")
        rate = events_per_minute / 60
        survived = min(outage_seconds, self.policy.gives_up_after)
        late = round(rate * survived)
        given_up = round(rate * outage_seconds) - late
        paged = self.time_to_page if given_up > 0 else None
        return OutageOutcome(
            outage_seconds=outage_seconds,
            paged_after=paged,
            delivered_late=late,
            dead_lettered=given_up if self.dead_letter_queue else 0,
            dropped=0 if self.dead_letter_queue else given_up,
        )



STANDARD_POSTURES = (
    Posture("classic default, no DLQ", CLASSIC_DEFAULT, dead_letter_queue=False),
    Posture("classic default + DLQ alarm", CLASSIC_DEFAULT),
    Posture("24 attempts / 1 h + DLQ alarm", BOUNDED),
    Posture("EventsV2 default + DLQ alarm", EVENTS_V2_DEFAULT),
)
"""The postures the lab compares; the alarm on each DLQ pages 60 s after its first message."""
