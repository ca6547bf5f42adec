"""Sweeping by prefix: find and remove everything whose name starts with a lab's prefix.

``lab.close()`` removes what a lab made, and atexit calls it when a kernel
shuts down, but not when the kernel is killed or crashes. On LocalStack and
real AWS the resources outlive the kernel; every name fleetlab makes starts
with the lab's prefix (``fl-01-3fa9c2-``), so ``fleetlab cleanup --prefix``
finds them by name and removes them: queues, rules (with their targets),
buses, archives, state machines, tables, buckets and IAM roles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.backends.resources import Resources, delete_role, empty_and_delete_bucket
from fleetlab.core.errors import InvalidInput

MIN_PREFIX = 6
"""The shortest prefix a sweep accepts: ``fl-01-`` (every run of lab 01); a shorter one is refused."""


@dataclass(frozen=True)
class Found:
    """A resource whose name starts with the prefix, and how to remove it."""

    kind: str
    name: str
    remove: Callable[[], Any] = field(compare=False, repr=False)


def check_prefix(prefix: str) -> str:
    """``prefix`` if a sweep may use it; InvalidInput (field ``prefix``) when empty or too short."""
    if len(prefix.strip()) < MIN_PREFIX:
        raise InvalidInput(
            "prefix",
            f"must be at least {MIN_PREFIX} characters, got {prefix!r}",
            hint="use the prefix the lab printed, e.g. fl-01-3fa9c2-",
        )
    return prefix.strip()


def find(backend: Backend, prefix: str) -> list[Found]:
    """Everything on ``backend`` named with ``prefix``, in the order it can be removed.

    Rules come first (targets, then the rule), so buses and queues are free
    to go. Raises InvalidInput for an empty or too-short prefix.
    """
    prefix = check_prefix(prefix)
    return [
        *_rules(backend, prefix),
        *_archives(backend, prefix),
        *_buses(backend, prefix),
        *_state_machines(backend, prefix),
        *_queues(backend, prefix),
        *_tables(backend, prefix),
        *_buckets(backend, prefix),
        *_roles(backend, prefix),
    ]


def remove(backend: Backend, found: list[Found]) -> list[str]:
    """Remove ``found`` in order, best effort; returns the problems met (empty when clean)."""
    made = Resources(backend, "")
    for item in reversed(found):  # teardown removes the newest first
        made.on_teardown(item.kind, item.name, item.remove)
    return made.teardown()


def _pages(call: Callable[..., dict[str, Any]], key: str, **kwargs: Any) -> Iterator[Any]:
    """Every item under ``key`` across NextToken pages."""
    while True:
        page = call(**kwargs)
        yield from page.get(key, [])
        if not page.get("NextToken"):
            return
        kwargs["NextToken"] = page["NextToken"]


def _rules(backend: Backend, prefix: str) -> list[Found]:
    """Rules named with the prefix on any bus, and every rule of a bus named with it.

    Rules the service manages itself (an archive's) go with their archive.
    """
    events = backend.client("events")
    found = []
    for bus in _pages(events.list_event_buses, "EventBuses"):
        for rule in _pages(events.list_rules, "Rules", EventBusName=bus["Name"]):
            if rule.get("ManagedBy"):
                continue
            if bus["Name"].startswith(prefix) or rule["Name"].startswith(prefix):
                found.append(Found("rule", f"{rule['Name']} (bus {bus['Name']})",
                                   lambda r=rule["Name"], b=bus["Name"]: _remove_rule(events, r, b)))
    return found


def _remove_rule(events: Any, rule: str, bus: str) -> None:
    ids = [t["Id"] for t in _pages(events.list_targets_by_rule, "Targets", Rule=rule, EventBusName=bus)]
    if ids:
        events.remove_targets(Rule=rule, EventBusName=bus, Ids=ids)
    events.delete_rule(Name=rule, EventBusName=bus)


def _archives(backend: Backend, prefix: str) -> list[Found]:
    events = backend.client("events")
    return [
        Found("archive", a["ArchiveName"], lambda n=a["ArchiveName"]: events.delete_archive(ArchiveName=n))
        for a in _pages(events.list_archives, "Archives", NamePrefix=prefix)
    ]


def _buses(backend: Backend, prefix: str) -> list[Found]:
    events = backend.client("events")
    return [
        Found("bus", b["Name"], lambda n=b["Name"]: events.delete_event_bus(Name=n))
        for b in _pages(events.list_event_buses, "EventBuses", NamePrefix=prefix)
    ]


def _state_machines(backend: Backend, prefix: str) -> list[Found]:
    sfn = backend.client("stepfunctions")
    return [
        Found("state-machine", m["name"], lambda a=m["stateMachineArn"]: sfn.delete_state_machine(stateMachineArn=a))
        for m in _pages(sfn.list_state_machines, "stateMachines")
        if m["name"].startswith(prefix)
    ]


def _queues(backend: Backend, prefix: str) -> list[Found]:
    sqs = backend.client("sqs")
    return [
        Found("queue", url.rsplit("/", 1)[-1], lambda u=url: sqs.delete_queue(QueueUrl=u))
        for url in _pages(sqs.list_queues, "QueueUrls", QueueNamePrefix=prefix)
    ]


def _tables(backend: Backend, prefix: str) -> list[Found]:
    ddb = backend.client("dynamodb")
    names = [n for page in ddb.get_paginator("list_tables").paginate() for n in page["TableNames"]]
    return [Found("table", n, lambda n=n: ddb.delete_table(TableName=n)) for n in names if n.startswith(prefix)]


def _buckets(backend: Backend, prefix: str) -> list[Found]:
    s3 = backend.client("s3")
    names = [b["Name"] for b in s3.list_buckets().get("Buckets", [])]
    return [Found("bucket", n, lambda n=n: empty_and_delete_bucket(s3, n)) for n in names if n.startswith(prefix)]


def _roles(backend: Backend, prefix: str) -> list[Found]:
    iam = backend.client("iam")
    names = [r["RoleName"] for page in iam.get_paginator("list_roles").paginate() for r in page["Roles"]]
    return [Found("role", n, lambda n=n: delete_role(iam, n)) for n in names if n.startswith(prefix)]
