"""Score a finished chaos day: each invariant and budget from the ledger, the traces, the DLQs and the call counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from fleetlab.composition.chaos.calls import CallCounter
from fleetlab.composition.chaos.config import FleetConfig
from fleetlab.composition.chaos.schedule import ChaosSchedule
from fleetlab.composition.chaos.scoreboard import Budgets, Counts, Result, Scoreboard
from fleetlab.composition.chaos.series import DaySample
from fleetlab.core.ledger import EffectsLedger
from fleetlab.core.tracing import Hop, Tracer
from fleetlab.core.units import duration
from fleetlab.services.agents.router import Router
from fleetlab.services.sqs.dlq import NO_DIAGNOSIS

ANSWERED = ("completed", "duplicate_suppressed")


@dataclass(frozen=True)
class DayRecord:
    """What a finished day left to read: its records, and ``parked`` (each trace in a DLQ: its error code)."""

    schedule: ChaosSchedule
    config: FleetConfig
    tracer: Tracer
    ledger: EffectsLedger
    router: Router
    calls: CallCounter
    spend_by_window: Mapping[float, int]
    parked: Mapping[str, str]
    replayed_traces: tuple[str, ...]
    replicas_peak: int
    virtual_seconds: float
    samples: tuple[DaySample, ...] = ()


def score(day: DayRecord, budgets: Budgets, *, run_seconds: float) -> Scoreboard:
    """The scoreboard of ``day``, judged against ``budgets``."""
    parked = day.parked
    schedule = day.schedule
    accepted = schedule.trace_ids
    healthy = [trace for trace in accepted if trace not in schedule.poison]
    timelines = {trace: day.tracer.timeline(trace) for trace in accepted}
    took_effect = {effect.key for effect in day.ledger.effects()}
    lost = [trace for trace in healthy if trace not in took_effect]
    stranded = [trace for trace in lost if trace in parked]
    summary = day.ledger.summary(expected=set(healthy))
    waits = {trace: wait for trace in accepted if (wait := _answer_wait(timelines[trace])) is not None}
    hung = [trace for trace in accepted if trace not in waits]
    traced = [trace for trace in accepted if _one_trace(timelines[trace])]
    spend = sum(day.spend_by_window.values())
    peak_window = max(day.spend_by_window.values(), default=0)
    counts = Counts(
        accepted=len(accepted), completed=len(took_effect), lost=len(lost), stranded=len(stranded),
        duplicated=summary.duplicated, parked=len(parked), hung=len(hung), traced=len(traced), spend=spend,
        api_calls=day.calls.total, dynamodb_writes=day.calls.dynamodb_writes, replayed=len(day.replayed_traces),
        slowest_answer=max(waits.values(), default=0.0), run_seconds=run_seconds, virtual_seconds=day.virtual_seconds,
    )
    poison_parked = [trace for trace in schedule.poison if parked.get(trace, NO_DIAGNOSIS) != NO_DIAGNOSIS]
    poison_done = [trace for trace in schedule.poison if trace in took_effect]
    invariants = (
        Result("no accepted request lost", not lost,
               f"{len(lost)} of {len(healthy):,} healthy steps never took effect ({len(stranded)} of them parked)"
               + _some(lost)),
        Result("no duplicate effect", summary.duplicated == 0,
               f"{summary.duplicated} extra effects over {summary.effects:,}" + _some(day.ledger.duplicates())),
        Result("every poison message parked with its diagnosis",
               len(poison_parked) == len(schedule.poison) and not poison_done,
               f"{len(poison_parked)} of {len(schedule.poison)} parked with a diagnosis, {len(poison_done)} took effect"),
        Result("no caller left waiting", not hung, f"{len(hung)} of {len(accepted):,} callers never answered"
               + _some(hung)),
        Result("every step on one trace", len(traced) == len(accepted),
               f"{len(traced):,} of {len(accepted):,} traces run from the bus to the delete" +
               _some(sorted(set(accepted) - set(traced)))),
        _spend_within_the_quota(peak_window, day),
    )
    per_conversation = spend / schedule.conversations
    budget_results = (
        Result("API calls per completed step", counts.api_calls_per_step <= budgets.api_calls_per_step,
               f"{counts.api_calls_per_step:.2f} (budget {budgets.api_calls_per_step:g}): "
               f"{counts.api_calls:,} calls for {counts.completed:,} steps"),
        Result("DynamoDB writes per step", counts.dynamodb_writes_per_step <= budgets.dynamodb_writes_per_step,
               f"{counts.dynamodb_writes_per_step:.2f} (budget {budgets.dynamodb_writes_per_step:g}): "
               f"{counts.dynamodb_writes:,} writes"),
        Result("spend per conversation", per_conversation <= budgets.tokens_per_conversation,
               f"{per_conversation:,.0f} tokens (budget {budgets.tokens_per_conversation:,.0f})"),
        _time_to_answer(waits, budgets.answer_seconds),
    )
    hops = [hop for timeline in timelines.values() for hop in timeline]
    tally = day.router.tally()
    return Scoreboard(
        schedule=schedule, config=day.config, invariants=invariants, budgets=budget_results, counts=counts,
        crashes=dict(Counter(str(hop.attrs["point"]) for hop in hops if hop.name == "crashed")),
        diagnoses=dict(Counter(parked.values())), calls_by_operation=dict(day.calls.counts),
        replayed=frozenset(day.replayed_traces), replicas_peak=day.replicas_peak,
        samples=day.samples, traces={trace: tuple(timeline) for trace, timeline in timelines.items()},
        router={"calls": tally.calls, "fallbacks": tally.fallbacks, "retries": tally.retries,
                "cooldowns": tally.cooldowns, **{f"served by {name}": n for name, n in tally.served_by.items()}},
    )


def _spend_within_the_quota(peak_window: int, day: DayRecord) -> Result:
    """The peak spend of a window against the provider's quota (the configuration's when the day names none)."""
    if day.schedule.provider_quota is None:
        quota, window, whose = day.config.quota_tokens, day.config.quota_window, ""
    else:
        (quota, window), whose = day.schedule.provider_quota, ", the provider's quota"
    return Result("spend within the quota", peak_window <= quota,
                  f"peak {peak_window:,} of {quota:,} tokens in a {duration(window)} window{whose}")


def _time_to_answer(waits: Mapping[str, float], deadline: float) -> Result:
    """Each answered caller's wait against the deadline (a caller never answered counts under "no caller left
    waiting")."""
    late = [trace for trace, wait in waits.items() if wait > deadline]
    slowest = max(waits.values(), default=0.0)
    return Result("time to answer", not late,
                  f"slowest {duration(round(slowest))} (budget {duration(deadline)}): {len(late)} of {len(waits):,} "
                  f"answered callers waited longer" + _some(late))


def _answer_wait(timeline: list[Hop]) -> float | None:
    """From the trace's first hop (the step's publish) to the caller's first answer (a result, or a graceful error
    when the step was parked); None when the caller was never answered."""
    answered = next((hop.at for hop in timeline
                     if hop.name in ANSWERED or (hop.name == "parked" and hop.attrs.get("answered"))), None)
    return None if answered is None else answered - timeline[0].at


def _one_trace(timeline: list[Hop]) -> bool:
    """The trace starts on the bus, reaches a worker, and ends with its message deleted."""
    names = [hop.name for hop in timeline]
    return bool(names) and names[0] == "published" and "received" in names and "deleted" in names


def _some(items: Collection[str]) -> str:
    """A few of ``items`` named, for a result's figures."""
    named = sorted(items)[:3]
    return f": {', '.join(named)}" + (" ..." if len(items) > 3 else "") if named else ""
