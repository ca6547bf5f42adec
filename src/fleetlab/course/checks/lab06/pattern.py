"""Lab 06 checks: who may receive replays, a rule that keeps them out, the window, the retry policy.

``06.targets``: ``may_receive_replays(target, replay_age)`` decides, per rule
target, whether a replay may reach it. The harness wires every target to a
real bus with an archive (a target that may not gets a rule that excludes
replays), delivers steps (the idempotent targets miss two, as if they were
down), lets them age, replays the archive and counts every effect. A target
that takes effect twice, or misses the work the replay was for, fails.

``06.pattern``: the learner's event pattern becomes the billing webhook's
rule on the backend's bus. The service judges its syntax; the harness then
publishes completed and requested steps, replays them, and demands that the
webhook got every original completed step and nothing else.

``06.window``: ``safe_window(facts)`` turns the configuration the harness
built and read back (the rule target's RetryPolicy, the queue's attributes,
the archive) into an idempotency window; an idempotency record with that
window must still stop a duplicate just before the last one can arrive, and
the window may be at most twice that time plus a day.

``06.retry_policy``: ``retry_policy(detect_within, alarm_delay, ride_out,
dlq_arn)`` returns a rule target's RetryPolicy and DeadLetterConfig; the
harness puts it on a real target, reads it back, and judges the posture: a
dead target pages someone within the goal, a blip shorter than ``ride_out``
pages nobody.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy
from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from fleetlab.backends.resources import Resources
from fleetlab.composition.topology import DAY, IDEMPOTENCY_KEYS
from fleetlab.core.clock import library_clock
from fleetlab.core.errors import InvalidInput
from fleetlab.course.experiments.replay import (
    BILLING_WEBHOOK,
    COMPLETED_STEPS,
    ReplayBench,
    Target,
    configuration_facts,
)
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab_instructor.checks import RightAnswer, WrongAnswer  # MIGRATION: the catalogues move to the instructor's side
from fleetlab.course.grading.values import duration, seconds
from fleetlab.services.events import replay as replays
from fleetlab.services.events.envelope import COMPLETED, REQUESTED, SOURCE
from fleetlab.services.events.retry import RetryPolicy
from fleetlab.services.state.idempotency import Completed, IdempotencyStore
from fleetlab.services.state.window import DuplicateSources

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


# 06.targets


@dataclass(frozen=True)
class Scenario(Case):
    """Targets on one bus, and how old the events are when the replay brings them back."""

    targets: tuple[Target, ...] = ()
    replay_age: float = 3_600.0

    def needs_replay(self, target: Target) -> bool:
        """The target was down for two steps and can take the replay safely: it must get it."""
        return target.dedupes_on == "trace_id" and target.window_seconds > self.replay_age


def _why_it_duplicates(target: Target, case: Scenario, bench: ReplayBench, trace: str) -> str:
    if target.dedupes_on is None:
        return "it keeps no idempotency key, so every replayed event takes effect again"
    if target.dedupes_on == "event id":
        ids = [d.event_id[:8] for d in bench.deliveries if d.target == target.name and d.trace_id == trace]
        return ("it dedupes on the event id, and a replayed event arrives with a new id "
                f"({trace}: {' then '.join(ids)}), so its key never matches")
    if target.dedupes_on == "SQS MessageId":
        return "it dedupes on the SQS MessageId, which is new for every delivery, replays included"
    return (f"its records live {duration(target.window_seconds)} and the replay brought back events "
            f"{duration(case.replay_age)} old: the records had expired")


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
            return CaseOutcome(False, problem)
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
                return CaseOutcome(False, f"{target.name} ({target.effect}) took effect {count} times for {trace}: "
                                          f"the replay reached it, and {_why_it_duplicates(target, case, bench, trace)}")
            missing = [trace for trace in STEPS if bench.effects(target.name)[trace] == 0]
            if missing and case.needs_replay(target):
                return CaseOutcome(False, f"{target.name} was down and missed {' and '.join(missing)}; the replay was "
                                          "meant to bring them back, but you kept replays away from it. It dedupes on "
                                          f"the trace_id and its records ({duration(target.window_seconds)}) outlive "
                                          f"the {duration(case.replay_age)}-old replay, so it may receive them")
    allowed = sorted(name for name, ok in decisions.items() if ok)
    return CaseOutcome(True, f"replays went to {', '.join(allowed) or 'no target'}; every step took effect once per target")


def _lab_targets() -> tuple[Target, ...]:
    return (Target("results-store", "saves the step's result", "trace_id", 30 * DAY),
            BILLING_WEBHOOK,
            Target("audit-log", "appends a row to the audit log", "event id", 365 * DAY))


TARGET_SCENARIOS_PUBLIC = [
    Scenario("the lab's three targets, a replay of the last hour", _lab_targets(), 3_600),
    Scenario("a replay of week-old events", (
        Target("ticketing", "files a ticket", "trace_id", 14 * DAY),
        Target("search-index", "re-indexes the step's document", "trace_id", 3 * DAY),
        Target("email-sender", "emails the customer"),
    ), 7 * DAY),
]
TARGET_SCENARIOS_HIDDEN = [
    Scenario("new targets, events two days old", (
        Target("crm-sync", "updates the CRM", "SQS MessageId", 30 * DAY),
        Target("ledger-writer", "writes the ledger entry", "trace_id", 90 * DAY),
        Target("sms-alerts", "texts the on-call engineer"),
    ), 2 * DAY),
    Scenario("idempotent targets only, a replay of 29-day-old events", (
        Target("archive-copy", "copies the result to cold storage", "trace_id", 30 * DAY),
        Target("analytics-loader", "loads the step into analytics", "trace_id", 35 * DAY),
        Target("warehouse", "inserts a warehouse row", "event id", 365 * DAY),
    ), 29 * DAY),
]


def reference_targets(target: Target, replay_age: float) -> bool:
    """A replay may reach a target that dedupes on the work and remembers it longer than the replay's age."""
    return target.dedupes_on == "trace_id" and target.window_seconds > replay_age


