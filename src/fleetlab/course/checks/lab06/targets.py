"""``06.targets``: which rule targets may receive replays.

``may_receive_replays(target, replay_age)`` decides, per rule
target, whether a replay may reach it. The harness wires every target to a
real bus with an archive (a target that may not gets a rule that excludes
replays), delivers steps (the idempotent targets miss two, as if they were
down), lets them age, replays the archive and counts every effect. A target
that takes effect twice, or misses the work the replay was for, fails.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

from fleetlab.composition.topology import DAY
from fleetlab.core.errors import InvalidInput
from fleetlab.course.experiments.replay import BILLING_WEBHOOK, COMPLETED_STEPS, ReplayBench, Target
from fleetlab.course.grading.registry import Case, CaseOutcome, Diagnosis, register
from fleetlab.course.grading.values import duration
from fleetlab.services.events import replay as replays

STEPS = tuple(f"step-{n}" for n in range(1, 4))
MISSED = ("step-2", "step-3")


def _as_bool(value: Any) -> bool | None:
    """True/False for a bool or a 0/1 number (numpy included); None for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    if hasattr(value, "dtype") and getattr(value, "shape", None) == () and value in (0, 1):
        return bool(value)
    return None


@dataclass(frozen=True)
class Scenario(Case):
    """Targets on one bus, how old the events are when the replay brings them back, and who must get it.

    ``must_receive`` names the targets that were down for two steps and can
    take the replay safely. Raises InvalidInput when it names no target of
    the scenario.
    """

    targets: tuple[Target, ...] = ()
    replay_age: float = 3_600.0
    must_receive: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        names = [target.name for target in self.targets]
        strangers = sorted(set(self.must_receive) - set(names))
        if strangers:
            raise InvalidInput("must_receive", f"names {strangers}, which are not targets of {self.name!r}",
                               hint=f"name some of {names}")

    def needs_replay(self, target: Target) -> bool:
        """The target was down for two steps and can take the replay safely: it must get it."""
        return target.name in self.must_receive


def _why_it_duplicates(target: Target, case: Scenario, bench: ReplayBench, trace: str) -> Diagnosis:
    """Why a replay took effect again at ``target``, with the mistake's key: a replay let reach a target with no
    idempotency key, one keyed on an id that is new for every delivery, or one whose records had expired."""
    if target.dedupes_on is None:
        return Diagnosis("it keeps no idempotency key, so every replayed event takes effect again",
                         "replays-reach-a-target-with-no-key")
    if target.dedupes_on == "event id":
        ids = [d.event_id[:8] for d in bench.deliveries if d.target == target.name and d.trace_id == trace]
        return Diagnosis("it dedupes on the event id, and a replayed event arrives with a new id "
                         f"({trace}: {' then '.join(ids)}), so its key never matches", "key-new-for-every-delivery")
    if target.dedupes_on == "SQS MessageId":
        return Diagnosis("it dedupes on the SQS MessageId, which is new for every delivery, replays included",
                         "key-new-for-every-delivery")
    return Diagnosis(f"its records live {duration(target.window_seconds)} and the replay brought back events "
                     f"{duration(case.replay_age)} old: the records had expired", "records-expired-before-the-replay")


def _decide(answer: Any, target: Target, case: Scenario) -> tuple[bool | None, str]:
    returned = answer(target, case.replay_age)
    decided = _as_bool(returned)
    if decided is None:
        return None, f"may_receive_replays returned {returned!r} for {target.name}; return True or False"
    return decided, ""


def _scenario_story(answer: Any, case: Scenario, ctx: Any) -> CaseOutcome:
    decisions: dict[str, bool] = {}
    for target in case.targets:
        decided, problem = _decide(answer, target, case)
        if decided is None:
            return CaseOutcome(False, problem, "not-true-or-false")
        decisions[target.name] = decided
    patterns = {name: COMPLETED_STEPS if ok else replays.excluding_replays(COMPLETED_STEPS)
                for name, ok in decisions.items()}
    backend = ctx.backend
    with ReplayBench.open(backend, ctx.fresh_prefix(), case.targets, patterns=patterns) as bench:
        published = backend.clock.now()
        bench.publish(STEPS)
        bench.deliver(expected=len(STEPS) * len(case.targets),
                      lost={t.name: MISSED for t in case.targets if case.needs_replay(t)})
        bench.store_clock.sleep(case.replay_age)
        bench.replay(since=published - 60)
        bench.deliver(expected=len(STEPS) * sum(decisions.values()))
        for target in case.targets:
            twice = bench.duplicates(target.name)
            if twice:
                trace, count = sorted(twice.items())[0]
                why = _why_it_duplicates(target, case, bench, trace)
                return CaseOutcome(False, f"{target.name} ({target.effect}) took effect {count} times for {trace}: "
                                          f"the replay reached it, and {why}", why.mistake)
            missing = [trace for trace in STEPS if bench.effects(target.name)[trace] == 0]
            if missing and case.needs_replay(target):
                return CaseOutcome(False, f"{target.name} was down and missed {' and '.join(missing)}; the replay was "
                                          "meant to bring them back, but you kept replays away from it. It dedupes on "
                                          f"the trace_id and its records ({duration(target.window_seconds)}) outlive "
                                          f"the {duration(case.replay_age)}-old replay, so it may receive them",
                                   "replay-kept-from-a-target-that-needs-it")
    allowed = sorted(name for name, ok in decisions.items() if ok)
    return CaseOutcome(True, f"replays went to {', '.join(allowed) or 'no target'}; every step took effect once per target")


def _lab_targets() -> tuple[Target, ...]:
    return (Target("results-store", "saves the step's result", "trace_id", 30 * DAY),
            BILLING_WEBHOOK,
            Target("audit-log", "appends a row to the audit log", "event id", 365 * DAY))


TARGET_SCENARIOS_PUBLIC = [
    Scenario("the lab's three targets, a replay of the last hour", _lab_targets(), 3_600,
             must_receive=("results-store",)),
    Scenario("a replay of week-old events", (
        Target("ticketing", "files a ticket", "trace_id", 14 * DAY),
        Target("search-index", "re-indexes the step's document", "trace_id", 3 * DAY),
        Target("email-sender", "emails the customer"),
    ), 7 * DAY, must_receive=("ticketing",)),
]


@register(
    "06.targets",
    title="Decide which targets may receive replays",
    points=2,
    public=TARGET_SCENARIOS_PUBLIC,
    hidden_cases=2,
    timeout=30,
    function="may_receive_replays",
    parameters="target, replay_age",
)
def check_targets(answer: Any, case: Scenario, ctx: Any) -> CaseOutcome:
    return _scenario_story(answer, case, ctx)
