"""Request and response over queues, on moto: both client modes, the output's deduplication, the caller answered
on the receive below maxReceiveCount, the typed timeout, and bad input named by field.

The workers are driven one poll at a time (``RequestReply.step``, ``poll_once``); time passes only on the
virtual clock, never as a real sleep.
"""

import pytest

from fleetlab.backends.backend import open_backend
from fleetlab.composition.requests import (
    AGENT_TURN,
    AgentRunner,
    RequestHandler,
    RequestReply,
    RequestStatus,
    request_queues,
)
from fleetlab.composition.topology import new_prefix
from fleetlab.core.errors import InvalidInput, ResponseTimeout, Timeout
from fleetlab.core.faults import Crash, CrashPoint, FaultPlan
from fleetlab.services.agents.model import FakeModel, LatencyProfile
from fleetlab.services.sqs import dlq, messages
from fleetlab.services.sqs.queues import WorkQueue
from fleetlab.services.sqs.worker import Outcome

VISIBILITY = 60
MAX_RECEIVE_COUNT = 3
QUICK = LatencyProfile(p50=2.0, p95=5.0)


@pytest.fixture(scope="module")
def backend():
    opened = open_backend("moto")
    yield opened
    opened.close()


@pytest.fixture
def queues(backend):
    with request_queues(backend, new_prefix("rr"), visibility_timeout=VISIBILITY,
                        max_receive_count=MAX_RECEIVE_COUNT) as made:
        yield made


def pipeline(backend, queues, **options):
    return RequestReply(backend, queues, model=options.pop("model", FakeModel(seed=7, latency=QUICK)), **options)


def stored_responses(backend, queues):
    return backend.client("dynamodb").scan(TableName=queues.table, Select="COUNT")["Count"]


def test_a_sync_request_round_trips(backend, queues):
    rr = pipeline(backend, queues)
    reply = rr.handler.call({"question": "status?"}, session_id="s-1", timeout=600, every=5, while_waiting=rr.step)
    assert reply.status == RequestStatus.DONE
    assert reply.result["text"] == f"answer for {reply.request_id}"
    assert reply.attempt == 1
    assert [h.name for h in rr.tracer.timeline(reply.request_id)].count("output_sent") == 1
    assert messages.held(backend, queues.input.url) == messages.held(backend, queues.output.url) == 0
    assert stored_responses(backend, queues) == 1


def test_an_async_request_returns_its_id_at_once_and_is_pollable(backend, queues):
    rr = pipeline(backend, queues)
    request_id = rr.handler.submit("summarise the ticket", session_id="s-2")
    assert rr.handler.poll(request_id).status == RequestStatus.PENDING
    assert messages.held(backend, queues.input.url) == 1
    outcomes = rr.step()
    assert [(o.trace_id, o.status) for o in outcomes] == [(request_id, Outcome.DONE), (request_id, Outcome.DONE)]
    reply = rr.handler.poll(request_id)
    assert (reply.status, reply.result["text"], reply.reason) == (RequestStatus.DONE, f"answer for {request_id}", "")


def test_a_caller_retrying_under_the_same_request_id_enqueues_it_once(backend, queues):
    rr = pipeline(backend, queues)
    first = rr.handler.submit("hello", session_id="s-3", request_id="req-retried")
    again = rr.handler.submit("hello", session_id="s-3", request_id="req-retried")
    assert first == again == "req-retried"
    assert messages.held(backend, queues.input.url) == 1


def test_a_duplicated_input_delivery_produces_one_output_and_one_stored_response(backend, queues):
    crash = Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, trace_id="req-dup", receive=1)
    rr = pipeline(backend, queues, faults=FaultPlan(crashes=(crash,)))
    rr.handler.submit({"n": 1}, session_id="s-4", request_id="req-dup")

    crashed = rr.runner.poll_once()  # the output is sent, then the runner dies before deleting the input
    assert [(o.status, o.receive_count) for o in crashed] == [(Outcome.CRASHED, 1)]
    backend.clock.sleep(VISIBILITY + 1)
    redone = rr.runner.poll_once()  # SQS delivers the input again: the model runs again, the output is dropped
    assert [(o.status, o.receive_count) for o in redone] == [(Outcome.DONE, 2)]

    assert rr.ledger.count("req-dup") == 2  # what the deduplication does not cover: the agent ran twice
    assert [e.kind for e in rr.ledger.effects("req-dup")] == [AGENT_TURN, AGENT_TURN]
    assert messages.held(backend, queues.output.url) == 1
    stored = rr.responder.poll_once(max_messages=10)
    assert [(o.status, o.result) for o in stored] == [(Outcome.DONE, True)]
    assert rr.responder.poll_once(max_messages=10) == []
    assert stored_responses(backend, queues) == 1
    reply = rr.handler.poll("req-dup")
    assert (reply.status, reply.attempt) == (RequestStatus.DONE, 1)  # the first run's output is the one stored