@register(
    "06.targets",
    title="Decide which targets may receive replays",
    points=2,
    public=TARGET_SCENARIOS_PUBLIC,
    hidden=TARGET_SCENARIOS_HIDDEN,
    reference=reference_targets,
    right_answers=(
        RightAnswer("a substring test on the key", lambda t, age: "trace" in (t.dedupes_on or "") and t.window_seconds > age),
        RightAnswer("1 and 0 for True and False", lambda t, age: int(reference_targets(t, age))),
        RightAnswer("numpy booleans", lambda t, age: numpy.bool_(reference_targets(t, age))),
        RightAnswer("a window with an hour to spare",
                    lambda t, age: t.dedupes_on == "trace_id" and t.window_seconds >= age + 3_600),
    ),
    wrong_answers=(
        WrongAnswer("every target", lambda target, age: True, "billing-webhook"),
        WrongAnswer("any target with a key", lambda target, age: target.dedupes_on is not None, "new id"),
        WrongAnswer("no target at all", lambda target, age: False, "missed"),
        WrongAnswer("keys on the work, ignores the window", lambda target, age: target.dedupes_on == "trace_id",
                    "had expired"),
        WrongAnswer("the lab's names, hard-coded", lambda target, age: target.name in ("results-store", "ticketing"),
                    "missed", public=False),
        WrongAnswer("a dict of names", {"results-store": True, "billing-webhook": False}, "pass the function itself"),
    ),
    timeout=30,
    function="may_receive_replays",
)
def check_targets(answer: Any, case: Scenario, ctx: Any) -> CaseOutcome:
    return _scenario_story(answer, case, ctx)


# 06.pattern


@dataclass(frozen=True)
class Traffic(Case):
    """What the bus carries: completed steps per agent class, requested steps, and how many replays."""

    completed: tuple[tuple[str, int], ...] = (("researcher", 3),)
    requested: int = 2
    replays: int = 1


