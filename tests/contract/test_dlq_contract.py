"""Dead-letter behaviours every backend must show: diagnosed parking, triage that moves nothing,
redrive that loses and duplicates nothing, canaries, the catch-all rule, the caller's answer,
and partial batch responses that match Powertools' own processors."""

import json
import random

import pytest
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from test_pipeline_contract import poll_wait, quick_model, step

from fleetlab.backends.fidelity import probe
from fleetlab.composition.pipeline import Fleet
from fleetlab.composition.topology import add_unrouted, experiment_queue, new_prefix
from fleetlab.course.experiments.poison import drained
from fleetlab.services.agents.model import FakeModel
from fleetlab.services.sqs import dlq, messages, redrive
from fleetlab.services.sqs.esm import BatchPoller, partial_batch_response
from fleetlab.services.state.responses import ResponseStore

pytestmark = pytest.mark.contract


def parking_fleet(backend, topology, **model):
    """A fleet that gives up on the last attempt and answers callers, with a quick model."""
    responses = ResponseStore(backend.client("dynamodb"), topology.table_name, backend.clock)
    fleet = Fleet(backend, topology, model=FakeModel(seed=1, latency=quick_model(backend).latency, **model),
                  responses=responses, last_attempt=True)
    return fleet, responses


def parked_in(backend, dlq_url):
    return {record.trace_id: record for record in dlq.parked(backend, dlq_url)}


def test_a_step_that_fails_every_attempt_is_parked_with_every_diagnostic_attribute(backend, topology):
    queue = topology.queue("researcher")  # maxReceiveCount = 3: the workers give up on receive 2
    fleet, responses = parking_fleet(backend, topology, poison=frozenset({"alert-9"}))
    fleet.enqueue(step(9))
    report = fleet.run(advance=queue.visibility_timeout + 1, idle_polls=4)
    assert [(o.receive_count, o.status) for o in report.outcomes] == [(1, "failed"), (2, "parked")]
    raw = messages.receive(backend, queue.dlq_url, wait_seconds=poll_wait(backend))
    assert set(raw[0]["MessageAttributes"]) == set(dlq.DIAGNOSTIC_ATTRIBUTES)
    diagnosis = dlq.Diagnosis.from_message(raw[0])
    assert diagnosis == dlq.Diagnosis(
        "ERROR_FROM_TARGET", "ModelError: alert-9: the model rejects this input every time", 1,
        topology.rule_arns["researcher"], queue.arn,
    )
    answer = responses.get("alert-9")
    assert (answer.ok, answer.error_code, answer.attempt) == (False, "ERROR_FROM_TARGET", 2)
    assert messages.held(backend, queue.url) == 0


def test_a_provider_outage_longer_than_the_budget_is_parked_as_throttling(backend, topology):
    queue = topology.queue("researcher")
    fleet, _ = parking_fleet(backend, topology, down_until=backend.clock.now() + 100 * queue.visibility_timeout)
    fleet.enqueue(step(1), step(2))
    fleet.run(advance=queue.visibility_timeout + 1, idle_polls=4)
    parked = parked_in(backend, queue.dlq_url)
    assert {trace: record.error_code for trace, record in parked.items()} == {"alert-1": "THROTTLING",
                                                                              "alert-2": "THROTTLING"}
    assert all(record.diagnosis.exhausted_retry_condition == "MaximumRetryAttempts" for record in parked.values())


def test_a_message_that_is_not_an_envelope_is_parked_as_invalid_parameter(backend, topology):
    queue = topology.queue("coder")
    backend.client("sqs").send_message(QueueUrl=queue.url, MessageBody=json.dumps({"not": "an envelope"}))
    fleet, _ = parking_fleet(backend, topology)
    fleet.drain(advance=queue.visibility_timeout + 1)
    (record,) = dlq.parked(backend, queue.dlq_url)
    assert record.error_code == "INVALID_PARAMETER"
    assert record.diagnosis.rule_arn == topology.rule_arns["coder"]  # the queue's own rule: it is the route