def test_a_poison_request_is_answered_with_a_failure_on_the_receive_below_max_receive_count(backend, queues):
    rr = pipeline(backend, queues, model=FakeModel(seed=7, latency=QUICK, poison=frozenset({"req-poison"})))

    def step_and_let_failures_come_back():
        rr.step()
        backend.clock.sleep(VISIBILITY)

    reply = rr.handler.call("this input breaks the model", session_id="s-5", request_id="req-poison",
                            timeout=10 * VISIBILITY, every=1, while_waiting=step_and_let_failures_come_back)
    assert reply.status == RequestStatus.FAILED
    assert reply.attempt == MAX_RECEIVE_COUNT - 1 == rr.runner.receive_limit
    assert reply.reason.startswith("ERROR_FROM_TARGET: ModelError: req-poison: the model rejects this input")
    hops = [h.name for h in rr.tracer.timeline("req-poison")]
    assert (hops.count("received"), hops.count("failed"), hops.count("parked")) == (2, 1, 1)
    assert messages.held(backend, queues.input.url) == 0
    parked = dlq.parked(backend, queues.input.dlq_url)
    assert [(r.trace_id, r.error_code, r.diagnosis.retry_attempts) for r in parked] == [
        ("req-poison", "ERROR_FROM_TARGET", 1)]
    assert rr.ledger.count("req-poison") == 0 and stored_responses(backend, queues) == 1


def test_when_the_last_attempt_never_reports_the_spare_receive_answers_the_caller(backend, queues):
    crashes = tuple(Crash(CrashPoint.BEFORE_EFFECT, trace_id="req-crashy", receive=n)
                    for n in range(1, MAX_RECEIVE_COUNT))
    rr = pipeline(backend, queues, faults=FaultPlan(crashes=crashes))
    rr.handler.submit("hi", session_id="s-12", request_id="req-crashy")
    seen = []
    for _ in range(MAX_RECEIVE_COUNT):
        seen += [(o.status, o.receive_count) for o in rr.runner.poll_once()]
        backend.clock.sleep(VISIBILITY + 1)
    assert seen == [(Outcome.CRASHED, 1), (Outcome.CRASHED, 2), (Outcome.PARKED, 3)]
    reply = rr.handler.poll("req-crashy")
    assert (reply.status, reply.attempt) == (RequestStatus.FAILED, MAX_RECEIVE_COUNT)
    assert reply.reason == "TIMEOUT: the last attempt never reported"
    assert messages.held(backend, queues.input.url) == messages.held(backend, queues.output.url) == 0
    assert rr.ledger.count("req-crashy") == 0


def test_a_poison_request_does_not_hold_up_another_session(backend, queues):
    rr = pipeline(backend, queues, model=FakeModel(seed=7, latency=QUICK, poison=frozenset({"req-bad"})))
    rr.handler.submit("bad", session_id="s-6", request_id="req-bad")
    rr.handler.submit("good", session_id="s-7", request_id="req-good")
    outcomes = rr.step()
    assert sorted((o.trace_id, o.status) for o in outcomes) == [
        ("req-bad", Outcome.FAILED), ("req-good", Outcome.DONE), ("req-good", Outcome.DONE)]
    assert (rr.handler.poll("req-good").status, rr.handler.poll("req-bad").status) == (
        RequestStatus.DONE, RequestStatus.PENDING)


