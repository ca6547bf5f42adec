"""The callback worker's pure parts: reading a task message, and the timeline of a run."""

import json

import pytest

from fleetlab.core.errors import InvalidInput
from fleetlab.services.stepfunctions.executions import HistoryRow
from fleetlab.services.stepfunctions.timeline import rows, timeline, token_labels
from fleetlab.services.stepfunctions.worker import Call, read_task


def message(body):
    return {"Body": body if isinstance(body, str) else json.dumps(body), "MessageId": "m-1", "ReceiptHandle": "r-1"}


@pytest.mark.parametrize("key", ["task_token", "TaskToken", "taskToken", "token"])
def test_the_token_is_found_under_any_usual_name(key):
    task = read_task(message({key: "tok-1", "input": {"step": 7}}))
    assert (task.token, task.input, task.receipt_handle) == ("tok-1", {"step": 7}, "r-1")


def test_without_an_input_field_the_rest_of_the_body_is_the_input():
    assert read_task(message({"TaskToken": "tok-1", "step": 7})).input == {"step": 7}


@pytest.mark.parametrize(("body", "problem"), [({"input": {}}, "holds no task token"), ("not json", "is not JSON")])
def test_a_message_without_a_token_names_the_body(body, problem):
    with pytest.raises(InvalidInput, match=problem) as refused:
        read_task(message(body))
    assert refused.value.field == "MessageBody"


def history(*events):
    return [HistoryRow(n, at, kind, detail) for n, (at, kind, detail) in enumerate(events, 1)]


def test_a_timeline_merges_history_and_calls_numbers_attempts_and_names_tokens():
    rows_ = history((100.0, "ExecutionStarted", ""), (100.0, "TaskStateEntered", "RunStep"),
                    (100.0, "TaskScheduled", "sqs"), (101.0, "TaskTimedOut", "States.Timeout: "),
                    (102.0, "TaskScheduled", "sqs"), (102.5, "TaskSucceeded", "sqs"))
    calls = [Call(101.5, "worker-1", "SendTaskSuccess", "aaa", False, "TaskTimedOut"),
             Call(102.2, "worker-2", "SendTaskHeartbeat", "bbb", True),
             Call(102.4995, "worker-2", "SendTaskSuccess", "bbb", True)]
    entries = timeline(rows_, calls)
    assert [e.event for e in entries] == ["ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskTimedOut",
                                          "SendTaskSuccess", "TaskScheduled", "SendTaskHeartbeat", "SendTaskSuccess",
                                          "TaskSucceeded"]
    assert [e.detail for e in entries if e.event == "TaskScheduled"] == ["RunStep, attempt 1", "RunStep, attempt 2"]
    assert entries[4].detail == "token 1, refused: TaskTimedOut" and not entries[4].ok
    assert token_labels(calls) == {"aaa": "token 1", "bbb": "token 2"}
    assert rows(entries)[3] == {"at": "+1.00 s", "who": "Step Functions", "event": "TaskTimedOut",
                                "detail": "States.Timeout: "}
    assert "SendTaskHeartbeat" not in [e.event for e in timeline(rows_, calls, heartbeats=False)]


def test_an_answer_stamped_within_the_millisecond_of_its_effect_comes_first():
    """History times are cut to the millisecond, so the success it caused may carry an earlier stamp."""
    rows_ = history((10.0, "ExecutionStarted", ""), (10.575, "TaskSucceeded", "sqs"))
    entries = timeline(rows_, [Call(10.5755, "worker-1", "SendTaskSuccess", "t", True)])
    assert [e.event for e in entries] == ["ExecutionStarted", "SendTaskSuccess", "TaskSucceeded"]
