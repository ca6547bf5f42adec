"""Request and response over queues: request handler -> input queue -> agent runner -> output queue -> response handler.

The request handler puts a caller's request on a FIFO input queue: its
message group is the session, so one conversation's turns run in order, and
its deduplication id is the request id, so a caller retrying the same id
within SQS's five-minute window enqueues it once. The agent runner runs the
fake model and sends the result to a FIFO output queue under the input's own
deduplication id: an input that SQS delivers twice runs the model twice, but
only one output gets through. The response handler writes each output into
lab 03's response store, where the caller finds it, in one of two ways:

* REST sync: ``RequestHandler.call`` submits and waits for the answer; with
  none in time it raises ResponseTimeout naming the request and the timeout;
* REST async: ``RequestHandler.submit`` returns the request id at once and
  ``RequestHandler.poll`` says pending, done (with the result) or failed (with why).

The runner's receive limit is one below the input queue's maxReceiveCount:
on that receive a failure is final, so the runner writes a failure response
(the caller is answered, never left hanging), parks the request on the
input's DLQ with its diagnosis and deletes it, before SQS would park it
silently. The receive left over is the spare: when the last attempt never
reported (its runner crashed), the next receive gives up at once.

What the output's deduplication does not cover: the model runs again on a
redelivery (the ledger counts each run), and SQS remembers a deduplication
id for five minutes only. moto forgets it sooner, as soon as the first
output is received and deleted (the fidelity table's
``sqs.fifo_dedup_after_delete``, docs/fidelity.md).
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.backends.resources import Resources
from fleetlab.composition.topology import IDEMPOTENCY_KEYS
from fleetlab.core.errors import EnvelopeError, InvalidInput
from fleetlab.core.faults import FaultPlan
from fleetlab.core.ledger import EffectsLedger
from fleetlab.core.status import Status
from fleetlab.core.tracing import Tracer
from fleetlab.services.agents.model import FakeModel
from fleetlab.services.events.envelope import Envelope
from fleetlab.services.sqs.delivery import Delivery
from fleetlab.services.sqs.lastattempt import LastAttempt
from fleetlab.services.sqs.queues import WorkQueue
from fleetlab.services.sqs.worker import HandleOutcome, QueueWorker
from fleetlab.services.state.responses import Response, ResponseStore

GROUP_ID = re.compile(r"[!-~]{1,128}")
"""A FIFO message group id: 1 to 128 printable ASCII characters (letters, digits, punctuation)."""

REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
"""A request id: a deduplication id (at most 128 characters) that is also an envelope's trace id."""

AGENT_TURN = "agent_turn"
"""The ledger's kind for one run of the model on a request: a redelivered request runs twice."""


class RequestStatus(Status):
    """Where a request stands, as a caller polling it sees it."""

    PENDING = "pending"
    """No answer yet: queued, running, or being retried."""
    DONE = "done"
    """Answered with a result."""
    FAILED = "failed"
    """Answered with a failure: the runner gave up on it (its reason says why)."""


@dataclass(frozen=True)
class Reply:
    """What a caller gets for a request: pending, done with its ``result``, or failed with its ``reason``."""

    request_id: str
    status: RequestStatus
    result: Any = None
    reason: str = ""
    attempt: int = 0
    """The receive of the input that produced the answer (0 while pending)."""

    @classmethod
    def of(cls, request_id: str, response: Response | None) -> Reply:
        """The reply a stored ``response`` (None: no answer yet) makes."""
        if response is None:
            return cls(request_id, RequestStatus.PENDING)
        if response.ok:
            return cls(request_id, RequestStatus.DONE, result=response.result, attempt=response.attempt)
        return cls(request_id, RequestStatus.FAILED, reason=f"{response.error_code}: {response.error_message}",
                   attempt=response.attempt)


@dataclass(frozen=True)
class RequestQueues:
    """The FIFO input and output queues (each with its FIFO DLQ) and the response table of one pipeline."""

    input: WorkQueue
    output: WorkQueue
    table: str


