"""``07.defects``: repair a configuration from the scoreboard of its chaos day.

``repair(config, scoreboard)`` gets a configuration with two planted
defects and the scoreboard of the day it ran (its schedule, its invariants
and budgets with their figures, its counts); it returns a configuration the
harness runs on the same day, and passes when every invariant holds and
every budget is met. The day's facts need more than the defaults, so
starting again from ``FleetConfig()`` does not pass: fix what broke.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from fleetlab.composition.chaos import DayFacts, FleetConfig, Scoreboard
from fleetlab.course.checks.lab07.common import Day, judge, quoted, recognised_mistake, returned_config, run_day
from fleetlab.course.checks.lab07.configure import BUDGETS, DAY
from fleetlab.course.grading.registry import CaseOutcome, register

_PLANTED_DAYS: dict[tuple[Day, str], Scoreboard] = {}


@dataclass(frozen=True)
class Planted(Day):
    """``config`` has two defects; the learner reads them off its day's scoreboard."""

    config: FleetConfig = field(default_factory=FleetConfig)


def planted_day(ctx: Any, case: Planted) -> Scoreboard:
    """The scoreboard of the planted configuration's day, run once per case and backend (it is the same day)."""
    key = (case, ctx.backend.name)
    if key not in _PLANTED_DAYS:
        _PLANTED_DAYS[key] = run_day(ctx, case, case.config)
    return _PLANTED_DAYS[key]


@register(
    "07.defects",
    title="Repair a configuration from its scoreboard",
    points=3,
    public=[
        Planted("a replay three days later, a provider quota of 10,000 tokens an hour",
                DayFacts(slowest_step_seconds=1_200, replay_reach_seconds=3 * DAY, quota_tokens=10_000,
                         quota_window=3_600, budgets=BUDGETS),
                seed=5,
                config=FleetConfig(park_with_diagnosis=False, heartbeat_seconds=None, idempotency_window=4 * DAY,
                                   quota_tokens=10_000, batch_tokens=2_000)),
    ],
    hidden_cases=2,
    timeout=90,
    function="repair",
    parameters="config, scoreboard",
)
def check_defects(answer: Any, case: Planted, ctx: Any) -> CaseOutcome:
    board = planted_day(ctx, case)
    repaired = returned_config(answer(case.config, board), "repair")
    if isinstance(repaired, CaseOutcome):
        return repaired
    if repaired == case.config:
        return CaseOutcome(False, f"repair returned the configuration unchanged, and its day broke "
                                  f"{', '.join(quoted(name) for name in board.broken())}; change the knobs behind each",
                           "returns-it-unchanged")
    repaired_board = run_day(ctx, case, repaired)
    outcome = judge(repaired_board, what="your repaired configuration")
    if outcome.ok:
        return outcome
    mistake = recognised_mistake(repaired, case.facts) or _planted_defect_left(board, repaired_board)
    return replace(outcome, mistake=mistake or outcome.mistake)


def _planted_defect_left(planted: Scoreboard, repaired: Scoreboard) -> str:
    """"leaves-a-planted-defect" when an invariant the planted day broke broke again after the repair, else ""."""
    still = {r.name for r in planted.invariants if not r.ok} & {r.name for r in repaired.invariants if not r.ok}
    return "leaves-a-planted-defect" if still else ""
