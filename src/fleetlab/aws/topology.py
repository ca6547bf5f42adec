"""Declarative provisioning and teardown of the reference topology.

One spec describes the three planes as the course uses them:

* control plane: a custom event bus, one rule per agent class (a content
  pattern on ``detail.agent_class``, a bounded RetryPolicy and a rule-target
  DLQ), and the orchestrator state machine;
* work plane: a work queue per agent class, each with its own DLQ (a redrive
  policy, a longer retention on the DLQ, a visibility timeout sized from the
  class's p95 step time);
* state plane: the idempotency table and the claim-check bucket.

Every name starts with a per-run prefix, so running a notebook twice never
collides. ``provision`` is all-or-nothing: a failure tears down what was
already made. ``Topology.teardown`` is idempotent and tolerates resources
someone else already deleted.
"""

from __future__ import annotations

import contextlib
import json
import math
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from ..events import envelope
from ..stepfunctions import asl
from .backends import Backend
from ..errors import InvalidInput, ProvisionError

MAX_VISIBILITY_SECONDS = 43_200  # SQS cap: 12 hours
DAY = 86_400


def visibility_for(step_p95_seconds: float, *, margin: float = 1.5) -> int:
    """A visibility timeout that covers the p95 step time with a safety margin.

    Raises InvalidInput when the result would exceed SQS's 12-hour cap: such a
    step needs a heartbeat, not a longer timeout.
    """
    if step_p95_seconds <= 0:
        raise InvalidInput("step_p95_seconds", f"must be positive, got {step_p95_seconds}")
    if margin < 1:
        raise InvalidInput("margin", f"must be at least 1, got {margin}")
    seconds = math.ceil(step_p95_seconds * margin)
    if seconds > MAX_VISIBILITY_SECONDS:
        raise InvalidInput(
            "step_p95_seconds",
            f"{step_p95_seconds} s x {margin} = {seconds} s exceeds the 12 h visibility cap",
            hint="extend visibility with a heartbeat instead",
        )
    return seconds


@dataclass(frozen=True)
class AgentClass:
    """One class of agent work: its queue, DLQ and rule."""

    name: str
    step_p95_seconds: float = 600.0
    max_receive_count: int = 4
    retention_seconds: int = 4 * DAY
    fifo: bool = False

    @property
    def visibility_timeout(self) -> int:
        return visibility_for(self.step_p95_seconds)


@dataclass(frozen=True)
class TopologySpec:
    """What to build. The defaults follow the seed's reference values."""

    agent_classes: tuple[AgentClass, ...] = (AgentClass("researcher"), AgentClass("coder"))
    retry_attempts: int = 24
    max_event_age_seconds: int = 3_600
    dlq_retention_seconds: int = 14 * DAY
    orchestrator: bool = True
    callback_timeout_seconds: int = 3_600
    callback_heartbeat_seconds: int = 900

    def __post_init__(self) -> None:
        names = [c.name for c in self.agent_classes]
        if not names:
            raise InvalidInput("agent_classes", "needs at least one agent class")
        if len(set(names)) != len(names):
            raise InvalidInput("agent_classes", f"names must be unique, got {names}")
        if not 0 <= self.retry_attempts <= 185:
            raise InvalidInput("retry_attempts", f"EventBridge allows 0-185, got {self.retry_attempts}")
        if not 60 <= self.max_event_age_seconds <= 86_400:
            raise InvalidInput(
                "max_event_age_seconds", f"EventBridge allows 60-86400, got {self.max_event_age_seconds}"
            )


@dataclass(frozen=True)
class WorkQueue:
    """A work queue and its DLQ."""

    agent_class: str
    url: str
    arn: str
    dlq_url: str
    dlq_arn: str
    visibility_timeout: int
    max_receive_count: int


@dataclass
class Topology:
    """What ``provision`` made: names, URLs and ARNs, and how to remove them."""

    backend: Backend
    prefix: str
    spec: TopologySpec
    bus_name: str = ""
    bus_arn: str = ""
    rule_dlq_url: str = ""
    rule_dlq_arn: str = ""
    queues: dict[str, WorkQueue] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)
    table_name: str = ""
    bucket: str = ""
    state_machine_arn: str = ""
    _undo: list[tuple[str, Callable[[], None]]] = field(default_factory=list, repr=False)

    def queue(self, agent_class: str) -> WorkQueue:
        """The work queue of ``agent_class``; InvalidInput names the known classes."""
        if agent_class not in self.queues:
            raise InvalidInput("agent_class", f"{agent_class!r} is not in this topology", hint=f"known: {sorted(self.queues)}")
        return self.queues[agent_class]

    def resources(self) -> list[tuple[str, str]]:
        """(kind, name) of everything made, in creation order."""
        made = (label.split(":", 1) for label, _ in self._undo)
        return [(kind, name) for kind, name in made]

    def teardown(self) -> list[str]:
        """Delete everything made, newest first. Returns problems met (empty when clean)."""
        problems: list[str] = []
        while self._undo:
            label, undo = self._undo.pop()
            try:
                undo()
            except ClientError as exc:
                if not _is_gone(exc):
                    problems.append(f"{label}: {exc.response['Error'].get('Code')}")
        return problems