_PATTERN_HINTS = (
    ("must be an object or an array",
     'every value to match sits in a list, even a single one: "source": ["fleet.coordinator"], '
     '"replay-name": [{"exists": false}]'),
    ("Invalid JSON", "the text is not JSON: pass a dict, or json.dumps(pattern)"),
    ("mpty arrays", "a list of values to match must hold at least one value"),
    ("exists match pattern", "exists takes the JSON boolean false (Python False), not a string"),
    ("must be a string", 'the text filters take text: {"prefix": "fleet."}'),
    ("match type", "a content filter is one operator: prefix, suffix, anything-but, numeric, exists, ..."),
    ("only one key", "a content filter is one operator: prefix, suffix, anything-but, numeric, exists, ..."),
)
_GENERIC_HINT = ("compare it with the event-pattern syntax: a JSON object of field names, each with a list of "
                 "values or content filters")


def _hint(message: str) -> str:
    return next((advice for fragment, advice in _PATTERN_HINTS if fragment in message), _GENERIC_HINT)


def explain_pattern_error(error: Exception) -> str:
    """What EventBridge's refusal of a pattern means, in a learner's words."""
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "error")
        message = error.response.get("Error", {}).get("Message", str(error))
    else:
        code, message = type(error).__name__, str(error)
    return f"EventBridge refused the rule ({code}: {message}); {_hint(message)}"


def explain_aws_refusal(problem: str, backend: str) -> str:
    """A pattern this backend took and AWS would refuse, in a learner's words."""
    return (f"{backend} took the rule, but AWS refuses this pattern (InvalidEventPatternException: {problem}); "
            f"{_hint(problem)}")


def _filters_of(pattern: Any, path: str = "") -> list[tuple[str, Any]]:
    """(field path, filter) for every content filter (a dict in a list) in the pattern."""
    found: list[tuple[str, Any]] = []
    if isinstance(pattern, Mapping):
        for key, value in pattern.items():
            found += _filters_of(value, f"{path}.{key}" if path else str(key))
    elif isinstance(pattern, list):
        found += [(path, item) for item in pattern if isinstance(item, Mapping)]
    return found


def _pattern_advice(pattern: dict[str, Any]) -> str:
    """What the pattern's text says about a failure, beyond the counts."""
    for path, condition in _filters_of(pattern):
        if path.endswith(replays.REPLAY_NAME) and path != replays.REPLAY_NAME:
            return (f" ({path}: replay-name is a top-level field of the event, beside source and detail-type, "
                    "not inside detail)")
        if path == replays.REPLAY_NAME and condition.get("exists") is True:
            return " (replay-name exists: true matches the replays only, the opposite of what the webhook needs)"
    return ""


def _sent(case: Traffic) -> list[tuple[str, str]]:
    return [(agent_class, f"{agent_class}-{n}") for agent_class, count in case.completed for n in range(1, count + 1)]


def _run_traffic(pattern: dict[str, Any], case: Traffic, ctx: Any) -> tuple[ReplayBench | None, str]:
    backend = ctx.backend
    try:
        with ReplayBench.open(backend, ctx.fresh_prefix(), (BILLING_WEBHOOK,),
                              patterns={BILLING_WEBHOOK.name: pattern}) as bench:
            problems = replays.pattern_problems(pattern)
            if problems:
                return None, explain_aws_refusal(problems[0], backend.name)
            published = backend.clock.now()
            try:
                for agent_class, trace in _sent(case):
                    bench.publish([trace], agent_class=agent_class)
                bench.publish([f"requested-{n}" for n in range(1, case.requested + 1)], detail_type=REQUESTED)
            except Exception as error:  # an emulator can take a pattern it then fails to match events with
                return None, (f"{backend.name} took the rule, then failed to match events against it "
                              f"({type(error).__name__}: {error}); {_GENERIC_HINT}")
            bench.deliver(expected=len(_sent(case)))
            for _ in range(case.replays):
                bench.replay(since=published - 60)
                bench.deliver()
            return bench, ""
    except (ClientError, ParamValidationError) as error:
        return None, explain_pattern_error(error)


