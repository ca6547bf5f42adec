"""``03.redrive``: the hidden backlogs, the reference redrive and both catalogues.

The hidden cases change the backlog and the canary's size (a canary of 5,
hard-coded, does not pass) and hold a fix that covers only some steps.
"""

from __future__ import annotations

from typing import Any

from fleetlab.course.checks.lab03.redrive import Parked
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Parked("the fix works: 17 parked steps, a canary of 3", 17, 3, 0),
    Parked("the fix covers a third of the steps: 23 parked, a canary of 4", 23, 4, 3),
    Parked("the fix works: 23 parked steps, a canary of 10", 23, 10, 0),
)


def reference_canary_redrive(sqs: Any, dlq_url: str, queue_url: str, canary_size: int, process: Any) -> None:
    """Move the canary with the move loop, process it, and move the rest only when none failed again."""
    _moves(sqs, dlq_url, queue_url, canary_size)
    if process().failed == 0:
        _moves(sqs, dlq_url, queue_url, None)


def _moves(sqs: Any, dlq_url: str, queue_url: str, limit: int | None, *, per_receive: int = 10,
           delete: bool = True, send: bool = True, keep_attributes: bool = False, delete_first: bool = False) -> int:
    """The move loop: receive up to ``limit`` (None: all) from the DLQ, send each to the queue, delete it
    (``delete_first``: the other way round, which loses the message to a crash in between)."""
    moved = 0
    while limit is None or moved < limit:
        wanted = per_receive if limit is None else min(per_receive, limit - moved)
        batch = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=wanted, VisibilityTimeout=60,
                                    MessageAttributeNames=["All"]).get("Messages", [])
        if not batch:
            break
        for message in batch:
            if delete and delete_first:
                sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
            if send:
                extra = {"MessageAttributes": message["MessageAttributes"]} if keep_attributes and message.get(
                    "MessageAttributes") else {}
                sqs.send_message(QueueUrl=queue_url, MessageBody=message["Body"], **extra)
            if delete and not delete_first:
                sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
        moved += len(batch)
    return moved


def _in_batches(sqs: Any, dlq_url: str, queue_url: str, canary_size: int, process: Any) -> int:
    def move(limit: int | None) -> int:
        moved = 0
        while limit is None or moved < limit:
            wanted = 10 if limit is None else min(10, limit - moved)
            batch = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=wanted, VisibilityTimeout=120,
                                        MessageAttributeNames=["All"]).get("Messages", [])
            if not batch:
                return moved
            sqs.send_message_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(i), "MessageBody": m["Body"], **({"MessageAttributes": m["MessageAttributes"]}
                                                            if m.get("MessageAttributes") else {})}
                for i, m in enumerate(batch)])
            sqs.delete_message_batch(QueueUrl=dlq_url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)])
            moved += len(batch)
        return moved

    total = move(canary_size)
    done, failed = process()
    if failed or done < total:
        return total
    return total + move(None)


def _growing_canaries(sqs: Any, dlq_url: str, queue_url: str, canary_size: int, process: Any) -> None:
    size = 1
    while _moves(sqs, dlq_url, queue_url, size, keep_attributes=True):
        if process().failed:
            return
        size = min(size * 2, canary_size) if size < canary_size else 10_000


def _never_checks(sqs, dlq_url, queue_url, canary_size, process):
    _moves(sqs, dlq_url, queue_url, canary_size)
    process()
    _moves(sqs, dlq_url, queue_url, None)


def _all_at_once(sqs, dlq_url, queue_url, canary_size, process):
    _moves(sqs, dlq_url, queue_url, None)
    process()


def _canary_only(sqs, dlq_url, queue_url, canary_size, process):
    _moves(sqs, dlq_url, queue_url, canary_size)
    process()


def _rest_without_a_loop(sqs, dlq_url, queue_url, canary_size, process):
    _moves(sqs, dlq_url, queue_url, canary_size)
    if not process().failed:
        _moves(sqs, dlq_url, queue_url, 10)


