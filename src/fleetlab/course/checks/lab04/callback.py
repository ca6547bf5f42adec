"""Check ``04.callback``: ``complete_task(sfn, token, work, heartbeat_seconds, clock)`` runs a step and
answers on its task token.

The harness plays it as the worker of real executions on the backend's Step
Functions engine, side by side: a quick answer, a failure with an error name
that a Catch routes, a step longer than HeartbeatSeconds, and a step that
outlives TimeoutSeconds (its answer is refused: the token is dead). It reads
every SendTask* call the function made, and what became of each execution.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.course.checks.lab04.common import HEARTBEAT_ERRORS
from fleetlab.course.experiments.callback import Behaviour, CallbackBench, CallbackRun, Plan, answers, fails
from fleetlab.course.grading.registry import Case, CaseOutcome, Diagnosis, StopAnswer, register
from fleetlab.services.stepfunctions import machines
from fleetlab.services.stepfunctions.worker import DEAD_TOKEN_ERRORS, Call

MAX_GAP_SHARE = 0.8  # of HeartbeatSeconds: a beat later than this races the timer
ANSWERS = ("SendTaskSuccess", "SendTaskFailure")
RACED = 0.1  # s: a beat sent this long before the task's timer ran out may have reached it after
STEP_OUTPUT = {"summary": "three sources agree", "tokens": 812}
QUICK_HEARTBEAT = 3
"""HeartbeatSeconds of the quick steps, which need no beat: their task's timer starts when Step Functions issues
the token, so a window wider than a busy machine's hand-over (past 1 s in a loaded make test) keeps it from
running out before the worker has the task."""


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


class _RunawayRetry(StopAnswer):
    """Raised into a worker that keeps answering on a dead token, to stop it."""


@dataclass
class _Watch:
    """What the learner's function did per token, beside every SendTask* call it made."""

    calls: list[Call] = field(default_factory=list)
    started: dict[str, float] = field(default_factory=dict)
    working: dict[str, float] = field(default_factory=dict)
    returned: dict[str, float] = field(default_factory=dict)
    raised: dict[str, BaseException] = field(default_factory=dict)
    runaway: set[str] = field(default_factory=set)

    def respond_with(self, answer: Callable[..., Any]) -> Callable[..., Any]:
        """The learner's function as the bench's responder, watched."""

        def respond(sfn: Any, token: str, work: Callable[[], Any], heartbeat_seconds: int | None, clock: Any) -> Any:
            self.started[token] = clock.now()

            def watched_work() -> Any:
                self.working.setdefault(token, clock.now())
                return work()

            try:
                return answer(sfn, token, watched_work, heartbeat_seconds, clock)
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
    public=[Steps("four steps at once: a quick answer, a failure named AgentFailed, a 5.6 s step under "
                  "HeartbeatSeconds 4, a 2.2 s step under TimeoutSeconds 2", (
                      Step("quick answer", answers(STEP_OUTPUT, after=0.1), 5, QUICK_HEARTBEAT),
                      Step("failure", fails("AgentFailed", "the tool returned nothing", after=0.1), 5,
                           QUICK_HEARTBEAT),
                      Step("long step", answers(STEP_OUTPUT, after=5.6), 10, 4),
                      Step("late step", answers(STEP_OUTPUT, after=2.2), 2, 1, late=True),
                  ))],
    hidden_cases=1,
    function="complete_task",
    parameters="sfn, token, work, heartbeat_seconds, clock",
    timeout=30,
    real_time=True,
    implemented_by=("fleetlab.services.stepfunctions.worker.answer_task",),
)
def check_callback(answer: Any, case: Steps, ctx: Any) -> CaseOutcome:
    problem = _signature_problem(answer, 5, CALLBACK_SIGNATURE)
    if problem:
        return CaseOutcome(False, problem, "takes-other-arguments")
    for _ in range(GAP_ATTEMPTS):
        started = time.monotonic()
        runs, watch = _run_steps(answer, case, ctx)
        _raise_learner_bug(watch)
        problem = next(filter(None, (_judge_step(step, runs[step.name], watch) for step in case.steps)), "")
        if not any(marker in problem for marker in _RUN_AGAIN) or ctx.remaining() < 2 * (time.monotonic() - started):
            break
    if problem:
        return CaseOutcome(False, problem)  # a Diagnosis carries the mistake's key
    return CaseOutcome(True, f"{len(case.steps)} steps answered as their tasks expected")


