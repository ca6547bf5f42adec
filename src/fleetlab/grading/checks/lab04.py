"""Lab 04 checks: the callback worker, the task's timers, a Catch that survives a missed heartbeat.

``04.callback``: ``complete_task(sfn, token, work, heartbeat_seconds, clock)``
runs a step and answers on its task token. The harness plays it as the
worker of real executions on the backend's Step Functions engine: a quick
answer, a failure with an error name that a Catch routes, a step longer
than HeartbeatSeconds, and a step that outlives TimeoutSeconds (its answer
is refused: the token is dead). It reads every SendTask* call the answer made.

``04.timeouts``: ``choose_timeouts(steps)`` turns measured steps (each a
list of model-call durations, a heartbeat possible between two calls) into
TimeoutSeconds and HeartbeatSeconds. Judged on fresh steps from the same
distribution; the lab-scale profile also runs for real.

``04.catch``: a Retry/Catch block, as ASL JSON, for the callback task: the
execution must not fail when the worker stops beating, whichever name the
backend gives the missed heartbeat (AWS: States.HeartbeatTimeout; moto and
LocalStack: States.Timeout).

Step Functions timers run in real time on every backend, so every timer
here is 1 to 3 s and the cases run their executions side by side.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from ...errors import AslError
from ...experiments.callbacks import (Behaviour, CallbackBench, CallbackRun, Plan, answers, calls, dies, fails,
                                      model_call_steps, percentile)
from ...stepfunctions import asl, machines
from ...stepfunctions.worker import DEAD_TOKEN_ERRORS, Call
from ..registry import Case, CaseOutcome, WrongAnswer, register
from . import lab04_answers as answers_

HEARTBEAT_ERRORS = ("States.HeartbeatTimeout", "States.Timeout")
AWS_HEARTBEAT_ERROR = "States.HeartbeatTimeout"
MAX_GAP_SHARE = 0.8  # of HeartbeatSeconds: a beat later than this races the timer
ANSWERS = ("SendTaskSuccess", "SendTaskFailure")
STEP_OUTPUT = {"summary": "three sources agree", "tokens": 812}


# ---------------------------------------------------------------- 04.callback


@dataclass(frozen=True)
class Step:
    """One execution of a case: what its step does and the task's timers."""

    name: str
    behaviour: Behaviour
    timeout_seconds: int
    heartbeat_seconds: int
    late: bool = False  # the step outlives TimeoutSeconds: its answer must be dropped


@dataclass(frozen=True)
class Steps(Case):
    """Several steps, each on its own execution, all at once."""

    steps: tuple[Step, ...] = ()


class _RunawayRetry(BaseException):
    """Raised into a worker that keeps answering on a dead token, to stop it."""


@dataclass
class _Watch:
    """What the learner's function did per token, beside every SendTask* call it made."""

    calls: list[Call] = field(default_factory=list)
    started: dict[str, float] = field(default_factory=dict)
    returned: dict[str, float] = field(default_factory=dict)
    raised: dict[str, BaseException] = field(default_factory=dict)
    runaway: set[str] = field(default_factory=set)

    def respond_with(self, answer: Callable[..., Any]) -> Callable[..., Any]:
        """The learner's function as the bench's responder, watched."""

        def respond(sfn: Any, token: str, work: Callable[[], Any], heartbeat_seconds: int | None, clock: Any) -> Any:
            self.started[token] = clock.now()
            try:
                return answer(sfn, token, work, heartbeat_seconds, clock)
            except _RunawayRetry:
                self.runaway.add(token)
            except Exception as exc:  # kept: the harness reports it (or re-raises the learner's own bug)
                self.raised[token] = exc
            finally:
                self.returned[token] = clock.now()
            return None

        return respond

    def on_call(self, call: Call) -> None:
        """Record ``call``; stop a worker at its third refused answer on one token."""
        self.calls.append(call)
        refused = [c for c in self.calls if c.token == call.token and c.call in ANSWERS and not c.accepted]
        if call.call in ANSWERS and len(refused) >= 3:
            raise _RunawayRetry()


