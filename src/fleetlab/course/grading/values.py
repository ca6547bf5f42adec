"""Read what a learner's function returned, and write numbers back exactly.

``seconds(value, returned_by=...)`` accepts any real number (int, float,
Fraction, Decimal, numpy integers and floats) and refuses bool, NaN, infinities,
negatives and everything else with a message that says what to return.
``duration(seconds)`` (from ``fleetlab.core.units``) writes a span exactly (``4 d 1 h``,
never a rounded ``4.0 days``), so two different spans never read alike in a diagnosis.
``whole_number(value, ...)`` reads a count (replicas, messages per replica) the same way.
"""

from __future__ import annotations

import math
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.core.numbers import real, whole
from fleetlab.core.units import duration

__all__ = ["duration", "seconds", "whole_number"]


def seconds(value: Any, *, returned_by: str, example: str = "600") -> float:
    """``value`` as a float number of seconds; InvalidInput (field ``returned_by``) otherwise."""
    number = real(value)
    if number is None:
        problem = f"returned {value!r}, a {type(value).__name__}"
    elif math.isnan(number):
        problem = "returned NaN"
    elif math.isinf(number):
        problem = f"returned {number}, which is not a duration"
    elif number < 0:
        problem = f"returned {value!r}, a negative duration"
    else:
        return number
    raise InvalidInput(returned_by, problem, hint=f"return a number of seconds, like {example}")


def whole_number(value: Any, *, returned_by: str, what: str, example: str) -> int:
    """``value`` as an int when it is a whole number (numpy, 5.0 and Fraction(10, 2) too); InvalidInput otherwise.

    ``what`` names the quantity in the message ("a whole number of replicas").
    """
    number = real(value)
    if number is None:
        problem = f"returned {value!r}, a {type(value).__name__}"
    elif not math.isfinite(number):
        problem = f"returned {value!r}"
    elif (count := whole(value)) is None:
        problem = f"returned {value!r}, which is not a whole number"
    else:
        return count
    raise InvalidInput(returned_by, problem, hint=f"return {what}, like {example}")