def _signature_problem(answer: Any, arguments: int, signature: str) -> str:
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
    """What went wrong in one step ("" when nothing did): a Diagnosis with the mistake's key, or plain words when
    the machine, not the worker, was at fault."""
    if not run.tokens:
        return f"the {step.name}: no worker ever took its task (a fleetlab problem; run the check again)"
    token = run.tokens[0]
    mine = [c for c in watch.calls if c.token == token]
    answered = [c for c in mine if c.call in ANSWERS]
    if token in watch.runaway or len(answered) > 1:
        refusals = ", ".join(sorted({c.error_code for c in answered if not c.accepted})) or "all accepted"
        return Diagnosis(f"the {step.name}: your worker sent {len(answered)} answers on one token (refused: "
                         f"{refusals}): a dead token never comes back to life; answer once and drop the refusal",
                         "answers-a-dead-token-again")
    if not step.late:
        working = watch.working.get(token)
        problem = _judge_heartbeat(step, run, mine, _first_act(mine, working), _timer_ran_out_at(run), working)
        if problem:
            return problem
    if token in watch.raised:
        return _judge_raised(step, watch.raised[token], answered)
    leaked = [c for c in mine if c.call == "SendTaskHeartbeat" and c.at > watch.returned.get(token, c.at) + 0.15]
    if leaked:
        return Diagnosis(f"the {step.name}: your heartbeat kept beating after complete_task returned ({len(leaked)} "
                         "beats): stop it when the step ends (a heartbeat that outlives its step hides a dead worker)",
                         "heartbeat-outlives-the-step")
    if not answered:
        return Diagnosis(f"the {step.name}: your worker never answered, so the execution was left {run.status}",
                         "never-answers")
    if step.late:
        return ""
    if run.error in HEARTBEAT_ERRORS and _in_time(step, answered[0], watch.started.get(token)):
        return (f"the {step.name}: {_HANDED_LATE} ({run.error}), though your worker answered within "
                f"HeartbeatSeconds {step.heartbeat_seconds} of getting it: this machine was too busy; "
                "run the check again")
    if step.behaviour.kind == "fails":
        return _judge_failure(step, run, answered[0])
    return _judge_success(step, run, answered[0])


GAP_ATTEMPTS = 3
"""A heartbeat gap, or a timer that ran out before the worker had the task, is confirmed by running the
case again (up to this many runs in all): on a loaded machine a right answer's thread can be late once;
a wrong one leaves the gap every time."""
_GAP = "runs under HeartbeatSeconds"
_HANDED_LATE = "its task's timer ran out before your worker was handed the task"
_RUN_AGAIN = (_GAP, _HANDED_LATE)
"""Problems a loaded machine can cause to a right answer: the case runs again (``GAP_ATTEMPTS``) to confirm them."""


def _judge_heartbeat(step: Step, run: CallbackRun, mine: list[Call], acting: float | None,
                     ran_out: float | None, working: float | None) -> str:
    gap = _longest_gap(mine, acting, ran_out)
    if gap is None or gap <= MAX_GAP_SHARE * step.heartbeat_seconds:
        return ""
    beats = [c.at for c in mine if c.call == "SendTaskHeartbeat"]
    outcome = f"the timer ran out ({run.error})" if run.status == "FAILED" else "the timer nearly ran out"
    if len(beats) == 1 and working is not None and beats[0] <= working:
        return Diagnosis(f"the {step.name} ({step.behaviour.seconds:g} s) {_GAP} {step.heartbeat_seconds}: your "
                         f"worker beat once, before the work began, and never during it, so {outcome}. "
                         "clock.every(interval, beat) takes the function itself and calls it each interval: pass "
                         "beat, not beat()", "beats-once-before-the-work")
    what = "no SendTaskHeartbeat came" if not beats else f"your heartbeats left gaps of up to {gap:.2f} s"
    return Diagnosis(f"the {step.name} ({step.behaviour.seconds:g} s) {_GAP} {step.heartbeat_seconds}: "
                     f"{what}, so {outcome}; beat well inside the window, every third of it",
                     "never-beats" if not beats else "beats-too-seldom")


