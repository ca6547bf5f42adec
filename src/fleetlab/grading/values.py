"""Read what a learner's function returned, and write numbers back exactly.

``seconds(value, returned_by=...)`` accepts any real number (int, float,
Fraction, Decimal, numpy integers and floats) and refuses bool, NaN, infinities,
negatives and everything else with a message that says what to return.
``duration(seconds)`` (from ``fleetlab.units``) writes a span exactly (``4 d 1 h``,
never a rounded ``4.0 days``), so two different spans never read alike in a diagnosis.
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from typing import Any

from ..errors import InvalidInput
from ..units import duration

__all__ = ["duration", "seconds"]


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
