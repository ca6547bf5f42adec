import asyncio

import pytest

from fleetlab.course.grading.learner import (
    describe_learner_error,
    is_unfinished,
    learner_frames,
    raised_by_learner_stub,
)


def stub(x): ...


def stub_with_docstring(x):
    """Explain the exercise."""
    ...


def started(x):
    y = x + 1
    ...
    return y


class StubStore:
    def put(self, key): ...


class DoneStore:
    def put(self, key):
        return key


@pytest.mark.parametrize(
    "answer", [..., {"event bus": ...}, [1, ...], stub, stub_with_docstring, StubStore, StubStore().put]
)
def test_stubs_are_unfinished(answer):
    assert is_unfinished(answer)


@pytest.mark.parametrize("answer", [None, 0, {"event bus": "control"}, started, DoneStore, lambda x: ..., print])
def test_finished_answers_are_not(answer):
    assert not is_unfinished(answer)


def raise_stub():
    raise NotImplementedError


def call_an_unemulated_api():
    asyncio.AbstractEventLoop().run_forever()  # the standard library raises NotImplementedError here


def caught(fn):
    try:
        fn()
    except BaseException as exc:
        return exc
    raise AssertionError("expected an exception")


def test_a_stub_raising_not_implemented_is_unfinished_work():
    assert raised_by_learner_stub(caught(raise_stub))


def test_not_implemented_from_a_library_is_an_ordinary_error():
    error = caught(call_an_unemulated_api)
    assert not raised_by_learner_stub(error)
    frames = learner_frames(error)
    assert [frame.name for frame in frames][-1] == "call_an_unemulated_api"
    assert describe_learner_error(error, frames).startswith(
        "your code raised NotImplementedError (in call_an_unemulated_api, line"
    )


def test_a_call_moto_does_not_emulate_is_explained_as_the_backends_gap():
    def move_the_rest():
        import boto3
        from moto import mock_aws

        with mock_aws():
            sqs = boto3.client("sqs", region_name="us-east-1")
            sqs.start_message_move_task(SourceArn="arn:aws:sqs:us-east-1:123456789012:dlq")

    error = caught(move_the_rest)
    said = describe_learner_error(error, learner_frames(error))
    assert said.startswith("your code raised NotImplementedError: The start_message_move_task action")
    assert "this backend does not emulate that call, though AWS has it" in said


def test_files_named_as_library_are_not_the_learners():
    error = caught(raise_stub)
    assert learner_frames(error, [__file__]) == []
    assert not raised_by_learner_stub(error, [__file__])