def _judge_raised(step: Step, exc: BaseException, answered: list[Call]) -> str:
    code = exc.response["Error"].get("Code", "?") if isinstance(exc, ClientError) else type(exc).__name__
    if code in DEAD_TOKEN_ERRORS:
        call = answered[-1].call if answered else "answer"
        return Diagnosis(f"the {step.name}'s {call} was refused with {code} (the task had timed out) and your "
                         "function let the error escape: the worker would leave the message on the queue and run the "
                         "step again for nothing; catch it and drop the late answer", "lets-a-dead-token-refusal-escape")
    return Diagnosis(f"the {step.name}: a callback was refused with {code} and your function raised it",
                     "raises-a-refused-callback")


def _judge_failure(step: Step, run: CallbackRun, answer: Call) -> str:
    error = step.behaviour.error
    if answer.call != "SendTaskFailure":
        return Diagnosis(f"the step raised StepFailed({error!r}) but your worker sent {answer.call}: "
                         "report a failure with SendTaskFailure so the state machine's Catch can route it",
                         "reports-a-failure-as-a-success")
    if machines.RECOVER_STATE not in run.states:
        return Diagnosis(f"the step raised StepFailed({error!r}) but the task failed with {run.error or '?'!r}, so "
                         f"the Catch on {error!r} never matched and the execution {run.status}: send the step's own "
                         "error name (its .error)", "not-the-steps-error-name")
    return ""


def _judge_success(step: Step, run: CallbackRun, answer: Call) -> str:
    if answer.call != "SendTaskSuccess" or run.status != "SUCCEEDED":
        return Diagnosis(f"the {step.name}: the execution ended {run.status} ({run.error or answer.call}); it should "
                         "succeed", "a-good-step-not-succeeded")
    result = (run.output or {}).get("result")
    if result != step.behaviour.output:
        return Diagnosis(f"the {step.name}: the task's result was {json.dumps(result)[:80]}, not the step's output "
                         f"{json.dumps(step.behaviour.output)[:80]}: send json.dumps(output) as the output",
                         "output-not-the-steps-result")
    return ""


def _in_time(step: Step, answer: Call, started: float | None) -> bool:
    """True when the answer came within TimeoutSeconds of the worker getting the task (its beats, within
    HeartbeatSeconds, are _judge_heartbeat's): a timer that ran out all the same started before the worker had it."""
    return started is not None and answer.at - started < step.timeout_seconds


def _first_act(mine: list[Call], working: float | None) -> float | None:
    """When the worker first acted on its task: it called ``work`` or made a SendTask* call. The time before,
    from being handed the task to running the learner's first line, is the machine's (a graded answer runs in
    a process of its own, and on a busy machine getting there can take most of a heartbeat window)."""
    acts = [c.at for c in mine] + ([working] if working is not None else [])
    return min(acts, default=None)


def _timer_ran_out_at(run: CallbackRun) -> float | None:
    """When the execution's task timer ran out (its first timeout in the history), or None."""
    return min((row.at for row in run.history if row.type.endswith("TimedOut")
                or row.detail.split(":", 1)[0] in HEARTBEAT_ERRORS), default=None)


def _longest_gap(mine: list[Call], acting: float | None, ran_out: float | None) -> float | None:
    """The longest the worker left Step Functions without word between its first act and its answer. Its beats
    count when taken, and when refused as a dead token once the task's timer had run out (``ran_out``): the
    worker beat in time, the machine was late handing it the task, and ``_in_time`` says so. A beat refused
    before then (a token the worker mangled) is no beat."""
    answer_at = next((c.at for c in mine if c.call in ANSWERS), None)
    if answer_at is None or acting is None:
        return None
    beats = {c.at for c in mine if c.call == "SendTaskHeartbeat" and c.at <= answer_at
             and (c.accepted or (ran_out is not None and c.error_code in DEAD_TOKEN_ERRORS
                                 and c.at >= ran_out - RACED))}
    heard = sorted({acting, answer_at} | beats)
    return max((later - earlier for earlier, later in zip(heard, heard[1:])), default=0.0)
