"""``02.window``: the hidden horizons, the reference window and both catalogues.

The hidden horizons mix the three durations differently from the public
ones, so a hard-coded window fails one of them; in the last, two durations of
four days each make twice the longest one short of their sum.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy

from fleetlab.course.checks.lab02.window import Horizon
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Horizon("bus retries for 1 h, queue keeps 1 day, replays up to 30 days later", 3_600, 86_400, 30 * 86_400),
    Horizon("bus retries for 6 h, queue keeps 2 days, replays up to 3 days later", 6 * 3_600, 2 * 86_400, 3 * 86_400),
    Horizon("bus retries for 1 h, queue keeps 4 days, replays up to 4 days later", 3_600, 4 * 86_400, 4 * 86_400),
)


def reference_window(retry_window: float, retention: float, replay_horizon: float) -> float:
    """The latest a duplicate can arrive (retries, then the queue, then a replay), plus an hour."""
    return retry_window + retention + replay_horizon + 3_600


RIGHT_ANSWERS = (
    RightAnswer("exactly the sum", lambda retry, retention, replay: retry + retention + replay),
    RightAnswer("the sum plus a day", lambda retry, retention, replay: retry + retention + replay + 86_400),
    RightAnswer("three times the sum", lambda retry, retention, replay: 3 * (retry + retention + replay)),
    RightAnswer("a numpy integer", lambda retry, retention, replay: numpy.int64(retry + retention + replay)),
    RightAnswer("a Fraction", lambda retry, retention, replay: Fraction(11, 10) * (retry + retention + replay)),
    RightAnswer("a Decimal", lambda retry, retention, replay: Decimal(retry + retention + replay)),
)


def the_librarys_window(retry_window, retention, replay_horizon):
    from fleetlab.services.state.window import DuplicateSources

    return DuplicateSources(retry_window=retry_window, retention=retention,
                            replay_horizon=replay_horizon).safe_window()


WRONG_ANSWERS = (
    WrongAnswer("the retry window only", lambda retry, retention, replay: retry, "the duplicate runs again",
                mistake="window-too-short"),
    WrongAnswer("the queue's retention only", lambda retry, retention, replay: retention, "the duplicate runs again",
                mistake="window-too-short"),
    WrongAnswer("a flat 24 hours", lambda retry, retention, replay: 86_400, "the duplicate runs again",
                mistake="window-too-short"),
    WrongAnswer("the longest of the three", lambda retry, retention, replay: max(retry, retention, replay),
                "the duplicate runs again", mistake="window-too-short"),
    WrongAnswer("retries and retention, no replays", lambda retry, retention, replay: retry + retention,
                "the duplicate runs again", mistake="window-too-short"),
    WrongAnswer("forever, in practice", lambda retry, retention, replay: 10 * 365 * 86_400, "the table only grows",
                mistake="window-far-too-long"),
    WrongAnswer("a string", lambda retry, retention, replay: "30 days", "return a number of seconds",
                mistake="not-a-number-of-seconds"),
    WrongAnswer("NaN", lambda retry, retention, replay: float("nan"), "returned NaN",
                mistake="not-a-number-of-seconds"),
    WrongAnswer("twice the longest of the three", lambda retry, retention, replay: 2 * max(retry, retention, replay),
                "window the record is gone 1 h before then", public=False, mistake="window-too-short"),
    WrongAnswer("a hard-coded 30 days", lambda retry, retention, replay: 30 * 86_400, "the duplicate runs again", public=False,
                mistake="window-too-short"),
    WrongAnswer("the library's DuplicateSources", the_librarys_window,
                "calls `fleetlab.services.state.window.DuplicateSources.safe_window`"),
)

SHARED_MISTAKES = {"window-too-short": "a window shorter than the last possible duplicate (a source of duplicates "
                                       "left out or undercounted)"}

SIDE = InstructorSide("02.window", hidden=HIDDEN, reference=reference_window,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS, shared_mistakes=SHARED_MISTAKES)
