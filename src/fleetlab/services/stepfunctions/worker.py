"""The callback worker: take a task message, run the step, answer on the task token.

What a worker holding a task token owes Step Functions (lab 04 grades it):

* a heartbeat (SendTaskHeartbeat) every third of HeartbeatSeconds while the step works;
* SendTaskSuccess with the step's output when the step returns;
* SendTaskFailure with the error name of the ``StepFailed`` the step raised, the
  name the state machine's Catch routes on;
* nothing more when a callback is refused because the token is dead: the task
  timed out, or a retry replaced it with fresh work and a fresh token, and no
  retry of the call will ever be accepted. The message is deleted all the same.

Step Functions timers run in real time on every backend, so the worker and
its heartbeat run on a real clock.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.core.errors import CallbackRefused, InvalidInput, StepFailed, WorkerCrashed
from fleetlab.services.state.claimcheck import ClaimCheck
from fleetlab.services.stepfunctions.machines import INPUT_FIELD, TOKEN_FIELD

DEAD_TOKEN_ERRORS = frozenset({"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"})
"""Codes of a callback refused because its token will never be accepted again."""

SUCCEEDED, FAILED, DROPPED, DIED = "succeeded", "failed", "dropped", "died"


@dataclass(frozen=True)
class Task:
    """One task message: the token to answer on, the step's input, and the message it came in."""

    token: str
    input: Any
    message_id: str
    receipt_handle: str


def read_task(message: dict[str, Any]) -> Task:
    """The task in an SQS message whose body holds a task token (``task_token``, ``TaskToken``, ``token``...).

    Raises InvalidInput naming the body field when there is no token.
    """
    try:
        body = json.loads(message["Body"])
    except json.JSONDecodeError as exc:
        raise InvalidInput("MessageBody", f"is not JSON ({exc.msg})", hint="send a JSON object holding the task token") from exc
    token_keys = [key for key in body if isinstance(body, dict) and key.replace("_", "").lower() in ("tasktoken", "token")]
    if not token_keys:
        raise InvalidInput("MessageBody", "holds no task token",
                           hint=f'pass it in the task\'s Parameters, e.g. "{TOKEN_FIELD}.$": "$$.Task.Token"')
    step_input = body.get(INPUT_FIELD, {k: v for k, v in body.items() if k != token_keys[0]})
    return Task(body[token_keys[0]], step_input, message["MessageId"], message["ReceiptHandle"])


@dataclass(frozen=True)
class Call:
    """One SendTask* call as a worker made it: when it was sent, on which token, and how it ended."""

    at: float
    worker: str
    call: str
    token: str
    accepted: bool
    error_code: str = ""


_RECORDED = {
    "send_task_success": "SendTaskSuccess",
    "send_task_failure": "SendTaskFailure",
    "send_task_heartbeat": "SendTaskHeartbeat",
}


class RecordedSfn:
    """A Step Functions client that logs every SendTask* call into ``log``; everything else passes through.

    ``on_call(call)`` runs after each logged call (a harness may stop a
    runaway worker there). Safe to share between threads.
    """

    def __init__(self, sfn: Any, log: list[Call], clock: Any, worker: str,
                 on_call: Callable[[Call], None] | None = None) -> None:
        self._sfn = sfn
        self._log = log
        self._clock = clock
        self._worker = worker
        self._on_call = on_call
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._sfn, name)
        if name not in _RECORDED:
            return method

        def recorded(**kwargs: Any) -> Any:
            token, sent_at = kwargs.get("taskToken", ""), self._clock.now()
            try:
                response = method(**kwargs)
            except ClientError as exc:
                self._record(sent_at, _RECORDED[name], token, False, exc.response["Error"].get("Code", "unknown"))
                raise
            self._record(sent_at, _RECORDED[name], token, True)
            return response

        return recorded

    def _record(self, sent_at: float, call: str, token: str, accepted: bool, code: str = "") -> None:
        entry = Call(sent_at, self._worker, call, token, accepted, code)
        with self._lock:
            self._log.append(entry)
        if self._on_call is not None:
            self._on_call(entry)


