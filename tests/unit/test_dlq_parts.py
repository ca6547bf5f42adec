"""Lab 03's library parts on their own: diagnoses, partial batch responses against Powertools,
the attempt budget, the response store, the FIFO progress picture and its widget."""

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

from fleetlab.backends.backend import open_backend
from fleetlab.composition.topology import experiment_queue, experiment_table, new_prefix
from fleetlab.core.errors import EnvelopeError, InvalidInput, ModelError, Timeout, WorkerCrashed
from fleetlab.course.experiments.poison import GroupProgress
from fleetlab.display import failure_classes, group_progress
from fleetlab.display.poison_widgets import progress_at
from fleetlab.services.sqs import dlq
from fleetlab.services.sqs.esm import partial_batch_response
from fleetlab.services.sqs.lastattempt import LastAttempt
from fleetlab.services.state.responses import ResponseStore


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ModelError("throttled", transient=True), "THROTTLING"),
        (ModelError("rejected", transient=False), "ERROR_FROM_TARGET"),
        (EnvelopeError("detail.step", "is missing"), "INVALID_PARAMETER"),
        (Timeout("too slow"), "TIMEOUT"),
        (WorkerCrashed("before_effect", "alert-1", 2), "TIMEOUT"),
        (None, "TIMEOUT"),
        (ValueError("a bug"), "ERROR_FROM_TARGET"),
    ],
)
def test_each_failure_is_classed_as_eventbridge_names_it(error, code):
    assert dlq.classify(error) == code


def test_a_diagnosis_carries_all_six_attributes_and_reads_back():
    diagnosis = dlq.Diagnosis.of(ValueError("x" * 5000), attempts=3, rule_arn="", target_arn="arn:q")
    attributes = diagnosis.message_attributes()
    assert list(attributes) == list(dlq.DIAGNOSTIC_ATTRIBUTES)
    assert all(value["StringValue"] for value in attributes.values())  # SQS refuses an empty value
    assert attributes["RETRY_ATTEMPTS"] == {"DataType": "Number", "StringValue": "2"}
    assert attributes["RULE_ARN"]["StringValue"] == "none: sent to the queue directly"
    assert len(diagnosis.error_message) == dlq.MAX_ERROR_MESSAGE
    assert dlq.Diagnosis.from_message({"MessageAttributes": attributes}) == diagnosis
    assert dlq.Diagnosis.from_message({"Body": "{}"}) is None


def test_a_diagnosis_needs_an_attempt():
    with pytest.raises(InvalidInput, match="attempts"):
        dlq.Diagnosis.of(None, attempts=0, rule_arn="r", target_arn="t")


def test_the_attempt_budget_is_one_below_max_receive_count_and_needs_a_spare_receive():
    target = dlq.DeadLetterTarget("url", "arn")
    budget = LastAttempt(None, target, max_receive_count=4)
    assert (budget.attempts, budget.is_last(2), budget.is_last(3), budget.never_reported(3),
            budget.never_reported(4)) == (3, False, True, False, True)
    with pytest.raises(InvalidInput, match="max_receive_count"):
        LastAttempt(None, target, max_receive_count=1)


def random_batch(rng, size, groups):
    return {"Records": [{"messageId": f"m-{n}", "body": json.dumps({"n": n}),
                         "attributes": {"MessageGroupId": f"g-{rng.randrange(groups)}"}} for n in range(size)]}


def powertools(event, handler, *, fifo, skip_group_on_error=False):
    processor = SqsFifoPartialProcessor(skip_group_on_error=skip_group_on_error) if fifo else BatchProcessor(EventType.SQS)
    try:
        return process_partial_response(event=event, record_handler=lambda record: handler(record.raw_event), processor=processor)
    except BatchProcessingError:
        return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}


@pytest.mark.parametrize(("fifo", "skip"), [(False, False), (True, False), (True, True)],
                         ids=["BatchProcessor", "SqsFifoPartialProcessor", "skip_group_on_error"])
def test_partial_batch_responses_match_powertools_on_a_thousand_seeded_batches(fifo, skip):
    rng = random.Random(3)
    for _ in range(1_000):
        event = random_batch(rng, rng.randint(1, 10), rng.randint(1, 3))
        failing = {n for n in range(10) if rng.random() < 0.25}
        ran: list[int] = []

        def handler(record):
            n = json.loads(record["body"])["n"]
            ran.append(n)
            if n in failing:
                raise ValueError(n)

        ours = partial_batch_response(event, handler, fifo=fifo, skip_group_on_error=skip)
        ours_ran, ran[:] = list(ran), []
        assert ours == powertools(event, handler, fifo=fifo, skip_group_on_error=skip)
        assert ours_ran == ran  # the same records ran, in the same order


