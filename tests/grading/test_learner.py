import asyncio

import pytest

from fleetlab.course.grading import learner

from fleetlab.course.grading.learner import (
    answer_codes,
    describe_learner_error,
    is_unfinished,
    learner_frames,
    misfit,
    raised_by_learner_stub,
)
from fleetlab.course.grading.results import MAX_TEXT


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
    assert raised_by_learner_stub(caught(raise_stub), answer_codes(raise_stub))


def test_not_implemented_from_a_library_is_an_ordinary_error():
    error = caught(call_an_unemulated_api)
    assert not raised_by_learner_stub(error, answer_codes(call_an_unemulated_api))
    frames = learner_frames(error, answer_codes(call_an_unemulated_api))
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
    said = describe_learner_error(error, learner_frames(error, answer_codes(move_the_rest)))
    assert said.startswith("your code raised NotImplementedError: The start_message_move_task action")
    assert "this backend does not emulate that call, though AWS has it" in said


def in_a_library_file(source, name):
    """The function ``name`` defined by ``source``, its code claiming to be one of fleetlab's own files."""
    namespace = {}
    exec(compile(source, learner.__file__, "exec"), namespace)
    return namespace[name]


def test_an_answers_code_is_the_learners_whatever_file_it_claims():
    compiled = in_a_library_file("def answer(x):\n    return 1 / 0\n", "answer")

    def renamed(x):
        raise NotImplementedError

    renamed.__code__ = renamed.__code__.replace(co_filename=learner.__file__)
    error = caught(lambda: compiled(1))
    frames = learner_frames(error, answer_codes(compiled))
    assert [frame.name for frame in frames] == ["answer"]
    assert describe_learner_error(error, frames) == "your code raised ZeroDivisionError: division by zero (in answer, line 2)"
    assert raised_by_learner_stub(caught(lambda: renamed(1)), answer_codes(renamed))


def test_code_the_answer_calls_is_its_own_and_code_outside_it_is_not():
    helper = in_a_library_file("def helper(x):\n    raise KeyError(x)\n", "helper")

    def answer(x):
        return helper(x)

    error, outside = caught(lambda: answer(1)), caught(lambda: helper(1))
    here = [__file__]  # this file plays the harness's
    assert [frame.name for frame in learner_frames(error, answer_codes(answer), here)] == ["answer"]
    assert learner_frames(outside, answer_codes(answer), here) == []
    assert learner_frames(error, answer_codes({"no": "code"}), here) == []
    # where no frame runs the answer's code, a frame of a learner's file (a notebook's cell) still counts
    assert [frame.name for frame in learner_frames(outside, answer_codes(answer))] == ["caught", "<lambda>"]


def test_the_codes_of_an_answer_reach_its_methods_items_and_helpers_but_not_the_library():
    def helper(x):
        return [y for y in x]

    def answer(x):
        return helper(x)

    class Store:
        def put(self, key):
            return key

        @property
        def size(self):
            return 0

    def explains(error):
        return describe_learner_error(error, [])

    codes = answer_codes({"handle": answer, "store": Store, "explain": explains})
    assert {answer.__code__, helper.__code__, Store.put.__code__, Store.size.fget.__code__, explains.__code__} <= codes
    assert any(code.co_name == "<listcomp>" for code in codes)
    assert describe_learner_error.__code__ not in codes


def test_an_answer_with_other_parameters_is_told_the_ones_the_exercise_asks_for():
    def triage(dlq_url):
        return {}

    def triage_more(sqs, dlq_url, verbose=False, *rest):
        return {}

    said = misfit(triage, "triage", "sqs, dlq_url")
    assert said.startswith("your triage takes (dlq_url), but the exercise asks for triage(sqs, dlq_url)")
    assert misfit(triage_more, "triage", "sqs, dlq_url") == ""
    assert misfit(print, "triage", "sqs, dlq_url") == ""  # a builtin's parameters are for its cases to show


def test_an_exception_text_is_cut_in_the_diagnosis():
    def shouts():
        raise ValueError("x" * 30_000_000)

    error = caught(shouts)
    said = describe_learner_error(error, learner_frames(error, answer_codes(shouts)))
    assert len(said) < MAX_TEXT + 200
    assert "characters cut]" in said
