"""``06.pattern``: a rule pattern that keeps replays from the billing webhook.

The learner's event pattern becomes the billing webhook's
rule on the backend's bus. The service judges its syntax; the harness then
publishes completed and requested steps, replays them, and demands that the
webhook got every original completed step and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError, ParamValidationError

from fleetlab.core.errors import InvalidInput
from fleetlab.course.experiments.replay import BILLING_WEBHOOK, ReplayBench
from fleetlab.course.grading.registry import Case, CaseOutcome, Diagnosis, register
from fleetlab.services.events import replay as replays
from fleetlab.services.events.envelope import COMPLETED, REQUESTED


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
    """What the pattern's text says about a failure, beyond the counts (a ``Diagnosis`` with its key), or ""."""
    for path, condition in _filters_of(pattern):
        if path.endswith(replays.REPLAY_NAME) and path != replays.REPLAY_NAME:
            return Diagnosis(f" ({path}: replay-name is a top-level field of the event, beside source and "
                             "detail-type, not inside detail)", "replay-name-inside-detail")
        if path == replays.REPLAY_NAME and condition.get("exists") is True:
            return Diagnosis(" (replay-name exists: true matches the replays only, the opposite of what the webhook "
                             "needs)", "matches-only-replays")
    return ""


TEXT_FILTERS = ("prefix", "suffix", "equals-ignore-case", "wildcard", "cidr")
"""The content filters that take text."""


def _syntax_mistake(pattern: Mapping[str, Any]) -> str:
    """The key of the syntax mistake the pattern's shape shows (a bare value, exists or a text filter given the
    wrong type), read from the pattern the learner wrote, never from the refusal's words; "" when none."""
    for key, value in pattern.items():
        if isinstance(value, Mapping):
            nested = _syntax_mistake(value)
            if nested:
                return nested
        elif not isinstance(value, list):
            return "value-not-in-a-list"
    for _, condition in _filters_of(pattern):
        for operator, operand in condition.items():
            if operator == "exists" and not isinstance(operand, bool):
                return "exists-not-a-boolean"
            if operator in TEXT_FILTERS and not isinstance(operand, (str, Mapping)):
                return "text-filter-not-text"
    return ""


def _advised_or(advice: str, mistake: str) -> str:
    """The key the pattern's text shows (``_pattern_advice``), else ``mistake``."""
    return advice.mistake if isinstance(advice, Diagnosis) else mistake


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
                                  f"so their customers are never charged{advice}",
                           _advised_or(advice, "blocks-original-steps"))
    requested = sorted({d.trace_id for d in got if d.detail_type == REQUESTED})
    if requested:
        return CaseOutcome(False, f"the webhook also got {len(requested)} {REQUESTED} events ({requested[0]}, ...): "
                                  f"it would charge for steps that have not run; match detail-type {COMPLETED}",
                           "matches-requested-steps")
    replayed = [d for d in got if d.replay_name is not None]
    if replayed:
        return CaseOutcome(False, f"the replay reached the webhook: {len(replayed)} replayed events "
                                  f"(replay-name {replayed[0].replay_name}) would charge customers again; add "
                                  f'"replay-name": [{{"exists": false}}]{advice}',
                           _advised_or(advice, "lets-replays-through"))
    return CaseOutcome(True, f"{len(originals)} original steps charged once each, {case.replays} replay(s) kept out")


@register(
    "06.pattern",
    title="A rule pattern that keeps replays from the billing webhook",
    points=2,
    public=[Traffic("researcher steps completed, then replayed", (("researcher", 3),), requested=2, replays=1)],
    hidden_cases=1,
    timeout=20,
    answer="billing_pattern",
    implemented_by=("fleetlab.services.events.replay.excluding_replays",),
)
def check_pattern(answer: Any, case: Traffic, ctx: Any) -> CaseOutcome:
    try:
        pattern = replays.as_pattern(answer)
    except InvalidInput as error:
        return CaseOutcome(False, f"the pattern {error.problem}; give a dict such as "
                                  '{"source": ["fleet.coordinator"]}, or its JSON text', "pattern-not-a-dict-or-json")
    bench, refused = _run_traffic(pattern, case, ctx)
    if bench is None:
        return CaseOutcome(False, refused, _syntax_mistake(pattern))
    return _judge_traffic(bench, pattern, case)