def _callback_plans(bench: CallbackBench, case: Steps) -> dict[str, Plan]:
    plans = {}
    for step in case.steps:
        if step.late:
            catch = [{"ErrorEquals": list(HEARTBEAT_ERRORS), "ResultPath": "$.error", "Next": machines.RECOVER_STATE}]
        elif step.behaviour.kind == "fails":
            catch = [{"ErrorEquals": [step.behaviour.error], "ResultPath": "$.error", "Next": machines.RECOVER_STATE}]
        else:
            catch = None
        machine = bench.machine(step.name.replace(" ", "-"), timeout_seconds=step.timeout_seconds,
                                heartbeat_seconds=step.heartbeat_seconds, catch=catch)
        plans[step.name] = Plan(machine, (step.behaviour,))
    return plans


def _run_steps(answer: Any, case: Steps, ctx: Any) -> tuple[dict[str, CallbackRun], _Watch]:
    watch = _Watch()
    bench = CallbackBench(ctx.backend, ctx.fresh_prefix(), respond=watch.respond_with(answer), on_call=watch.on_call)
    try:
        wait = max(s.behaviour.seconds + s.timeout_seconds for s in case.steps) + 2
        runs = bench.run_together(_callback_plans(bench, case), wait=min(wait, ctx.remaining()))
    finally:
        bench.close()
    return runs, watch


CALLBACK_SIGNATURE = "complete_task(sfn, token, work, heartbeat_seconds, clock)"


@register(
    "04.callback",
    title="A callback worker: heartbeat, answer, drop a dead token",
    points=3,
    public=[Steps("four steps at once: a quick answer, a failure named AgentFailed, a 1.4 s step under "
                  "HeartbeatSeconds 1, a 2.2 s step under TimeoutSeconds 2", (
                      Step("quick answer", answers(STEP_OUTPUT, after=0.1), 5, 1),
                      Step("failure", fails("AgentFailed", "the tool returned nothing", after=0.1), 5, 1),
                      Step("long step", answers(STEP_OUTPUT, after=1.4), 5, 1),
                      Step("late step", answers(STEP_OUTPUT, after=2.2), 2, 1, late=True),
                  ))],
    hidden=[Steps("a failure named ToolTimeout, a 3 s step under HeartbeatSeconds 2, a failure after "
                  "TimeoutSeconds 2", (
                      Step("failure", fails("ToolTimeout", "search took too long", after=0.1), 5, 1),
                      Step("long step", answers(STEP_OUTPUT, after=3.0), 6, 2),
                      Step("late failure", fails("AgentFailed", "gave up", after=2.2), 2, 1, late=True),
                  ))],
    wrong_answers=(
        WrongAnswer("never beats", answers_.never_beats, "no SendTaskHeartbeat came"),
        WrongAnswer("beats once per HeartbeatSeconds", answers_.beats_every_window, "gaps of up to"),
        WrongAnswer("retries a refused answer", answers_.retries_until_accepted, "answers on one token"),
        WrongAnswer("lets a dead token's refusal escape", answers_.lets_refusals_escape, "let the error escape"),
        WrongAnswer("fails every step as 'Error'", answers_.generic_error_name, "never matched"),
        WrongAnswer("reports a failure as a success", answers_.failure_as_success, "but your worker sent SendTaskSuccess"),
        WrongAnswer("sends the output as text", answers_.output_as_text, "not the step's output"),
        WrongAnswer("a heartbeat that outlives its step", answers_.heartbeat_outlives_the_step, "kept beating"),
        WrongAnswer("a hard-coded error name", answers_.hard_coded_error_name, "never matched", public=False),
    ),
    timeout=20,
)
def check_callback(answer: Any, case: Steps, ctx: Any) -> CaseOutcome:
    problem = _signature_problem(answer, 5, CALLBACK_SIGNATURE)
    if problem:
        return CaseOutcome(False, problem)
    runs, watch = _run_steps(answer, case, ctx)
    _raise_learner_bug(watch)
    for step in case.steps:
        problem = _judge_step(step, runs[step.name], watch)
        if problem:
            return CaseOutcome(False, problem)
    return CaseOutcome(True, f"{len(case.steps)} steps answered as their tasks expected")


def _signature_problem(answer: Any, arguments: int, signature: str) -> str:
    if not callable(answer):
        return f"pass the function itself, {signature.split('(')[0]}"
    try:
        inspect.signature(answer).bind(*range(arguments))
    except (TypeError, ValueError):
        return f"the function must take {arguments} arguments: {signature}"
    return ""


