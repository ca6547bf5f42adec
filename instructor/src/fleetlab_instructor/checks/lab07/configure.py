"""``07.configure``: the hidden days, the reference configuration and both catalogues.

The hidden days replay from further back, hold the spend to other quotas and
windows, and run other seeds, so a configuration copied from the public days'
numbers does not survive them. One provider window is an hour and a half: a
governor given the provider's tokens but left on its own hour grants them again
each hour, and on that day (seed 29) spends more than the provider's quota
within one of its windows wherever the day's hour falls in them.
"""

from __future__ import annotations

import math
from dataclasses import replace

from fleetlab.composition.chaos import DayFacts, FleetConfig
from fleetlab.course.checks.lab07.common import Day
from fleetlab.course.checks.lab07.configure import BUDGETS, DAY
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Day("an archive replayed six days later, a provider quota per half hour",
        DayFacts(slowest_step_seconds=1_500, outage_seconds=3 * 3_600, replay_reach_seconds=6 * DAY,
                 quota_tokens=15_000, quota_window=1_800, budgets=BUDGETS), seed=13),
    Day("an archive replayed two days later, a provider quota of 8,000 tokens an hour",
        DayFacts(slowest_step_seconds=1_200, replay_reach_seconds=2 * DAY, quota_tokens=8_000, quota_window=3_600,
                 budgets=BUDGETS), seed=17),
    Day("a provider quota of 10,000 tokens per hour and a half",
        DayFacts(slowest_step_seconds=1_200, replay_reach_seconds=2 * DAY, quota_tokens=10_000, quota_window=5_400,
                 budgets=BUDGETS), seed=29),
)


def usable(facts: DayFacts, headroom: float = 0.1) -> int:
    """The tokens a window's draws may take from the provider's quota, ``headroom`` kept back."""
    return facts.quota_tokens - int(facts.quota_tokens * headroom)


def reference_configure(facts: DayFacts) -> FleetConfig:
    """Records kept a day longer than a replay reaches, the governor held to the provider's quota and window,
    drawing a fifth of a window's usable tokens at a time; the default visibility and heartbeat cover the
    slowest step."""
    return FleetConfig(idempotency_window=int(facts.replay_reach_seconds + DAY), quota_tokens=facts.quota_tokens,
                       quota_window=facts.quota_window, batch_tokens=max(1, usable(facts) // 5))


def _knobs_as_dict(facts: DayFacts) -> FleetConfig:
    knobs = {"idempotency_window": int(2 * facts.replay_reach_seconds), "quota_tokens": facts.quota_tokens,
             "quota_window": facts.quota_window, "batch_tokens": usable(facts) // 4}
    return FleetConfig(**knobs)


def _long_visibility_tight_heartbeat(facts: DayFacts) -> FleetConfig:
    return replace(reference_configure(facts), visibility_timeout=1_800, heartbeat_seconds=120.0,
                   idempotency_window=int(facts.replay_reach_seconds + 3_600))


def _stricter_own_quota(facts: DayFacts) -> FleetConfig:
    own = int(facts.quota_tokens * 0.8)
    return FleetConfig(idempotency_window=int(facts.replay_reach_seconds * 1.5), quota_tokens=own,
                       quota_window=facts.quota_window, headroom=0.0, batch_tokens=own // 2)


def _visibility_over_the_slowest_step_no_heartbeat(facts: DayFacts) -> FleetConfig:
    return replace(reference_configure(facts), heartbeat_seconds=None,
                   visibility_timeout=min(43_200, math.ceil(facts.slowest_step_seconds * 1.5)))


def _governor_on_its_own_hour(facts: DayFacts) -> FleetConfig:
    return replace(reference_configure(facts), quota_window=3_600.0)


def _the_quota_per_minute(facts: DayFacts) -> FleetConfig:
    per_minute = max(1, int(facts.quota_tokens * 60 / facts.quota_window))
    return replace(reference_configure(facts), quota_tokens=per_minute, quota_window=60.0, headroom=0.0,
                   batch_tokens=per_minute)


SHORTER_WINDOW = "governor-window-shorter-than-the-providers"
"""A governor window shorter than the provider's: a minute or its own hour, the harness sees the same mistake."""

RIGHT_ANSWERS = (
    RightAnswer("a dict of knobs made into a FleetConfig", _knobs_as_dict),
    RightAnswer("a longer visibility timeout and a tighter heartbeat", _long_visibility_tight_heartbeat),
    RightAnswer("a stricter quota of its own, drawn in halves", _stricter_own_quota),
)

WRONG_ANSWERS = (
    WrongAnswer("the defaults, whatever the day", lambda facts: FleetConfig(), '"no duplicate effect" broke',
                mistake="default-configuration"),
    WrongAnswer("records kept one day, as in lab 02", lambda facts: replace(reference_configure(facts),
                                                                            idempotency_window=DAY),
                "keep them longer than a replay reaches", mistake="records-expire-before-the-replay"),
    WrongAnswer("the governor left at its own quota", lambda facts: FleetConfig(
        idempotency_window=int(facts.replay_reach_seconds + DAY)), "hold the governor to the provider's quota",
        mistake="governor-over-the-provider-tokens"),
    WrongAnswer("a quota per minute instead of per hour", lambda facts: replace(reference_configure(facts),
                                                                                quota_window=60.0),
                '"spend within the quota" broke', mistake=SHORTER_WINDOW),
    WrongAnswer("no heartbeat: the visibility covers the usual step", lambda facts: replace(
        reference_configure(facts), heartbeat_seconds=None), "beat while a step runs",
        mistake="no-heartbeat-visibility-under-the-slowest-step"),
    WrongAnswer("no heartbeat: the visibility covers the slowest step, not its wait for tokens",
                _visibility_over_the_slowest_step_no_heartbeat, "a step also waits for its tokens",
                mistake="no-heartbeat-visibility-under-the-token-wait"),
    WrongAnswer("the provider's quota spread per minute: less than one call a window",
                _the_quota_per_minute, "such a call is never paid", mistake="window-grants-less-than-one-call"),
    WrongAnswer("the governor at the provider's tokens over its own hour", _governor_on_its_own_hour,
                "each new 1 h of yours grants them again inside one of its windows", public=False,
                mistake=SHORTER_WINDOW),
    WrongAnswer("the public days' numbers, hard-coded", lambda facts: FleetConfig(
        idempotency_window=4 * DAY, quota_tokens=6_000, quota_window=3_600, batch_tokens=1_080),
        "keep them longer than a replay reaches", public=False, mistake="records-expire-before-the-replay"),
)

SIDE = InstructorSide("07.configure", hidden=HIDDEN, reference=reference_configure,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS,
                      shared_mistakes={SHORTER_WINDOW: "the governor's window shorter than the provider's, so it "
                                                       "grants the provider's tokens again inside one of its windows"})