Responder = Callable[[Any, str, Callable[[], Any], "int | None", Any], Any]
"""``respond(sfn, token, work, heartbeat_seconds, clock)``: run ``work`` and answer on ``token``."""


def answer_task(sfn: Any, token: str, work: Callable[[], Any], heartbeat_seconds: int | None, clock: Any) -> str:
    """Run ``work()`` with a heartbeat every third of ``heartbeat_seconds``, then answer on ``token``.

    Returns ``"succeeded"`` or ``"failed"`` (``work`` raised StepFailed), or
    ``"dropped"`` when the answer was refused because the token is dead.
    Raises CallbackRefused when it was refused for another reason.
    """
    beat = clock.every(heartbeat_seconds / 3, lambda: _quietly(sfn.send_task_heartbeat, taskToken=token)) \
        if heartbeat_seconds else contextlib.nullcontext()
    with beat:
        try:
            output, failure = work(), None
        except StepFailed as failed:
            output, failure = None, failed
    try:
        if failure is None:
            sfn.send_task_success(taskToken=token, output=json.dumps(output))
            return SUCCEEDED
        sfn.send_task_failure(taskToken=token, error=failure.error, cause=failure.cause)
        return FAILED
    except ClientError as exc:
        code = exc.response["Error"].get("Code", "unknown")
        if code in DEAD_TOKEN_ERRORS:
            return DROPPED
        raise CallbackRefused(f"Step Functions refused the answer with {code}; the message stays for another try") from exc


answer_task.__fleetlab_answers__ = ("04.callback",)  # the exercise asks the learner to write it: a check refuses it


def _quietly(call: Callable[..., Any], **kwargs: Any) -> None:
    """A heartbeat: a refusal (the token died meanwhile) is logged by the recorder, not raised."""
    with contextlib.suppress(ClientError):
        call(**kwargs)


class CallbackWorker:
    """Takes task messages from ``queue_url`` and answers each through ``respond``.

    The step's output is claim-checked when a ``claimcheck`` is given (past
    its threshold, 256 KiB by default, the output goes to S3 and the answer
    carries a reference). Every SendTask* call lands in ``log``.
    """

    def __init__(
        self,
        backend: Any,
        queue_url: str,
        *,
        clock: Any,
        heartbeat_seconds: int | None = None,
        respond: Responder = answer_task,
        claimcheck: ClaimCheck | None = None,
        name: str = "worker",
        log: list[Call] | None = None,
        on_call: Callable[[Call], None] | None = None,
    ) -> None:
        self.sqs = backend.client("sqs")
        self.queue_url = queue_url
        self.clock = clock
        self.heartbeat_seconds = heartbeat_seconds
        self.respond = respond
        self.claimcheck = claimcheck
        self.name = name
        self.log = log if log is not None else []
        self.sfn = RecordedSfn(backend.client("stepfunctions"), self.log, clock, name, on_call)

    def take(self) -> Task | None:
        """One task from the queue, or None when it is empty right now."""
        messages = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=1).get("Messages", [])
        return read_task(messages[0]) if messages else None

    def handle(self, task: Task, step: Callable[[Any], Any]) -> Any:
        """Run ``step(task.input)`` through ``respond``; delete the message unless the worker died.

        A step that raises WorkerCrashed models a worker that dies holding
        the token: nothing is answered and the message stays on the queue.
        Returns what ``respond`` returned (``"died"`` for a dead worker).
        """

        def work() -> Any:
            output = step(task.input)
            return self.claimcheck.offload_value(f"outputs/{task.message_id}.json", output) if self.claimcheck else output

        try:
            outcome = self.respond(self.sfn, task.token, work, self.heartbeat_seconds, self.clock)
        except WorkerCrashed:
            return DIED
        self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=task.receipt_handle)
        return outcome