def new_prefix(label: str = "run") -> str:
    """A fresh resource-name prefix such as ``fl-00-3fa9c2-``."""
    safe = "".join(ch for ch in label.lower() if ch.isalnum())[:8] or "run"
    return f"fl-{safe}-{secrets.token_hex(3)}-"


def provision(backend: Backend, spec: TopologySpec | None = None, *, prefix: str | None = None) -> Topology:
    """Build the topology on ``backend``. All or nothing: raises ProvisionError after rolling back."""
    spec = spec or TopologySpec()
    topology = Topology(backend=backend, prefix=prefix or new_prefix(), spec=spec)
    try:
        _make_state_plane(topology)
        _make_bus(topology)
        for agent_class in spec.agent_classes:
            _make_work_queue(topology, agent_class)
            _make_rule(topology, agent_class)
        if spec.orchestrator:
            _make_orchestrator(topology)
    except ClientError as exc:
        problems = topology.teardown()
        raise ProvisionError(
            f"provisioning {topology.prefix}* failed: {exc}; rolled back"
            + (f" (left behind: {problems})" if problems else "")
        ) from exc
    return topology


@contextlib.contextmanager
def experiment_queue(
    backend: Backend, prefix: str, *, visibility_timeout: int, max_receive_count: int = 0
) -> Iterator[WorkQueue]:
    """A throwaway work queue (with a DLQ when ``max_receive_count`` > 0), deleted afterwards.

    For one experiment or one graded case: fresh, isolated, and gone when the block ends.
    """
    made = Topology(backend=backend, prefix=prefix, spec=TopologySpec(orchestrator=False))
    try:
        attributes = {"VisibilityTimeout": str(visibility_timeout)}
        dlq_url = dlq_arn = ""
        if max_receive_count:
            dlq_url, dlq_arn = _create_queue(made, f"{prefix}exp-dlq", {})
            attributes["RedrivePolicy"] = json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count}
            )
        url, arn = _create_queue(made, f"{prefix}exp", attributes)
        yield WorkQueue("experiment", url, arn, dlq_url, dlq_arn, visibility_timeout, max_receive_count)
    finally:
        made.teardown()


@contextlib.contextmanager
def experiment_table(backend: Backend, prefix: str) -> Iterator[str]:
    """A throwaway idempotency table (pk, sk; TTL on ``expires_at``), deleted afterwards."""
    made = Topology(backend=backend, prefix=prefix, spec=TopologySpec(orchestrator=False))
    try:
        _make_table(made, f"{prefix}exp-idempotency")
        yield made.table_name
    finally:
        made.teardown()


def _record(topology: Topology, kind: str, name: str, undo: Callable[[], None]) -> None:
    topology._undo.append((f"{kind}:{name}", undo))


def _make_state_plane(topology: Topology) -> None:
    _make_table(topology, f"{topology.prefix}idempotency")
    s3 = topology.backend.client("s3")
    bucket = f"{topology.prefix}claimcheck"
    s3.create_bucket(Bucket=bucket, **_bucket_location(topology.backend.region))
    _record(topology, "bucket", bucket, lambda: _empty_and_delete_bucket(s3, bucket))
    topology.bucket = bucket


def _make_table(topology: Topology, table: str) -> None:
    ddb = topology.backend.client("dynamodb")
    ddb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    _record(topology, "table", table, lambda: ddb.delete_table(TableName=table))
    ddb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    ddb.update_time_to_live(
        TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
    )
    topology.table_name = table


def _make_bus(topology: Topology) -> None:
    events = topology.backend.client("events")
    sqs = topology.backend.client("sqs")
    bus = f"{topology.prefix}bus"
    topology.bus_arn = events.create_event_bus(Name=bus)["EventBusArn"]
    _record(topology, "bus", bus, lambda: events.delete_event_bus(Name=bus))
    topology.bus_name = bus

    dlq = f"{topology.prefix}rule-dlq"
    topology.rule_dlq_url, topology.rule_dlq_arn = _create_queue(
        topology, dlq, {"MessageRetentionPeriod": str(topology.spec.dlq_retention_seconds)}
    )
    _allow_eventbridge(sqs, topology.rule_dlq_url, topology.rule_dlq_arn, topology.bus_arn)


