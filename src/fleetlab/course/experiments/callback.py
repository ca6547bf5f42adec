"""The callback experiments of lab 04, run for real on the backend's Step Functions engine.

A ``CallbackBench`` owns a token queue and the state machines made on it.
``run`` starts executions and plays a scripted worker for each task that
reaches the queue: it answers, fails with an error name, works a while (with
or without a heartbeat) and answers late, or dies holding the token. A run
comes back with the execution's status, its history and every callback the
worker made, ready to read as a timeline.

Step Functions timers run in real time on every backend (moto runs them on
threads with real timeouts), so the machines here use TimeoutSeconds and
HeartbeatSeconds of 1 to 3 s, and the bench waits on real time.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.backends.backend import Backend
from fleetlab.backends.resources import Resources
from fleetlab.core.clock import ActorCancelled, RealClock, stop_threads
from fleetlab.core.errors import StepFailed, Timeout, WorkerCrashed
from fleetlab.display.tables import Table
from fleetlab.services.agents.model import FakeModel, LatencyProfile
from fleetlab.services.state.claimcheck import ClaimCheck
from fleetlab.services.stepfunctions import asl, executions, machines
from fleetlab.services.stepfunctions.timeline import Entry, rows, timeline
from fleetlab.services.stepfunctions.worker import (
    DEAD_TOKEN_ERRORS,
    DIED,
    DROPPED,
    FAILED,
    SUCCEEDED,
    Call,
    CallbackWorker,
    Responder,
    Task,
    answer_task,
)

POLL_INTERVAL = 0.05
NUDGE_AFTER = 0.4
"""Seconds after an accepted answer before an execution still RUNNING gets one heartbeat (moto race)."""
STOPPED = "stopped"
WORKER_GRACE = 0.5
"""Seconds a worker still busy when a run's wait ends gets before it is stopped."""
TOKEN_VISIBILITY = 60
"""Real seconds a taken task stays hidden on the token queue: longer than any step the bench plays."""


@dataclass(frozen=True)
class Behaviour:
    """What the worker does with one task: ``answers`` or ``fails`` after ``seconds`` of work, or ``dies``.

    ``calls`` makes the step a series of model calls with a heartbeat between
    two calls (never during one), dying after call ``dies_after`` when set.
    """

    kind: str
    seconds: float = 0.0
    heartbeat: bool = True
    output: Any = None
    error: str = ""
    cause: str = ""
    calls: tuple[float, ...] = ()
    dies_after: int | None = None

    def step(self) -> Callable[[Any], Any]:
        """The step the worker runs: sleeps ``seconds`` of real time, then returns, raises StepFailed or dies."""

        def run(step_input: Any) -> Any:
            if self.kind != "calls":
                RealClock().sleep(self.seconds)
            if self.kind == "fails":
                raise StepFailed(self.error, self.cause)
            if self.kind == "dies":
                raise WorkerCrashed("holding the task token", str(step_input), 1)
            return self.output if self.output is not None else {"answer": "done", "input": step_input}

        return run


def answers(output: Any = None, *, after: float = 0.0, heartbeat: bool = True) -> Behaviour:
    """The worker works ``after`` seconds (beating unless ``heartbeat=False``), then SendTaskSuccess."""
    return Behaviour("answers", after, heartbeat, output)


def fails(error: str, cause: str = "", *, after: float = 0.0) -> Behaviour:
    """The worker works ``after`` seconds, then SendTaskFailure with ``error``."""
    return Behaviour("fails", after, True, error=error, cause=cause)


def dies(*, after: float = 0.0) -> Behaviour:
    """The worker takes the token, works ``after`` seconds, and dies: no answer, the message stays."""
    return Behaviour("dies", after, False)


def calls(*seconds: float, dies_after: int | None = None) -> Behaviour:
    """A step of model calls lasting ``seconds`` each, with a heartbeat after each call; it answers after
    the last one, or dies right after call ``dies_after``."""
    return Behaviour("calls", sum(seconds), False, calls=tuple(seconds), dies_after=dies_after)


def beat_between_calls(behaviour: Behaviour) -> Responder:
    """A responder that beats between the calls of ``behaviour`` (a call cannot beat while it runs)."""

    def respond(sfn: Any, token: str, work: Callable[[], Any], heartbeat_seconds: int | None, clock: Any) -> str:
        for number, seconds in enumerate(behaviour.calls, 1):
            clock.sleep(seconds)
            if behaviour.dies_after == number:
                raise WorkerCrashed(f"after call {number}", token[-6:], 1)
            _ignore_refusal(lambda: sfn.send_task_heartbeat(taskToken=token))
        try:
            sfn.send_task_success(taskToken=token, output=json.dumps(work()))
        except ClientError as exc:  # the execution gave up on the token first (a heartbeat missed under load)
            if exc.response["Error"].get("Code") in DEAD_TOKEN_ERRORS:
                return DROPPED
            raise
        return SUCCEEDED

    return respond