def test_triage_counts_every_class_and_leaves_every_record_where_it_was(backend, topology):
    queue = topology.queue("coder")
    target = topology.dead_letter_target("coder")
    classes = ["THROTTLING"] * 11 + ["ERROR_FROM_TARGET"] * 9 + ["TIMEOUT"] * 3
    for n, code in enumerate(classes):
        diagnosis = dlq.Diagnosis(code, "boom", 2, target.rule_arn, target.target_arn)
        message = {"MessageId": f"m-{n}", "Body": json.dumps(step(n).detail())}
        dlq.dead_letter(backend, target, message, diagnosis)
    backend.client("sqs").send_message(QueueUrl=queue.dlq_url, MessageBody=json.dumps(step(99).detail()))
    counts = dlq.triage(backend, queue.dlq_url)
    assert counts == {"THROTTLING": 11, "ERROR_FROM_TARGET": 9, "TIMEOUT": 3, "UNKNOWN": 1}
    visible = backend.client("sqs").get_queue_attributes(
        QueueUrl=queue.dlq_url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert (visible["ApproximateNumberOfMessages"], visible["ApproximateNumberOfMessagesNotVisible"]) == ("24", "0")


@pytest.mark.parametrize("parked_count", [1, 10, 23])
def test_the_move_loop_redrives_n_messages_losing_and_duplicating_nothing(backend, parked_count):
    sqs = backend.client("sqs")
    with experiment_queue(backend, new_prefix("ct"), visibility_timeout=60, max_receive_count=3) as queue:
        bodies = [json.dumps(step(n).detail()) for n in range(parked_count)]
        for body in bodies:
            sqs.send_message(QueueUrl=queue.dlq_url, MessageBody=body,
                             MessageAttributes={"ERROR_CODE": {"DataType": "String", "StringValue": "THROTTLING"}})
        assert redrive.move(backend, queue) == parked_count
        moved = dlq.peek(backend, queue.url)
        assert sorted(m["Body"] for m in moved) == sorted(bodies)  # each once: nothing lost, nothing twice
        assert {m["MessageAttributes"]["ERROR_CODE"]["StringValue"] for m in moved} == {"THROTTLING"}
        assert messages.held(backend, queue.dlq_url) == 0


def test_redrive_uses_the_move_task_where_the_backend_has_it_and_loses_nothing(backend):
    sqs = backend.client("sqs")
    with experiment_queue(backend, new_prefix("ct"), visibility_timeout=60, max_receive_count=3) as queue:
        bodies = [json.dumps(step(n).detail()) for n in range(12)]
        for body in bodies:
            sqs.send_message(QueueUrl=queue.dlq_url, MessageBody=body)
        result = redrive.redrive(backend, queue)
        native = not probe(backend).diverges(redrive.MOVE_TASK_FEATURE)
        assert result.method == ("StartMessageMoveTask" if native else "receive-send-delete")
        moved = backend.clock.wait_until(lambda: len(found := dlq.peek(backend, queue.url)) >= 12 and found,
                                         timeout=10, what="the moved messages")
        assert (result.moved, sorted(m["Body"] for m in moved)) == (12, sorted(bodies))


def test_the_move_loop_keeps_a_fifo_message_group(backend):
    sqs = backend.client("sqs")
    with experiment_queue(backend, new_prefix("ct"), visibility_timeout=60, max_receive_count=3, fifo=True) as queue:
        for n in range(3):
            sqs.send_message(QueueUrl=queue.dlq_url, MessageBody=f"step {n}", MessageGroupId="conv-1")
        assert redrive.move(backend, queue) == 3
        got = sqs.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=10, AttributeNames=["All"],
                                  WaitTimeSeconds=poll_wait(backend))["Messages"]
        assert [(m["Body"], m["Attributes"]["MessageGroupId"]) for m in got] == [
            ("step 0", "conv-1"), ("step 1", "conv-1"), ("step 2", "conv-1")]


@pytest.mark.parametrize("fixed", [False, True], ids=["canary-fails-again", "canary-healthy"])
def test_a_canary_redrive_stops_when_the_canary_fails_again(backend, topology, fixed):
    queue = topology.queue("researcher")
    fleet, _ = parking_fleet(backend, topology, poison=frozenset(f"alert-{n}" for n in range(7)))
    fleet.enqueue(*(step(n) for n in range(7)))
    fleet.run(advance=queue.visibility_timeout + 1, idle_polls=4)
    assert messages.held(backend, queue.dlq_url) == 7
    model = FakeModel(seed=1, latency=quick_model(backend).latency,
                      poison=frozenset() if fixed else frozenset(f"alert-{n}" for n in range(7)))
    worker = Fleet(backend, topology, model=model, last_attempt=True, ledger=fleet.ledger)
    result = redrive.canary_redrive(backend, queue, canary=2,
                                    process=lambda: drained(worker.drain(advance=queue.visibility_timeout + 1)))
    assert result.canary == 2 and result.stopped is not fixed
    if fixed:
        worker.drain(advance=queue.visibility_timeout + 1)
        assert fleet.ledger.summary(expected={f"alert-{n}" for n in range(7)}).exactly_once
        assert messages.held(backend, queue.dlq_url) == 0
    else:
        assert result.canary_result == (0, 2) and fleet.ledger.effects() == []
        assert messages.held(backend, queue.dlq_url) == 7  # the canary is back, the rest never moved


