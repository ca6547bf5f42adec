"""Check ``04.timeouts``: ``choose_timeouts(steps)`` turns measured steps (each the list of its model
calls' durations; a heartbeat fits between two calls, never during one) into TimeoutSeconds and
HeartbeatSeconds.

Judged on fresh steps from the same distribution: at most 5% of healthy steps
may be failed by either timer, HeartbeatSeconds must stay below
TimeoutSeconds (AWS refuses the state otherwise), and neither may exceed
twice the longest thing measured. The lab-scale profile also runs for real.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fleetlab.core.errors import AslError, InvalidInput
from fleetlab.course.checks.lab04.common import refused_task
from fleetlab.course.experiments.callback import CallbackBench, Plan, calls, model_call_steps, percentile
from fleetlab.course.grading.registry import Case, CaseOutcome, Diagnosis, register
from fleetlab.course.grading.values import seconds
from fleetlab.services.stepfunctions import machines

MEASURED_STEPS = 200
MAX_KILLED_SHARE = 0.05
MAX_TIMER_FACTOR = 2  # a timer over twice anything measured (in whole seconds) leaves a dead worker unnoticed


@dataclass(frozen=True)
class Profile(Case):
    """Steps of ``calls`` model calls (inclusive range), each log-normal with this p50 and p95 in seconds.

    ``real`` profiles are at lab scale and also run on the backend's engine.
    """

    calls: tuple[int, int] = (3, 6)
    call_p50: float = 40.0
    call_p95: float = 150.0
    real: bool = False


def measured_steps(case: Profile, seed: int, count: int = MEASURED_STEPS) -> list[list[float]]:
    """The steps the learner's function receives (or, with the next seed, the fresh ones it is judged on)."""
    return model_call_steps(count, calls=case.calls, call_p50=case.call_p50, call_p95=case.call_p95, seed=seed,
                            digits=2 if case.real else 1)


def _as_timers(value: Any) -> tuple[Any, Any, str]:
    """(TimeoutSeconds, HeartbeatSeconds) from a dict (any key spelling) or a pair; a problem when neither."""
    if isinstance(value, dict):
        found = {key.replace("_", "").replace("-", "").lower(): v for key, v in value.items() if isinstance(key, str)}
        timeout = next((found[k] for k in ("timeoutseconds", "timeout") if k in found), "missing")
        heartbeat = next((found[k] for k in ("heartbeatseconds", "heartbeat") if k in found), "missing")
        if "missing" not in (timeout, heartbeat):
            return timeout, heartbeat, ""
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        return value[0], value[1], ""
    return None, None, (f"choose_timeouts returned {value!r:.80}; return "
                        '{"TimeoutSeconds": ..., "HeartbeatSeconds": ...} (whole seconds)')


@register(
    "04.timeouts",
    title="TimeoutSeconds and HeartbeatSeconds for a step-time profile",
    points=2,
    public=[Profile("researcher steps: 3 to 6 model calls, each p50 40 s, p95 150 s", (3, 6), 40, 150),
            Profile("lab-scale tool steps, run for real: 2 to 4 calls, each p50 0.2 s, p95 0.4 s",
                    (2, 4), 0.2, 0.4, real=True)],
    hidden_cases=3,
    function="choose_timeouts",
    parameters="steps",
    timeout=15,
)
def check_timeouts(answer: Any, case: Profile, ctx: Any) -> CaseOutcome:
    measured = measured_steps(case, ctx.seed)
    timeout, heartbeat, problem = _as_timers(answer([list(step) for step in measured]))
    problem = problem or _timer_problem(timeout, heartbeat, measured)
    if not problem:
        (timeout, problem), (heartbeat, other) = _whole(timeout, "TimeoutSeconds"), _whole(heartbeat, "HeartbeatSeconds")
        problem = problem or other or _refused_by_aws(timeout, heartbeat)
    if problem:
        return CaseOutcome(False, problem)
    fresh = measured_steps(case, ctx.seed + 1)
    problem = _killed(fresh, timeout, heartbeat) or _too_slow(measured, timeout, heartbeat)
    if problem:
        return CaseOutcome(False, problem)
    if case.real:
        problem = _real_runs(fresh, timeout, heartbeat, ctx)
        if problem:
            return CaseOutcome(False, problem)
    return CaseOutcome(True, f"TimeoutSeconds {timeout}, HeartbeatSeconds {heartbeat}: healthy steps finish, "
                             "a dead worker is noticed in time")


def _timer_problem(timeout: Any, heartbeat: Any, measured: list[list[float]]) -> str:
    if not timeout:
        return Diagnosis("a callback task without TimeoutSeconds waits for its answer for up to a year: a worker "
                         "that dies holding the token leaves the execution RUNNING; give every callback task a "
                         "TimeoutSeconds", "no-timeout")
    if not heartbeat:
        p95_call = percentile([call for step in measured for call in step], 0.95)
        return Diagnosis(f"no HeartbeatSeconds: a worker that dies mid-step is noticed only when TimeoutSeconds "
                         f"({timeout} s) runs out, where a heartbeat would notice it after one call's worth of silence "
                         f"(p95 call {p95_call:g} s); give long steps a heartbeat", "no-heartbeat")
    return ""


