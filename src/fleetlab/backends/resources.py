"""Making AWS resources and removing them again: one undo stack for everything fleetlab creates.

``Resources`` names what it makes with one prefix and records, for each
thing made, how to remove it. ``teardown`` removes everything, newest first,
best effort: a resource someone already deleted counts as removed, any other
failure is returned as a problem and the rest is still removed. The
reference topology, the throwaway queues and tables of experiments and
checks, and the capability probe's scratch space all make their resources
through it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.backends import lazysfn
from fleetlab.backends.backend import Backend
from fleetlab.backends.responses import error_code

GONE_CODES = frozenset({
    "ResourceNotFoundException",
    "AWS.SimpleQueueService.NonExistentQueue",
    "QueueDoesNotExist",
    "NoSuchBucket",
    "StateMachineDoesNotExist",
    "NoSuchEntity",
})
"""Error codes that mean the resource is already gone: deleting it is then done, not a problem."""


@dataclass(frozen=True)
class Queue:
    """A queue's URL and ARN, and the visibility timeout it really has (read back, in lab seconds)."""

    url: str
    arn: str
    visibility_timeout: int = 0


@dataclass(frozen=True)
class Made:
    """One resource made, and how to remove it."""

    kind: str
    name: str
    remove: Callable[[], Any]


