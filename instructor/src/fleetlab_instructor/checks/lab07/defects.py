"""``07.defects``: the hidden planted pairs, the reference repair and both catalogues.

Each hidden case plants another pair of defects on another day (an outage
with no fallback group and a governor over the provider's quota; records
that expire before the replay and parking left to SQS), so a repair copied
from the public case does not pass them.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from fleetlab.composition.chaos import DayFacts, FleetConfig, Scoreboard
from fleetlab.course.checks.lab07.configure import BUDGETS, DAY
from fleetlab.course.checks.lab07.defects import Planted
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Planted("a four-hour outage, a provider quota of 12,000 tokens an hour",
            DayFacts(slowest_step_seconds=1_500, outage_seconds=4 * 3_600, replay_reach_seconds=4 * DAY,
                     quota_tokens=12_000, quota_window=3_600, budgets=BUDGETS),
            seed=19, config=FleetConfig(fallback=False, idempotency_window=5 * DAY, batch_tokens=2_000)),
    Planted("a replay five days later, a provider quota of 9,000 tokens an hour",
            DayFacts(slowest_step_seconds=1_200, replay_reach_seconds=5 * DAY, quota_tokens=9_000,
                     quota_window=3_600, budgets=BUDGETS),
            seed=23, config=FleetConfig(park_with_diagnosis=False, idempotency_window=2 * DAY, quota_tokens=9_000,
                                        batch_tokens=3_000)),
)
PARKING = ("every poison message parked with its diagnosis", "no caller left waiting", "every step on one trace")


def reference_repair(config: FleetConfig, scoreboard: Scoreboard) -> FleetConfig:
    """Change only the knobs behind what broke, each to what the day's schedule shows it needs."""
    broken, schedule = set(scoreboard.broken()), scoreboard.schedule
    changes: dict[str, Any] = {}
    if "no duplicate effect" in broken:
        changes.update(_no_second_effect(config, scoreboard))
    if "no accepted request lost" in broken:
        changes["fallback"] = True
    if broken & set(PARKING):
        changes["park_with_diagnosis"] = True
    if "spend within the quota" in broken and schedule.provider_quota is not None:
        tokens, window = schedule.provider_quota
        changes.update(quota_tokens=tokens, quota_window=window,
                       batch_tokens=min(config.batch_tokens, int(tokens * (1 - config.headroom)) // 5))
    return replace(config, **changes)


def _no_second_effect(config: FleetConfig, scoreboard: Scoreboard) -> dict[str, Any]:
    schedule = scoreboard.schedule
    changes: dict[str, Any] = {"idempotency": True}
    if schedule.replay_reach is not None and config.idempotency_window <= schedule.replay_reach:
        changes["idempotency_window"] = int(schedule.replay_reach + DAY)
    if config.heartbeat_seconds is None and config.visibility_timeout < schedule.slow_seconds:
        changes["heartbeat_seconds"] = config.visibility_timeout / 3
    return changes


def _rebuilt_from_the_schedule(config: FleetConfig, scoreboard: Scoreboard) -> FleetConfig:
    schedule = scoreboard.schedule
    tokens, window = schedule.provider_quota or (config.quota_tokens, config.quota_window)
    return FleetConfig(idempotency_window=int((schedule.replay_reach or schedule.replay_seconds) + DAY),
                       quota_tokens=tokens, quota_window=window, batch_tokens=tokens // 5)


def _every_knob_copied_then_changed(config: FleetConfig, scoreboard: Scoreboard) -> FleetConfig:
    knobs = asdict(config)
    knobs.update(asdict(reference_repair(config, scoreboard)))
    knobs["max_receives"] = max(knobs["max_receives"], 8)
    return FleetConfig(**knobs)


def _no_heartbeat_twelve_hours_visibility(config: FleetConfig, scoreboard: Scoreboard) -> FleetConfig:
    return replace(reference_repair(config, scoreboard), heartbeat_seconds=None, visibility_timeout=43_200)


def _first_broken_only(config: FleetConfig, scoreboard: Scoreboard) -> FleetConfig:
    first = scoreboard.broken()[0]
    fixed = reference_repair(config, scoreboard)
    knobs = {"no duplicate effect": ("idempotency", "idempotency_window", "heartbeat_seconds"),
             "no accepted request lost": ("fallback",)}.get(first, ("park_with_diagnosis",))
    return replace(config, **{knob: getattr(fixed, knob) for knob in knobs})


RIGHT_ANSWERS = (
    RightAnswer("a configuration rebuilt from the day's schedule", _rebuilt_from_the_schedule),
    RightAnswer("every knob copied into a dict, then changed", _every_knob_copied_then_changed),
)

WRONG_ANSWERS = (
    WrongAnswer("starts again from the defaults", lambda config, scoreboard: FleetConfig(),
                '"no duplicate effect" broke', mistake="default-configuration"),
    WrongAnswer("returns the configuration unchanged", lambda config, scoreboard: config, "unchanged",
                mistake="returns-it-unchanged"),
    WrongAnswer("fixes only the first broken invariant", _first_broken_only, "let the last attempt park it",
                mistake="leaves-a-planted-defect"),
    WrongAnswer("drops the heartbeat and raises the visibility timeout to 12 h", _no_heartbeat_twelve_hours_visibility,
                "a crashed step waits out a 12 h visibility timeout", mistake="long-visibility-instead-of-heartbeat"),
    WrongAnswer("the public case's repair, hard-coded", lambda config, scoreboard: replace(
        config, park_with_diagnosis=True, heartbeat_seconds=300.0), "keep them longer than a replay reaches",
        public=False, mistake="records-expire-before-the-replay"),
)

SIDE = InstructorSide("07.defects", hidden=HIDDEN, reference=reference_repair,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS)
