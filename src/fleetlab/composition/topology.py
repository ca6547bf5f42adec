"""Declarative provisioning and teardown of the reference topology.

One spec describes the three planes as the course uses them:

* control plane: a custom event bus, one rule per agent class (a content
  pattern on ``detail.agent_class``, a bounded RetryPolicy and a rule-target
  DLQ), optionally a catch-all rule that parks step requests no class rule
  matches on an ``unrouted`` queue (``add_unrouted``: PutEvents accepts such
  an event and, without it, it vanishes), and the orchestrator state machine;
* work plane: a work queue per agent class, each with its own DLQ (a redrive
  policy, a longer retention on the DLQ, a visibility timeout sized from the
  class's p95 step time);
* state plane: the idempotency table and the claim-check bucket.

Every name starts with a per-run prefix, so running a notebook twice never
collides; everything is made and removed through ``aws.resources``. ``provision`` is all-or-nothing: a failure tears down what was
already made. ``Topology.teardown`` is idempotent and tolerates resources
someone else already deleted.
"""

from __future__ import annotations

import contextlib
import math
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.backends.backend import Backend
from fleetlab.backends.resources import Queue, Resources
from fleetlab.core.errors import InvalidInput, ProvisionError
from fleetlab.core.settings import settings
from fleetlab.services.events import envelope
from fleetlab.services.sqs.dlq import DeadLetterTarget
from fleetlab.services.sqs.queues import WorkQueue
from fleetlab.services.stepfunctions import asl

MAX_VISIBILITY_SECONDS = 43_200  # SQS cap: 12 hours
DAY = 86_400

UNROUTED = "unrouted"
"""The catch-all rule's and queue's name: where step requests for an unknown agent class are parked."""

IDEMPOTENCY_KEYS = {"key": "pk", "sort_key": "sk", "ttl_attribute": "expires_at"}
"""The idempotency table's shape: the work's key, the consumer, and the window's TTL attribute."""


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
    unrouted: bool = False
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
    rule_arns: dict[str, str] = field(default_factory=dict)
    unrouted_url: str = ""
    unrouted_arn: str = ""
    table_name: str = ""
    bucket: str = ""
    state_machine_arn: str = ""
    made: Resources = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.made = Resources(self.backend, self.prefix)

    def queue(self, agent_class: str) -> WorkQueue:
        """The work queue of ``agent_class``; InvalidInput names the known classes."""
        if agent_class not in self.queues:
            raise InvalidInput("agent_class", f"{agent_class!r} is not in this topology", hint=f"known: {sorted(self.queues)}")
        return self.queues[agent_class]

    def dead_letter_target(self, agent_class: str) -> DeadLetterTarget:
        """Where ``agent_class``'s failures are parked, with its rule and queue as the diagnosis's route."""
        return self.queue(agent_class).dead_letter_target(self.rule_arns.get(agent_class, ""))

    def resources(self) -> list[tuple[str, str]]:
        """(kind, name) of everything made, in creation order."""
        return self.made.made()

    def teardown(self) -> list[str]:
        """Delete everything made, newest first. Returns problems met (empty when clean)."""
        return self.made.teardown()


def new_prefix(label: str = "run") -> str:
    """A fresh resource-name prefix such as ``fl-00-3fa9c2-``; ``fl-alice-00-3fa9c2-`` for ``FLEETLAB_LEARNER=alice``.

    Raises ConfigError when ``FLEETLAB_LEARNER`` is not a learner name the prefix can carry.
    """
    safe = "".join(ch for ch in label.lower() if ch.isalnum())[:8] or "run"
    learner = settings().learner
    owner = f"{learner}-" if learner else ""
    return f"fl-{owner}{safe}-{secrets.token_hex(3)}-"


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
        if spec.unrouted:
            add_unrouted(topology)
        if spec.orchestrator:
            _make_orchestrator(topology)
    except ClientError as exc:
        problems = topology.teardown()
        raise ProvisionError(
            f"provisioning {topology.prefix}* failed: {exc}; rolled back"
            + (f" (left behind: {problems})" if problems else "")
        ) from exc
    return topology


def add_unrouted(topology: Topology) -> str:
    """Add the catch-all rule: step requests whose agent class no rule routes go to the ``unrouted`` queue.

    Its pattern matches an ``agent_class`` that is anything but the known
    classes, or missing. Returns the queue's URL; a second call changes nothing.
    """
    if topology.unrouted_url:
        return topology.unrouted_url
    if UNROUTED in topology.queues:
        raise InvalidInput("agent_classes", f"an agent class may not be called {UNROUTED!r}: the catch-all uses the name")
    queue = topology.made.queue(UNROUTED, {"MessageRetentionPeriod": str(topology.spec.dlq_retention_seconds)})
    _allow_eventbridge(topology, queue)
    target = {"Id": "unrouted-queue", "Arn": queue.arn, "DeadLetterConfig": {"Arn": topology.rule_dlq_arn}}
    pattern = unrouted_pattern(sorted(topology.queues))
    topology.rule_arns[UNROUTED] = topology.made.rule(UNROUTED, bus=topology.bus_name, pattern=pattern, targets=[target])
    topology.rules[UNROUTED] = topology.made.name(UNROUTED)
    topology.unrouted_url, topology.unrouted_arn = queue.url, queue.arn
    return queue.url


