"""``07.configure``: a fleet configuration derived from what the day will bring.

``configure(facts)`` returns the ``FleetConfig`` for a day described by
``DayFacts``; the harness runs that short seeded chaos day on it and passes
the configuration when the scoreboard holds every invariant and meets every
budget. No number is matched: any configuration that survives the day passes.
A failed day names the mistake the configuration shows, when it shows one
(``recognised_mistake``), else the one its first keyed cause names (``judge``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fleetlab.composition.chaos import Budgets, DayFacts
from fleetlab.course.checks.lab07.common import Day, judge, recognised_mistake, returned_config, run_day
from fleetlab.course.grading.registry import CaseOutcome, register

DAY = 86_400
BUDGETS = Budgets(api_calls_per_step=30.0, dynamodb_writes_per_step=11.0, tokens_per_conversation=10_000.0)
"""A case's day of 20 steps spreads the standby replicas' polls and the replay over few steps: its budgets are
looser than a full day's."""


@register(
    "07.configure",
    title="Configure the fleet for the day",
    points=3,
    public=[
        Day("an archive replayed three days after the events",
            DayFacts(slowest_step_seconds=1_200, replay_reach_seconds=3 * DAY, budgets=BUDGETS), seed=7),
        Day("a provider quota of 6,000 tokens an hour",
            DayFacts(slowest_step_seconds=1_200, quota_tokens=6_000, quota_window=3_600, budgets=BUDGETS), seed=11),
    ],
    hidden_cases=3,
    timeout=60,
    function="configure",
    parameters="day",
)
def check_configure(answer: Any, case: Day, ctx: Any) -> CaseOutcome:
    config = returned_config(answer(case.facts), "configure")
    if isinstance(config, CaseOutcome):
        return config
    outcome = judge(run_day(ctx, case, config))
    return outcome if outcome.ok else replace(outcome, mistake=recognised_mistake(config, case.facts)
                                              or outcome.mistake)