@contextlib.contextmanager
def request_queues(
    backend: Backend, prefix: str, *, visibility_timeout: int, max_receive_count: int
) -> Iterator[RequestQueues]:
    """Throwaway request queues and response table, deleted when the block ends.

    Both queues are FIFO with explicit deduplication ids (no content-based
    deduplication) and park on their DLQ after ``max_receive_count``
    receives. Raises InvalidInput naming ``max_receive_count`` below 2: the
    runner's receive limit sits one below it, so it needs room for one attempt.
    """
    if max_receive_count < 2:
        raise InvalidInput("max_receive_count", f"must be at least 2, got {max_receive_count}",
                           hint="the runner gives up one receive below it, so 2 leaves one attempt")
    fifo = {"FifoQueue": "true"}
    with Resources(backend, prefix) as made:
        queues = {}
        for what in ("input", "output"):
            queue, dlq = made.queue_with_dlq(
                f"{what}.fifo", max_receive_count=max_receive_count,
                attributes={**fifo, "VisibilityTimeout": str(visibility_timeout)}, dlq_attributes=fifo,
            )
            queues[what] = WorkQueue(what, queue.url, queue.arn, dlq.url, dlq.arn, queue.visibility_timeout,
                                     max_receive_count)
        yield RequestQueues(queues["input"], queues["output"], made.table("responses", **IDEMPOTENCY_KEYS))


class RequestHandler:
    """The front door: puts requests on the input queue and reads their answers from the response store.

    ``agent_class`` names the agent on each request's envelope. Raises
    InvalidInput naming ``input_queue`` when it is not a FIFO queue.
    """

    def __init__(
        self, backend: Backend, input_queue: WorkQueue, responses: ResponseStore, *, agent_class: str = "agent",
        tracer: Tracer | None = None, name: str = "request-handler",
    ) -> None:
        _require_fifo("input_queue", input_queue)
        self.backend = backend
        self.sqs = backend.client("sqs")
        self.input_queue = input_queue
        self.responses = responses
        self.agent_class = agent_class
        self.tracer = tracer if tracer is not None else Tracer()
        self.name = name

    def submit(self, payload: Any, *, session_id: str, request_id: str | None = None) -> str:
        """REST async: enqueue ``payload`` in ``session_id``'s message group and return its request id at once.

        A fresh request id unless ``request_id`` is given: a caller retrying
        under the same id within SQS's five-minute window enqueues the request
        once. Raises InvalidInput (nothing sent) naming ``payload`` when it is
        empty, ``session_id`` or ``request_id`` when SQS would refuse it as an id.
        """
        _require_payload(payload)
        _require_id("session_id", session_id, GROUP_ID, "1-128 printable ASCII characters, no spaces")
        request_id = new_request_id() if request_id is None else request_id
        _require_id("request_id", request_id, REQUEST_ID, "1-128 of letters, digits and . _ : -")
        request = Envelope(trace_id=request_id, conversation_id=session_id, step=0, agent_class=self.agent_class,
                           payload=payload)
        self.sqs.send_message(
            QueueUrl=self.input_queue.url, MessageBody=json.dumps(request.detail()),
            MessageGroupId=session_id, MessageDeduplicationId=request_id,
        )
        self.tracer.record(request_id, "requested", at=self.backend.clock.now(), component=self.name,
                           session=session_id)
        return request_id

    def poll(self, request_id: str) -> Reply:
        """REST async: the request as it stands now: pending, done with its result, or failed with why."""
        return Reply.of(request_id, self.responses.get(request_id))

    def call(
        self, payload: Any, *, session_id: str, timeout: float, every: float = 1.0, request_id: str | None = None,
        while_waiting: Callable[[], Any] | None = None,
    ) -> Reply:
        """REST sync: submit, then wait up to ``timeout`` seconds of the clock for the answer (done or failed).

        Looks every ``every`` seconds; ``while_waiting()`` runs before each look
        (on one thread: ``RequestReply.step``, so the wait drives the workers).
        Raises ResponseTimeout naming the request id and ``timeout`` when no
        answer comes in time (the request may still be answered: poll it), and
        InvalidInput (nothing sent) naming ``timeout`` or ``every`` when it is
        not positive, or as ``submit`` does.
        """
        for field, value in (("timeout", timeout), ("every", every)):
            if value <= 0:
                raise InvalidInput(field, f"must be a positive number of seconds, got {value}")
        request_id = self.submit(payload, session_id=session_id, request_id=request_id)
        answer = self.responses.wait(request_id, timeout=timeout, every=every, while_waiting=while_waiting)
        return Reply.of(request_id, answer)