def _judge_traffic(bench: ReplayBench, pattern: dict[str, Any], case: Traffic) -> CaseOutcome:
    got = [d for d in bench.deliveries if d.target == BILLING_WEBHOOK.name]
    originals = {d.trace_id for d in got if d.replay_name is None and d.detail_type == COMPLETED}
    advice = _pattern_advice(pattern)
    missing = [trace for _, trace in _sent(case) if trace not in originals]
    if missing:
        blocked = ", ".join(missing)
        return CaseOutcome(False, f"the webhook never got {blocked}: your pattern blocks original completed steps, "
                                  f"so their customers are never charged{advice}")
    requested = sorted({d.trace_id for d in got if d.detail_type == REQUESTED})
    if requested:
        return CaseOutcome(False, f"the webhook also got {len(requested)} {REQUESTED} events ({requested[0]}, ...): "
                                  f"it would charge for steps that have not run; match detail-type {COMPLETED}")
    replayed = [d for d in got if d.replay_name is not None]
    if replayed:
        return CaseOutcome(False, f"the replay reached the webhook: {len(replayed)} replayed events "
                                  f"(replay-name {replayed[0].replay_name}) would charge customers again; add "
                                  f'"replay-name": [{{"exists": false}}]{advice}')
    return CaseOutcome(True, f"{len(originals)} original steps charged once each, {case.replays} replay(s) kept out")


REFERENCE_PATTERN = {"source": [SOURCE], "detail-type": [COMPLETED], "replay-name": [{"exists": False}]}


@register(
    "06.pattern",
    title="A rule pattern that keeps replays from the billing webhook",
    points=2,
    public=[Traffic("researcher steps completed, then replayed", (("researcher", 3),), requested=2, replays=1)],
    hidden=[Traffic("researcher and coder steps, replayed twice", (("researcher", 2), ("coder", 2)),
                    requested=1, replays=2)],
    reference=REFERENCE_PATTERN,
    right_answers=(
        RightAnswer("the same pattern as JSON text", json.dumps(REFERENCE_PATTERN)),
        RightAnswer("no source, only the detail-type", {"detail-type": [COMPLETED], "replay-name": [{"exists": False}]}),
        RightAnswer("a prefix on the source", {"source": [{"prefix": "fleet."}], "detail-type": [COMPLETED],
                                               "replay-name": [{"exists": False}]}),
        RightAnswer("a prefix on the detail-type", {"detail-type": [{"prefix": "agent.step.completed"}],
                                                    "replay-name": [{"exists": False}], "source": [SOURCE]}),
        RightAnswer("the library's excluding_replays", replays.excluding_replays(COMPLETED_STEPS)),
    ),
    wrong_answers=(
        WrongAnswer("matches replays too", {"source": [SOURCE], "detail-type": [COMPLETED]}, "the replay reached"),
        WrongAnswer("matches only replays", {**COMPLETED_STEPS, "replay-name": [{"exists": True}]}, "opposite"),
        WrongAnswer("replay-name inside detail",
                    {**COMPLETED_STEPS, "detail": {"replay-name": [{"exists": False}]}}, "top-level"),
        WrongAnswer("exists as a string", {**COMPLETED_STEPS, "replay-name": [{"exists": "false"}]}, "not a string"),
        WrongAnswer("a number where prefix takes text", {**REFERENCE_PATTERN, "source": [{"prefix": 3}]},
                    "take text"),
        WrongAnswer("no detail-type", {"source": [SOURCE], "replay-name": [{"exists": False}]}, REQUESTED),
        WrongAnswer("values not in lists", {"source": SOURCE, "detail-type": COMPLETED,
                                            "replay-name": [{"exists": False}]}, "sits in a list"),
        WrongAnswer("researcher steps only", {**REFERENCE_PATTERN, "detail": {"agent_class": ["researcher"]}},
                    "coder-1", public=False),
        WrongAnswer("not JSON", "{'source': ['fleet.coordinator']}", "JSON"),
    ),
    timeout=20,
)
def check_pattern(answer: Any, case: Traffic, ctx: Any) -> CaseOutcome:
    try:
        pattern = replays.as_pattern(answer)
    except InvalidInput as error:
        return CaseOutcome(False, f"the pattern {error.problem}; give a dict such as "
                                  '{"source": ["fleet.coordinator"]}, or its JSON text')
    bench, refused = _run_traffic(pattern, case, ctx)
    if bench is None:
        return CaseOutcome(False, refused)
    return _judge_traffic(bench, pattern, case)


