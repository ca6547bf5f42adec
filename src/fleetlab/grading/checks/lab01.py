"""Lab 01 checks: sizing the visibility timeout, and a heartbeat that keeps a step hidden.

``01.visibility``: the learner turns measured step times into a visibility
timeout. The harness races two healthy workers over fresh steps from the same
distribution on a real queue with that timeout, and counts the steps that ran
twice. It also bounds the timeout from above: a crashed worker's message
waits that long before anyone retries it.

``01.heartbeat``: the learner writes ``keep_hidden(sqs, queue_url,
receipt_handle, visibility_timeout, clock)``, returning a context manager
that keeps the message hidden while its block runs, and stops when the block
ends. The harness runs a step several visibility timeouts long inside it
while a second worker polls, then checks the message comes back promptly
once the block is over (as it must after a crash).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any

from ...experiments.delivery import first_duplicate_story, race, send_alerts
from ...agents.model import FakeModel, LatencyProfile
from ...aws.topology import experiment_queue
from ...sqs.worker import QueueWorker
from ..registry import Case, CaseOutcome, WrongAnswer, register

MEASURED = 200  # step times handed to the learner
RACED = 60  # fresh steps raced on the queue
MAX_DUPLICATE_SHARE = 0.05
MAX_RECOVERY_FACTOR = 4  # timeout / p95: above it, crashed work waits too long


@dataclass(frozen=True)
class Workload(Case):
    """A step-time distribution: the learner sees one sample, the race uses another."""

    p50: float = 90.0
    p95: float = 420.0


def measured_step_times(case: Workload, seed: int) -> list[float]:
    """The sample of step times the learner's function receives."""
    model = FakeModel(seed=seed, latency=LatencyProfile(case.p50, case.p95))
    return [round(model.latency_of(f"measured-{n}"), 1) for n in range(MEASURED)]


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def _as_timeout(value: Any) -> tuple[int | None, str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"choose_visibility returned {type(value).__name__}; return a number of seconds"
    if not 1 <= value <= 43_200:
        return None, f"{value} s is outside SQS's range for a visibility timeout (1 to 43200 s)"
    return math.ceil(value), ""


def _choose(answer: Any, times: list[float]) -> Any:
    if not callable(answer):
        raise TypeError("pass the function itself: check('01.visibility', choose_visibility)")
    return answer(list(times))


WRONG_VISIBILITY = (
    WrongAnswer("SQS's default of 30 s", lambda times: 30, "ran twice"),
    WrongAnswer("the median step time", lambda times: sorted(times)[len(times) // 2], "ran twice"),
    WrongAnswer("the mean plus 50%", lambda times: 1.5 * sum(times) / len(times), "ran twice"),
    WrongAnswer("the 12-hour maximum", lambda times: 43_200, "waits"),
    WrongAnswer("ten times the longest step seen", lambda times: 10 * max(times), "waits"),
    WrongAnswer("not a number", lambda times: "900", "return a number"),
)


@register(
    "01.visibility",
    title="Size the visibility timeout from measured step times",
    points=2,
    public=[Workload("researcher steps (p50 90 s, p95 420 s)", 90, 420),
            Workload("short tool calls (p50 20 s, p95 45 s)", 20, 45)],
    hidden=[Workload("long research steps (p50 240 s, p95 900 s)", 240, 900),
            Workload("heavy-tailed steps (p50 30 s, p95 300 s)", 30, 300)],
    wrong_answers=WRONG_VISIBILITY,
    timeout=20,
)
def check_visibility(answer: Any, case: Workload, ctx: Any) -> CaseOutcome:
    times = measured_step_times(case, ctx.seed)
    timeout, problem = _as_timeout(_choose(answer, times))
    if timeout is None:
        return CaseOutcome(False, problem)
    limit = MAX_RECOVERY_FACTOR * p95(times)
    if timeout > limit:
        return CaseOutcome(
            False,
            f"{timeout} s is more than {MAX_RECOVERY_FACTOR}x the p95 step time ({p95(times):.0f} s): "
            f"a message whose worker crashed waits {timeout} s before anyone retries it",
        )
    model = FakeModel(seed=ctx.seed + 1, latency=LatencyProfile(case.p50, case.p95))
    steps = {f"alert-{n}": model.latency_of(f"alert-{n}") for n in range(RACED)}
    with experiment_queue(ctx.backend, ctx.fresh_prefix(), visibility_timeout=timeout) as queue:
        result = race(ctx.backend, queue, steps)
    twice = sorted(result.ledger.duplicates(), key=lambda a: int(a.split("-")[1]))
    if len(twice) > MAX_DUPLICATE_SHARE * RACED:
        return CaseOutcome(
            False,
            f"with a {timeout} s visibility timeout, {len(twice)} of {RACED} steps outlived it and ran twice "
            f"(more than {MAX_DUPLICATE_SHARE:.0%}); {first_duplicate_story(result, twice[0])}",
        )
    return CaseOutcome(True, f"{timeout} s: {len(twice)} of {RACED} steps ran twice; recovery after a crash within {timeout} s")


@dataclass(frozen=True)
class LongStep(Case):
    """A step ``factor`` visibility timeouts long, on a queue with this timeout."""

    visibility_timeout: int = 300
    factor: float = 3.3


def _step_inside(answer: Any, case: LongStep, ctx: Any) -> tuple[bool, bool, str]:
    """Run one long step under the learner's heartbeat: (stayed hidden, came back after, problem)."""
    backend = ctx.backend
    with experiment_queue(backend, ctx.fresh_prefix(), visibility_timeout=case.visibility_timeout) as queue:
        send_alerts(backend, queue, ["alert-1"])
        sqs = backend.client("sqs")
        holder = QueueWorker(backend, queue.url, lambda d: None, name="worker-1")
        message = holder.receive()[0]
        manager = answer(sqs, queue.url, message["ReceiptHandle"], case.visibility_timeout, backend.clock)
        if not isinstance(manager, contextlib.AbstractContextManager) and not hasattr(manager, "__enter__"):
            return False, False, (
                f"keep_hidden returned {type(manager).__name__}; return a context manager "
                "(for example the one clock.every(...) gives you)"
            )
        seen_during: list[float] = []
        seen_after: list[float] = []
        step = case.visibility_timeout * case.factor
        start = backend.clock.now()

        def worker_one() -> None:
            with manager:
                backend.clock.sleep(step)
            # worker-1 now "crashes": it never deletes, so the queue must offer the message again

        def worker_two() -> None:
            interval = max(case.visibility_timeout / 30, 1.0)
            while backend.clock.now() - start < step + 2 * case.visibility_timeout:
                got = sqs.receive_message(QueueUrl=queue.url).get("Messages", [])
                if got:
                    (seen_during if backend.clock.now() - start < step else seen_after).append(
                        backend.clock.now() - start
                    )
                    return
                backend.clock.sleep(interval)

        backend.clock.run_together(worker_one, worker_two)
    if seen_during:
        return False, False, (
            f"another worker received the message at +{seen_during[0]:.0f} s while the {step:.0f} s step "
            f"was still running (visibility timeout {case.visibility_timeout} s): the heartbeat came too late or stopped"
        )
    if not seen_after:
        return True, False, (
            f"the message stayed hidden for more than {2 * case.visibility_timeout} s after the step ended: "
            "the heartbeat did not stop with the step, so a crashed worker's message would be stuck"
        )
    return True, True, ""


@register(
    "01.heartbeat",
    title="Keep a long step's message hidden with a heartbeat",
    points=2,
    public=[LongStep("a 16-minute step on a 5-minute timeout", 300, 3.3)],
    hidden=[LongStep("a 40-minute step on a 15-minute timeout", 900, 2.7),
            LongStep("a 10-minute step on a 1-minute timeout", 60, 10)],
    wrong_answers=(
        WrongAnswer(
            "extends once at the start",
            lambda sqs, url, handle, vis, clock: _extend_once(sqs, url, handle, vis),
            "too late or stopped",
        ),
        WrongAnswer(
            "beats every 1.5 visibility timeouts",
            lambda sqs, url, handle, vis, clock: clock.every(
                1.5 * vis, lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=vis)
            ),
            "too late or stopped",
        ),
        WrongAnswer(
            "hides the message for 10 hours",
            lambda sqs, url, handle, vis, clock: _extend_once(sqs, url, handle, 36_000),
            "did not stop",
        ),
        WrongAnswer("returns nothing", lambda sqs, url, handle, vis, clock: None, "return a context manager"),
    ),
    timeout=15,
)
def check_heartbeat(answer: Any, case: LongStep, ctx: Any) -> CaseOutcome:
    if not callable(answer):
        return CaseOutcome(False, "pass the function itself: check('01.heartbeat', keep_hidden)")
    hidden, back, problem = _step_inside(answer, case, ctx)
    if problem:
        return CaseOutcome(False, problem)
    return CaseOutcome(hidden and back, "hidden for the whole step, visible again soon after it ended")


def _extend_once(sqs: Any, url: str, handle: str, seconds: int) -> contextlib.AbstractContextManager[None]:
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=seconds)
    return contextlib.nullcontext()