def _raise_learner_bug(watch: _Watch) -> None:
    """An exception that is not a refused callback is the learner's own bug: let the runner report it."""
    for exc in watch.raised.values():
        if not isinstance(exc, ClientError):
            raise exc


def _judge_step(step: Step, run: CallbackRun, watch: _Watch) -> str:
    if not run.tokens:
        return f"the {step.name}: no worker ever took its task (a fleetlab problem; run the check again)"
    token = run.tokens[0]
    mine = [c for c in watch.calls if c.token == token]
    answered = [c for c in mine if c.call in ANSWERS]
    if token in watch.runaway or len(answered) > 1:
        refusals = ", ".join(sorted({c.error_code for c in answered if not c.accepted})) or "all accepted"
        return (f"the {step.name}: your worker sent {len(answered)} answers on one token (refused: {refusals}): "
                "a dead token never comes back to life; answer once and drop the refusal")
    if not step.late:
        problem = _judge_heartbeat(step, run, mine, watch.started.get(token))
        if problem:
            return problem
    if token in watch.raised:
        return _judge_raised(step, watch.raised[token], answered)
    leaked = [c for c in mine if c.call == "SendTaskHeartbeat" and c.at > watch.returned.get(token, c.at) + 0.15]
    if leaked:
        return (f"the {step.name}: your heartbeat kept beating after complete_task returned ({len(leaked)} beats): "
                "stop it when the step ends (a heartbeat that outlives its step hides a dead worker)")
    if not answered:
        return f"the {step.name}: your worker never answered, so the execution was left {run.status}"
    if step.late:
        return ""
    if step.behaviour.kind == "fails":
        return _judge_failure(step, run, answered[0])
    return _judge_success(step, run, answered[0])


def _judge_heartbeat(step: Step, run: CallbackRun, mine: list[Call], started: float | None) -> str:
    gap = _longest_gap(mine, started)
    if gap is None or gap <= MAX_GAP_SHARE * step.heartbeat_seconds:
        return ""
    beats = sum(c.call == "SendTaskHeartbeat" for c in mine)
    what = "no SendTaskHeartbeat came" if beats == 0 else f"your heartbeats left gaps of up to {gap:.2f} s"
    outcome = f"the timer ran out ({run.error})" if run.status == "FAILED" else "the timer nearly ran out"
    return (f"the {step.name} ({step.behaviour.seconds:g} s) runs under HeartbeatSeconds {step.heartbeat_seconds}: "
            f"{what}, so {outcome}; beat well inside the window, every third of it")


def _judge_raised(step: Step, exc: BaseException, answered: list[Call]) -> str:
    code = exc.response["Error"].get("Code", "?") if isinstance(exc, ClientError) else type(exc).__name__
    if code in DEAD_TOKEN_ERRORS:
        call = answered[-1].call if answered else "answer"
        return (f"the {step.name}'s {call} was refused with {code} (the task had timed out) and your function "
                "let the error escape: the worker would leave the message on the queue and run the step again "
                "for nothing; catch it and drop the late answer")
    return f"the {step.name}: a callback was refused with {code} and your function raised it"


def _judge_failure(step: Step, run: CallbackRun, answer: Call) -> str:
    error = step.behaviour.error
    if answer.call != "SendTaskFailure":
        return (f"the step raised StepFailed({error!r}) but your worker sent {answer.call}: "
                "report a failure with SendTaskFailure so the state machine's Catch can route it")
    if machines.RECOVER_STATE not in run.states:
        return (f"the step raised StepFailed({error!r}) but the task failed with {run.error or '?'!r}, so the "
                f"Catch on {error!r} never matched and the execution {run.status}: send the step's own error "
                "name (its .error)")
    return ""


def _judge_success(step: Step, run: CallbackRun, answer: Call) -> str:
    if answer.call != "SendTaskSuccess" or run.status != "SUCCEEDED":
        return f"the {step.name}: the execution ended {run.status} ({run.error or answer.call}); it should succeed"
    result = (run.output or {}).get("result")
    if result != step.behaviour.output:
        return (f"the {step.name}: the task's result was {json.dumps(result)[:80]}, not the step's output "
                f"{json.dumps(step.behaviour.output)[:80]}: send json.dumps(output) as the output")
    return ""