# 06.window


@dataclass(frozen=True)
class Setup(Case):
    """What the harness configures: the target's policy (None: none set), retention, archive, runbook."""

    retry_policy: tuple[int, int] | None = (24, 3_600)
    retention_days: int = 4
    archive_days: int | None = 0  # None: no archive; 0: kept forever
    runbook_days: float | None = 7


def _facts(case: Setup, ctx: Any) -> dict[str, Any]:
    """Build the case's configuration on the backend and read it back as AWS returns it."""
    backend = ctx.backend
    with Resources(backend, ctx.fresh_prefix()) as made:
        queue = made.queue("steps", {"MessageRetentionPeriod": str(case.retention_days * DAY)})
        bus, bus_arn = made.bus("bus")
        target: dict[str, Any] = {"Id": "queue", "Arn": queue.arn}
        if case.retry_policy:
            target["RetryPolicy"] = RetryPolicy(*case.retry_policy).to_target()
        made.rule("steps", bus=bus, pattern=COMPLETED_STEPS, targets=[target])
        archive = None
        if case.archive_days is not None:
            made.archive("archive", source_arn=bus_arn, pattern=COMPLETED_STEPS, retention_days=case.archive_days)
            archive = made.name("archive")
        return configuration_facts(backend, bus_name=bus, rule=made.name("steps"), queue_url=queue.url,
                                   archive_name=archive, replay_horizon_days=case.runbook_days)


def _store_test(window: float, sources: DuplicateSources, ctx: Any) -> CaseOutcome | None:
    """Run the work once, then send a duplicate just before each holder lets go; None when all were stopped."""
    backend = ctx.backend
    clock = library_clock(backend.clock)  # the store judges expiry itself: records can age by days on any backend
    with Resources(backend, ctx.fresh_prefix()) as made:
        table = made.table("idempotency", **IDEMPOTENCY_KEYS)
        store = IdempotencyStore(backend.client("dynamodb"), table, clock, lease_seconds=60,
                                 window_seconds=max(window, 61))
        store.complete(store.claim("step-9", "results-store"), "saved")
        start = clock.now()
        for what, at in sources.milestones():
            clock.sleep(start + at - 1 - clock.now())
            if not isinstance(store.claim("step-9", "results-store"), Completed):
                return CaseOutcome(False, f"a duplicate arriving {duration(at - 1)} after the first run (just before "
                                          f"{what}) ran again: the record expired after {duration(window)}")
    return None


def _age(facts: Mapping[str, Any]) -> float:
    return (facts["retry_policy"] or {}).get("MaximumEventAgeInSeconds", 86_400)


def _retention(facts: Mapping[str, Any]) -> float:
    return int(facts["queue"]["MessageRetentionPeriod"])


def _horizon(facts: Mapping[str, Any]) -> float:
    return 0.0 if facts["archive"] is None else DAY * (facts["replay_horizon_days"] or 0)


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


