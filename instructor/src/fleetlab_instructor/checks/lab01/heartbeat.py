"""``01.heartbeat``: the hidden steps, the reference heartbeat and both catalogues.

The public cases run a long step and a failing one on a 5-minute timeout;
the hidden ones use other timeouts, so a heartbeat with hard-coded numbers
leaves the message visible in one of them.
"""

from __future__ import annotations

import contextlib
from typing import Any

from fleetlab.course.checks.lab01.heartbeat import LongStep
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    LongStep("a 40-minute step on a 15-minute timeout", 900, 2400),
    LongStep("a 5-minute step on a 1-minute timeout", 60, 300),
)


def reference_heartbeat(sqs: Any, queue_url: str, receipt_handle: str, visibility_timeout: int, clock: Any) -> Any:
    """Extend by one visibility timeout every third of it, while the block runs."""

    def extend() -> None:
        sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=visibility_timeout)

    return clock.every(visibility_timeout / 3, extend)


def _extender(sqs: Any, url: str, handle: str, seconds_: float) -> Any:
    return lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=int(seconds_))


class _ClassHeartbeat:
    """A hand-written context manager: extend on entry, then every half timeout."""

    def __init__(self, sqs: Any, url: str, handle: str, vis: int, clock: Any) -> None:
        self.extend = _extender(sqs, url, handle, vis)
        self.beat = clock.every(vis / 2, self.extend)

    def __enter__(self) -> None:
        self.extend()
        self.beat.__enter__()

    def __exit__(self, *error: Any) -> None:
        self.beat.__exit__(*error)


@contextlib.contextmanager
def _releases_on_exit(sqs: Any, url: str, handle: str, vis: int, clock: Any) -> Any:
    try:
        with clock.every(vis / 3, _extender(sqs, url, handle, vis)):
            yield
    finally:
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=0)


def _batch_heartbeat(sqs: Any, url: str, handle: str, vis: int, clock: Any) -> Any:
    def extend() -> None:
        sqs.change_message_visibility_batch(
            QueueUrl=url, Entries=[{"Id": "beat", "ReceiptHandle": handle, "VisibilityTimeout": vis}]
        )

    return clock.every(vis / 3, extend)


def _exit_stack(sqs: Any, url: str, handle: str, vis: int, clock: Any) -> Any:
    stack = contextlib.ExitStack()
    stack.enter_context(clock.every(vis / 4, _extender(sqs, url, handle, 2 * vis)))
    return stack


class _StopsOnlyOnSuccess(_ClassHeartbeat):
    """Its __exit__ returns early when the step raised, before stopping the beat."""

    def __exit__(self, kind: Any, *error: Any) -> None:
        if kind is not None:
            return
        self.beat.__exit__(None, None, None)


class _NeverStops(_ClassHeartbeat):
    """Starts the beat on entry and forgets to stop it."""

    def __exit__(self, *error: Any) -> None:
        return None


class _DropsTheTimer(_ClassHeartbeat):
    """Stops the beat by dropping it, trusting the garbage collector to stop the timer."""

    def __exit__(self, *error: Any) -> None:
        del self.beat


@contextlib.contextmanager
def _swallows(sqs: Any, url: str, handle: str, vis: int, clock: Any) -> Any:
    with clock.every(vis / 3, _extender(sqs, url, handle, vis)):
        try:
            yield
        except Exception:
            pass


def _extend_once(sqs: Any, url: str, handle: str, seconds_: float) -> contextlib.AbstractContextManager[None]:
    _extender(sqs, url, handle, seconds_)()
    return contextlib.nullcontext()


RIGHT_ANSWERS = (
    RightAnswer("every half timeout", lambda sqs, url, h, vis, clock: clock.every(vis / 2, _extender(sqs, url, h, vis))),
    RightAnswer("a class with __enter__ and __exit__", _ClassHeartbeat),
    RightAnswer("a generator that releases the message on exit", _releases_on_exit),
    RightAnswer("the batch API", _batch_heartbeat),
    RightAnswer("an ExitStack, every quarter timeout by two timeouts", _exit_stack),
)

WRONG_ANSWERS = (
    WrongAnswer(
        "extends once at the start",
        lambda sqs, url, h, vis, clock: _extend_once(sqs, url, h, vis),
        "while the 16 min 30 s step was still running",
        mistake="stops-extending-before-the-step-ends",
    ),
    WrongAnswer(
        "beats every 1.5 visibility timeouts",
        lambda sqs, url, h, vis, clock: clock.every(1.5 * vis, _extender(sqs, url, h, vis)),
        "beat more often than the timeout",
        mistake="beats-further-apart-than-an-extension-lasts",
    ),
    WrongAnswer(
        "beats exactly every visibility timeout (a tie)",
        lambda sqs, url, h, vis, clock: clock.every(vis, _extender(sqs, url, h, vis)),
        "at the very instant your heartbeat extended it",
        mistake="beat-ties-the-window-end",
    ),
    WrongAnswer(
        "extends by less than its own interval",
        lambda sqs, url, h, vis, clock: clock.every(vis / 2, _extender(sqs, url, h, vis / 3)),
        "extend by more than the interval",
        mistake="beats-further-apart-than-an-extension-lasts",
    ),
    WrongAnswer(
        "hides the message for 10 hours",
        lambda sqs, url, h, vis, clock: _extend_once(sqs, url, h, 36_000),
        "a crashed worker's message would wait that long",
        mistake="hidden-long-after-the-step",
    ),
    WrongAnswer("a timer that never stops", _NeverStops, "it never stopped", mistake="heartbeat-never-stops"),
    WrongAnswer("drops the timer instead of stopping it", _DropsTheTimer, "timer was dropped while still running",
                mistake="timer-left-to-the-garbage-collector"),
    WrongAnswer("stops the beat only when the step succeeds", _StopsOnlyOnSuccess, "so it stops when the step raises too",
                mistake="heartbeat-outlives-a-failed-step"),
    WrongAnswer("swallows the step's exception", _swallows, "swallowed the exception",
                mistake="swallows-the-step-exception"),
    WrongAnswer("returns nothing", lambda sqs, url, h, vis, clock: None, "return a context manager",
                mistake="not-a-context-manager"),
    WrongAnswer(
        "hard-coded for a 5-minute timeout",
        lambda sqs, url, h, vis, clock: clock.every(100, _extender(sqs, url, h, 300)),
        "visible from +60 s",
        public=False,
        mistake="beats-further-apart-than-an-extension-lasts",
    ),
)

SHARED_MISTAKES = {
    "beats-further-apart-than-an-extension-lasts": "beats further apart than each extension lasts (too rarely, or "
                                                   "extending by too little)",
}

SIDE = InstructorSide("01.heartbeat", hidden=HIDDEN, reference=reference_heartbeat,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS, shared_mistakes=SHARED_MISTAKES)