def _longest_gap(mine: list[Call], started: float | None) -> float | None:
    """The longest Step Functions waited for word from the worker before its answer (beats it took, the answer)."""
    answer_at = next((c.at for c in mine if c.call in ANSWERS), None)
    if answer_at is None or started is None:
        return None
    heard = sorted({started, answer_at} | {c.at for c in mine if c.call == "SendTaskHeartbeat" and c.accepted
                                           and c.at <= answer_at})
    return max(later - earlier for earlier, later in zip(heard, heard[1:]))


# ---------------------------------------------------------------- 04.timeouts

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
    hidden=[Profile("long research: 2 to 4 calls, each p50 200 s, p95 600 s", (2, 4), 200, 600),
            Profile("many short tool calls: 8 to 15 calls, each p50 5 s, p95 20 s", (8, 15), 5, 20)],
    wrong_answers=(
        WrongAnswer("no TimeoutSeconds", answers_.no_timeout, "without TimeoutSeconds"),
        WrongAnswer("no HeartbeatSeconds", answers_.no_heartbeat, "no HeartbeatSeconds"),
        WrongAnswer("TimeoutSeconds from the median step", answers_.timeout_from_median_step, "longer than TimeoutSeconds"),
        WrongAnswer("HeartbeatSeconds from the median call", answers_.heartbeat_from_median_call,
                    "longer than HeartbeatSeconds"),
        WrongAnswer("HeartbeatSeconds as long as TimeoutSeconds", answers_.heartbeat_as_long_as_timeout,
                    "must be smaller than TimeoutSeconds"),
        WrongAnswer("a day, and half a day", answers_.a_day_and_half_a_day, "noticed only after"),
        WrongAnswer("fractions of a second", answers_.fractional_seconds, "whole number"),
    ),
    timeout=15,
)
def check_timeouts(answer: Any, case: Profile, ctx: Any) -> CaseOutcome:
    if not callable(answer):
        return CaseOutcome(False, "pass the function itself: check('04.timeouts', choose_timeouts)")
    measured = measured_steps(case, ctx.seed)
    timeout, heartbeat, problem = _as_timers(answer([list(step) for step in measured]))
    problem = problem or _timer_problem(timeout, heartbeat, measured)
    if problem:
        return CaseOutcome(False, problem)
    fresh = measured_steps(case, ctx.seed + 1)
    problem = _killed(fresh, timeout, heartbeat) or _too_slow(measured, timeout, heartbeat)
    if problem:
        return CaseOutcome(False, problem)
    if case.real:
        problem = _run_for_real(fresh, timeout, heartbeat, ctx)
        if problem:
            return CaseOutcome(False, problem)
    return CaseOutcome(True, f"TimeoutSeconds {timeout}, HeartbeatSeconds {heartbeat}: healthy steps finish, "
                             "a dead worker is noticed in time")


def _timer_problem(timeout: Any, heartbeat: Any, measured: list[list[float]]) -> str:
    if not timeout:
        return ("a callback task without TimeoutSeconds waits for its answer for up to a year: a worker that dies "
                "holding the token leaves the execution RUNNING; give every callback task a TimeoutSeconds")
    if not heartbeat:
        p95_call = percentile([call for step in measured for call in step], 0.95)
        return (f"no HeartbeatSeconds: a worker that dies mid-step is noticed only when TimeoutSeconds ({timeout} s) "
                f"runs out, where a heartbeat would notice it after one call's worth of silence (p95 call "
                f"{p95_call:g} s); give long steps a heartbeat")
    try:
        machines.callback_definition("https://sqs.us-east-1.amazonaws.com/123456789012/tokens",
                                     timeout_seconds=timeout, heartbeat_seconds=heartbeat)
    except AslError as refused:
        return f"Step Functions would refuse this task: {refused}"
    return ""


def _killed(fresh: list[list[float]], timeout: int, heartbeat: int) -> str:
    by_timeout = [sum(step) for step in fresh if sum(step) > timeout]
    if len(by_timeout) > MAX_KILLED_SHARE * len(fresh):
        return (f"{len(by_timeout)} of {len(fresh)} healthy steps ran longer than TimeoutSeconds {timeout} "
                f"(the longest {max(by_timeout):g} s) and would be failed with States.Timeout; cover the p95 step "
                "with a margin")
    by_heartbeat = [max(step) for step in fresh if max(step) > heartbeat]
    if len(by_heartbeat) > MAX_KILLED_SHARE * len(fresh):
        return (f"in {len(by_heartbeat)} of {len(fresh)} healthy steps a single model call ran longer than "
                f"HeartbeatSeconds {heartbeat} (the longest {max(by_heartbeat):g} s): no heartbeat can go out during "
                "a call, so the task would time out; HeartbeatSeconds must cover the longest call")
    return ""


