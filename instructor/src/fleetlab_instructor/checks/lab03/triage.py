"""``03.triage``: the hidden backlogs, the reference triage and both catalogues.

The hidden cases hold a larger mix of five classes, exactly one receive's
worth of records, an empty DLQ, and a backlog whose receives return fewer
records than asked while more wait (SQS's short poll samples its servers).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from fleetlab.course.checks.lab03.triage import UNKNOWN, Backlog
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Backlog("37 records of five classes", (("THROTTLING", 5), ("ERROR_FROM_TARGET", 17), ("TIMEOUT", 6),
                                            ("INVALID_PARAMETER", 4), (UNKNOWN, 5))),
    Backlog("exactly one receive's worth", (("NO_PERMISSIONS", 10),)),
    Backlog("an empty DLQ", ()),
    Backlog("25 records, read as SQS's short poll hands them out (fewer than asked, while more wait)",
            (("THROTTLING", 9), ("ERROR_FROM_TARGET", 12), (UNKNOWN, 4)), sampled=True),
)


def reference_triage(sqs: Any, dlq_url: str) -> dict[str, int]:
    """Receive everything (hidden while reading), count by ERROR_CODE, then make every record visible again."""
    seen: dict[str, dict[str, Any]] = {}
    while True:
        batch = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                    VisibilityTimeout=60).get("Messages", [])
        if not batch:
            break
        seen.update({message["MessageId"]: message for message in batch})
    counts: dict[str, int] = {}
    for message in seen.values():
        code = message.get("MessageAttributes", {}).get("ERROR_CODE", {}).get("StringValue", "UNKNOWN")
        counts[code] = counts.get(code, 0) + 1
    held = list(seen.values())
    for start in range(0, len(held), 10):
        sqs.change_message_visibility_batch(QueueUrl=dlq_url, Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
            for i, m in enumerate(held[start:start + 10])])
    return counts


def _read_all(sqs: Any, dlq_url: str, *, hide: int = 60, attributes: bool = True, limit: int | None = None) -> list[dict]:
    got: list[dict] = []
    extra = {"MessageAttributeNames": ["All"]} if attributes else {}
    while limit is None or len(got) < limit:
        batch = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=hide,
                                    **extra).get("Messages", [])
        if not batch:
            break
        got += batch
    return got


def _stops_at_a_short_receive(sqs: Any, dlq_url: str) -> Counter:
    held: list[dict] = []
    while True:
        batch = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=60,
                                    MessageAttributeNames=["All"]).get("Messages", [])
        held += batch
        if len(batch) < 10:  # "a short batch means the queue is drained": not on SQS
            break
    for message in held:
        sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return Counter(_code(m) for m in held)


def _code(message: dict) -> str:
    return message.get("MessageAttributes", {}).get("ERROR_CODE", {}).get("StringValue", "UNKNOWN")


def _one_by_one(sqs: Any, dlq_url: str) -> Counter:
    held = _read_all(sqs, dlq_url, hide=900)
    for message in held:
        sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return Counter(_code(m) for m in held)


def _defaultdict_in_finally(sqs: Any, dlq_url: str) -> dict:
    counts: defaultdict[str, int] = defaultdict(int)
    held: list[dict] = []
    try:
        held = _read_all(sqs, dlq_url)
        for message in held:
            counts[_code(message)] += 1
        return dict(counts)
    finally:
        for message in held:
            sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)


def _with_zeros(sqs: Any, dlq_url: str) -> dict:
    counts = {code: 0 for code in ("THROTTLING", "TIMEOUT", "ERROR_FROM_TARGET", "NO_PERMISSIONS", "UNKNOWN")}
    counts.update(_one_by_one(sqs, dlq_url))
    return counts


def _deletes(sqs: Any, dlq_url: str) -> Counter:
    held = _read_all(sqs, dlq_url)
    for message in held:
        sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
    return Counter(_code(m) for m in held)


def _peeks_with_zero_visibility(sqs: Any, dlq_url: str) -> Counter:
    counts: Counter = Counter()
    for _ in range(5):  # "look a few times to be sure"
        batch = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                    VisibilityTimeout=0).get("Messages", [])
        counts.update(_code(m) for m in batch)
    return counts


def _returns_last_batch_only(sqs: Any, dlq_url: str) -> Counter:
    counts: Counter = Counter()
    batch: list[dict] = []
    while got := sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                     VisibilityTimeout=60).get("Messages", []):
        batch = got
        counts.update(_code(m) for m in got)
    for message in batch:
        sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return counts


def _first_receive_only(sqs: Any, dlq_url: str) -> Counter:
    batch = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                VisibilityTimeout=60).get("Messages", [])
    for message in batch:
        sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return Counter(_code(m) for m in batch)


def _without_attribute_names(sqs: Any, dlq_url: str) -> Counter:
    held = _read_all(sqs, dlq_url, attributes=False)
    for message in held:
        sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return Counter(_code(m) for m in held)


def _by_agent_class(sqs: Any, dlq_url: str) -> Counter:
    held = _read_all(sqs, dlq_url)
    for message in held:
        sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return Counter(json.loads(m["Body"]).get("agent_class", "?") for m in held)


def _none_for_unknown(sqs: Any, dlq_url: str) -> Counter:
    held = _read_all(sqs, dlq_url)
    for message in held:
        sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return Counter(m.get("MessageAttributes", {}).get("ERROR_CODE", {}).get("StringValue") for m in held)


def _trusts_attributes(sqs: Any, dlq_url: str) -> Counter:
    held = _read_all(sqs, dlq_url)
    counts = Counter(m["MessageAttributes"]["ERROR_CODE"]["StringValue"] for m in held)
    for message in held:
        sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return counts


def _list_of_codes(sqs: Any, dlq_url: str) -> list[str]:
    return [code for code, count in _one_by_one(sqs, dlq_url).items() for _ in range(count)]


RIGHT_ANSWERS = (
    RightAnswer("a Counter, each record put back one by one", _one_by_one),
    RightAnswer("a defaultdict, records put back in a finally", _defaultdict_in_finally),
    RightAnswer("every known class listed, zeros included", _with_zeros),
)


def the_librarys_triage(sqs, dlq_url):
    """The library's triage on the running lab's backend (in the notebook, ``lab.backend``)."""
    from fleetlab.course.lab import running_backend
    from fleetlab.services.sqs import dlq

    return dict(dlq.triage(running_backend(), dlq_url))


WRONG_ANSWERS = (
    WrongAnswer("deletes what it read", _deletes, "you deleted",
                mistake="deletes-what-it-read"),
    WrongAnswer("leaves what it read hidden", lambda sqs, url: Counter(_code(m) for m in _read_all(sqs, url, hide=300)),
                "still hidden",
                mistake="leaves-records-hidden"),
    WrongAnswer("puts back only the last batch", _returns_last_batch_only, "still hidden",
                mistake="leaves-records-hidden"),
    WrongAnswer("one receive", _first_receive_only, "at most 10 records",
                mistake="one-receive"),
    WrongAnswer("looks five times with VisibilityTimeout 0", _peeks_with_zero_visibility, "came back",
                mistake="counts-records-again"),
    WrongAnswer("never asks for the message attributes", _without_attribute_names, "MessageAttributeNames",
                mistake="never-asks-for-attributes"),
    WrongAnswer("counts the payloads' agent classes", _by_agent_class, "ERROR_CODE",
                mistake="counts-by-payload"),
    WrongAnswer("counts records without ERROR_CODE under None", _none_for_unknown, "'UNKNOWN'",
                mistake="unknown-counted-as-none"),
    WrongAnswer("returns a list of codes", _list_of_codes, "return the counts",
                mistake="counts-not-returned"),
    WrongAnswer("reads MessageAttributes as if every record had them", _trusts_attributes,
                "carries no message attributes",
                mistake="assumes-every-record-has-attributes"),
    WrongAnswer("stops at the first receive of fewer than 10", _stops_at_a_short_receive,
                "a receive can return fewer records than it asks", public=False,
                mistake="stops-at-a-short-receive"),
    WrongAnswer("the library's dlq.triage", the_librarys_triage, "calls `fleetlab.services.sqs.dlq.triage`"),
)

SIDE = InstructorSide("03.triage", hidden=HIDDEN, reference=reference_triage,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS)
