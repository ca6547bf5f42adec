"""What an operator knows of a day before it comes: the facts a fleet's configuration is derived from.

``DayFacts`` holds the slowest step, the primary group's outage, how long
after a step an archive replay may republish its event, the model
provider's token quota and the budgets the day is held to. ``schedule``
draws the seeded chaos day those facts describe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleetlab.composition.chaos.schedule import ChaosSchedule
from fleetlab.composition.chaos.scoreboard import Budgets
from fleetlab.core.errors import InvalidInput
from fleetlab.core.numbers import real, whole


@dataclass(frozen=True)
class DayFacts:
    """The day a fleet must survive; every bad value raises InvalidInput naming its field, and numbers are kept
    as Python's float (seconds) and int (tokens), numpy's and whole floats too.

    ``slowest_step_seconds``: the slowest step's first attempt (the usual step
    takes well under a minute). ``outage_seconds``: how long the primary model
    group is down. ``replay_reach_seconds``: an archive replay may republish a
    step's event up to this long after it was first published.
    ``quota_tokens`` per ``quota_window`` seconds: the provider's quota, which
    the day's spend must stay within in every window. ``budgets``: API calls
    and DynamoDB writes per completed step, tokens per conversation, and each
    caller's time to answer.
    """

    slowest_step_seconds: float = 2_700.0
    outage_seconds: float = 7_200.0
    replay_reach_seconds: float = 3_600.0
    quota_tokens: int = 1_000_000
    quota_window: float = 3_600.0
    budgets: Budgets = field(default_factory=Budgets)

    def __post_init__(self) -> None:
        for name in ("slowest_step_seconds", "outage_seconds", "replay_reach_seconds", "quota_window"):
            value = getattr(self, name)
            number = real(value)
            if number is None or not 0 < number <= 30 * 86_400:
                raise InvalidInput(name, f"must be positive seconds, 30 days at most, got {value!r}")
            object.__setattr__(self, name, number)
        tokens = whole(self.quota_tokens)
        if tokens is None or tokens < 1:
            raise InvalidInput("quota_tokens", f"must be a positive whole number of tokens, got {self.quota_tokens!r}")
        object.__setattr__(self, "quota_tokens", tokens)
        if not isinstance(self.budgets, Budgets):
            raise InvalidInput("budgets", f"must be a Budgets, got {type(self.budgets).__name__}")

    def schedule(self, seed: int, steps: int, **faults: Any) -> ChaosSchedule:
        """The seeded day of ``steps`` steps these facts describe; ``faults`` are ``ChaosSchedule.draw``'s other
        arguments (poison, crash_rate, chunk...)."""
        replay_seconds = min(3_600.0, self.replay_reach_seconds)
        return ChaosSchedule.draw(seed, steps, slow_seconds=self.slowest_step_seconds,
                                  outage_seconds=self.outage_seconds, replay_seconds=replay_seconds,
                                  replay_reach=self.replay_reach_seconds,
                                  provider_quota=(self.quota_tokens, self.quota_window), **faults)