def _too_slow(measured: list[list[float]], timeout: int, heartbeat: int) -> str:
    longest_call = max(call for step in measured for call in step)
    longest_step = max(sum(step) for step in measured)
    if heartbeat > math.ceil(MAX_TIMER_FACTOR * longest_call):
        return (f"a worker that dies is noticed only after HeartbeatSeconds {heartbeat} s, more than "
                f"{MAX_TIMER_FACTOR}x the longest model call ever measured ({longest_call:g} s): its step waits "
                "that long for nothing")
    if timeout > math.ceil(MAX_TIMER_FACTOR * longest_step):
        return (f"TimeoutSeconds {timeout} s is more than {MAX_TIMER_FACTOR}x the longest step ever measured "
                f"({longest_step:g} s): a worker stuck in a loop that still beats is noticed only after that long")
    return ""


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
        return (f"on {ctx.backend.name} a healthy {sum(healthy):.2f} s step (calls {healthy}) ended "
                f"{runs['healthy'].status} ({runs['healthy'].error}) under TimeoutSeconds {timeout}, "
                f"HeartbeatSeconds {heartbeat}")
    if runs["dead"].status == "RUNNING":
        return f"on {ctx.backend.name} a worker that died after its first call was still not noticed"
    return ""


# ---------------------------------------------------------------- 04.catch

RETRY_BUDGET_SECONDS = 8  # retries this lab can wait out: Step Functions timers run in real time


@dataclass(frozen=True)
class Outage(Case):
    """The task's timers, and what the worker does with each attempt's token."""

    timeout_seconds: int = 3
    heartbeat_seconds: int = 1
    behaviours: tuple[Behaviour, ...] = (dies(),)


def read_block(answer: Any) -> dict[str, Any]:
    """The Retry/Catch block from JSON text, a dict, a whole Task state, or a bare Catch list.

    Raises AslError naming the field when it cannot be read.
    """
    if isinstance(answer, (str, bytes)):
        try:
            answer = json.loads(answer)
        except json.JSONDecodeError as exc:
            raise AslError("answer", f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                           hint='JSON wants double quotes: {"Catch": [...]}') from exc
    if isinstance(answer, list):
        answer = {"Catch": answer}
    if not isinstance(answer, dict):
        raise AslError("answer", f"must be a JSON object with Retry and Catch, got {type(answer).__name__}")
    unknown = sorted(set(answer) - {"Retry", "Catch"} - asl.FIELDS["Task"])
    if unknown:
        raise AslError(f"answer.{unknown[0]}", "is not a field of a Task state", hint="give Retry and Catch")
    return {key: answer[key] for key in ("Retry", "Catch") if key in answer}


def worst_case_wait(block: dict[str, Any], case: Outage) -> float:
    """Seconds a dead worker keeps the execution waiting before the Catch runs, all retries included."""
    retrier = block.get("Retry", [])
    index = asl.first_match(retrier, "States.Timeout")
    index = index if index is not None else asl.first_match(retrier, AWS_HEARTBEAT_ERROR)
    attempts, interval, rate = 0, 1.0, 2.0
    if index is not None:
        attempts = retrier[index].get("MaxAttempts", 3)
        interval = retrier[index].get("IntervalSeconds", 1)
        rate = retrier[index].get("BackoffRate", 2.0)
    pauses = sum(interval * rate ** n for n in range(attempts))
    return (attempts + 1) * case.heartbeat_seconds + pauses