def model_call_steps(count: int, *, calls: tuple[int, int], call_p50: float, call_p95: float, seed: int = 0,
                     digits: int = 1) -> list[list[float]]:
    """``count`` seeded steps, each the list of its model calls' durations in seconds.

    A step makes between ``calls[0]`` and ``calls[1]`` calls (inclusive), each
    log-normal with this p50 and p95: heavy-tailed, like LLM calls. A worker
    can beat between two calls, never during one.
    """
    model = FakeModel(seed=seed, latency=LatencyProfile(call_p50, call_p95))
    lo, hi = calls
    steps = []
    for n in range(count):
        how_many = lo + int(model.latency_of(f"count-{n}") * 1_000) % (hi - lo + 1)
        steps.append([round(model.latency_of(f"step-{n}-call-{k}"), digits) for k in range(how_many)])
    return steps


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile: ``percentile(xs, 0.95)`` is the p95."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


@dataclass
class CallbackRun:
    """One execution and what the worker did for it."""

    label: str
    execution_arn: str
    behaviours: tuple[Behaviour, ...]
    status: str = "RUNNING"
    history: list[executions.HistoryRow] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    heartbeat_seconds: int | None = None
    output: Any = None
    nudges: int = 0
    answered_at: float | None = None

    @property
    def error(self) -> str:
        """The error name of the last failure in the history ('' when nothing failed)."""
        failed = [r for r in self.history if r.type.endswith(("Failed", "TimedOut")) and r.detail]
        return failed[-1].detail.split(":", 1)[0] if failed else ""

    @property
    def states(self) -> list[str]:
        """The states the execution entered, in order."""
        return [r.detail for r in self.history if r.type.endswith("StateEntered")]

    def timeline(self, *, heartbeats: bool = True) -> list[Entry]:
        """History and callbacks on one axis (seconds since the execution started)."""
        return timeline(self.history, self.calls, heartbeats=heartbeats)

    def table(self, *, heartbeats: bool = False) -> Table:
        """The timeline as a table (heartbeats left out unless asked for)."""
        return Table(rows(self.timeline(heartbeats=heartbeats)), title=f"{self.label}: {self.status}")


@dataclass(frozen=True)
class Plan:
    """One execution to run: on which machine, and what the worker does with each of its tasks, in order."""

    machine_arn: str
    behaviours: tuple[Behaviour, ...]


