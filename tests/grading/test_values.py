from decimal import Decimal
from fractions import Fraction

import numpy
import pytest

from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading.values import duration, seconds


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
