from decimal import Decimal
from fractions import Fraction

import numpy
import pytest

from fleetlab.composition.scaling.scaler import QueueAttributes
from fleetlab.core.errors import InvalidInput
from fleetlab.core.numbers import real, whole
from fleetlab.course.checks.lab03.triage import _read_counts
from fleetlab.course.grading.values import duration, seconds, whole_number
from fleetlab.services.events.retry import RetryPolicy
from fleetlab.services.state.window import DuplicateSources


@pytest.mark.parametrize(
    "value", [600, 630.5, numpy.int64(600), numpy.float32(630.5), numpy.uint16(600), Fraction(1261, 2), Decimal("630.5")]
)
def test_any_real_number_of_seconds_is_accepted(value):
    assert seconds(value, returned_by="choose_visibility") == float(value)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (True, "returned True, a bool"),
        (numpy.True_, "a bool"),
        (float("nan"), "returned NaN"),
        (float("inf"), "not a duration"),
        (-1, "returned -1, a negative duration"),
        ("900", "returned '900', a str"),
        (None, "returned None, a NoneType"),
    ],
)
def test_anything_else_is_refused_naming_the_function_and_what_to_return(value, problem):
    with pytest.raises(InvalidInput) as refused:
        seconds(value, returned_by="choose_visibility", example="630")
    assert refused.value.field == "choose_visibility"
    assert problem in str(refused.value) and "return a number of seconds, like 630" in str(refused.value)


@pytest.mark.parametrize(
    ("span", "words"),
    [
        (4 * 86_400 + 3_600, "4 d 1 h"),
        (4 * 86_400, "4 d"),
        (90, "1 min 30 s"),
        (0.5, "0.5 s"),
        (0, "0 s"),
        (86_400 + 1, "1 d 1 s"),
        (-3_600, "-1 h"),
    ],
)
def test_durations_are_written_exactly(span, words):
    assert duration(span) == words


def test_two_different_spans_never_read_alike():
    assert duration(4 * 86_400 + 3_600) != duration(4 * 86_400)


@pytest.mark.parametrize("value", [5, 5.0, numpy.int64(5), numpy.float64(5.0), numpy.uint8(5), Fraction(10, 2),
                                   Decimal("5")])
def test_a_whole_float_and_a_numpy_integer_are_whole_numbers_read_as_a_python_int(value):
    count = whole_number(value, returned_by="desired_replicas", what="a whole number of replicas", example="5")
    assert count == 5 and type(count) is int
    assert type(seconds(value, returned_by="choose_visibility")) is float


@pytest.mark.parametrize("value", [5.5, numpy.float64(5.5), True, "5", float("inf")])
def test_anything_else_is_not_a_whole_number_and_the_message_says_what_to_return(value):
    with pytest.raises(InvalidInput) as refused:
        whole_number(value, returned_by="desired_replicas", what="a whole number of replicas", example="5")
    assert refused.value.field == "desired_replicas" and "return a whole number of replicas, like 5" in str(refused.value)


def test_the_answer_readers_of_labs_01_to_06_and_the_value_classes_share_one_reading():
    assert (real(numpy.int64(3)), whole(numpy.float64(3.0)), whole(3.5), real(numpy.True_)) == (3.0, 3, None, None)
    assert _read_counts({"THROTTLING": numpy.int64(11), "UNKNOWN": 2.0}) == {"THROTTLING": 11, "UNKNOWN": 2}
    with pytest.raises(InvalidInput, match="each count is a whole number of records"):
        _read_counts({"THROTTLING": 1.5})


def test_the_value_classes_a_learner_builds_in_labs_05_and_06_keep_python_numbers():
    policy = RetryPolicy(numpy.int64(3), numpy.float64(3_600.0))
    assert (policy.attempts, policy.max_age) == (3, 3_600) and type(policy.max_age) is int
    sources = DuplicateSources(retry_window=numpy.int64(3_600), retention=numpy.float64(4.5 * 86_400))
    assert (type(sources.retry_window), type(sources.retention)) == (int, float)
    assert QueueAttributes(visible=numpy.int64(30), in_flight=12.0) == QueueAttributes(visible=30, in_flight=12)
    with pytest.raises(InvalidInput, match="MaximumRetryAttempts: must be a whole number, got 2.5"):
        RetryPolicy(2.5, 3_600)