class CallbackBench:
    """A token queue and the callback machines made on it (one ``Resources``); ``close`` removes them all.

    ``respond`` is how the worker answers a task (``answer_task``, or a
    learner's function with the same signature); ``claimcheck`` turns on
    claim-checking of outputs past 256 KiB. Waits run on a real clock:
    Step Functions timers do not follow a virtual one.
    """

    def __init__(self, backend: Backend, prefix: str, *, respond: Responder = answer_task,
                 claimcheck: ClaimCheck | None = None, on_call: Callable[[Call], None] | None = None) -> None:
        self.backend = backend
        self.respond = respond
        self.claimcheck = claimcheck
        self.on_call = on_call
        self.clock = RealClock()
        self.sfn = backend.client("stepfunctions")
        self.made = Resources(backend, prefix)
        self.closed = False
        try:
            # the bench works in real time (Step Functions' timers); the backend's clients take lab time
            hidden = TOKEN_VISIBILITY * backend.clock.scale
            self.queue = self.made.queue("tokens", {"VisibilityTimeout": str(hidden)})
            self._role = self._execution_role()
        except Exception:
            self.made.teardown()
            raise
        self._machines: dict[str, dict[str, Any]] = {}
        self._runs: list[CallbackRun] = []
        atexit.register(self.close)

    @property
    def queue_url(self) -> str:
        return self.queue.url

    def machine(self, name: str, *, definition: dict[str, Any] | None = None, **options: Any) -> str:
        """Create a validated machine: ``definition``, or a callback step on the token queue built from
        ``options`` (timeout_seconds, heartbeat_seconds, retry, catch). Returns its ARN; AslError before creating."""
        built = definition if definition is not None else machines.callback_definition(self.queue_url, **options)
        arn = machines.create_machine(self.made, name, built, role_arn=self._role)
        self._machines[arn] = built
        return arn

    def run(self, machine_arn: str, *behaviours: Behaviour, label: str = "run", wait: float = 10.0) -> CallbackRun:
        """Start one execution and play ``behaviours`` for its tasks, in order, until it ends or ``wait`` s pass."""
        return self.run_together({label: Plan(machine_arn, behaviours)}, wait=wait)[label]

    def run_together(self, plans: Mapping[str, Plan], *, wait: float = 10.0) -> dict[str, CallbackRun]:
        """Start every plan's execution at once and serve their tasks concurrently.

        Returns each run once its execution ended; one still RUNNING after
        ``wait`` real seconds is returned as RUNNING (its worker may have died).
        A worker still busy then is stopped.
        """
        runs = {label: self._start(label, plan) for label, plan in plans.items()}
        workers: list[threading.Thread] = []
        taker = CallbackWorker(self.backend, self.queue_url, clock=self.clock)
        started = time.monotonic()

        def all_ended() -> bool:
            handed = False
            while (task := taker.take()) is not None:  # every task waiting now: its timer is already running
                workers.append(self._serve(task, runs))
                handed = True
            if handed:
                return False
            self._refresh(runs.values(), busy=any(w.is_alive() for w in workers))
            return all(run.status != "RUNNING" for run in runs.values())

        with contextlib.suppress(Timeout):
            self.clock.wait_until(all_ended, timeout=wait, what="the callback runs", interval=POLL_INTERVAL)
        for worker in workers:  # a late worker may still be answering: let it, until the wait is over
            worker.join(max(started + wait - time.monotonic(), 0.0))
        stop_threads(workers, grace=WORKER_GRACE, monotonic=time.monotonic)
        for run in runs.values():
            self._refresh([run], busy=False)
            run.history = executions.history(self.sfn, run.execution_arn)
        return runs

    def stop(self, run: CallbackRun, *, wait: float = 2.0) -> str:
        """StopExecution, then the status once it leaves RUNNING (or still RUNNING after ``wait`` s)."""
        self.sfn.stop_execution(executionArn=run.execution_arn, error="fleetlab.Stopped", cause="stopped by the lab")

        def ended() -> bool:
            self._refresh([run], busy=False)
            return run.status != "RUNNING"

        with contextlib.suppress(Timeout):
            self.clock.wait_until(ended, timeout=wait, what="the stopped execution", interval=POLL_INTERVAL)
        run.history = executions.history(self.sfn, run.execution_arn)
        return run.status

    def close(self) -> list[str]:
        """Free tasks left waiting, then remove the machines, the queue and the role. Idempotent.

        Returns the problems met (empty when clean).
        """
        if self.closed:
            return []
        self.closed = True
        atexit.unregister(self.close)
        for run in self._runs:
            self._release(run)
        return self.made.teardown()

    def _execution_role(self) -> str:
        """A role Step Functions may assume to send to the token queue; emulators accept any role of the account."""
        if self.backend.is_emulated:
            return asl.emulator_role_arn(self.backend.account_id)
        policy = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": self.queue.arn}]}
        return self.made.role("callbacks", service="states.amazonaws.com", policy=policy)

    def _start(self, label: str, plan: Plan) -> CallbackRun:
        execution = executions.start_execution(self.sfn, plan.machine_arn, {"run": label})
        run = CallbackRun(label, execution, tuple(plan.behaviours),
                          heartbeat_seconds=_heartbeat_of(self._machines[plan.machine_arn]))
        self._runs.append(run)
        return run

    def _serve(self, task: Task, runs: Mapping[str, CallbackRun]) -> threading.Thread:
        run = runs[task.input["run"]]
        run.tokens.append(task.token)
        attempt = len(run.tokens)
        behaviour = run.behaviours[min(attempt, len(run.behaviours)) - 1]
        worker = CallbackWorker(
            self.backend, self.queue_url, clock=self.clock, name=f"worker-{attempt}",
            heartbeat_seconds=run.heartbeat_seconds if behaviour.heartbeat else None,
            respond=beat_between_calls(behaviour) if behaviour.calls else self.respond,
            claimcheck=self.claimcheck, log=run.calls, on_call=self.on_call,
        )

        def serve() -> None:
            try:
                outcome = worker.handle(task, behaviour.step())
            except ActorCancelled:  # still busy when the run's wait ended
                outcome = STOPPED
            run.outcomes.append(outcome)
            if outcome in (SUCCEEDED, FAILED):
                run.answered_at = time.monotonic()

        thread = threading.Thread(target=serve, name=f"callback-{run.label}-{attempt}", daemon=True)
        thread.start()
        return thread

    def _refresh(self, runs: Sequence[CallbackRun], *, busy: bool) -> None:
        for run in runs:
            if run.status != "RUNNING":
                continue
            description = self.sfn.describe_execution(executionArn=run.execution_arn)
            run.status = description["status"]
            if "output" in description:
                run.output = json.loads(description["output"])
            if run.status == "RUNNING" and not busy:
                self._nudge_if_missed(run)

    def _nudge_if_missed(self, run: CallbackRun) -> None:
        """moto can miss an answer that lands before it arms the task's heartbeat timer; one more
        heartbeat on the same token wakes it. On AWS the execution has moved on long before this fires."""
        if run.answered_at is None or time.monotonic() - run.answered_at < NUDGE_AFTER or run.nudges:
            return
        run.nudges += 1
        _ignore_refusal(lambda: self.sfn.send_task_heartbeat(taskToken=run.tokens[-1]))

    def _release(self, run: CallbackRun) -> None:
        """A task whose worker died stays open on an emulator until answered; answer it so its thread ends."""
        if DIED in run.outcomes:
            for token in run.tokens:
                _ignore_refusal(lambda: self.sfn.send_task_failure(taskToken=token, error="fleetlab.Closed"))


def _heartbeat_of(definition: dict[str, Any]) -> int | None:
    """The HeartbeatSeconds of the machine's first Task that has one: what its worker must beat within."""
    beats = [s.get("HeartbeatSeconds") for s in definition["States"].values() if s.get("Type") == "Task"]
    return next((b for b in beats if b), None)


def _ignore_refusal(call: Callable[[], Any]) -> None:
    try:
        call()
    except ClientError:
        pass
