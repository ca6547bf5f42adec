"""What the lab 07 checks share: a case's day, running it on a configuration, and judging its scoreboard.

A case is a short seeded chaos day built from its ``DayFacts``. A
configuration passes when the day's scoreboard holds every invariant and
meets every budget; the diagnosis names each one broken, with its figures
and the cause the configuration and the day's facts show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleetlab.composition.chaos import DayFacts, FleetConfig, Result, Scoreboard, run_chaos_day
from fleetlab.composition.chaos.schedule import TOKENS_PER_CALL
from fleetlab.course.grading.registry import Case, CaseOutcome, Diagnosis
from fleetlab.course.grading.values import duration

ANSWER = "time to answer"  # the budget of each caller's deadline
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
    return CaseOutcome(False, f"{function} returned {type(value).__name__}, not a FleetConfig; {advice}",
                       "not-a-fleet-config")


def recognised_mistake(config: FleetConfig, facts: DayFacts) -> str:
    """The key of the mistake ``config`` shows for a day of ``facts`` that it failed; "" when it shows none here.

    The defaults whatever the day come first; then records kept for less time than the day's replay reaches back.
    """
    if config == FleetConfig():
        return "default-configuration"
    if config.idempotency_window < facts.replay_reach_seconds:
        return "records-expire-before-the-replay"
    return ""


def run_day(ctx: Any, case: Day, config: FleetConfig) -> Scoreboard:
    """The scoreboard of ``case``'s day run on ``config`` on the check's backend."""
    schedule = case.facts.schedule(case.seed, case.steps, poison=POISON)
    return run_chaos_day(ctx.backend, config, schedule, budgets=case.facts.budgets)


def judge(board: Scoreboard, *, what: str = "your configuration") -> CaseOutcome:
    """Pass when every invariant held and every budget was met; else name each broken one and its cause.

    The broken invariants come first with their figures, each cause said once. A budget of calls, writes or
    tokens broken beside them is only named: the invariants' failures move those figures, so they are fixed first.
    A failed day reports the key of the first cause that names a mistake.
    """
    broken = [result for result in (*board.invariants, *board.budgets) if not result.ok]
    if not broken:
        counts = board.counts
        return CaseOutcome(True, f"every invariant held and every budget was met over {counts.accepted} steps "
                                 f"({sum(board.crashes.values())} crashes, {counts.replayed} replayed, "
                                 f"{counts.parked} parked, {counts.api_calls_per_step:.2f} API calls per step, "
                                 f"the slowest caller answered in {duration(round(counts.slowest_answer))})")
    invariants = [result for result in board.invariants if not result.ok]
    follow = [r for r in board.budgets if not r.ok and invariants and r.name != ANSWER]
    by_cause: dict[str, list[Result]] = {}
    for result in broken:
        if result not in follow:
            by_cause.setdefault(cause(result.name, board), []).append(result)
    said = [f"{_names(results)} broke ({'; '.join(r.detail for r in results)}): {why}"
            for why, results in by_cause.items()]
    if follow:
        said.append(f"{_names(follow)} broke too: fix the invariants first, as lost, retried and repeated steps "
                    "move their figures")
    return CaseOutcome(False, f"{what[0].upper()}{what[1:]} broke {len(broken)} of the day's invariants and "
                              "budgets. " + "; ".join(said), _first_mistake(by_cause))


def _first_mistake(causes: dict[str, list[Result]]) -> str:
    """The key of the first cause that names a mistake (a ``Diagnosis``), "" when none does."""
    return next((why.mistake for why in causes if isinstance(why, Diagnosis) and why.mistake), "")


def _names(results: list[Result]) -> str:
    names = [quoted(result.name) for result in results]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def quoted(name: str) -> str:
    """An invariant's or budget's name in quotes, so that it reads as a name in a sentence."""
    return f'"{name}"'


def cause(name: str, board: Scoreboard) -> str:
    """Why the invariant or budget ``name`` broke on ``board``'s day, from its configuration and its facts."""
    config, schedule = board.config, board.schedule
    if name == "no duplicate effect":
        return _why_twice(board)
    if name == "no accepted request lost":
        if not config.fallback:
            return Diagnosis(f"the primary group was down for {duration(schedule.outage_seconds)} with no fallback "
                             "group, so steps used up their receives; route around the outage to the fallback group",
                             "no-fallback-group")
        largest, usable = TOKENS_PER_CALL[1], config.quota().usable()
        if usable < largest:
            return Diagnosis(f"a model call costs up to {largest:,} tokens and your governor grants at most "
                             f"{usable:,} per {duration(config.quota_window)} (quota_tokens less the headroom), so such "
                             "a call is never paid: allow at least one call's tokens per window",
                             "window-grants-less-than-one-call")
        return f"steps used up their {config.max_receives} receives before one succeeded; allow them more receives"
    if name in ("every poison message parked with its diagnosis", "no caller left waiting", "every step on one trace"):
        if not config.park_with_diagnosis:
            return Diagnosis("SQS moved the poison to the DLQ without a word, so nobody answered its caller; let "
                             "the last attempt park it with its diagnosis", "poison-left-to-sqs")
        return "look at the parked steps' diagnoses and the traces that stop short"
    if name == "spend within the quota":
        return _why_over_quota(board)
    if name == ANSWER:
        return _why_late(board)
    if name == "DynamoDB writes per step" and config.batch_tokens < 2 * TOKENS_PER_CALL[1]:
        return (f"the governor draws {config.batch_tokens:,} tokens at a time, one conditional write a draw, and a "
                f"call costs up to {TOKENS_PER_CALL[1]:,}; draw batches of several calls' tokens")
    if name == "spend per conversation":
        return ("every attempt's model call is paid, the failed and the repeated ones too: look at the receives per "
                "step and the router's retries")
    beats = "" if config.heartbeat_seconds is None else f", a heartbeat every {duration(config.heartbeat_seconds)}"
    return f"count the calls by operation (governor draws of {config.batch_tokens:,} tokens{beats})"


