"""Check ``03.triage``: ``triage(sqs, dlq_url)`` counts a DLQ's records by failure class (the
ERROR_CODE message attribute; ``"UNKNOWN"`` without one) and leaves the DLQ as it found it.

The harness parks a mix of records on a real DLQ (the pipeline's, with the
diagnostic attributes, and a few SQS moved itself, without), hands the
learner a client that records every call, and demands the exact counts,
every record still in the DLQ (nothing deleted) and every record visible
again when triage returns (nothing left hidden for the next reader). A
wrong count is explained from the calls made: too few receives, attributes
never asked for, records read twice.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetlab.composition.topology import experiment_queue
from fleetlab.core.errors import InvalidInput
from fleetlab.core.numbers import whole
from fleetlab.course.checks import hints
from fleetlab.course.experiments.poison import step_body
from fleetlab.course.grading.calls import CallLog
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab.services.sqs import dlq, messages

UNKNOWN = dlq.NO_DIAGNOSIS


@dataclass(frozen=True)
class Backlog(Case):
    """The DLQ's records: how many of each failure class, in the order they were parked (round robin).

    ``sampled``: each receive returns fewer records than it asks for while more wait, as SQS's short poll
    does when it samples a subset of its servers (never none while records are left).
    """

    classes: tuple[tuple[str, int], ...] = ()
    sampled: bool = False


SAMPLED_SIZES = (7, 10, 3, 10, 6, 9)
"""How many records each receive of a ``sampled`` backlog gets at most, in turn."""


def _records(case: Backlog) -> list[str]:
    """Each record's class, interleaved as an incident parks them."""
    left = {code: count for code, count in case.classes}
    order: list[str] = []
    while any(left.values()):
        for code in list(left):
            if left[code]:
                order.append(code)
                left[code] -= 1
    return order


@register(
    "03.triage",
    title="Triage a DLQ by failure class without consuming it",
    function="triage",
    parameters="sqs, dlq_url",
    points=2,
    public=[
        Backlog("23 records after a provider outage and a bad deploy",
                (("THROTTLING", 11), ("ERROR_FROM_TARGET", 8), ("TIMEOUT", 2), (UNKNOWN, 2))),
        Backlog("7 records of two classes", (("INVALID_PARAMETER", 4), ("ERROR_FROM_TARGET", 3))),
    ],
    hidden_cases=4,
    timeout=30,
    side_by_side=True,
    implemented_by=(
        "fleetlab.services.sqs.dlq.triage",
        "fleetlab.services.sqs.dlq.parked",
        "fleetlab.services.sqs.dlq.peek",
    ),
)
def check_triage(answer: Any, case: Backlog, ctx: Any) -> CaseOutcome:
    """Park the backlog, run the learner's triage through a recording client, judge the counts and the DLQ after."""
    backend = ctx.backend
    codes = _records(case)
    with experiment_queue(backend, ctx.fresh_prefix(), visibility_timeout=60, max_receive_count=3) as queue:
        target = queue.dead_letter_target()
        for n, code in enumerate(codes):
            message = {"MessageId": f"m-{n}", "Body": step_body(f"conv-{n}-step-1")}
            if code == UNKNOWN:  # SQS moved it itself: no diagnosis
                backend.client("sqs").send_message(QueueUrl=queue.dlq_url, MessageBody=message["Body"])
            else:
                dlq.dead_letter(backend, target, message, dlq.Diagnosis(code, f"{code.lower()} on step {n}", 2,
                                                                        dlq.NOT_ROUTED_BY_A_RULE, target.target_arn))
        log = CallLog(backend.client("sqs"), backend.clock)
        budget = _Budget(log.client, receives=4 * math.ceil(len(codes) / 10) + 10,
                         sizes=SAMPLED_SIZES if case.sampled else ())
        try:
            returned = answer(budget, queue.dlq_url)
        except KeyError as exc:
            said = hints.explained_error(exc, answer, __file__, _no_message_attributes)
            if not said:
                raise
            return CaseOutcome(False, said, "assumes-every-record-has-attributes")
        finally:
            log.close()
        left, visible = messages.held(backend, queue.dlq_url), messages.depth(backend, queue.dlq_url)
    expected = Counter(codes)
    if left < len(codes):
        deleted = len(log.of("delete_message")) + sum(len(c.params.get("Entries", [])) for c in log.of("delete_message_batch"))
        return CaseOutcome(False, f"you deleted {len(codes) - left} of the {len(codes)} records ({deleted} deletes): "
                                  "triage must leave the DLQ as it found it, so a redrive can still move them; "
                                  "put each back with change_message_visibility(..., VisibilityTimeout=0) instead",
                           "deletes-what-it-read")
    if visible < len(codes):
        return CaseOutcome(False, _still_hidden(len(codes) - visible, len(codes), log), "leaves-records-hidden")
    try:
        counts = _read_counts(returned)
    except InvalidInput as bad:
        return CaseOutcome(False, str(bad), "counts-not-returned")
    if counts != expected:
        return CaseOutcome(False, *_miscounted(counts, expected, log, budget))
    return CaseOutcome(True, f"{len(codes)} records counted by class, every one still in the DLQ and visible")