def test_on_fifo_the_first_failure_stops_the_batch_and_the_rest_is_reported_in_order():
    event = {"Records": [{"messageId": f"m-{n}", "body": str(n), "attributes": {"MessageGroupId": "g"}}
                         for n in range(1, 11)]}
    ran = []

    def handler(record):
        ran.append(record["body"])
        if record["body"] == "4":
            raise ValueError("step 4 failed")

    assert partial_batch_response(event, handler, fifo=True)["batchItemFailures"] == [
        {"itemIdentifier": f"m-{n}"} for n in range(4, 11)]
    assert ran == ["1", "2", "3", "4"]
    ran.clear()
    assert partial_batch_response(event, handler)["batchItemFailures"] == [{"itemIdentifier": "m-4"}]
    assert ran == [str(n) for n in range(1, 11)]


@pytest.fixture(scope="module")
def backend():
    opened = open_backend("moto")
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def store(backend):
    with experiment_table(backend, new_prefix("rs")) as table:
        yield ResponseStore(backend.client("dynamodb"), table, backend.clock, ttl_seconds=3_600)


def test_a_graceful_error_is_replaced_by_a_later_result_never_the_other_way(store):
    assert store.fail("req-1", "ERROR_FROM_TARGET", "rejected", attempt=3)
    assert not store.fail("req-1", "TIMEOUT", "again", attempt=4)  # the first error stays
    assert store.get("req-1").error_code == "ERROR_FROM_TARGET"
    assert store.answer("req-1", {"text": "ok"}, attempt=1)  # redriven, then done
    assert not store.fail("req-1", "TIMEOUT", "late", attempt=2)
    assert not store.answer("req-1", {"text": "twice"})
    answer = store.get("req-1")
    assert (answer.ok, answer.result, answer.attempt) == (True, {"text": "ok"}, 1)


def test_an_answer_expires_with_its_ttl_and_a_wait_is_bounded(store):
    assert store.answer("req-2", [1, 2])
    store.clock.sleep(store.ttl_seconds + 1)
    assert store.get("req-2") is None
    assert store.fail("req-2", "THROTTLING", "an expired answer counts as none", attempt=1)
    start = store.clock.now()
    with pytest.raises(Timeout, match="req-3") as hung:
        store.wait("req-3", timeout=600, every=60)
    assert hung.value.may_have_happened and 600 <= store.clock.now() - start < 601


def test_the_response_store_refuses_a_ttl_that_is_not_positive(store):
    with pytest.raises(InvalidInput, match="ttl_seconds"):
        ResponseStore(None, "t", store.clock, ttl_seconds=0)


PROGRESS = GroupProgress(finished={"conv-1": [30, 60, 90], "conv-2": [30, 300]}, steps=3, stuck="conv-2-step-2",
                         parked_at=270, horizon=330)


def test_progress_says_which_group_waits_behind_the_stuck_step_until_it_is_parked():
    assert progress_at(PROGRESS, 120) == "at +2 min: conv-1 3/3 · conv-2 1/3 (waiting behind conv-2-step-2)"
    assert progress_at(PROGRESS, 300) == "at +5 min: conv-1 3/3 · conv-2 2/3"


def test_the_figures_are_titled_and_labelled():
    for figure in (failure_classes({"THROTTLING": 6, "UNKNOWN": 1}), group_progress(PROGRESS, at=120)):
        axes = figure.axes[0]
        assert axes.get_title() and axes.get_xlabel() and axes.get_ylabel()


def test_a_peek_at_a_message_moto_will_not_release_leaves_it_hidden_for_the_hold_only(backend):
    """moto refuses any visibility change for a message sent over 12 hours ago; the peek still reads it."""
    with experiment_queue(backend, new_prefix("peek"), visibility_timeout=30) as queue:
        backend.client("sqs").send_message(QueueUrl=queue.url, MessageBody=json.dumps({"n": 1}))
        backend.clock.sleep(13 * 3600)
        assert [json.loads(m["Body"]) for m in dlq.peek(backend, queue.url, hold_seconds=60)] == [{"n": 1}]
        assert dlq.peek(backend, queue.url) == []  # still held: moto would not release it
        backend.clock.sleep(61)
        assert len(dlq.peek(backend, queue.url)) == 1
