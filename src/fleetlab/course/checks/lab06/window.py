"""``06.window``: a safe idempotency window from the configuration.

``safe_window(facts)`` turns the configuration the harness
built and read back (the rule target's RetryPolicy, the queue's attributes,
the archive) into an idempotency window; an idempotency record with that
window must still stop a duplicate just before the last one can arrive, and
the window may be at most twice that time plus a day.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy

from fleetlab.backends.resources import Resources
from fleetlab.composition.topology import DAY, IDEMPOTENCY_KEYS
from fleetlab.core.clock import library_clock
from fleetlab.core.errors import InvalidInput
from fleetlab.course.experiments.replay import COMPLETED_STEPS, configuration_facts
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab_instructor.checks import RightAnswer, WrongAnswer  # MIGRATION: the catalogues move to the instructor's side
from fleetlab.course.grading.values import duration, seconds
from fleetlab.services.events.retry import RetryPolicy
from fleetlab.services.state.idempotency import Completed, IdempotencyStore
from fleetlab.services.state.window import DuplicateSources


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
