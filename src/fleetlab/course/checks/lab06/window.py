"""``06.window``: a safe idempotency window from the configuration.

``safe_window(facts)`` turns the configuration the harness
built and read back (the rule target's RetryPolicy, the queue's attributes,
the archive) into an idempotency window; an idempotency record with that
window must still stop a duplicate just before the last one can arrive, and
the window may be at most twice that time plus a day.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetlab.backends.resources import Resources
from fleetlab.composition.topology import DAY, IDEMPOTENCY_KEYS
from fleetlab.core.clock import library_clock
from fleetlab.core.errors import InvalidInput
from fleetlab.course.checks import hints
from fleetlab.course.experiments.replay import COMPLETED_STEPS, configuration_facts
from fleetlab.course.grading.registry import Case, CaseOutcome, register
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
                                          f"{what}) ran again: the record expired after {duration(window)}", "window-too-short")
    return None


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
    hidden_cases=3,
    timeout=20,
    function="safe_window",
    parameters="facts",
    implemented_by=(
        "fleetlab.services.state.window.DuplicateSources.safe_window",
        "fleetlab.services.state.window.DuplicateSources.latest_duplicate",
        "fleetlab.services.state.window.DuplicateSources.from_facts",
    ),
)
def check_window(answer: Any, case: Setup, ctx: Any) -> CaseOutcome:
    facts = _facts(case, ctx)
    try:
        window = seconds(answer(facts), returned_by="safe_window", example="1_000_000")
    except InvalidInput as problem:
        return CaseOutcome(False, str(problem))
    except TypeError as exc:
        said = hints.explained_error(exc, answer, __file__, lambda error: _a_string_from_sqs(error, facts))
        if not said:
            raise
        return CaseOutcome(False, said, "adds-a-string-from-sqs")
    if window == 0:
        return CaseOutcome(False, "safe_window returned 0; return a positive number of seconds")
    sources = DuplicateSources.from_facts(facts)
    limit = 2 * sources.latest_duplicate + DAY
    if window > limit:
        return CaseOutcome(False, f"a window of {duration(window)} keeps records far past the last possible duplicate "
                                  f"({duration(sources.latest_duplicate)} after the first run): the table only grows; "
                                  f"stay within twice that plus a day ({duration(limit)})", "window-far-too-long")
    failed = _store_test(window, sources, ctx)
    if failed is not None:
        slip = hints.unit_slip(window, sources.latest_duplicate, limit)
        return CaseOutcome(False, failed.diagnosis + slip, "window-in-another-unit" if slip else failed.mistake)
    return CaseOutcome(True, f"{duration(window)} covers the last possible duplicate, "
                             f"{duration(sources.latest_duplicate)} after the first run")


def _a_string_from_sqs(exc: BaseException, facts: dict[str, Any]) -> str:
    if not hints.added_a_string(exc):
        return ""
    kept = facts["queue"]["MessageRetentionPeriod"]
    return (f"the queue's attributes come as strings, as SQS returns them (facts['queue']['MessageRetentionPeriod'] "
            f"is {kept!r}, not {kept}): convert it with int() before adding it to a number")