def _checks(condition: Any) -> Any:
    def answer(sqs, dlq_url, queue_url, canary_size, process):
        _moves(sqs, dlq_url, queue_url, canary_size)
        if condition(process()):
            _moves(sqs, dlq_url, queue_url, None)
    return answer


def _loose(**how: Any) -> Any:
    def answer(sqs, dlq_url, queue_url, canary_size, process):
        _moves(sqs, dlq_url, queue_url, canary_size, **how)
        if not process().failed:
            _moves(sqs, dlq_url, queue_url, None, **how)
    return answer


def _a_receive_for_a_canary(sqs, dlq_url, queue_url, canary_size, process):
    _moves(sqs, dlq_url, queue_url, 10)
    if not process().failed:
        _moves(sqs, dlq_url, queue_url, None)


def _hard_coded_five(sqs, dlq_url, queue_url, canary_size, process):
    _moves(sqs, dlq_url, queue_url, 5)
    if not process().failed:
        _moves(sqs, dlq_url, queue_url, None)


def _canary_then_fails(sqs, dlq_url, queue_url, canary_size, process):
    _moves(sqs, dlq_url, queue_url, canary_size)
    raise RuntimeError("the canary's queue URL was wrong")


RIGHT_ANSWERS = (
    RightAnswer("batch send and batch delete, a count check", _in_batches),
    RightAnswer("growing canaries, attributes kept", _growing_canaries),
    RightAnswer("a canary of one", lambda sqs, dlq_url, queue_url, canary_size, process: _loose(per_receive=1)(
        sqs, dlq_url, queue_url, 1, process)),
    RightAnswer("done counted instead of failed", _checks(lambda result: result.done > 0 and result.failed == 0)),
)


def the_librarys_redrive(sqs, dlq_url, queue_url, canary_size, process):
    """The library's canary redrive on the running lab's backend (in the notebook, ``lab.backend``)."""
    from fleetlab.course.lab import running_backend
    from fleetlab.services.sqs.queues import WorkQueue
    from fleetlab.services.sqs.redrive import canary_redrive

    queue = WorkQueue("researcher", queue_url, "", dlq_url, "", 60, 3)
    canary_redrive(running_backend(), queue, canary=canary_size, process=process)


WRONG_ANSWERS = (
    WrongAnswer("everything at once, no canary", _all_at_once, "before the first process()",
                mistake="no-canary"),
    WrongAnswer("a canary whose result is ignored", _never_checks, "failed again",
                mistake="goes-on-after-a-failed-canary"),
    WrongAnswer("a canary of a whole receive (10)", _a_receive_for_a_canary, "more than the canary of",
                mistake="canary-larger-than-asked"),
    WrongAnswer("stops after the canary even when it passed", _canary_only, "still parked",
                mistake="stops-after-the-canary"),
    WrongAnswer("moves one more receive's worth, not the rest", _rest_without_a_loop, "still parked",
                mistake="stops-after-the-canary"),
    WrongAnswer("sends without deleting", _loose(delete=False), "a copy of it is still in the DLQ",
                mistake="sends-without-deleting"),
    WrongAnswer("deletes without sending", _loose(send=False), "is gone",
                mistake="deletes-without-sending"),
    WrongAnswer("deletes from the DLQ, then sends (a crash in between loses the step)", _loose(delete_first=True),
                "killed moving the rest, right after a delete_message, between a move's two calls",
                mistake="loses-a-step-in-a-crash"),
    WrongAnswer("moves the canary, then fails before process() (the crash case no longer passes it)",
                _canary_then_fails, "your code raised RuntimeError"),
    WrongAnswer("goes on when anything was done", _checks(lambda result: result.done > 0), "failed again",
                public=False,
                mistake="goes-on-after-a-failed-canary"),
    WrongAnswer("a canary of five, whatever canary_size says", _hard_coded_five, "more than the canary of",
                public=False,
                mistake="canary-larger-than-asked"),
    WrongAnswer("the library's canary_redrive", the_librarys_redrive,
                "calls `fleetlab.services.sqs.redrive.canary_redrive`"),
)

SIDE = InstructorSide("03.redrive", hidden=HIDDEN, reference=reference_canary_redrive,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS)