class AgentRunner:
    """Input queue -> the fake model -> output queue, giving up on the receive limit.

    The output goes out under the input's message group and deduplication
    id, so a redelivered input cannot produce a second output (within SQS's
    window). ``receive_limit`` (by default the input queue's maxReceiveCount
    - 1) is the receive on which a failure is final: the runner writes the
    failure response, parks the request on the input's DLQ with its
    diagnosis and deletes it. Each model run is an ``agent_turn`` in the
    ledger, under the request id. Raises InvalidInput naming
    ``receive_limit`` outside 1..maxReceiveCount-1 (at maxReceiveCount no
    receive is left for the failure response when the last attempt never
    reports: SQS parks the request silently and the caller hangs), or
    ``input_queue`` / ``output_queue`` when it is not FIFO.
    """

    def __init__(
        self, backend: Backend, input_queue: WorkQueue, output_queue: WorkQueue, responses: ResponseStore, *,
        model: FakeModel | None = None, receive_limit: int | None = None, ledger: EffectsLedger | None = None,
        tracer: Tracer | None = None, faults: FaultPlan | None = None, name: str = "agent-runner",
    ) -> None:
        _require_fifo("input_queue", input_queue)
        _require_fifo("output_queue", output_queue)
        self.receive_limit = _receive_limit(receive_limit, input_queue.max_receive_count)
        self.backend = backend
        self.sqs = backend.client("sqs")
        self.output_queue = output_queue
        self.model = model or FakeModel()
        self.tracer = tracer if tracer is not None else Tracer()
        # LastAttempt's budget is one below the count it is given: receive_limit attempts, then give up.
        budget = LastAttempt(backend, input_queue.dead_letter_target(), max_receive_count=self.receive_limit + 1,
                             responses=responses)
        self.worker = QueueWorker(
            backend, input_queue.url, self.run, name=name, ledger=ledger, tracer=self.tracer, faults=faults,
            heartbeat_every=input_queue.visibility_timeout / 3, visibility_timeout=input_queue.visibility_timeout,
            last_attempt=budget,
        )

    def poll_once(self, max_messages: int = 1) -> list[HandleOutcome]:
        """Receive up to ``max_messages`` requests and run each: how each ended (done, failed, parked, ...)."""
        return self.worker.poll_once(max_messages)

    def run(self, delivery: Delivery) -> dict[str, Any]:
        """One request: run the model, then send its result to the output queue; the result.

        Raises what the model raises (the request stays on the queue for
        another receive), or EnvelopeError for a body that is not a request.
        """
        request = delivery.envelope
        if request is None:
            raise delivery.envelope_error or EnvelopeError("body", "is not a request envelope")
        answer = self.model.invoke(request.trace_id, delivery.receive_count, self.backend.clock)
        delivery.record_effect(kind=AGENT_TURN)
        result = {"text": answer.text, "latency_s": round(answer.latency, 3)}
        output = Envelope(trace_id=request.trace_id, conversation_id=request.conversation_id, step=request.step,
                          agent_class=request.agent_class,
                          payload={"result": result, "attempt": delivery.receive_count})
        self.sqs.send_message(
            QueueUrl=self.output_queue.url, MessageBody=json.dumps(output.detail()),
            MessageGroupId=delivery.attributes["MessageGroupId"],
            MessageDeduplicationId=delivery.attributes["MessageDeduplicationId"],
        )
        self.tracer.record(request.trace_id, "output_sent", at=self.backend.clock.now(), component=delivery.worker,
                           dedup_id=delivery.attributes["MessageDeduplicationId"])
        return result


