"""The idempotency window: how long a record must live so that no duplicate gets through.

The same work can come back for as long as anything upstream still holds it,
and the holders stack end to end:

* the bus retries a failing target until the RetryPolicy's
  ``MaximumEventAgeInSeconds`` (24 h when the target sets no policy);
* the queue then keeps the delivered message for its ``MessageRetentionPeriod``;
* an archive can replay the event as long as it keeps it (``RetentionDays``,
  0 meaning forever), as far back as your replay runbook allows; the replayed
  event then goes through the same retries and retention again.

A record that expires before the last of these approves the duplicate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.core.numbers import plain
from fleetlab.services.events.retry import RetryPolicy

DAY = 86_400
DEFAULT_MARGIN = 3_600  # an hour on top: clocks, alarms and humans are not exact


@dataclass(frozen=True)
class DuplicateSources:
    """How long each holder can give the same work back, in seconds."""

    retry_window: float
    retention: float
    replay_horizon: float = 0.0

    def __post_init__(self) -> None:
        for field in ("retry_window", "retention", "replay_horizon"):
            value = getattr(self, field)
            number = plain(value)
            if number is None or not number >= 0:
                raise InvalidInput(field, f"must be zero or more seconds, got {value!r}")
            object.__setattr__(self, field, number)

    @classmethod
    def from_facts(cls, facts: Mapping[str, Any]) -> DuplicateSources:
        """Read the sources from configuration as AWS returns it (see ``facts`` in ``experiments.replay``).

        ``retry_policy`` is the target's RetryPolicy (None: the 24 h default),
        ``queue`` the queue's attributes (strings), ``archive`` DescribeArchive's
        answer (None: no archive), ``replay_horizon_days`` the runbook's limit.
        """
        retry = RetryPolicy.from_target(facts.get("retry_policy")).max_age
        retention = int(facts["queue"]["MessageRetentionPeriod"])
        return cls(retry, retention, _replay_horizon(facts.get("archive"), facts.get("replay_horizon_days", 0)))

    @property
    def latest_duplicate(self) -> float:
        """Seconds after the first run at which the last duplicate can still arrive."""
        return self.retry_window + self.retention + self.replay_horizon

    def safe_window(self, margin: float = DEFAULT_MARGIN) -> float:
        """The smallest window that covers every duplicate, plus ``margin``."""
        return self.latest_duplicate + margin

    def milestones(self) -> list[tuple[str, float]]:
        """When each holder lets go, in order: (what, seconds after the first run)."""
        stages = [("the end of the bus's retries", self.retry_window),
                  ("the end of the queue's retention", self.retry_window + self.retention)]
        if self.replay_horizon:
            stages.append(("the end of a replayed event's retries and retention", self.latest_duplicate))
        return stages


def _replay_horizon(archive: Mapping[str, Any] | None, runbook_days: float | None) -> float:
    """How far back a replay can reach: the runbook's limit, or the archive's retention if shorter.

    Raises InvalidInput when the archive keeps events forever and no runbook limit is given.
    """
    if not archive:
        return 0.0
    kept = float(archive.get("RetentionDays") or 0)
    days = float(runbook_days or 0)
    if not days and not kept:
        raise InvalidInput(
            "replay_horizon_days", "the archive keeps events forever, so no window covers every replay",
            hint="decide how far back your runbook lets anyone replay",
        )
    if kept:
        days = min(days, kept) if days else kept
    return days * DAY