class Resources:
    """What one owner made on a backend under ``prefix``, and how to remove it.

    Use as a context manager (everything is removed when the block ends) or
    call ``teardown`` yourself. Every ``name`` is ``prefix + what``.
    """

    def __init__(self, backend: Backend, prefix: str) -> None:
        self.backend = backend
        self.prefix = prefix
        self._made: list[Made] = []

    def __enter__(self) -> Resources:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.teardown()

    def name(self, what: str) -> str:
        return f"{self.prefix}{what}"

    def on_teardown(self, kind: str, name: str, remove: Callable[[], Any]) -> None:
        """Record that ``remove()`` deletes the ``kind`` called ``name``; it runs at teardown."""
        self._made.append(Made(kind, name, remove))

    def made(self) -> list[tuple[str, str]]:
        """(kind, name) of everything made and not yet removed, in creation order."""
        return [(made.kind, made.name) for made in self._made]

    def teardown(self) -> list[str]:
        """Remove everything, newest first. Returns the problems met (empty when clean).

        Best effort: a resource already gone is fine, any other failure is
        reported as ``"kind name: error"`` and the rest is still removed.
        """
        problems: list[str] = []
        while self._made:
            made = self._made.pop()
            try:
                made.remove()
            except ClientError as exc:
                if error_code(exc) not in GONE_CODES:
                    problems.append(f"{made.kind} {made.name}: {error_code(exc)}")
            except Exception as exc:  # an emulator's own failure: report it, keep removing the rest
                problems.append(f"{made.kind} {made.name}: {type(exc).__name__}: {exc}")
        return problems

    # --------------------------------------------------------------- the things fleetlab makes

    def queue(self, what: str, attributes: dict[str, str] | None = None) -> Queue:
        """A queue named ``prefix + what`` (end ``what`` in ``.fifo`` for a FIFO queue).

        Its visibility timeout is read back: on a scaled clock the service
        keeps whole seconds, so a lab timeout may come back longer than asked.
        """
        sqs = self.backend.client("sqs")
        name = self.name(what)
        url = sqs.create_queue(QueueName=name, Attributes=attributes or {})["QueueUrl"]
        self.on_teardown("queue", name, lambda: sqs.delete_queue(QueueUrl=url))
        got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn", "VisibilityTimeout"])["Attributes"]
        return Queue(url, got["QueueArn"], int(got["VisibilityTimeout"]))

    def queue_with_dlq(
        self, what: str, *, max_receive_count: int, attributes: dict[str, str] | None = None,
        dlq_attributes: dict[str, str] | None = None,
    ) -> tuple[Queue, Queue]:
        """A queue and its dead-letter queue ``what-dlq`` (redrive policy both ways): (queue, dlq).

        A FIFO ``what`` (ending ``.fifo``) gets a FIFO DLQ, as SQS requires.
        """
        fifo = what.endswith(".fifo")
        dlq = self.queue(f"{what.removesuffix('.fifo')}-dlq{'.fifo' if fifo else ''}", dlq_attributes)
        redrive = {"deadLetterTargetArn": dlq.arn, "maxReceiveCount": max_receive_count}
        queue = self.queue(what, {**(attributes or {}), "RedrivePolicy": json.dumps(redrive)})
        allow = {"redrivePermission": "byQueue", "sourceQueueArns": [queue.arn]}
        self.backend.client("sqs").set_queue_attributes(
            QueueUrl=dlq.url, Attributes={"RedriveAllowPolicy": json.dumps(allow)}
        )
        return queue, dlq

    def table(self, what: str, *, key: str = "pk", sort_key: str | None = None, ttl_attribute: str | None = None) -> str:
        """An on-demand DynamoDB table (string keys), waited until it exists; its name."""
        ddb = self.backend.client("dynamodb")
        name = self.name(what)
        keys = [(key, "HASH")] + ([(sort_key, "RANGE")] if sort_key else [])
        ddb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": k, "KeyType": kind} for k, kind in keys],
            AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k, _ in keys],
            BillingMode="PAY_PER_REQUEST",
        )
        self.on_teardown("table", name, lambda: ddb.delete_table(TableName=name))
        ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        if ttl_attribute:
            ddb.update_time_to_live(
                TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attribute}
            )
        return name

    def bus(self, what: str) -> tuple[str, str]:
        """A custom event bus: (name, ARN)."""
        events = self.backend.client("events")
        name = self.name(what)
        arn = events.create_event_bus(Name=name)["EventBusArn"]
        self.on_teardown("bus", name, lambda: events.delete_event_bus(Name=name))
        return name, arn

    def rule(self, what: str, *, bus: str, pattern: dict[str, Any], targets: list[dict[str, Any]]) -> str:
        """A rule on ``bus`` matching ``pattern`` and sending to ``targets``: its ARN.

        Teardown removes the targets, then the rule.
        """
        events = self.backend.client("events")
        name = self.name(what)
        ids = [target["Id"] for target in targets]
        arn = events.put_rule(Name=name, EventBusName=bus, EventPattern=json.dumps(pattern), State="ENABLED")["RuleArn"]

        def remove() -> None:
            events.remove_targets(Rule=name, EventBusName=bus, Ids=ids)
            events.delete_rule(Name=name, EventBusName=bus)

        self.on_teardown("rule", name, remove)
        events.put_targets(Rule=name, EventBusName=bus, Targets=targets)
        return arn

    def archive(
        self, what: str, *, source_arn: str, pattern: dict[str, Any] | None = None, retention_days: int = 0
    ) -> str:
        """An EventBridge archive of the events on the bus ``source_arn`` that match ``pattern`` (all of
        them without one), kept ``retention_days`` (0: forever): its ARN."""
        events = self.backend.client("events")
        name = self.name(what)
        request: dict[str, Any] = {"ArchiveName": name, "EventSourceArn": source_arn, "RetentionDays": retention_days}
        if pattern is not None:
            request["EventPattern"] = json.dumps(pattern)
        arn = events.create_archive(**request)["ArchiveArn"]
        self.on_teardown("archive", name, lambda: events.delete_archive(ArchiveName=name))
        return arn

    def allow_eventbridge(self, queue: Queue, bus_arn: str) -> None:
        """Let the rules of the bus ``bus_arn`` send to ``queue`` (the queue policy EventBridge needs on AWS)."""
        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "EventBridgeDelivers",
                    "Effect": "Allow",
                    "Principal": {"Service": "events.amazonaws.com"},
                    "Action": "sqs:SendMessage",
                    "Resource": queue.arn,
                    "Condition": {"ArnLike": {"aws:SourceArn": bus_arn.replace(":event-bus/", ":rule/") + "/*"}},
                }
            ],
        }
        self.backend.client("sqs").set_queue_attributes(QueueUrl=queue.url, Attributes={"Policy": json.dumps(policy)})

    def bucket(self, what: str) -> str:
        """An S3 bucket; teardown empties it first. Its name."""
        s3 = self.backend.client("s3")
        name = self.name(what)
        region = self.backend.region
        location = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        s3.create_bucket(Bucket=name, **location)
        self.on_teardown("bucket", name, lambda: empty_and_delete_bucket(s3, name))
        return name

    def state_machine(self, what: str, definition: dict[str, Any], *, role_arn: str, own: bool = False) -> str:
        """A STANDARD state machine: its ARN. ``own``: fleetlab built ``definition`` (``lazysfn.vouch``)."""
        sfn = self.backend.client("stepfunctions")
        name = self.name(what)
        text = json.dumps(definition)
        if own:
            lazysfn.vouch(text)
        arn = sfn.create_state_machine(name=name, definition=text, roleArn=role_arn, type="STANDARD")["stateMachineArn"]
        self.on_teardown("state-machine", name, lambda: sfn.delete_state_machine(stateMachineArn=arn))
        return arn

    def role(self, what: str, *, service: str, policy: dict[str, Any]) -> str:
        """An IAM role ``service`` may assume, with one inline policy: its ARN."""
        iam = self.backend.client("iam")
        name = self.name(what)
        trust = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
        }
        arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        self.on_teardown("role", name, lambda: delete_role(iam, name))
        iam.put_role_policy(RoleName=name, PolicyName="inline", PolicyDocument=json.dumps(policy))
        return arn


def empty_and_delete_bucket(s3: Any, bucket: str) -> None:
    """Delete every object of ``bucket``, then the bucket."""
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": obj["Key"]} for obj in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})
    s3.delete_bucket(Bucket=bucket)


def delete_role(iam: Any, role: str) -> None:
    """Delete ``role`` after its inline policies and detaching its managed ones, as IAM requires."""
    for page in iam.get_paginator("list_role_policies").paginate(RoleName=role):
        for policy in page["PolicyNames"]:
            iam.delete_role_policy(RoleName=role, PolicyName=policy)
    for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=role):
        for policy in page["AttachedPolicies"]:
            iam.detach_role_policy(RoleName=role, PolicyArn=policy["PolicyArn"])
    iam.delete_role(RoleName=role)