@register(
    "06.window",
    title="A safe idempotency window from the configuration",
    points=2,
    public=[
        Setup("24 attempts / 1 h, 4-day retention, replays up to 7 days back (archive kept forever)",
              (24, 3_600), 4, 0, 7),
        Setup("the classic 24 h policy, 14-day retention, replays up to 3 days back, archive kept 30 days",
              (185, 86_400), 14, 30, 3),
    ],
    hidden=[
        Setup("no RetryPolicy on the target, 1-day retention, replays up to 5 days back", None, 1, 0, 5),
        Setup("5 minutes of retries, 4-day retention, a runbook of 7 days, an archive kept 2 days",
              (5, 300), 4, 2, 7),
        Setup("no archive at all: 1 h of retries, 4-day retention", (24, 3_600), 4, None, None),
    ],
    reference=reference_window,
    right_answers=(
        RightAnswer("the runbook's horizon even where the archive keeps less",
                    lambda f: _age(f) + _retention(f) + _horizon(f)),
        RightAnswer("the library's DuplicateSources", lambda f: DuplicateSources.from_facts(f).safe_window()),
        RightAnswer("a day to spare", lambda f: reference_window(f) + DAY),
        RightAnswer("an integer number of seconds", lambda f: int(reference_window(f))),
        RightAnswer("a numpy float", lambda f: numpy.float64(reference_window(f))),
    ),
    wrong_answers=(
        WrongAnswer("omits the replay horizon", lambda f: _age(f) + _retention(f), "ran again"),
        WrongAnswer("omits the queue's retention", lambda f: _age(f) + _horizon(f), "ran again"),
        WrongAnswer("counts retry attempts as seconds",
                    lambda f: (f["retry_policy"] or {}).get("MaximumRetryAttempts", 185) + _retention(f) + _horizon(f),
                    "ran again"),
        WrongAnswer("the horizon in days, not seconds",
                    lambda f: _age(f) + _retention(f) + (f["replay_horizon_days"] or 0), "ran again"),
        WrongAnswer("the archive's retention as the horizon (0 means forever)",
                    lambda f: _age(f) + _retention(f) + DAY * (f["archive"] or {}).get("RetentionDays", 0), "ran again"),
        WrongAnswer("a flat 30 days", lambda f: 30 * DAY, "grows"),
        WrongAnswer("the visibility timeout instead of the retention",
                    lambda f: _age(f) + int(f["queue"]["VisibilityTimeout"]) + _horizon(f), "ran again"),
        WrongAnswer("no RetryPolicy read as no retries",
                    lambda f: (f["retry_policy"] or {}).get("MaximumEventAgeInSeconds", 0) + _retention(f) + _horizon(f),
                    "ran again", public=False),
    ),
    timeout=20,
    function="safe_window",
)
def check_window(answer: Any, case: Setup, ctx: Any) -> CaseOutcome:
    facts = _facts(case, ctx)
    try:
        window = seconds(answer(facts), returned_by="safe_window", example="1_000_000")
    except InvalidInput as problem:
        return CaseOutcome(False, str(problem))
    if window == 0:
        return CaseOutcome(False, "safe_window returned 0; return a positive number of seconds")
    sources = DuplicateSources.from_facts(facts)
    limit = 2 * sources.latest_duplicate + DAY
    if window > limit:
        return CaseOutcome(False, f"a window of {duration(window)} keeps records far past the last possible duplicate "
                                  f"({duration(sources.latest_duplicate)} after the first run): the table only grows; "
                                  f"stay within twice that plus a day ({duration(limit)})")
    failed = _store_test(window, sources, ctx)
    if failed is not None:
        return failed
    return CaseOutcome(True, f"{duration(window)} covers the last possible duplicate, "
                             f"{duration(sources.latest_duplicate)} after the first run")


# 06.retry_policy


@dataclass(frozen=True)
class Goal(Case):
    """Page within ``detect_within`` of a target going down; the DLQ alarm takes ``alarm_delay``; ride out blips."""

    detect_within: int = 300
    alarm_delay: int = 60
    ride_out: int = 30


_TARGET_FIELDS = ("RetryPolicy", "DeadLetterConfig")
_POLICY_FIELDS = ("MaximumRetryAttempts", "MaximumEventAgeInSeconds")