def _make_work_queue(topology: Topology, agent_class: AgentClass) -> None:
    sqs = topology.backend.client("sqs")
    suffix = ".fifo" if agent_class.fifo else ""
    fifo_attributes = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if agent_class.fifo else {}
    dlq_url, dlq_arn = _create_queue(
        topology,
        f"{topology.prefix}{agent_class.name}-dlq{suffix}",
        {"MessageRetentionPeriod": str(topology.spec.dlq_retention_seconds), **fifo_attributes},
    )
    url, arn = _create_queue(
        topology,
        f"{topology.prefix}{agent_class.name}{suffix}",
        {
            "VisibilityTimeout": str(agent_class.visibility_timeout),
            "MessageRetentionPeriod": str(agent_class.retention_seconds),
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": agent_class.max_receive_count}
            ),
            **fifo_attributes,
        },
    )
    sqs.set_queue_attributes(
        QueueUrl=dlq_url,
        Attributes={"RedriveAllowPolicy": json.dumps({"redrivePermission": "byQueue", "sourceQueueArns": [arn]})},
    )
    _allow_eventbridge(sqs, url, arn, topology.bus_arn)
    topology.queues[agent_class.name] = WorkQueue(
        agent_class=agent_class.name,
        url=url,
        arn=arn,
        dlq_url=dlq_url,
        dlq_arn=dlq_arn,
        visibility_timeout=agent_class.visibility_timeout,
        max_receive_count=agent_class.max_receive_count,
    )


def _make_rule(topology: Topology, agent_class: AgentClass) -> None:
    events = topology.backend.client("events")
    rule = f"{topology.prefix}{agent_class.name}"
    pattern = {
        "source": [envelope.SOURCE],
        "detail-type": [envelope.REQUESTED],
        "detail": {"agent_class": [agent_class.name]},
    }
    events.put_rule(Name=rule, EventBusName=topology.bus_name, EventPattern=json.dumps(pattern), State="ENABLED")
    target: dict[str, Any] = {
        "Id": "work-queue",
        "Arn": topology.queues[agent_class.name].arn,
        "RetryPolicy": {
            "MaximumRetryAttempts": topology.spec.retry_attempts,
            "MaximumEventAgeInSeconds": topology.spec.max_event_age_seconds,
        },
        "DeadLetterConfig": {"Arn": topology.rule_dlq_arn},
    }
    if agent_class.fifo:
        target["SqsParameters"] = {"MessageGroupId": agent_class.name}
    events.put_targets(Rule=rule, EventBusName=topology.bus_name, Targets=[target])

    def undo() -> None:
        events.remove_targets(Rule=rule, EventBusName=topology.bus_name, Ids=["work-queue"])
        events.delete_rule(Name=rule, EventBusName=topology.bus_name)

    _record(topology, "rule", rule, undo)
    topology.rules[agent_class.name] = rule


def _make_orchestrator(topology: Topology) -> None:
    sfn = topology.backend.client("stepfunctions")
    name = f"{topology.prefix}orchestrator"
    definition = asl.orchestrator_definition(
        bus_name=topology.bus_name,
        timeout_seconds=topology.spec.callback_timeout_seconds,
        heartbeat_seconds=topology.spec.callback_heartbeat_seconds,
    )
    arn = sfn.create_state_machine(
        name=name,
        definition=json.dumps(definition),
        roleArn=_orchestrator_role(topology),
        type="STANDARD",
    )["stateMachineArn"]
    _record(topology, "state-machine", name, lambda: sfn.delete_state_machine(stateMachineArn=arn))
    topology.state_machine_arn = arn


def _orchestrator_role(topology: Topology) -> str:
    """An execution role that may put events on the bus; emulators accept any role of the account."""
    if topology.backend.is_emulated:
        return asl.emulator_role_arn(topology.backend.account_id)
    iam = topology.backend.client("iam")
    name = f"{topology.prefix}orchestrator"
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "states.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "events:PutEvents", "Resource": topology.bus_arn}],
    }
    iam.put_role_policy(RoleName=name, PolicyName="put-events", PolicyDocument=json.dumps(policy))

    def undo() -> None:
        iam.delete_role_policy(RoleName=name, PolicyName="put-events")
        iam.delete_role(RoleName=name)

    _record(topology, "role", name, undo)
    return arn


def _create_queue(topology: Topology, name: str, attributes: dict[str, str]) -> tuple[str, str]:
    sqs = topology.backend.client("sqs")
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    _record(topology, "queue", name, lambda: sqs.delete_queue(QueueUrl=url))
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, arn


def _allow_eventbridge(sqs: Any, url: str, arn: str, bus_arn: str) -> None:
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "EventBridgeDelivers",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": arn,
                "Condition": {"ArnLike": {"aws:SourceArn": bus_arn.replace(":event-bus/", ":rule/") + "/*"}},
            }
        ],
    }
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})


def _bucket_location(region: str) -> dict[str, Any]:
    return {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}


def _empty_and_delete_bucket(s3: Any, bucket: str) -> None:
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket):
        keys = [{"Key": obj["Key"]} for obj in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})
    s3.delete_bucket(Bucket=bucket)


_GONE_CODES = {
    "ResourceNotFoundException",
    "AWS.SimpleQueueService.NonExistentQueue",
    "QueueDoesNotExist",
    "NoSuchBucket",
    "StateMachineDoesNotExist",
    "NoSuchEntity",
}


def _is_gone(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") in _GONE_CODES
