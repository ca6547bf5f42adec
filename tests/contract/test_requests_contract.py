"""Request and response over queues on every backend: a sync round trip, one output for a twice-delivered input,
and a poison request answered on the receive below maxReceiveCount."""

import pytest
from test_pipeline_contract import quick_model

from fleetlab.composition.requests import RequestReply, RequestStatus, request_queues
from fleetlab.composition.topology import new_prefix
from fleetlab.core.faults import Crash, CrashPoint, FaultPlan
from fleetlab.services.agents.model import FakeModel
from fleetlab.services.sqs import dlq, messages
from fleetlab.services.sqs.worker import Outcome

pytestmark = pytest.mark.contract

MAX_RECEIVE_COUNT = 3


@pytest.fixture
def queues(backend):
    """Fresh queues per test: 60 s visibility on the virtual clock, two seconds of service time on a real one."""
    visibility = 60 if backend.clock.virtual else 2 * backend.clock.scale
    with request_queues(backend, new_prefix("rq"), visibility_timeout=visibility,
                        max_receive_count=MAX_RECEIVE_COUNT) as made:
        yield made


def redelivered(backend, queue, poll):
    """What ``poll`` finds once ``queue``'s visibility timeout has run out: the clock jumps it, or real time passes."""
    if backend.clock.virtual:
        backend.clock.sleep(queue.visibility_timeout + 1)
        return poll()
    return backend.clock.wait_until(poll, timeout=4 * queue.visibility_timeout / backend.clock.scale,
                                    what="the input to come back after its visibility timeout")


def test_a_sync_request_round_trips(backend, queues):
    rr = RequestReply(backend, queues, model=quick_model(backend))
    reply = rr.handler.call("hello", session_id="s-1", timeout=20 * queues.input.visibility_timeout,
                            every=queues.input.visibility_timeout / 4, while_waiting=rr.step)
    assert (reply.status, reply.result["text"]) == (RequestStatus.DONE, f"answer for {reply.request_id}")


def test_a_twice_delivered_input_produces_one_output(backend, queues):
    crash = Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, trace_id="req-twice", receive=1)
    rr = RequestReply(backend, queues, model=quick_model(backend), faults=FaultPlan(crashes=(crash,)))
    rr.handler.submit({"n": 1}, session_id="s-2", request_id="req-twice")
    assert [o.status for o in backend.clock.wait_until(rr.runner.poll_once, timeout=10, what="the input")] == [
        Outcome.CRASHED]
    assert [o.status for o in redelivered(backend, queues.input, rr.runner.poll_once)] == [Outcome.DONE]
    assert rr.ledger.count("req-twice") == 2
    assert messages.held(backend, queues.output.url) == 1
    stored = backend.clock.wait_until(lambda: rr.responder.poll_once(10), timeout=10, what="the output")
    assert [(o.status, o.result) for o in stored] == [(Outcome.DONE, True)]
    assert rr.handler.poll("req-twice").attempt == 1


def test_a_poison_request_is_answered_before_the_queue_would_park_it(backend, queues):
    model = FakeModel(seed=1, latency=quick_model(backend).latency, poison=frozenset({"req-poison"}))
    rr = RequestReply(backend, queues, model=model)
    visibility = queues.input.visibility_timeout
    reply = rr.handler.call("breaks the model", session_id="s-3", request_id="req-poison", timeout=20 * visibility,
                            every=visibility / 4, while_waiting=rr.step)
    assert (reply.status, reply.attempt) == (RequestStatus.FAILED, MAX_RECEIVE_COUNT - 1)
    assert reply.reason.startswith("ERROR_FROM_TARGET: ModelError: req-poison")
    assert [(r.trace_id, r.error_code) for r in dlq.parked(backend, queues.input.dlq_url)] == [
        ("req-poison", "ERROR_FROM_TARGET")]
