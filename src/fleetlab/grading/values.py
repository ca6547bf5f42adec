"""Read what a learner's function returned, and write numbers back exactly.

``seconds(value, returned_by=...)`` accepts any real number (int, float,
Fraction, Decimal, numpy integers and floats) and refuses bool, NaN, infinities,
negatives and everything else with a message that says what to return.
``duration(seconds)`` writes a span exactly (``4 d 1 h``, never a rounded
``4.0 days``), so two different spans never read alike in a diagnosis.
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from typing import Any

from ..errors import InvalidInput

_UNITS = (("d", 86_400), ("h", 3_600), ("min", 60))


def seconds(value: Any, *, returned_by: str, example: str = "600") -> float:
    """``value`` as a float number of seconds; InvalidInput (field ``returned_by``) otherwise."""
    kind = type(value).__name__
    if isinstance(value, bool):
        problem = f"returned {value!r}, a bool"
    elif not isinstance(value, (numbers.Real, Decimal)):
        problem = f"returned {value!r}, a {kind}"
    elif math.isnan(value):
        problem = "returned NaN"
    elif math.isinf(value):
        problem = f"returned {float(value)}, which is not a duration"
    elif value < 0:
        problem = f"returned {value!r}, a negative duration"
    else:
        return float(value)
    raise InvalidInput(returned_by, problem, hint=f"return a number of seconds, like {example}")


def duration(span: float) -> str:
    """``4 d 1 h`` for 349200, ``1 min 30 s`` for 90, ``0.5 s``: exact, largest unit first."""
    if span < 0:
        return f"-{duration(-span)}"
    parts = []
    rest = span
    for unit, size in _UNITS:
        whole = int(rest // size)
        if whole:
            parts.append(f"{whole} {unit}")
            rest -= whole * size
    rest = round(rest, 3)
    if rest or not parts:
        parts.append(f"{rest:g} s")
    return " ".join(parts)


def whole_number(value: Any, *, returned_by: str, what: str, example: str) -> int:
    """``value`` as an int when it is a whole number (numpy, 5.0 and Fraction(10, 2) too); InvalidInput otherwise.

    ``what`` names the quantity in the message ("a whole number of replicas").
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, Decimal)):
        problem = f"returned {value!r}, a {type(value).__name__}"
    elif not math.isfinite(value):
        problem = f"returned {value!r}"
    elif value != int(value):
        problem = f"returned {value!r}, which is not a whole number"
    else:
        return int(value)
    raise InvalidInput(returned_by, problem, hint=f"return {what}, like {example}")
