"""Check ``01.visibility``: the learner turns measured step times (unsorted) into a
visibility timeout. The harness races healthy workers on a real queue with
that timeout over 20 fresh steps, one from each 5% slice of the same
distribution, and allows one of them (5%) to outlive the timeout (SQS then
offers it again while it still runs; whether a free worker happens to take
it is luck, so the count is of steps that outlived). It also bounds the
timeout from above: a crashed worker's message waits that long before anyone
retries it, so more than 4x the measured p95 fails. The public workloads are
heavy-tailed, so an answer built on the mean or the median (or a percentile
of the unsorted list) runs several steps twice; the hidden ones catch a
hard-coded number.

On the virtual clock three workers race; where time is real each step gets
a worker of its own, and the race stops as soon as every step's first run
has ended or outlived the timeout, so a case takes about one timeout of lab
time (seconds at x60). The passing result says how many raced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fleetlab.composition.topology import experiment_queue
from fleetlab.core.errors import InvalidInput
from fleetlab.course.experiments.delivery import first_duplicate_story, race
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab.course.grading.values import duration, seconds
from fleetlab.services.agents.model import FakeModel, LatencyProfile

MEASURED = 200  # step times handed to the learner
SLICES = 20  # raced steps: one from the middle of each 5% slice of the distribution
MAX_OUTLIVED = 1  # of the SLICES raced steps (5%)
RACERS = 3  # on the virtual clock; one per step where time is real
MAX_RECOVERY_FACTOR = 4  # timeout / p95: above it, crashed work waits too long
SQS_MAX_VISIBILITY = 43_200


@dataclass(frozen=True)
class Workload(Case):
    """A step-time distribution: the learner sees one sample, the race uses another."""

    p50: float = 90.0
    p95: float = 420.0


def measured_step_times(case: Workload, seed: int) -> list[float]:
    """The sample of step times the learner's function receives (in the order measured: unsorted)."""
    model = FakeModel(seed=seed, latency=LatencyProfile(case.p50, case.p95))
    return [round(model.latency_of(f"measured-{n}"), 1) for n in range(MEASURED)]


def p95(values: list[float]) -> float:
    """The nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


def raced_steps(case: Workload, rng: Any) -> dict[str, float]:
    """One step from the middle of each 5% slice of the distribution, in a seeded order."""
    profile = LatencyProfile(case.p50, case.p95)
    lengths = [profile.quantile((n + 0.5) / SLICES) for n in range(SLICES)]
    rng.shuffle(lengths)
    return {f"alert-{n + 1}": length for n, length in enumerate(lengths)}


@register(
    "01.visibility",
    title="Size the visibility timeout from measured step times",
    function="choose_visibility",
    parameters="step_times",
    points=2,
    public=[
        Workload("researcher steps (p50 90 s, p95 420 s)", 90, 420),
        Workload("heavy-tailed steps (p50 30 s, p95 300 s)", 30, 300),
    ],
    hidden_cases=2,
    timeout=30,
)
def check_visibility(answer: Any, case: Workload, ctx: Any) -> CaseOutcome:
    """Race fresh steps on a queue with the learner's timeout; bound the wait after a crash."""
    times = measured_step_times(case, ctx.seed)
    try:
        chosen = seconds(answer(list(times)), returned_by="choose_visibility", example="630")
    except InvalidInput as bad:
        return CaseOutcome(False, str(bad), "not-a-number-of-seconds")
    if chosen > SQS_MAX_VISIBILITY:
        return CaseOutcome(False, f"{chosen:g} s: SQS takes at most {SQS_MAX_VISIBILITY} s (12 h) for a visibility timeout",
                           "past-the-sqs-maximum")
    timeout = math.ceil(chosen)
    measured_p95 = p95(times)
    if timeout > MAX_RECOVERY_FACTOR * measured_p95:
        return CaseOutcome(
            False,
            f"{timeout} s is more than {MAX_RECOVERY_FACTOR}x the p95 step time ({measured_p95:g} s): "
            f"a message whose worker crashed waits {duration(timeout)} before anyone retries it",
            "crashed-step-waits-too-long",
        )
    steps = raced_steps(case, ctx.rng())
    backend = ctx.backend
    racers = RACERS if backend.clock.virtual else len(steps)
    with experiment_queue(backend, ctx.fresh_prefix(), visibility_timeout=timeout) as queue:
        kept = queue.visibility_timeout  # what the queue really has: whole seconds of service time
        every = kept / (5 if backend.clock.virtual else 30)  # real time: notice the verdict within a second
        result = race(backend, queue, steps, workers=racers, poll_interval=every,
                      stop_when=lambda so_far: _verdict_known(so_far, steps, kept, backend.clock.now()))
    ended = backend.clock.now()
    outlived = [alert for alert in steps if (_first_run_seconds(result, alert, ended) or 0) > kept]
    named = f"{timeout} s" if kept == timeout else f"{timeout} s (kept as {kept} s: whole seconds of service time)"
    if len(outlived) > MAX_OUTLIVED:
        return CaseOutcome(False, _outlived_diagnosis(result, named, outlived, measured_p95, chosen=timeout),
                           "shorter-than-the-slow-steps")
    return CaseOutcome(True, f"{named}: {len(outlived)} of {SLICES} steps outlived it "
                             f"({SLICES} steps raced by {racers} workers)")


def _verdict_known(result: Any, steps: dict[str, float], timeout: int, now: float) -> bool:
    """True once every step's first run has ended, or has already outlived ``timeout``."""
    return all(_first_run_done(result, alert) or (_first_run_seconds(result, alert, now) or 0) > timeout
               for alert in steps)


def _first_receive(result: Any, alert: str) -> Any:
    return next((hop for hop in result.tracer.timeline(alert) if hop.name == "received"), None)


def _first_run_done(result: Any, alert: str) -> Any:
    """The first run's effect hop, or None while it runs (or when the race stopped it)."""
    first = _first_receive(result, alert)
    if first is None:
        return None
    hops = result.tracer.timeline(alert)
    return next((hop for hop in hops if hop.name == "effect" and hop.component == first.component and hop.at >= first.at),
                None)


def _first_run_seconds(result: Any, alert: str, now: float) -> float | None:
    """How long the first worker to receive ``alert`` held it before its step was done (so far, if it still
    runs or the race stopped it); None before anyone received it."""
    first = _first_receive(result, alert)
    if first is None:
        return None
    done = _first_run_done(result, alert)
    return (done.at if done else now) - first.at


def _outlived_diagnosis(result: Any, timeout: str, outlived: list[str], measured_p95: float, *, chosen: int) -> str:
    twice = sorted(result.ledger.duplicates(), key=lambda alert: int(alert.split("-")[1]))
    diagnosis = (
        f"with a {timeout} visibility timeout, {len(outlived)} of {SLICES} steps outlived it (at most "
        f"{MAX_OUTLIVED} may): SQS offered each again while it still ran, and {len(twice)} ran twice here"
    )
    if twice:
        diagnosis += f" ({first_duplicate_story(result, twice[0])})"
    if chosen < measured_p95:
        diagnosis += (
            f"; {chosen} s is below the p95 of the step times you were given ({measured_p95:g} s): size it "
            "from the p95 (a mean or a median hides the slow tail, and the list is not sorted)"
        )
    return diagnosis
