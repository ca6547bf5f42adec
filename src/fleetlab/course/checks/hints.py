"""Likely causes a check can tell from what it saw, added to a diagnosis: a
number given in minutes, hours or days where seconds were asked for, and a
Python error from the learner's code whose cause the harness knows (a string
AWS returned, added to a number; a field a record does not carry).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fleetlab.course.grading import learner

UNITS = (("minutes", 60), ("hours", 3_600), ("days", 86_400))
"""The units a learner may give a duration in by mistake, with their size in seconds."""


def unit_slip(given: float, low: float, high: float) -> str:
    """`` ; read as days, 7 would be right: give seconds`` when ``given`` times a unit falls in [low, high]; else ""."""
    if given <= 0:
        return ""
    for name, size in UNITS:
        if low <= given * size <= high:
            return (f"; read as {name}, {given:g} would be right: give seconds "
                    f"({given:g} {name} = {given * size:,.0f} s)")
    return ""


def explained_error(exc: BaseException, answer: Any, harness_file: str, cause: Callable[[BaseException], str]) -> str:
    """The learner's error (raised through ``answer``) as the runner words it, with ``cause(exc)`` after it; ""
    when the error is not the learner's own or ``cause`` has nothing to say (the runner then reports it as usual)."""
    said = cause(exc)
    frames = learner.learner_frames(exc, learner.answer_codes(answer), [harness_file])
    if not said or not frames:
        return ""
    return f"{learner.describe_learner_error(exc, frames)}: {said}"


def added_a_string(exc: BaseException) -> bool:
    """True for the TypeError of arithmetic or a comparison between a string and a number."""
    text = str(exc)
    return isinstance(exc, TypeError) and ("'str'" in text or "str (not" in text or "to str" in text)