def test_a_sync_call_with_no_answer_in_time_raises_the_typed_timeout_and_is_answered_later(backend, queues):
    rr = pipeline(backend, queues)
    start = backend.clock.now()
    with pytest.raises(ResponseTimeout) as hung:
        rr.handler.call("nobody is running", session_id="s-8", request_id="req-slow", timeout=30, every=5)
    assert isinstance(hung.value, Timeout) and hung.value.may_have_happened
    assert (hung.value.request_id, hung.value.timeout) == ("req-slow", 30)
    assert "req-slow" in str(hung.value) and "30 s" in str(hung.value)
    assert 30 <= backend.clock.now() - start < 31
    assert rr.handler.poll("req-slow").status == RequestStatus.PENDING
    rr.step()
    assert rr.handler.poll("req-slow").status == RequestStatus.DONE


@pytest.mark.parametrize("payload", [None, "", "   ", {}, []])
def test_an_empty_payload_is_refused_naming_the_field(backend, queues, payload):
    rr = pipeline(backend, queues)
    with pytest.raises(InvalidInput, match="payload") as refused:
        rr.handler.submit(payload, session_id="s-9")
    assert refused.value.field == "payload"
    assert messages.held(backend, queues.input.url) == 0


@pytest.mark.parametrize("timeout", [0, -1.5])
def test_a_timeout_that_is_not_positive_is_refused_before_anything_is_sent(backend, queues, timeout):
    rr = pipeline(backend, queues)
    with pytest.raises(InvalidInput, match="timeout") as refused:
        rr.handler.call("hi", session_id="s-10", timeout=timeout)
    assert refused.value.field == "timeout"
    assert messages.held(backend, queues.input.url) == 0


@pytest.mark.parametrize(("field", "ids"), [
    ("session_id", {"session_id": ""}),
    ("session_id", {"session_id": "has space"}),
    ("session_id", {"session_id": "s" * 129}),
    ("request_id", {"session_id": "s-11", "request_id": "req/1"}),
    ("request_id", {"session_id": "s-11", "request_id": "r" * 129}),
])
def test_an_id_sqs_would_refuse_is_refused_naming_the_field(backend, queues, field, ids):
    rr = pipeline(backend, queues)
    with pytest.raises(InvalidInput) as refused:
        rr.handler.submit("hi", **ids)
    assert refused.value.field == field and "allowed" in str(refused.value)


@pytest.mark.parametrize("limit", [MAX_RECEIVE_COUNT, MAX_RECEIVE_COUNT + 1, 0])
def test_a_receive_limit_outside_one_below_max_receive_count_is_refused(backend, queues, limit):
    with pytest.raises(InvalidInput, match=rf"receive_limit: must be within 1\.\.{MAX_RECEIVE_COUNT - 1}") as refused:
        pipeline(backend, queues, receive_limit=limit)
    assert refused.value.field == "receive_limit"


def test_the_receive_limit_defaults_to_one_below_max_receive_count(backend, queues):
    assert pipeline(backend, queues).runner.receive_limit == MAX_RECEIVE_COUNT - 1
    assert pipeline(backend, queues, receive_limit=1).runner.receive_limit == 1


def test_a_standard_queue_is_refused_naming_which(backend, queues):
    standard = WorkQueue("input", "https://sqs.example/123/plain", "arn:plain", "", "", VISIBILITY, MAX_RECEIVE_COUNT)
    with pytest.raises(InvalidInput, match="input_queue"):
        RequestHandler(backend, standard, None)
    with pytest.raises(InvalidInput, match="output_queue"):
        AgentRunner(backend, queues.input, standard, None)


def test_request_queues_need_room_for_one_attempt(backend):
    with pytest.raises(InvalidInput, match="max_receive_count"), request_queues(
            backend, new_prefix("rr"), visibility_timeout=VISIBILITY, max_receive_count=1):
        pass


@pytest.mark.parametrize(("field", "wait"), [("timeout", {"timeout": 0, "every": 5}),
                                             ("every", {"timeout": 30, "every": 0})])
def test_the_response_store_wait_refuses_a_timeout_or_interval_that_is_not_positive(backend, queues, field, wait):
    rr = pipeline(backend, queues)
    with pytest.raises(InvalidInput) as refused:
        rr.responses.wait("req-any", **wait)
    assert refused.value.field == field
