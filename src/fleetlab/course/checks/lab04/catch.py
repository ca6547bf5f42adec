"""Check ``04.catch``: the Retry and Catch of the callback task, as ASL JSON, must keep the execution
from failing when the worker stops beating, whichever name the backend gives the missed heartbeat
(AWS: States.HeartbeatTimeout; moto and LocalStack: States.Timeout).

The harness inserts the block into a real callback machine (validated as AWS
would first), plays workers that die or stall, and then checks the block
routes both names by AWS's rules: a catcher on States.Timeout routes
States.HeartbeatTimeout too (AWS's error-name reference defines States.Timeout
as a task past TimeoutSeconds or silent past HeartbeatSeconds), so a Catch on
States.Timeout alone passes; one on States.HeartbeatTimeout alone does not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fleetlab.core.errors import AslError
from fleetlab.course.checks.lab04.common import AWS_HEARTBEAT_ERROR, HEARTBEAT_ERRORS, refused_task
from fleetlab.course.experiments.callback import Behaviour, CallbackBench, answers, dies
from fleetlab.course.grading.registry import Case, CaseOutcome, Diagnosis, register
from fleetlab.services.stepfunctions import asl, machines

RETRY_BUDGET_SECONDS = 8  # retries this lab can wait out: Step Functions timers run in real time


@dataclass(frozen=True)
class Outage(Case):
    """The task's timers, and what the worker does with each attempt's token."""

    timeout_seconds: int
    heartbeat_seconds: int
    behaviours: tuple[Behaviour, ...]


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
    points=3,
    public=[Outage("the first worker dies holding the token; a retry's worker would answer", 3, 1,
                   (dies(), answers(after=0.1)))],
    hidden_cases=2,
    timeout=20,
    real_time=True,
    answer="catch_block",
)
def check_catch(answer: Any, case: Outage, ctx: Any) -> CaseOutcome:
    try:
        block = read_block(answer)
    except AslError as unreadable:
        not_json = isinstance(unreadable.__cause__, json.JSONDecodeError)
        return CaseOutcome(False, str(unreadable), "not-json" if not_json else "not-a-retry-catch-block")
    if not block.get("Catch"):
        return CaseOutcome(False, "your block has no Catch: once the retries run out, the missed heartbeat fails the "
                                  f"execution; add a Catch whose Next is {machines.RECOVER_STATE!r}", "no-catch")
    targets = {machines.RECOVER_STATE, machines.DONE_STATE}
    for index, catcher in enumerate(block["Catch"] if isinstance(block["Catch"], list) else []):
        if isinstance(catcher, dict) and catcher.get("Next") not in targets:
            return CaseOutcome(False, f"Catch[{index}].Next: {catcher.get('Next')!r} is not a state of this machine; "
                                      f"route the error to {machines.RECOVER_STATE!r}", "routes-to-no-such-state")
    wait = worst_case_wait(block, case)
    if wait > RETRY_BUDGET_SECONDS:
        return CaseOutcome(False, f"with a dead worker your Retry keeps the execution waiting {wait:g} s before the "
                                  f"Catch runs; in this lab keep it under {RETRY_BUDGET_SECONDS} s "
                                  "(IntervalSeconds 1, MaxAttempts 1 or 2)", "retries-too-long")
    bench = CallbackBench(ctx.backend, ctx.fresh_prefix())
    try:
        machine = bench.machine("catch", timeout_seconds=case.timeout_seconds,
                                heartbeat_seconds=case.heartbeat_seconds, **{k.lower(): v for k, v in block.items()})
        # the run returns as soon as the execution ends: waiting out the check's whole budget costs a right
        # answer nothing, and keeps a loaded emulator's late timer from reading as the block's mistake
        run = bench.run(machine, *case.behaviours, label="outage", wait=ctx.remaining())
    except AslError as refused:
        return CaseOutcome(False, f"Step Functions would refuse the task with your block: {refused_task(refused)}",
                           "block-step-functions-refuses")
    finally:
        bench.close()
    if run.status != "SUCCEEDED":
        return CaseOutcome(False, f"on {ctx.backend.name} the task failed with {run.error or '?'} and your block did "
                                  f"not route it: the execution ended {run.status}"
                                  + _unlisted(block, run.error), _failed_run_mistake(block))
    for error in HEARTBEAT_ERRORS:
        index = asl.first_match(block["Catch"], error)
        if index is None:
            missing = _missing_name(error, ctx)
            return CaseOutcome(False, missing, missing.mistake)
        if block["Catch"][index].get("Next") != machines.RECOVER_STATE:
            return CaseOutcome(False, f"Catch[{index}] routes {error} to {block['Catch'][index].get('Next')!r}: the "
                                      "execution ends SUCCEEDED as if the dead worker's step were done; route a missed "
                                      f"heartbeat to {machines.RECOVER_STATE!r}", "routes-to-the-success-state")
    return CaseOutcome(True, f"the execution survived ({' -> '.join(run.states)}), and both names are caught")


def _unlisted(block: dict[str, Any], error: str) -> str:
    if error and asl.first_match(block["Catch"], error) is None:
        return f" (your Catch does not list {error})"
    return ""


def _failed_run_mistake(block: dict[str, Any]) -> str:
    """The key of an execution the block let fail: its Catch does not cover States.Timeout, or it failed anyway."""
    if asl.first_match(block["Catch"], "States.Timeout") is None:
        return "states-timeout-not-caught"
    return "execution-failed"


def _missing_name(error: str, ctx: Any) -> Diagnosis:
    """Why a Catch that let the execution survive here would not on another backend, with the mistake's key."""
    if error == AWS_HEARTBEAT_ERROR:
        return Diagnosis(f"the execution survived on {ctx.backend.name}, but your Catch catches neither {error} nor "
                         f"States.Timeout: on AWS a missed heartbeat fails the task with {error} (a catcher on either "
                         "name routes it), and the execution would fail there", "heartbeat-timeout-not-caught")
    return Diagnosis(f"the execution survived on {ctx.backend.name}, but your Catch does not list {error}: moto and "
                     f"LocalStack report a missed heartbeat as {error}, and TimeoutSeconds raises it on AWS too",
                     "states-timeout-not-caught")