def _whole(value: Any, field: str) -> tuple[int, str]:
    """A timer as ASL takes it (whole seconds), from any real number; a problem otherwise."""
    try:
        number = seconds(value, returned_by="choose_timeouts", example="630")
    except InvalidInput as refused:
        return 0, Diagnosis(f"{field}: {refused.problem} ({refused.hint})", "timer-not-a-number")
    if not number.is_integer():
        return 0, Diagnosis(f"{field} {number:g}: Step Functions takes a whole number of seconds; round up with "
                            "math.ceil", "fractions-of-a-second")
    return int(number), ""


def _refused_by_aws(timeout: int, heartbeat: int) -> str:
    try:
        machines.callback_definition("https://sqs.us-east-1.amazonaws.com/123456789012/tokens",
                                     timeout_seconds=timeout, heartbeat_seconds=heartbeat)
    except AslError as refused:
        return Diagnosis(f"Step Functions would refuse this task: {refused_task(refused)}", "task-refused-by-aws")
    return ""


def _shares_of(timeout: int) -> set[int]:
    """HeartbeatSeconds a learner who took it for a share of TimeoutSeconds would choose: a half to a quarter."""
    return {rounded(timeout / parts) for parts in (2, 3, 4) for rounded in (math.ceil, math.floor, round)}


def _killed(fresh: list[list[float]], timeout: int, heartbeat: int) -> str:
    by_timeout = [sum(step) for step in fresh if sum(step) > timeout]
    if len(by_timeout) > MAX_KILLED_SHARE * len(fresh):
        return Diagnosis(f"{len(by_timeout)} of {len(fresh)} healthy steps ran longer than TimeoutSeconds {timeout} "
                         f"(the longest {max(by_timeout):g} s) and would be failed with States.Timeout; cover the p95 "
                         "step with a margin", "timeout-shorter-than-healthy-steps")
    by_heartbeat = [max(step) for step in fresh if max(step) > heartbeat]
    if len(by_heartbeat) > MAX_KILLED_SHARE * len(fresh):
        share = ("; it is not a share of TimeoutSeconds, it is the longest silence between two beats"
                 if heartbeat in _shares_of(timeout) else "")
        return Diagnosis(f"in {len(by_heartbeat)} of {len(fresh)} healthy steps a single model call ran longer than "
                         f"HeartbeatSeconds {heartbeat} (the longest {max(by_heartbeat):g} s): no heartbeat can go out "
                         f"during a call, so the task would time out; HeartbeatSeconds must cover the longest "
                         f"call{share}", "heartbeat-a-share-of-timeout" if share else "heartbeat-shorter-than-a-call")
    return ""


def _too_slow(measured: list[list[float]], timeout: int, heartbeat: int) -> str:
    longest_call = max(call for step in measured for call in step)
    longest_step = max(sum(step) for step in measured)
    if heartbeat > math.ceil(MAX_TIMER_FACTOR * longest_call):
        return Diagnosis(f"a worker that dies is noticed only after HeartbeatSeconds {heartbeat} s, more than "
                         f"{MAX_TIMER_FACTOR}x the longest model call ever measured ({longest_call:g} s): its step "
                         "waits that long for nothing", "heartbeat-far-too-long")
    if timeout > math.ceil(MAX_TIMER_FACTOR * longest_step):
        return Diagnosis(f"TimeoutSeconds {timeout} s is more than {MAX_TIMER_FACTOR}x the longest step ever "
                         f"measured ({longest_step:g} s): a worker stuck in a loop that still beats is noticed only "
                         "after that long", "timeout-far-too-long")
    return ""


REAL_RUN_ATTEMPTS = 3
_LATE_HEALTHY = "a healthy step failed for real"


def _real_runs(fresh: list[list[float]], timeout: int, heartbeat: int, ctx: Any) -> str:
    """The real run, tried again while its healthy step is failed by a timer the arithmetic says it fits.

    Timers that passed every check above leave the healthy step its margin, so a timer
    that still fires is the backend answering late (a loaded machine), not the answer.
    """
    problem = ""
    for _ in range(REAL_RUN_ATTEMPTS):
        problem = _run_for_real(fresh, timeout, heartbeat, ctx)
        if not problem.startswith(_LATE_HEALTHY):
            return problem
    return (f"{problem}, {REAL_RUN_ATTEMPTS} times: the timers leave this step its margin, so the backend answered "
            "late (a loaded machine?); run the check again")


def _run_for_real(fresh: list[list[float]], timeout: int, heartbeat: int, ctx: Any) -> str:
    """A healthy step near the p95, beating between calls, and a worker that dies after its first call."""
    totals = [sum(step) for step in fresh]
    healthy = min(fresh, key=lambda step: abs(sum(step) - percentile(totals, 0.95)))
    bench = CallbackBench(ctx.backend, ctx.fresh_prefix())
    try:
        machine = bench.machine("timers", timeout_seconds=timeout, heartbeat_seconds=heartbeat)
        runs = bench.run_together({"healthy": Plan(machine, (calls(*healthy),)),
                                   "dead": Plan(machine, (calls(*healthy, dies_after=1),))},
                                  wait=min(max(sum(healthy), heartbeat + healthy[0]) + 2, ctx.remaining()))
    finally:
        bench.close()
    if runs["healthy"].status != "SUCCEEDED":
        return (f"{_LATE_HEALTHY} on {ctx.backend.name}: a {sum(healthy):.2f} s step (calls {healthy}) ended "
                f"{runs['healthy'].status} ({runs['healthy'].error}) under TimeoutSeconds {timeout}, "
                f"HeartbeatSeconds {heartbeat}")
    if runs["dead"].status == "RUNNING":
        return f"on {ctx.backend.name} a worker that died after its first call was still not noticed"
    return ""
