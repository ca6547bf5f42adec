"""``06.window``: the hidden configurations, the reference window and both catalogues.

The hidden cases leave out the RetryPolicy, cut the archive's retention
below the runbook's horizon, and leave out the archive, so an answer that
assumes the public cases' shape does not pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy

from fleetlab.composition.topology import DAY
from fleetlab.course.checks.lab06.window import Setup
from fleetlab.services.state.window import DuplicateSources
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Setup("no RetryPolicy on the target, 1-day retention, replays up to 5 days back", None, 1, 0, 5),
    Setup("5 minutes of retries, 4-day retention, a runbook of 7 days, an archive kept 2 days",
          (5, 300), 4, 2, 7),
    Setup("no archive at all: 1 h of retries, 4-day retention", (24, 3_600), 4, None, None),
)


def reference_window(facts: Mapping[str, Any]) -> float:
    """Retry window + retention + replay horizon (the shorter of runbook and archive), plus an hour."""
    policy = facts["retry_policy"] or {}
    retry = policy.get("MaximumEventAgeInSeconds", 86_400)
    retention = int(facts["queue"]["MessageRetentionPeriod"])
    horizon = 0.0
    if facts["archive"] is not None:
        kept = facts["archive"]["RetentionDays"]
        days = facts["replay_horizon_days"]
        horizon = 86_400 * (min(days, kept) if kept else days)
    return retry + retention + horizon + 3_600


def _age(facts: Mapping[str, Any]) -> float:
    return (facts["retry_policy"] or {}).get("MaximumEventAgeInSeconds", 86_400)


def _retention(facts: Mapping[str, Any]) -> float:
    return int(facts["queue"]["MessageRetentionPeriod"])


def _horizon(facts: Mapping[str, Any]) -> float:
    return 0.0 if facts["archive"] is None else DAY * (facts["replay_horizon_days"] or 0)


RIGHT_ANSWERS = (
    RightAnswer("the runbook's horizon even where the archive keeps less",
                lambda f: _age(f) + _retention(f) + _horizon(f)),
    RightAnswer("a day to spare", lambda f: reference_window(f) + DAY),
    RightAnswer("an integer number of seconds", lambda f: int(reference_window(f))),
    RightAnswer("a numpy float", lambda f: numpy.float64(reference_window(f))),
)

WRONG_ANSWERS = (
    WrongAnswer("omits the replay horizon", lambda f: _age(f) + _retention(f), "ran again", mistake="window-too-short"),
    WrongAnswer("omits the queue's retention", lambda f: _age(f) + _horizon(f), "ran again",
                mistake="window-too-short"),
    WrongAnswer("counts retry attempts as seconds",
                lambda f: (f["retry_policy"] or {}).get("MaximumRetryAttempts", 185) + _retention(f) + _horizon(f),
                "ran again", mistake="window-too-short"),
    WrongAnswer("the horizon in days, not seconds",
                lambda f: _age(f) + _retention(f) + (f["replay_horizon_days"] or 0), "ran again",
                mistake="window-too-short"),
    WrongAnswer("the archive's retention as the horizon (0 means forever)",
                lambda f: _age(f) + _retention(f) + DAY * (f["archive"] or {}).get("RetentionDays", 0), "ran again",
                mistake="window-too-short"),
    WrongAnswer("a flat 30 days", lambda f: 30 * DAY, "grows",
                mistake="window-far-too-long"),
    WrongAnswer("adds the retention as SQS returns it (a string)",
                lambda f: _age(f) + f["queue"]["MessageRetentionPeriod"] + _horizon(f), "come as strings",
                mistake="adds-a-string-from-sqs"),
    WrongAnswer("the whole window in days", lambda f: reference_window(f) / DAY, "read as days",
                mistake="window-in-another-unit"),
    WrongAnswer("the visibility timeout instead of the retention",
                lambda f: _age(f) + int(f["queue"]["VisibilityTimeout"]) + _horizon(f), "ran again",
                mistake="window-too-short"),
    WrongAnswer("no RetryPolicy read as no retries",
                lambda f: (f["retry_policy"] or {}).get("MaximumEventAgeInSeconds", 0) + _retention(f) + _horizon(f),
                "ran again", public=False, mistake="window-too-short"),
    WrongAnswer("the library's DuplicateSources", lambda f: DuplicateSources.from_facts(f).safe_window(),
                "calls `fleetlab.services.state.window.DuplicateSources.from_facts`"),
)

SHARED_MISTAKES = {"window-too-short": "a window shorter than the last possible duplicate (a source of duplicates "
                                       "left out, or counted in the wrong unit or field)"}

SIDE = InstructorSide("06.window", hidden=HIDDEN, reference=reference_window,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS, shared_mistakes=SHARED_MISTAKES)