def _why_late(board: Scoreboard) -> str:
    """Why a caller waited past its deadline: a crashed or failed attempt comes back only after the visibility
    timeout, and a poison step is parked on its last attempt, after a timeout for each failed one before it."""
    config = board.config
    timeout = duration(config.visibility_timeout)
    failed = config.max_receives - 2  # failed attempts before the last one, which parks (on receive max - 1)
    poison = (f", and a poison step waits out {failed} of them ({duration(failed * config.visibility_timeout)}) "
              "before its last attempt answers the caller") if config.park_with_diagnosis and failed > 0 else ""
    if config.heartbeat_seconds is None and config.visibility_timeout >= board.schedule.slow_seconds:
        return Diagnosis(f"a crashed step waits out a {timeout} visibility timeout before anyone retries "
                         f"it{poison}; keep the timeout near the usual step and beat while the slow one runs instead",
                         "long-visibility-instead-of-heartbeat")
    return (f"a crashed or failed attempt comes back only after the {timeout} visibility timeout{poison}; "
            "keep the timeout near the usual step (a heartbeat covers the slow one) and the receives few")


def _why_twice(board: Scoreboard) -> str:
    """Why a step took effect twice; keyed by the first cause found (records, then the heartbeat)."""
    config, schedule = board.config, board.schedule
    if not config.idempotency:
        return Diagnosis("without idempotency every redelivered or replayed step takes effect again; claim before "
                         "the effect", "no-idempotency")
    causes: list[Diagnosis] = []
    if schedule.replay_reach is not None and config.idempotency_window <= schedule.replay_reach:
        causes.append(Diagnosis(f"a replay republished events {duration(schedule.replay_reach)} after their first "
                                f"publish, and your records live {duration(config.idempotency_window)}: keep them "
                                "longer than a replay reaches", "records-expire-before-the-replay"))
    if config.heartbeat_seconds is None and config.visibility_timeout < schedule.slow_seconds:
        causes.append(Diagnosis(f"the slowest step ran {duration(schedule.slow_seconds)} on a "
                                f"{duration(config.visibility_timeout)} visibility timeout with no heartbeat, so a "
                                "second worker took it over; beat while a step runs",
                                "no-heartbeat-visibility-under-the-slowest-step"))
    elif config.heartbeat_seconds is None and config.visibility_timeout < schedule.slow_seconds + config.quota_window:
        causes.append(Diagnosis(f"the slowest step ran {duration(schedule.slow_seconds)}, and a step also waits for "
                                f"its tokens, up to a quota window ({duration(config.quota_window)}): that outlasts a "
                                f"{duration(config.visibility_timeout)} visibility timeout with no heartbeat, so a "
                                "second worker took it over; beat while a step runs",
                                "no-heartbeat-visibility-under-the-token-wait"))
    if not causes:
        return "a step came back and ran again: look at its trace for who took it over"
    return Diagnosis("; ".join(causes), causes[0].mistake)


def _why_over_quota(board: Scoreboard) -> str:
    """Why the spend went past the provider's quota: the governor's tokens, else how its window differs."""
    config, quota = board.config, board.schedule.provider_quota
    mine = f"your governor allows {config.quota_tokens:,} tokens per {duration(config.quota_window)}"
    if quota is None:
        return f"{mine}; the spend went past it"
    tokens, window = quota
    theirs = f"{mine}, the provider {tokens:,} per {duration(window)}"
    how = _how_the_windows_differ(config, quota)
    return Diagnosis(f"{theirs}{how}: hold the governor to the provider's quota and window", how.mistake)


def _how_the_windows_differ(config: FleetConfig, quota: tuple[int, float]) -> Diagnosis:
    """What the governor's window does wrong against the provider's, when its tokens are not the cause already;
    keyed by the mistake: the governor's tokens over the provider's, else its window shorter than theirs or not
    nested in them; "" when none of these."""
    tokens, window = quota
    if config.quota_tokens > tokens:
        return Diagnosis("", "governor-over-the-provider-tokens")
    if config.quota_window < window:
        return Diagnosis(f", and each new {duration(config.quota_window)} of yours grants them again inside one of "
                         "its windows", "governor-window-shorter-than-the-providers")
    if config.quota_window % window:
        return Diagnosis(f", whose windows do not nest in your {duration(config.quota_window)} ones",
                         "governor-window-not-nested-in-the-providers")
    return Diagnosis("", "")