def test_the_catch_all_parks_an_unroutable_step_and_the_run_says_so(backend, topology):
    fleet = Fleet(backend, topology, model=quick_model(backend))
    url = add_unrouted(topology)
    assert add_unrouted(topology) == url
    fleet.submit(step(1, "researcher"), step(2, "summarizer"))
    report = fleet.run(settle_timeout=10)
    assert report.unrouted == ["alert-2"] and report.count("done") == 1
    assert fleet.unrouted() == [{"trace_id": "alert-2", "agent_class": "summarizer",
                                 "why": "no rule routes agent_class 'summarizer' (rules exist for coder, researcher)"}]


def test_a_caller_gets_a_graceful_error_before_the_queue_would_park_the_step(backend, topology):
    queue = topology.queue("researcher")
    fleet, responses = parking_fleet(backend, topology, poison=frozenset({"alert-5"}))
    fleet.enqueue(step(5), step(6))
    fleet.run(advance=queue.visibility_timeout + 1, idle_polls=4)
    failed, done = responses.get("alert-5"), responses.get("alert-6")
    assert (failed.ok, failed.attempt, failed.error_code) == (False, queue.max_receive_count - 1, "ERROR_FROM_TARGET")
    assert (done.ok, done.result["trace_id"]) == (True, "alert-6")


def lambda_event(backend, queue):
    """One real batch of the queue, as the Lambda SQS event Powertools and fleetlab both read."""
    events = []
    window = 0 if backend.clock.virtual else 2  # a real service may hand out a batch over several receives
    BatchPoller(backend, queue.url, queue.arn, lambda event, context: events.append(event) or {}, batch_size=10,
                batching_window=window).poll_once()
    return events[0]


def powertools_failures(event, handler, *, fifo, skip_group_on_error=False):
    processor = SqsFifoPartialProcessor(skip_group_on_error=skip_group_on_error) if fifo else BatchProcessor(EventType.SQS)
    try:
        return process_partial_response(event=event, record_handler=lambda record: handler(record.raw_event),
                                        processor=processor)
    except BatchProcessingError:  # every record failed: Powertools fails the invocation, the whole batch returns
        return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_partial_batch_responses_match_powertools_processors_on_real_batches(backend, fifo):
    rng = random.Random(20261201)
    sqs = backend.client("sqs")
    with experiment_queue(backend, new_prefix("ct"), visibility_timeout=60, fifo=fifo) as queue:
        for n in range(10):
            group = {"MessageGroupId": f"conv-{n % 3}"} if fifo else {}
            sqs.send_message(QueueUrl=queue.url, MessageBody=json.dumps({"trace_id": f"alert-{n}"}), **group)
        event = lambda_event(backend, queue)
        assert len(event["Records"]) == 10
        for _ in range(30):
            failing = {f"alert-{n}" for n in range(10) if rng.random() < 0.3}

            def handler(record):
                if json.loads(record["body"])["trace_id"] in failing:
                    raise ValueError("unparseable")

            for skip in ([False, True] if fifo else [False]):
                ours = partial_batch_response(event, handler, fifo=fifo, skip_group_on_error=skip)
                assert ours == powertools_failures(event, handler, fifo=fifo, skip_group_on_error=skip), failing


class FailingSends:
    """The SQS client, except that its ``fail_on``-th SendMessage is refused (the service is unavailable)."""

    def __init__(self, sqs, fail_on):
        self._sqs, self.sends, self.fail_on = sqs, 0, fail_on

    def send_message(self, **params):
        self.sends += 1
        if self.sends == self.fail_on:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "ServiceUnavailable"}}, "SendMessage")
        return self._sqs.send_message(**params)

    def __getattr__(self, name):
        return getattr(self._sqs, name)


def test_a_move_that_fails_part_way_loses_nothing(backend, monkeypatch):
    sqs = backend.client("sqs")
    with experiment_queue(backend, new_prefix("ct"), visibility_timeout=60, max_receive_count=3) as queue:
        bodies = [json.dumps(step(n).detail()) for n in range(7)]
        for body in bodies:
            sqs.send_message(QueueUrl=queue.dlq_url, MessageBody=body)
        failing = FailingSends(sqs, fail_on=3)
        real_client = backend.client
        monkeypatch.setattr(backend, "client", lambda service: failing if service == "sqs" else real_client(service))
        with pytest.raises(Exception, match="ServiceUnavailable"):
            redrive.move(backend, queue)
        monkeypatch.undo()
        moved = [m["Body"] for m in dlq.peek(backend, queue.url)]
        still_parked = [m["Body"] for m in dlq.peek(backend, queue.dlq_url)]
        assert len(moved) == 2 and sorted(moved + still_parked) == sorted(bodies)  # each exactly once, somewhere
