"""Numbers as a learner writes them, made Python's own.

A whole float (``900.0``), a numpy integer or float, a Fraction and a Decimal
are numbers; a bool is not. ``real`` gives a float, ``whole`` an int and
``plain`` either, as the number was written (None when the value is no such
number), so a value class that keeps what they return holds the same value in
a notebook and in the grader (whose codec turns numpy numbers into floats).
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from typing import Any


def real(value: Any) -> float | None:
    """``value`` as a float when it is a real number other than a bool (NaN and infinities included); else None."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, Decimal)):
        return None
    return float(value)


def plain(value: Any) -> int | float | None:
    """``value`` as Python's own number: an int for an integer (numpy's too), a float for any other real number;
    else None."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return real(value)


def whole(value: Any) -> int | None:
    """``value`` as an int when it is a finite real number equal to a whole number (``5.0``, ``numpy.int64(5)``);
    else None."""
    number = real(value)
    if number is None or not math.isfinite(number) or value != int(value):
        return None
    return int(value)