class ResponseHandler:
    """Output queue -> the response store: each output becomes its request's answer.

    The store keeps a request's first result: an output for an answered
    request changes nothing (handling it returns False). A failed write
    leaves the output on its queue for another receive.
    """

    def __init__(
        self, backend: Backend, output_queue: WorkQueue, responses: ResponseStore, *,
        tracer: Tracer | None = None, faults: FaultPlan | None = None, name: str = "response-handler",
    ) -> None:
        self.backend = backend
        self.responses = responses
        self.tracer = tracer if tracer is not None else Tracer()
        self.worker = QueueWorker(backend, output_queue.url, self.answer, name=name, tracer=self.tracer,
                                  faults=faults)

    def poll_once(self, max_messages: int = 1) -> list[HandleOutcome]:
        """Receive up to ``max_messages`` outputs and store each: how each ended (its result: written or not)."""
        return self.worker.poll_once(max_messages)

    def answer(self, delivery: Delivery) -> bool:
        """Store one output as its request's answer; False when the request was already answered."""
        output = delivery.envelope
        if output is None:
            raise delivery.envelope_error or EnvelopeError("body", "is not an output envelope")
        written = self.responses.answer(output.trace_id, output.payload["result"], attempt=output.payload["attempt"])
        self.tracer.record(output.trace_id, "answered" if written else "answer_kept", at=self.backend.clock.now(),
                           component=delivery.worker)
        return written


class RequestReply:
    """The whole request/response pipeline on one ``RequestQueues``, sharing one store, ledger and tracer.

    ``handler`` takes requests, ``runner`` runs them (``faults`` is its
    crash plan), ``responder`` stores the answers; ``step`` polls the two
    workers once each, so a test or a notebook drives the pipeline one
    deterministic step at a time.
    """

    def __init__(
        self, backend: Backend, queues: RequestQueues, *, model: FakeModel | None = None,
        receive_limit: int | None = None, faults: FaultPlan | None = None, ledger: EffectsLedger | None = None,
        tracer: Tracer | None = None, ttl_seconds: float = 86_400,
    ) -> None:
        self.queues = queues
        self.ledger = ledger if ledger is not None else EffectsLedger()
        self.tracer = tracer if tracer is not None else Tracer()
        self.responses = ResponseStore(backend.client("dynamodb"), queues.table, backend.clock,
                                       ttl_seconds=ttl_seconds)
        self.handler = RequestHandler(backend, queues.input, self.responses, tracer=self.tracer)
        self.runner = AgentRunner(backend, queues.input, queues.output, self.responses, model=model,
                                  receive_limit=receive_limit, ledger=self.ledger, tracer=self.tracer, faults=faults)
        self.responder = ResponseHandler(backend, queues.output, self.responses, tracer=self.tracer)

    def step(self, max_messages: int = 10) -> list[HandleOutcome]:
        """One poll of the runner, then one of the response handler (up to ``max_messages`` each): what they did."""
        return self.runner.poll_once(max_messages) + self.responder.poll_once(max_messages)


def new_request_id() -> str:
    """A fresh request id."""
    return f"req-{uuid.uuid4().hex}"


def _receive_limit(limit: int | None, max_receive_count: int) -> int:
    """``limit``, by default one below ``max_receive_count``; InvalidInput outside 1..max_receive_count-1."""
    if limit is None:
        limit = max_receive_count - 1
    if not 1 <= limit < max_receive_count:
        raise InvalidInput(
            "receive_limit", f"must be within 1..{max_receive_count - 1}, got {limit}",
            hint=f"the input queue parks a request silently once it has been received {max_receive_count} times "
            "(maxReceiveCount): the runner gives up below that, keeping a spare receive to answer the caller "
            "when its last attempt never reported",
        )
    return limit


def _require_fifo(field: str, queue: WorkQueue) -> None:
    if not queue.url.endswith(".fifo"):
        raise InvalidInput(field, f"{queue.url} is not a FIFO queue",
                           hint="request/response needs FIFO queues: message groups per session, deduplication ids")


def _require_payload(payload: Any) -> None:
    empty = payload.strip() == "" if isinstance(payload, str) else payload in (None, {}, [])
    if empty:
        raise InvalidInput("payload", f"is empty ({payload!r})",
                           hint="a request carries the caller's input: a non-empty string, object, list or number")


def _require_id(field: str, value: Any, pattern: re.Pattern[str], allowed: str) -> None:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise InvalidInput(field, f"{value!r} is not a valid id", hint=f"allowed: {allowed}")