def unrouted_pattern(known_classes: list[str]) -> dict[str, Any]:
    """The catch-all's event pattern: a step request for an agent class not in ``known_classes``, or none."""
    return {
        "source": [envelope.SOURCE],
        "detail-type": [envelope.REQUESTED],
        "$or": [
            {"detail": {"agent_class": [{"anything-but": known_classes}]}},
            {"detail": {"agent_class": [{"exists": False}]}},
        ],
    }


@contextlib.contextmanager
def experiment_queue(
    backend: Backend, prefix: str, *, visibility_timeout: int, max_receive_count: int = 0, fifo: bool = False
) -> Iterator[WorkQueue]:
    """A throwaway work queue (with a DLQ when ``max_receive_count`` > 0), deleted afterwards.

    For one experiment or one graded case: fresh, isolated, and gone when
    the block ends. A ``fifo`` queue (and its DLQ) deduplicates on content.
    Its ``visibility_timeout`` is the one the queue really has (on a scaled clock a
    timeout that is not a whole second of service time comes back longer).
    """
    with Resources(backend, prefix) as made:
        attributes = {"VisibilityTimeout": str(visibility_timeout)}
        fifo_attributes = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if fifo else {}
        name = "exp.fifo" if fifo else "exp"
        if max_receive_count:
            queue, dlq = made.queue_with_dlq(name, max_receive_count=max_receive_count,
                                             attributes={**attributes, **fifo_attributes}, dlq_attributes=fifo_attributes)
        else:
            queue, dlq = made.queue(name, {**attributes, **fifo_attributes}), Queue("", "")
        yield WorkQueue("experiment", queue.url, queue.arn, dlq.url, dlq.arn, queue.visibility_timeout,
                        max_receive_count)


@contextlib.contextmanager
def experiment_table(backend: Backend, prefix: str) -> Iterator[str]:
    """A throwaway idempotency table (pk, sk; TTL on ``expires_at``), deleted afterwards."""
    with Resources(backend, prefix) as made:
        yield made.table("exp-idempotency", **IDEMPOTENCY_KEYS)


def _make_state_plane(topology: Topology) -> None:
    topology.table_name = topology.made.table("idempotency", **IDEMPOTENCY_KEYS)
    topology.bucket = topology.made.bucket("claimcheck")


def _make_bus(topology: Topology) -> None:
    topology.bus_name, topology.bus_arn = topology.made.bus("bus")
    retention = {"MessageRetentionPeriod": str(topology.spec.dlq_retention_seconds)}
    dlq = topology.made.queue("rule-dlq", retention)
    topology.rule_dlq_url, topology.rule_dlq_arn = dlq.url, dlq.arn
    _allow_eventbridge(topology, dlq)


def _make_work_queue(topology: Topology, agent_class: AgentClass) -> None:
    fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if agent_class.fifo else {}
    queue, dlq = topology.made.queue_with_dlq(
        agent_class.name + (".fifo" if agent_class.fifo else ""),
        max_receive_count=agent_class.max_receive_count,
        attributes={
            "VisibilityTimeout": str(agent_class.visibility_timeout),
            "MessageRetentionPeriod": str(agent_class.retention_seconds),
            **fifo,
        },
        dlq_attributes={"MessageRetentionPeriod": str(topology.spec.dlq_retention_seconds), **fifo},
    )
    _allow_eventbridge(topology, queue)
    topology.queues[agent_class.name] = WorkQueue(
        agent_class=agent_class.name,
        url=queue.url,
        arn=queue.arn,
        dlq_url=dlq.url,
        dlq_arn=dlq.arn,
        visibility_timeout=queue.visibility_timeout,
        max_receive_count=agent_class.max_receive_count,
    )


def _make_rule(topology: Topology, agent_class: AgentClass) -> None:
    pattern = {
        "source": [envelope.SOURCE],
        "detail-type": [envelope.REQUESTED],
        "detail": {"agent_class": [agent_class.name]},
    }
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
    arn = topology.made.rule(agent_class.name, bus=topology.bus_name, pattern=pattern, targets=[target])
    topology.rules[agent_class.name] = topology.made.name(agent_class.name)
    topology.rule_arns[agent_class.name] = arn


def _make_orchestrator(topology: Topology) -> None:
    definition = asl.orchestrator_definition(
        bus_name=topology.bus_name,
        timeout_seconds=topology.spec.callback_timeout_seconds,
        heartbeat_seconds=topology.spec.callback_heartbeat_seconds,
    )
    topology.state_machine_arn = topology.made.state_machine(
        "orchestrator", definition, role_arn=_orchestrator_role(topology), own=True
    )


def _orchestrator_role(topology: Topology) -> str:
    """An execution role that may put events on the bus; emulators accept any role of the account."""
    if topology.backend.is_emulated:
        return asl.emulator_role_arn(topology.backend.account_id)
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "events:PutEvents", "Resource": topology.bus_arn}],
    }
    return topology.made.role("orchestrator", service="states.amazonaws.com", policy=policy)


def _allow_eventbridge(topology: Topology, queue: Queue) -> None:
    """Let the bus's rules send to ``queue`` (the queue policy EventBridge needs on AWS)."""
    topology.made.allow_eventbridge(queue, topology.bus_arn)
