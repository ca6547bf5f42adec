"""What the lab 07 checks share: a case's day, running it on a configuration, and judging its scoreboard.

A case is a short seeded chaos day built from its ``DayFacts``. A
configuration passes when the day's scoreboard holds every invariant and
meets every budget; the diagnosis names each one broken, with its figures
and the cause the configuration and the day's facts show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleetlab.composition.chaos import DayFacts, FleetConfig, Scoreboard, run_chaos_day
from fleetlab.composition.chaos.schedule import TOKENS_PER_CALL
from fleetlab.course.grading.registry import Case, CaseOutcome
from fleetlab.course.grading.values import duration

POISON = 2  # poison steps in a case's day: two to park, on a day of a few dozen steps


@dataclass(frozen=True)
class Day(Case):
    """A chaos day of ``steps`` steps drawn from ``seed``, with what ``facts`` say it brings."""

    facts: DayFacts = field(default_factory=DayFacts)
    seed: int = 0
    steps: int = 20


def returned_config(value: Any, function: str) -> FleetConfig | CaseOutcome:
    """``value`` when it is a FleetConfig, else the outcome that refuses it."""
    if isinstance(value, FleetConfig):
        return value
    advice = "build it with FleetConfig(...), e.g. FleetConfig(**knobs) for a dict of knobs"
    return CaseOutcome(False, f"{function} returned {type(value).__name__}, not a FleetConfig; {advice}")


def run_day(ctx: Any, case: Day, config: FleetConfig) -> Scoreboard:
    """The scoreboard of ``case``'s day run on ``config`` on the check's backend."""
    schedule = case.facts.schedule(case.seed, case.steps, poison=POISON)
    return run_chaos_day(ctx.backend, config, schedule, budgets=case.facts.budgets)


def judge(board: Scoreboard, *, what: str = "your configuration") -> CaseOutcome:
    """Pass when every invariant held and every budget was met; else name each broken one and its cause."""
    broken = [result for result in (*board.invariants, *board.budgets) if not result.ok]
    if not broken:
        counts = board.counts
        return CaseOutcome(True, f"every invariant held and every budget was met over {counts.accepted} steps "
                                 f"({sum(board.crashes.values())} crashes, {counts.replayed} replayed, "
                                 f"{counts.parked} parked, {counts.api_calls_per_step:.2f} API calls per step)")
    said = "; ".join(f"{result.name} broke ({result.detail}): {cause(result.name, board)}" for result in broken)
    return CaseOutcome(False, f"on this day {what} broke {len(broken)} of the invariants and budgets: {said}")


def cause(name: str, board: Scoreboard) -> str:
    """Why the invariant or budget ``name`` broke on ``board``'s day, from its configuration and its facts."""
    config, schedule = board.config, board.schedule
    if name == "no duplicate effect":
        return _why_twice(board)
    if name == "no accepted request lost":
        if not config.fallback:
            return (f"the primary group was down for {duration(schedule.outage_seconds)} with no fallback group, "
                    "so steps used up their receives; route around the outage to the fallback group")
        largest, usable = TOKENS_PER_CALL[1], config.quota().usable()
        if usable < largest:
            return (f"a model call costs up to {largest:,} tokens, and your governor lets at most {usable:,} be drawn "
                    f"per {duration(config.quota_window)} (quota_tokens less the headroom): such a call can never "
                    "be paid, however often it is received; allow at least one call's tokens per window")
        return f"steps used up their {config.max_receives} receives before one succeeded; allow them more receives"
    if name in ("every poison message parked with its diagnosis", "no caller left waiting", "every step on one trace"):
        if not config.park_with_diagnosis:
            return ("SQS moved the poison to the DLQ without a word, so nobody answered its caller; let the "
                    "last attempt park it with its diagnosis")
        return "look at the parked steps' diagnoses and the traces that stop short"
    if name == "spend within the quota":
        return _why_over_quota(board)
    if name == "DynamoDB writes per step":
        return (f"the governor draws {config.batch_tokens:,} tokens at a time, one conditional write a draw; "
                "draw batches of several calls' tokens")
    if name == "API calls per completed step":
        beats = "" if config.heartbeat_seconds is None else f", a heartbeat every {duration(config.heartbeat_seconds)}"
        return f"count the calls by operation (governor draws of {config.batch_tokens:,} tokens{beats})"
    return "every retry, redelivery and duplicate is paid for again; fix the invariants first"


def _why_twice(board: Scoreboard) -> str:
    config, schedule = board.config, board.schedule
    if not config.idempotency:
        return "without idempotency every redelivered or replayed step takes effect again; claim before the effect"
    causes = []
    if schedule.replay_reach is not None and config.idempotency_window <= schedule.replay_reach:
        causes.append(f"the replay republished events {duration(schedule.replay_reach)} after they were first "
                      f"published, and your records live {duration(config.idempotency_window)}; keep them longer "
                      "than a replay reaches")
    if config.heartbeat_seconds is None and config.visibility_timeout < schedule.slow_seconds:
        causes.append(f"the slowest step ran {duration(schedule.slow_seconds)} on a "
                      f"{duration(config.visibility_timeout)} visibility timeout with no heartbeat, so a second "
                      "worker took it over; beat while a step runs")
    elif config.heartbeat_seconds is None and config.visibility_timeout < schedule.slow_seconds + config.quota_window:
        causes.append(f"the slowest step ran {duration(schedule.slow_seconds)}, and a step also waits for its tokens, "
                      f"up to a quota window ({duration(config.quota_window)}): that outlasts a "
                      f"{duration(config.visibility_timeout)} visibility timeout with no heartbeat, so a second worker "
                      "took it over; beat while a step runs")
    return "; ".join(causes) or "a step came back and ran again: look at its trace for who took it over"


def _why_over_quota(board: Scoreboard) -> str:
    config, quota = board.config, board.schedule.provider_quota
    mine = f"your governor allows {config.quota_tokens:,} tokens per {duration(config.quota_window)}"
    if quota is None:
        return f"{mine}; the spend went past it"
    tokens, window = quota
    return (f"{mine} and the provider's quota is {tokens:,} per {duration(window)}; hold the governor to the "
            "provider's quota and window")
