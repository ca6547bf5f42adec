"""Check ``02.window``: ``idempotency_window(retry_window, retention, replay_horizon)``
must cover the latest moment the same work can come back (their sum), and
stay within ten times it. Pure arithmetic: it never touches the backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab.course.grading.values import duration, seconds


@dataclass(frozen=True)
class Horizon(Case):
    """How long the same work can keep coming back, in seconds."""

    retry_window: int = 3_600
    retention: int = 4 * 86_400
    replay_horizon: int = 0


MAX_WINDOW_FACTOR = 10


def _why_latest(case: Horizon) -> str:
    parts = [f"{duration(case.retry_window)} of bus retries", f"{duration(case.retention)} in the queue"]
    if case.replay_horizon:
        parts.append(f"a replay up to {duration(case.replay_horizon)} later")
    return ", ".join(parts)


@register(
    "02.window",
    title="Choose the idempotency window",
    function="idempotency_window",
    parameters="retry_window, retention, replay_horizon",
    points=2,
    public=[
        Horizon("bus retries for 1 h, queue keeps 4 days", 3_600, 4 * 86_400, 0),
        Horizon("bus retries for 24 h, queue keeps 14 days, replays up to 7 days later", 86_400, 14 * 86_400, 7 * 86_400),
    ],
    hidden_cases=3,
    timeout=5,
    implemented_by=(
        "fleetlab.services.state.window.DuplicateSources.safe_window",
        "fleetlab.services.state.window.DuplicateSources.latest_duplicate",
    ),
)
def check_window(answer: Any, case: Horizon, ctx: Any) -> CaseOutcome:
    """Arithmetic only: the window covers retries + retention + replays, and stays within ten times that."""
    try:
        window = seconds(answer(case.retry_window, case.retention, case.replay_horizon),
                         returned_by="idempotency_window", example="4 * 86_400")
    except InvalidInput as bad:
        return CaseOutcome(False, str(bad), "not-a-number-of-seconds")
    latest = case.retry_window + case.retention + case.replay_horizon
    if window < latest:
        return CaseOutcome(False, f"a duplicate can arrive up to {duration(latest)} after the first run "
                                  f"({_why_latest(case)}); with a {duration(window)} window the record is gone "
                                  f"{duration(latest - window)} before then, and the duplicate runs again",
                           "window-too-short")
    if window > MAX_WINDOW_FACTOR * latest:
        return CaseOutcome(False, f"a window of {duration(window)} keeps records more than {MAX_WINDOW_FACTOR}x past the "
                                  f"last possible duplicate ({duration(latest)}): the table only grows",
                           "window-far-too-long")
    return CaseOutcome(True, f"{duration(window)} covers duplicates up to {duration(latest)} later")