def _as_target(answer: Any, queue_arn: str) -> dict[str, Any]:
    """The learner's settings as a PutTargets target: nested or flat, numbers made plain ints."""
    if not isinstance(answer, Mapping):
        raise InvalidInput("retry_policy", f"returned {type(answer).__name__}; return a dict such as "
                                           '{"RetryPolicy": {...}, "DeadLetterConfig": {"Arn": dlq_arn}}')
    unknown = sorted(set(answer) - {*_TARGET_FIELDS, *_POLICY_FIELDS, "Id", "Arn"})
    if unknown:
        raise InvalidInput("retry_policy", f"has fields a rule target does not know: {unknown}",
                           hint=f"use {list(_TARGET_FIELDS)} (or the two RetryPolicy fields at the top)")
    policy = dict(answer.get("RetryPolicy") or {})
    policy.update({key: answer[key] for key in _POLICY_FIELDS if key in answer})
    target: dict[str, Any] = {"Id": "queue", "Arn": queue_arn}
    if policy:
        target["RetryPolicy"] = {key: _plain_int(key, value) for key, value in policy.items()}
        RetryPolicy.from_target(target)  # EventBridge's ranges, named by field
    if answer.get("DeadLetterConfig"):
        target["DeadLetterConfig"] = dict(answer["DeadLetterConfig"])
    return target


def _plain_int(field: str, value: Any) -> Any:
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and float(value).is_integer():
        return int(value)
    return value


def _stored_target(target: dict[str, Any], made: Resources) -> dict[str, Any]:
    """Put ``target`` on a real rule and read back what EventBridge stored."""
    bus, _ = made.bus("bus")
    made.rule("steps", bus=bus, pattern=COMPLETED_STEPS, targets=[target])
    events = made.backend.client("events")
    return events.list_targets_by_rule(Rule=made.name("steps"), EventBusName=bus)["Targets"][0]


def _judge_posture(stored: Mapping[str, Any], case: Goal, dlq_arn: str) -> CaseOutcome:
    dead_letter = (stored.get("DeadLetterConfig") or {}).get("Arn")
    if not dead_letter:
        return CaseOutcome(False, "with no DeadLetterConfig, events that run out of retries are dropped: nothing "
                                  "reaches the queue your alarm watches, so nobody is paged; set "
                                  'DeadLetterConfig to {"Arn": dlq_arn}')
    if dead_letter != dlq_arn:
        return CaseOutcome(False, f"DeadLetterConfig points at {dead_letter}, not the DLQ you were given "
                                  f"({dlq_arn}), whose alarm pages")
    policy = RetryPolicy.from_target(stored)
    default = " (the classic bus's default)" if "RetryPolicy" not in stored or policy == RetryPolicy(185, 86_400) else ""
    page = policy.gives_up_after + case.alarm_delay
    if page > case.detect_within:
        return CaseOutcome(False, f"with {policy.describe()}{default}, a dead target's first event is retried for "
                                  f"{duration(policy.gives_up_after)} before it reaches the DLQ; with the alarm's "
                                  f"{duration(case.alarm_delay)} that pages someone {duration(page)} after the outage "
                                  f"began, and the goal is {duration(case.detect_within)}")
    if not policy.rides_out(case.ride_out):
        last = (f"the last retry comes {duration(policy.gives_up_after)} after the first failure"
                if policy.attempt_times else "no retry comes at all")
        return CaseOutcome(False, f"with {policy.describe()}, {last}: a {duration(case.ride_out)} blip would send "
                                  "events to the DLQ and page someone for nothing; keep retrying past the blip")
    return CaseOutcome(True, f"{policy.describe()}: paged {duration(page)} into an outage, "
                             f"a {duration(case.ride_out)} blip pages nobody")