@register(
    "04.catch",
    title="A Catch that survives a missed heartbeat on any backend",
    points=2,
    public=[Outage("the first worker dies holding the token; a retry's worker would answer", 3, 1,
                   (dies(), answers(after=0.1)))],
    hidden=[Outage("every worker dies holding the token (no heartbeat)", 3, 1, (dies(),)),
            Outage("a worker that beats but never finishes, under TimeoutSeconds 2", 2, 1,
                   (answers(after=2.5), answers(after=2.5)))],
    wrong_answers=(
        WrongAnswer("catches only States.HeartbeatTimeout", answers_.ONLY_HEARTBEAT_NAME, "States.Timeout"),
        WrongAnswer("catches only States.Timeout", answers_.ONLY_TIMEOUT_NAME, "States.HeartbeatTimeout"),
        WrongAnswer("retries but never catches", answers_.RETRY_WITHOUT_CATCH, "no Catch"),
        WrongAnswer("States.TaskFailed as a wildcard", answers_.TASK_FAILED_WILDCARD, "States.Timeout"),
        WrongAnswer("routes to a state that does not exist", answers_.MISNAMED_TARGET, "not a state"),
        WrongAnswer("ErrorEquals as a string", answers_.ERROR_NAME_AS_TEXT, "must be a non-empty list"),
        WrongAnswer("retries for minutes", answers_.SLOW_RETRIES, "keeps the execution waiting"),
        WrongAnswer("States.ALL beside another name", answers_.ALL_BESIDE_OTHERS, "must appear alone"),
        WrongAnswer("Python, not JSON", answers_.NOT_JSON, "not valid JSON"),
    ),
    timeout=20,
)
def check_catch(answer: Any, case: Outage, ctx: Any) -> CaseOutcome:
    try:
        block = read_block(answer)
    except AslError as unreadable:
        return CaseOutcome(False, str(unreadable))
    if not block.get("Catch"):
        return CaseOutcome(False, "your block has no Catch: once the retries run out, the missed heartbeat fails the "
                                  f"execution; add a Catch whose Next is {machines.RECOVER_STATE!r}")
    targets = {machines.RECOVER_STATE, machines.DONE_STATE}
    for index, catcher in enumerate(block["Catch"] if isinstance(block["Catch"], list) else []):
        if isinstance(catcher, dict) and catcher.get("Next") not in targets:
            return CaseOutcome(False, f"Catch[{index}].Next: {catcher.get('Next')!r} is not a state of this machine; "
                                      f"route the error to {machines.RECOVER_STATE!r}")
    wait = worst_case_wait(block, case)
    if wait > RETRY_BUDGET_SECONDS:
        return CaseOutcome(False, f"with a dead worker your Retry keeps the execution waiting {wait:g} s before the "
                                  f"Catch runs; in this lab keep it under {RETRY_BUDGET_SECONDS} s "
                                  "(IntervalSeconds 1, MaxAttempts 1 or 2)")
    bench = CallbackBench(ctx.backend, ctx.fresh_prefix())
    try:
        machine = bench.machine("catch", timeout_seconds=case.timeout_seconds,
                                heartbeat_seconds=case.heartbeat_seconds, **{k.lower(): v for k, v in block.items()})
        run = bench.run(machine, *case.behaviours, label="outage", wait=min(wait + case.timeout_seconds + 3,
                                                                              ctx.remaining()))
    except AslError as refused:
        return CaseOutcome(False, f"Step Functions would refuse the task with your block: {refused}")
    finally:
        bench.close()
    if run.status != "SUCCEEDED":
        return CaseOutcome(False, f"on {ctx.backend.name} the task failed with {run.error or '?'} and your block did "
                                  f"not route it: the execution ended {run.status}"
                                  + _unlisted(block, run.error))
    for error in HEARTBEAT_ERRORS:
        if asl.first_match(block["Catch"], error) is None:
            return CaseOutcome(False, _missing_name(error, ctx))
    return CaseOutcome(True, f"the execution survived ({' -> '.join(run.states)}), and both names are caught")


def _unlisted(block: dict[str, Any], error: str) -> str:
    if error and asl.first_match(block["Catch"], error) is None:
        return f" (your Catch does not list {error})"
    return ""


def _missing_name(error: str, ctx: Any) -> str:
    if error == AWS_HEARTBEAT_ERROR:
        return (f"the execution survived on {ctx.backend.name}, but your Catch does not list {error}: on AWS a "
                f"missed heartbeat fails the task with {error}, and the execution would fail there")
    return (f"the execution survived on {ctx.backend.name}, but your Catch does not list {error}: moto and LocalStack "
            f"report a missed heartbeat as {error}, and TimeoutSeconds raises it on AWS too")