class _Budget:
    """The learner's client: after ``receives`` ReceiveMessage calls, every further receive finds nothing; with
    ``sizes``, the n-th receive asks SQS for at most ``sizes[n]`` records (in turn), whatever it asked for."""

    def __init__(self, sqs: Any, *, receives: int, sizes: tuple[int, ...] = ()) -> None:
        self._sqs = sqs
        self.left = receives
        self.exhausted = False
        self._sizes = itertools.cycle(sizes) if sizes else None
        self.short = 0  # receives that got fewer records than they asked for while more waited

    def receive_message(self, **params: Any) -> dict[str, Any]:
        if self.left <= 0:
            self.exhausted = True
            return {"Messages": []}
        self.left -= 1
        if self._sizes is None:
            return self._sqs.receive_message(**params)
        asked = params.get("MaxNumberOfMessages", 1)
        cap = next(self._sizes)
        if isinstance(asked, int) and asked > cap:
            self.short += 1
            params = {**params, "MaxNumberOfMessages": cap}
        return self._sqs.receive_message(**params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sqs, name)


def _read_counts(returned: Any) -> Counter:
    if not isinstance(returned, Mapping):
        raise InvalidInput("triage", f"returned {type(returned).__name__}; return the counts, a dict of class -> "
                                     "number of records, like {'THROTTLING': 11, 'UNKNOWN': 2}")
    counts: Counter = Counter()
    for code, value in returned.items():
        count = whole(value)
        if count is None:
            raise InvalidInput("triage", f"returned {value!r} for {code!r}; each count is a whole number of records")
        if count:
            counts[code] = count
    return counts


def _still_hidden(hidden: int, total: int, log: CallLog) -> str:
    hides = [call.params.get("VisibilityTimeout") for call in log.of("receive_message")]
    longest = max((h for h in hides if h is not None), default=None)
    how_long = f"for up to {longest} s (your VisibilityTimeout)" if longest else "for the queue's visibility timeout"
    return (f"{hidden} of the {total} records were still hidden when triage returned: whoever looks next (a redrive, "
            f"a colleague) finds them missing {how_long}. Put every record you read back with "
            "change_message_visibility(..., VisibilityTimeout=0) before returning")


def _miscounted(counts: Counter, expected: Counter, log: CallLog, budget: _Budget) -> tuple[str, str]:
    """Why the counts differ, in words, and the mistake's key."""
    got, total = sum(counts.values()), sum(expected.values())
    said = f"you counted {dict(counts)}; the records' ERROR_CODE attributes say {dict(expected)}"
    receives = log.of("receive_message")
    zero = any(call.params.get("VisibilityTimeout") == 0 for call in receives)
    if budget.exhausted or got > total:
        why = " (VisibilityTimeout=0 shows them again at once)" if zero else ""
        return (f"{said}: records you had already read came back and were counted again{why}; hide what you read "
                "until you are done (a VisibilityTimeout of a minute), then put it all back"), "counts-records-again"
    if got < total and zero:
        return (f"{said}: you read {got} of the {total} records: with VisibilityTimeout=0 the records you had read "
                "came back at once and filled your receives, so the others never reached you; hide what you read "
                "until you are done (a VisibilityTimeout of a minute), then put it all back",
                "zero-visibility-starves-receives")
    if not any(_asks_attributes(call.params) for call in receives) and (counts.get(UNKNOWN) or total):
        return (f"{said}: ReceiveMessage returns message attributes only when asked: pass "
                "MessageAttributeNames=['All'] (ERROR_CODE is one of the message attributes the pipeline set when "
                "it parked the step)"), "never-asks-for-attributes"
    if got < total and budget.short:
        return (f"{said}: you read {got} of the {total} records; a receive can return fewer records than it asks "
                "for while more wait (SQS samples its servers), so only a receive that returns none means done",
                "stops-at-a-short-receive")
    if got < total:
        return (f"{said}: you read {got} of the {total} records; ReceiveMessage hands out at most 10 records per "
                "call, so keep receiving until a receive returns none"), "one-receive"
    if None in counts:
        return f"{said}: a record without ERROR_CODE counts under 'UNKNOWN', not None", "unknown-counted-as-none"
    return (f"{said}: count each record under its ERROR_CODE message attribute, not under what its payload says",
            "counts-by-payload")


def _asks_attributes(params: dict[str, Any]) -> bool:
    names = params.get("MessageAttributeNames") or []
    return any(name in ("All", ".*", dlq.ERROR_CODE) for name in names)


def _no_message_attributes(exc: BaseException) -> str:
    if exc.args != ("MessageAttributes",):
        return ""
    return ("a record SQS moved to the DLQ itself (after maxReceiveCount receives) carries no message attributes, so "
            "it has no MessageAttributes key; count it as UNKNOWN: message.get('MessageAttributes', {})")