def reference_retry_policy(detect_within: float, alarm_delay: float, ride_out: float, dlq_arn: str) -> dict[str, Any]:
    """Retry for as long as the goal leaves after the alarm's delay, as often as EventBridge allows; a DLQ."""
    return {
        "RetryPolicy": {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": int(detect_within - alarm_delay)},
        "DeadLetterConfig": {"Arn": dlq_arn},
    }


def _policy_answer(attempts: int, age: int, *, dead_letter: bool = True) -> Any:
    def answer(detect_within: float, alarm_delay: float, ride_out: float, dlq_arn: str) -> dict[str, Any]:
        chosen: dict[str, Any] = {"RetryPolicy": {"MaximumRetryAttempts": attempts, "MaximumEventAgeInSeconds": age}}
        if dead_letter:
            chosen["DeadLetterConfig"] = {"Arn": dlq_arn}
        return chosen

    return answer


@register(
    "06.retry_policy",
    title="A retry policy for a detection goal",
    points=2,
    public=[
        Goal("page within 5 min of an outage (the alarm takes 60 s), ride out 30 s blips", 300, 60, 30),
        Goal("page within 2 h (the alarm takes 10 min), ride out 10 min blips", 7_200, 600, 600),
    ],
    hidden=[
        Goal("page within 15 min (the alarm takes 2 min), ride out 2 min blips", 900, 120, 120),
        Goal("page within 1 h (the alarm takes 60 s), ride out 20 min blips", 3_600, 60, 1_200),
    ],
    reference=reference_retry_policy,
    right_answers=(
        RightAnswer("the RetryPolicy fields at the top", lambda goal, alarm, blip, dlq: {
            "MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": goal - alarm, "DeadLetterConfig": {"Arn": dlq}}),
        RightAnswer("a whole PutTargets target, Id and Arn included", lambda goal, alarm, blip, dlq: {
            "Id": "billing", "Arn": "arn:aws:sqs:us-east-1:123456789012:billing",
            **reference_retry_policy(goal, alarm, blip, dlq)}),
        RightAnswer("24 attempts within the goal", lambda goal, alarm, blip, dlq: {
            "RetryPolicy": {"MaximumRetryAttempts": 24, "MaximumEventAgeInSeconds": goal - alarm},
            "DeadLetterConfig": {"Arn": dlq}}),
        RightAnswer("numbers as floats", lambda goal, alarm, blip, dlq: {
            "RetryPolicy": {"MaximumRetryAttempts": 185.0, "MaximumEventAgeInSeconds": float(goal - alarm)},
            "DeadLetterConfig": {"Arn": dlq}}),
        RightAnswer("numpy integers", lambda goal, alarm, blip, dlq: {
            "RetryPolicy": {"MaximumRetryAttempts": numpy.int64(185), "MaximumEventAgeInSeconds": numpy.int64(goal - alarm)},
            "DeadLetterConfig": {"Arn": dlq}}),
    ),
    wrong_answers=(
        WrongAnswer("the classic 24 h default", _policy_answer(185, 86_400), "the goal is 5 min"),
        WrongAnswer("no dead-letter queue", lambda goal, alarm, blip, dlq: {
            "RetryPolicy": {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": goal - alarm}}, "nobody is paged"),
        WrongAnswer("forgets the alarm's delay", lambda goal, alarm, blip, dlq: {
            "RetryPolicy": {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": goal},
            "DeadLetterConfig": {"Arn": dlq}}, "the goal is 2 h"),
        WrongAnswer("the EventsV2 default (5 attempts / 5 min)", _policy_answer(5, 300), "blip"),
        WrongAnswer("no retries at all", _policy_answer(0, 60), "blip"),
        WrongAnswer("minutes, not seconds", lambda goal, alarm, blip, dlq: {
            "RetryPolicy": {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": (goal - alarm) // 60},
            "DeadLetterConfig": {"Arn": dlq}}, "60"),
        WrongAnswer("the 1 h policy of the guide, whatever the goal", _policy_answer(24, 3_600), "the goal is 5 min"),
    ),
    timeout=10,
    function="retry_policy",
)
def check_retry_policy(answer: Any, case: Goal, ctx: Any) -> CaseOutcome:
    with Resources(ctx.backend, ctx.fresh_prefix()) as made:
        dlq, work = made.queue("target-dlq"), made.queue("work")
        try:
            target = _as_target(answer(case.detect_within, case.alarm_delay, case.ride_out, dlq.arn), work.arn)
            stored = _stored_target(target, made)
        except InvalidInput as error:
            return CaseOutcome(False, str(error))
        except (ClientError, BotoCoreError) as error:
            return CaseOutcome(False, f"EventBridge refused the target: {error}")
    return _judge_posture(stored, case, dlq.arn)
