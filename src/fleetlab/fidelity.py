"""The capability probe and the fidelity table: where this backend differs from AWS.

``probe(backend)`` measures, through boto3 on the open backend, each contract
the labs rely on (when a message is dead-lettered, the error a missed heartbeat
reports, whether a replay honours its time window, ...) and returns a
``FidelityTable``: per feature, what AWS documents, what this backend did, and
what fleetlab or the learner does where they differ. Labs, tests and
``docs/fidelity.md`` read the table; nothing hard-codes an emulator's quirk.

Contracts:

* Each probe makes its own resources under a fresh ``flprobe-<6 hex>-`` prefix
  and deletes them afterwards, also when it fails. A probe that fails is
  recorded as ``probe failed: <error>`` (not matching AWS); the table is still
  built.
* Durations follow the clock: on a virtual clock a probe uses production
  numbers (a 900 s visibility timeout) and jumps over them; on a real clock it
  uses seconds. Step Functions timers run in real time on every backend, so the
  callback probe uses a 1 s heartbeat. Measuring moves a virtual clock (the
  whole process's time) about 3 days forward, since TTL deletion is only a
  divergence once AWS's 48 h have passed: probe before making time-sensitive
  state (messages with a short retention, leases).
* A table is measured once per backend session, and cached as JSON in
  ``$FLEETLAB_HOME`` or ``<repo root>/.fleetlab`` as
  ``fidelity-<backend>-<emulator version>.json``. The cache is used only when
  its versions (emulator, boto3, the probe set) equal the current ones, and a
  table with a failed probe is never cached. ``refresh=True`` re-measures.
* The ``aws`` backend is never probed: it *is* the reference, so its table
  matches AWS everywhere and creates nothing.
* A finding that cannot be measured on this clock (DynamoDB TTL on a real
  clock: AWS may take 48 h) is reported as "not measured" and *not* matching
  AWS: the table never claims a fidelity it did not see, and the workaround
  (treat expired items as absent) is right on AWS too.

``python -m fleetlab.fidelity --out docs/fidelity.md`` probes moto and
moto-server (and LocalStack with ``--backends moto,moto-server,localstack``)
one after the other and writes one markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import secrets
import sys
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import boto3
import botocore.config
from botocore.exceptions import ClientError
from rich.table import Table

from .backends import BACKEND_NAMES, Backend, open_backend
from .errors import BackendUnavailable, ConfigError

_log = logging.getLogger(__name__)

PROBE_FAILED = "probe failed: "
AWS_ITSELF = "AWS itself"


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Finding:
    """One feature: AWS's documented behaviour next to what a backend did."""

    feature: str
    title: str
    aws: str
    observed: str
    matches_aws: bool
    workaround: str = ""


@dataclass(frozen=True)
class FidelityTable:
    """Every finding of one backend, in probe order, with the versions measured."""

    backend: str
    versions: dict[str, str]
    findings: tuple[Finding, ...]

    def get(self, feature: str) -> Finding:
        """The finding for ``feature``; ConfigError naming the known ids if there is none."""
        for finding in self.findings:
            if finding.feature == feature:
                return finding
        known = ", ".join(f.feature for f in self.findings)
        raise ConfigError(f"no fidelity finding {feature!r} for {self.backend}; known features: {known}")

    def diverges(self, feature: str) -> bool:
        """True when this backend does not behave as AWS documents ``feature``."""
        return not self.get(feature).matches_aws

    def divergences(self) -> tuple[Finding, ...]:
        """The findings where this backend differs from AWS."""
        return tuple(f for f in self.findings if not f.matches_aws)

    def to_markdown(self) -> str:
        """This table alone as markdown (feature | AWS | <backend>)."""
        return render_markdown({self.backend: self})

    def to_rich(self) -> Table:
        """A rich table for ``fleetlab doctor``: divergent rows in red."""
        table = Table(title=f"Fidelity of {self.backend} ({_versions_text(self)})", show_lines=True)
        for column in ("feature", "AWS", self.backend, "workaround"):
            table.add_column(column, overflow="fold")
        for f in self.findings:
            mark = "✓" if f.matches_aws else "✗"
            table.add_row(
                f"{f.title}\n[dim]{f.feature}[/dim]",
                f.aws,
                f"{mark} {f.observed}",
                f.workaround,
                style=None if f.matches_aws else "red",
            )
        return table

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``from_dict`` reads it back."""
        return {
            "backend": self.backend,
            "versions": dict(self.versions),
            "findings": [asdict(f) for f in self.findings],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FidelityTable:
        """Rebuild a table from ``to_dict`` output; ConfigError names a malformed field."""
        backend = _field(data, "backend", str)
        versions = _field(data, "versions", dict)
        rows = _field(data, "findings", list)
        try:
            findings = tuple(Finding(**row) for row in rows)
        except TypeError as exc:
            raise ConfigError(f"fidelity table field 'findings' is malformed ({exc})") from exc
        return cls(backend=backend, versions={str(k): str(v) for k, v in versions.items()}, findings=findings)


def _field(data: Mapping[str, Any], name: str, kind: type) -> Any:
    value = data.get(name) if isinstance(data, Mapping) else None
    if not isinstance(value, kind):
        raise ConfigError(f"fidelity table field {name!r} must be a {kind.__name__}, got {value!r:.60}")
    return value


def render_markdown(columns: Mapping[str, FidelityTable | None]) -> str:
    """One markdown table, feature | AWS | one column per label; ``None`` reads "not probed".

    Below it: the versions measured and the workaround of each feature that
    diverges on any probed backend.
    """
    probed = {label: table for label, table in columns.items() if table is not None}
    if not probed:
        raise ConfigError("nothing to render: probe at least one backend")
    reference = next(iter(probed.values()))
    lines = [
        "| feature | AWS | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for finding in reference.findings:
        cells = [f"{finding.title}<br>`{finding.feature}`", finding.aws]
        cells += [_markdown_cell(table, finding.feature) for table in columns.values()]
        lines.append("| " + " | ".join(_escape(cell) for cell in cells) + " |")
    lines += ["", "✓ behaves as AWS documents. ✗ differs from AWS (workaround below).", ""]
    lines += [f"- {label}: {_versions_text(table)}" for label, table in probed.items()]
    lines += _workaround_lines(probed)
    return "\n".join(lines) + "\n"


def _versions_text(table: FidelityTable) -> str:
    return ", ".join(f"{package} {version}" for package, version in table.versions.items())


def _markdown_cell(table: FidelityTable | None, feature: str) -> str:
    if table is None:
        return "not probed"
    finding = table.get(feature)
    return ("✓ " if finding.matches_aws else "✗ ") + finding.observed


def _workaround_lines(probed: Mapping[str, FidelityTable]) -> list[str]:
    diverging: dict[str, tuple[Finding, list[str]]] = {}
    for label, table in probed.items():
        for finding in table.divergences():
            diverging.setdefault(finding.feature, (finding, []))[1].append(label)
    if not diverging:
        return []
    lines = ["", "## Workarounds", ""]
    for finding, labels in diverging.values():
        lines.append(f"- `{finding.feature}` ({', '.join(labels)}): {finding.workaround}")
    return lines


def _escape(cell: str) -> str:
    return cell.replace("|", "\\|").replace("\n", " ")


# --------------------------------------------------------------------------- probing


@dataclass(frozen=True)
class Feature:
    """What a probe reports on: its id, AWS's documented behaviour, the workaround."""

    id: str
    title: str
    aws: str
    workaround: str

    def finding(self, observation: Observation) -> Finding:
        return Finding(
            feature=self.id,
            title=self.title,
            aws=self.aws,
            observed=observation.observed,
            matches_aws=observation.matches_aws,
            workaround="" if observation.matches_aws else self.workaround,
        )


@dataclass(frozen=True)
class Observation:
    """What a backend did, in words, and whether that is what AWS documents."""

    observed: str
    matches_aws: bool


Measure = Callable[["Scratch"], "Observation | tuple[Observation, ...]"]


@dataclass(frozen=True)
class Probe:
    """One experiment on the backend, reporting one observation per feature."""

    features: tuple[Feature, ...]
    measure: Measure


PROBES: list[Probe] = []
"""Every probe, in the order its findings appear in a table."""


def _probes(*features: Feature) -> Callable[[Measure], Measure]:
    """Register the decorated function as the probe of ``features``."""

    def register(measure: Measure) -> Measure:
        PROBES.append(Probe(features, measure))
        return measure

    return register


def _run(probe_: Probe, backend: Backend) -> tuple[Finding, ...]:
    """Run one probe in its own scratch space; a failure becomes its findings' observation."""
    try:
        with Scratch(backend) as scratch:
            result = probe_.measure(scratch)
        observations = result if isinstance(result, tuple) else (result,)
        if len(observations) != len(probe_.features):
            raise RuntimeError(f"{len(observations)} observations for {len(probe_.features)} features")
    except Exception as exc:  # a probe must never take the table down with it
        failed = Observation(f"{PROBE_FAILED}{type(exc).__name__}: {exc}", False)
        observations = (failed,) * len(probe_.features)
    return tuple(feature.finding(o) for feature, o in zip(probe_.features, observations, strict=True))


def _measure(backend: Backend) -> tuple[Finding, ...]:
    """Every registered probe, run once on ``backend``, in registry order."""
    return tuple(finding for probe_ in PROBES for finding in _run(probe_, backend))


@dataclass(frozen=True)
class Queue:
    url: str
    arn: str


class Scratch:
    """One probe's workspace: unique names, durations sized to the clock, teardown.

    Everything made through it is deleted when the ``with`` block ends, last
    made first, each deletion best effort.
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.prefix = f"flprobe-{secrets.token_hex(3)}-"
        self._teardown = contextlib.ExitStack()
        self._account: str | None = None

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._teardown.close()

    # names, clients, time

    def name(self, what: str) -> str:
        return f"{self.prefix}{what}"

    def client(self, service: str) -> Any:
        return self.backend.client(service)

    def unretried_client(self, service: str) -> Any:
        """A client that makes one attempt: an unimplemented call fails once, quietly."""
        session = boto3.Session(
            region_name=self.backend.region, aws_access_key_id="testing", aws_secret_access_key="testing"
        )
        config = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"})
        return session.client(service, endpoint_url=self.backend.endpoint, config=config)

    @property
    def account(self) -> str:
        if self._account is None:
            self._account = self.backend.account_id
        return self._account

    @property
    def visibility_timeout(self) -> int:
        """Production's 900 s on a virtual clock; 2 s where time is real."""
        return 900 if self.backend.clock.virtual else 2

    @property
    def quiet_wait(self) -> int:
        """Seconds to long-poll before concluding that nothing is coming."""
        return 0 if self.backend.clock.virtual else 1

    def let_pass(self, seconds: float) -> None:
        self.backend.clock.sleep(seconds)

    def on_teardown(self, what: str, delete: Callable[..., Any], **kwargs: Any) -> None:
        """Call ``delete(**kwargs)`` at teardown; a failure is logged, not raised."""

        def best_effort() -> None:
            try:
                delete(**kwargs)
            except Exception as exc:  # a leftover must not hide the probe's own result
                _log.warning("fidelity probe could not delete %s: %s", what, exc)

        self._teardown.callback(best_effort)

    # resources

    def queue(self, what: str, **attributes: str) -> Queue:
        sqs = self.client("sqs")
        url = sqs.create_queue(QueueName=self.name(what), Attributes=attributes)["QueueUrl"]
        self.on_teardown(url, sqs.delete_queue, QueueUrl=url)
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return Queue(url, arn)

    def receive(self, url: str, *, wait: int) -> dict[str, Any] | None:
        """One ReceiveMessage of at most one message, long-polling ``wait`` seconds."""
        messages = self.client("sqs").receive_message(
            QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=wait, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
        return messages[0] if messages else None

    def delete_message(self, url: str, message: dict[str, Any]) -> None:
        self.client("sqs").delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    def bus(self, what: str) -> tuple[str, str]:
        """A custom event bus: (name, ARN)."""
        events = self.client("events")
        name = self.name(what)
        arn = events.create_event_bus(Name=name)["EventBusArn"]
        self.on_teardown(name, events.delete_event_bus, Name=name)
        return name, arn

    def rule(self, bus: str, what: str, source: str, targets: list[dict[str, Any]]) -> str:
        """A rule on ``bus`` matching ``source``, sending to ``targets``: its ARN."""
        events = self.client("events")
        name = self.name(what)
        pattern = json.dumps({"source": [source]})
        arn = events.put_rule(Name=name, EventBusName=bus, EventPattern=pattern)["RuleArn"]
        self.on_teardown(name, events.delete_rule, Name=name, EventBusName=bus)
        events.put_targets(Rule=name, EventBusName=bus, Targets=targets)
        ids = [t["Id"] for t in targets]
        self.on_teardown(f"{name} targets", events.remove_targets, Rule=name, EventBusName=bus, Ids=ids)
        return arn

    def put_event(self, bus: str, source: str, detail: dict[str, Any]) -> dict[str, Any]:
        """PutEvents of one entry; the response."""
        entry = {"Source": source, "DetailType": "fleetlab.probe", "Detail": json.dumps(detail)}
        return self.client("events").put_events(Entries=[{**entry, "EventBusName": bus}])

    def state_machine(self, what: str, definition: dict[str, Any]) -> str:
        sfn = self.client("stepfunctions")
        arn = sfn.create_state_machine(
            name=self.name(what),
            definition=json.dumps(definition),
            roleArn=f"arn:aws:iam::{self.account}:role/fleetlab-probe",
        )["stateMachineArn"]
        self.on_teardown(arn, sfn.delete_state_machine, stateMachineArn=arn)
        return arn

    def table(self, what: str, key: str) -> str:
        ddb = self.client("dynamodb")
        name = self.name(what)
        ddb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        self.on_teardown(name, ddb.delete_table, TableName=name)
        ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
        return name


def _poll(check: Callable[[], Any], *, seconds: float, interval: float = 0.05) -> Any:
    """Call ``check`` until it returns something truthy or ``seconds`` of real time pass.

    Returns the last result (falsy on timeout). Real time, because Step
    Functions timers and remote emulators run in real time.
    """
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result or time.monotonic() >= deadline:
            return result
        time.sleep(interval)


class _DropServerTraceback(logging.Filter):
    """Drops the traceback moto's server logs after answering an unimplemented ``action``."""

    def __init__(self, action: str) -> None:
        super().__init__()
        self.action = action

    def filter(self, record: logging.LogRecord) -> bool:
        return f"The {self.action} action has not been implemented" not in record.getMessage()


def _mute_server_traceback(action: str) -> None:
    """Keep a probed unimplemented call from printing a server traceback (logged after the reply)."""
    logger = logging.getLogger("werkzeug")
    if not any(isinstance(f, _DropServerTraceback) and f.action == action for f in logger.filters):
        logger.addFilter(_DropServerTraceback(action))


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "unknown"))


def _receive_count(message: dict[str, Any]) -> int:
    return int(message.get("Attributes", {}).get("ApproximateReceiveCount", "0"))


# --------------------------------------------------------------------------- SQS probes


@_probes(
    Feature(
        "sqs.visibility_timeout",
        "A received message stays hidden for the visibility timeout, then comes back",
        aws="hidden until the timeout passes, then redelivered with ApproximateReceiveCount 2",
        workaround="labs 01 and 03 need this contract: run them on moto, moto-server or LocalStack",
    )
)
def _visibility_timeout(scratch: Scratch) -> Observation:
    timeout = scratch.visibility_timeout
    queue = scratch.queue("visibility", VisibilityTimeout=str(timeout))
    scratch.client("sqs").send_message(QueueUrl=queue.url, MessageBody="probe")
    if scratch.receive(queue.url, wait=2) is None:
        return Observation("a message just sent was not received", False)
    scratch.let_pass(timeout - 1)
    if scratch.receive(queue.url, wait=0) is not None:
        return Observation(f"visible again {timeout - 1} s into a {timeout} s timeout", False)
    scratch.let_pass(2)
    late = scratch.receive(queue.url, wait=2)
    if late is None:
        return Observation(f"still hidden {timeout + 1} s after a {timeout} s timeout", False)
    count = _receive_count(late)
    return Observation(
        f"hidden at +{timeout - 1} s, back at +{timeout + 1} s with ApproximateReceiveCount {count}", count == 2
    )


@_probes(
    Feature(
        "sqs.redrive_receive",
        "Receive at which a message is dead-lettered (maxReceiveCount=3)",
        aws="moved after 3 receives: receive 4 no longer gets it from the source, it is in the DLQ",
        workaround="set the app's receive limit one below the receive measured here, not one below an assumed 4",
    )
)
def _redrive_receive(scratch: Scratch) -> Observation:
    timeout = scratch.visibility_timeout
    dlq = scratch.queue("redrive-dlq")
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})
    source = scratch.queue("redrive", VisibilityTimeout=str(timeout), RedrivePolicy=policy)
    scratch.client("sqs").send_message(QueueUrl=source.url, MessageBody="poison")
    for receive_number in range(1, 7):
        if scratch.receive(source.url, wait=2 if receive_number == 1 else scratch.quiet_wait) is not None:
            scratch.let_pass(timeout + 1)
            continue
        if scratch.receive(dlq.url, wait=2) is None:
            return Observation(f"receive {receive_number} found it in neither the source nor the DLQ", False)
        return Observation(
            f"receive {receive_number} finds it in the DLQ (receives 1-{receive_number - 1} delivered it)",
            receive_number == 4,
        )
    return Observation("still delivered from the source at receive 6: never dead-lettered", False)


@_probes(
    Feature(
        "sqs.start_message_move_task",
        "StartMessageMoveTask (DLQ redrive by the service)",
        aws="supported: moves a DLQ's messages back to their source queue",
        workaround="fleetlab redrives by receive + send + delete, which works on every backend",
    )
)
def _start_message_move_task(scratch: Scratch) -> Observation:
    dlq = scratch.queue("move-dlq")
    policy = json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})
    source = scratch.queue("move", RedrivePolicy=policy)
    scratch.client("sqs").send_message(QueueUrl=dlq.url, MessageBody="parked")
    sqs = scratch.unretried_client("sqs")
    try:
        _mute_server_traceback("start_message_move_task")
        sqs.start_message_move_task(SourceArn=dlq.arn)
    except NotImplementedError:
        return Observation("not implemented: the call raises Python NotImplementedError", False)
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if status >= 500:
            return Observation(f"not implemented: the server answers HTTP {status}", False)
        return Observation(f"rejected: {_error_code(exc)}", False)
    if _poll(lambda: scratch.receive(source.url, wait=1), seconds=10) is None:
        return Observation("the task started but the message did not reach the source within 10 s", False)
    return Observation("supported: the parked message moved back to its source", True)


@_probes(
    Feature(
        "sqs.fifo_dedup_after_delete",
        "FIFO deduplication id re-sent after the original was received and deleted (within 5 min)",
        aws="dropped: the id is remembered for 5 minutes, also after the original is deleted",
        workaround="FIFO dedup is an ingress convenience; the idempotency table is the real guard (lab 02)",
    )
)
def _fifo_dedup_after_delete(scratch: Scratch) -> Observation:
    queue = scratch.queue("dedup.fifo", FifoQueue="true")
    sqs = scratch.client("sqs")

    def send(body: str) -> None:
        sqs.send_message(QueueUrl=queue.url, MessageBody=body, MessageGroupId="g", MessageDeduplicationId="d1")

    send("original")
    original = scratch.receive(queue.url, wait=2)
    if original is None:
        return Observation("the original message was not received", False)
    scratch.delete_message(queue.url, original)
    send("resent")
    if scratch.receive(queue.url, wait=scratch.quiet_wait) is None:
        return Observation("dropped: the re-sent message was never delivered", True)
    return Observation("accepted again: the re-sent message was delivered", False)


# --------------------------------------------------------------------------- EventBridge probes

_OVERSIZED_DETAIL_BYTES = 1_100_000
_ENVELOPE_FIELDS = ("version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail")


@_probes(
    Feature(
        "events.put_events_entry_size",
        "PutEvents with one 1.1 MB entry",
        aws="rejected: a request (and so an entry) must stay under 1 MB",
        workaround="fleetlab.envelope does the 1 MB arithmetic itself and claim-checks big payloads to S3",
    )
)
def _put_events_entry_size(scratch: Scratch) -> Observation:
    bus, _ = scratch.bus("size")
    try:
        response = scratch.put_event(bus, scratch.name("size"), {"pad": "x" * _OVERSIZED_DETAIL_BYTES})
    except ClientError as exc:
        return Observation(f"rejected the request: {_error_code(exc)}", True)
    error = response["Entries"][0].get("ErrorCode")
    if error:
        return Observation(f"rejected the entry: {error}", True)
    return Observation("accepted (an EventId came back): no size check", False)


@_probes(
    Feature(
        "events.delivered_envelope",
        "Top-level fields of an event delivered to an SQS target",
        aws="all of version, id, detail-type, source, account, time, region, resources, detail",
        workaround="consumers read what they need from detail (fleetlab's envelope), never a missing top-level field",
    )
)
def _delivered_envelope(scratch: Scratch) -> Observation:
    bus, _ = scratch.bus("envelope")
    queue = scratch.queue("envelope")
    source = scratch.name("envelope")
    scratch.rule(bus, "envelope", source, [{"Id": "queue", "Arn": queue.arn}])
    scratch.put_event(bus, source, {"probe": "envelope"})
    message = scratch.receive(queue.url, wait=5)
    if message is None:
        return Observation("the event was not delivered within 5 s", False)
    missing = [name for name in _ENVELOPE_FIELDS if name not in json.loads(message["Body"])]
    if missing:
        return Observation(f"missing: {', '.join(missing)}", False)
    return Observation("all nine fields present", True)


@_probes(
    Feature(
        "events.target_dead_letter",
        "Rule target whose queue does not exist, with RetryPolicy and a DeadLetterConfig",
        aws="PutEvents succeeds; the event goes to the target's DLQ (a missing resource skips the retries)",
        workaround="fleetlab.topology makes targets before rules; labs show target DLQs only where this matches",
    )
)
def _target_dead_letter(scratch: Scratch) -> Observation:
    bus, _ = scratch.bus("target-dlq")
    dlq = scratch.queue("target-dlq")
    source = scratch.name("target-dlq")
    missing_arn = f"arn:aws:sqs:{scratch.backend.region}:{scratch.account}:{scratch.name('missing')}"
    target = {
        "Id": "missing",
        "Arn": missing_arn,
        "RetryPolicy": {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60},
        "DeadLetterConfig": {"Arn": dlq.arn},
    }
    scratch.rule(bus, "target-dlq", source, [target])
    try:
        scratch.put_event(bus, source, {"probe": "target-dlq"})
    except ClientError as exc:
        return Observation(f"the whole PutEvents failed ({_error_code(exc)}); nothing reached the DLQ", False)
    if scratch.receive(dlq.url, wait=5 if scratch.backend.clock.virtual else 10) is None:
        return Observation("PutEvents succeeded, the DLQ stayed empty: the event was dropped", False)
    return Observation("PutEvents succeeded and the event landed in the target's DLQ", True)


_REPLAY_FEATURES = (
    Feature(
        "events.replay_delivered",
        "Archive + StartReplay delivers an archived event to the bus's rules again",
        aws="delivered again to the targets of matching rules",
        workaround="replays cannot be shown on this backend: run lab 06 on moto or LocalStack",
    ),
    Feature(
        "events.replay_name_field",
        "A replayed event carries a top-level replay-name field",
        aws='yes: "replay-name" is the replay\'s name (archives\' managed rules exclude it)',
        workaround="exclude replays by the envelope's own flag where this field is missing",
    ),
    Feature(
        "events.replay_time_window",
        "A replay whose EventStartTime-EventEndTime window excludes the event",
        aws="not replayed: only events whose time falls in the window are",
        workaround="choose replay windows as on AWS and let idempotency absorb the extra events replayed here",
    ),
    Feature(
        "events.replay_filter_arns",
        "A replay with Destination.FilterArns naming one of two matching rules",
        aws="only the named rule gets the replayed event",
        workaround='keep replays from other rules by pattern: {"replay-name": [{"exists": false}]}',
    ),
)


@dataclass(frozen=True)
class _ReplayBench:
    """A bus with an archive and two rules on the same source, each into its own queue."""

    scratch: Scratch
    bus: str
    bus_arn: str
    archive_arn: str
    source: str
    named: Queue
    unnamed: Queue
    named_rule: str

    @classmethod
    def build(cls, scratch: Scratch) -> _ReplayBench:
        events = scratch.client("events")
        bus, bus_arn = scratch.bus("replay")
        archive = scratch.name("archive")
        archive_arn = events.create_archive(ArchiveName=archive, EventSourceArn=bus_arn)["ArchiveArn"]
        scratch.on_teardown(archive, events.delete_archive, ArchiveName=archive)
        source = scratch.name("replay")
        named, unnamed = scratch.queue("replay-named"), scratch.queue("replay-unnamed")
        named_rule = scratch.rule(bus, "replay-named", source, [{"Id": "queue", "Arn": named.arn}])
        scratch.rule(bus, "replay-unnamed", source, [{"Id": "queue", "Arn": unnamed.arn}])
        return cls(scratch, bus, bus_arn, archive_arn, source, named, unnamed, named_rule)

    def replay(self, what: str, start: dt.datetime, end: dt.datetime, **destination: Any) -> str:
        """Start a replay of the archive onto the bus and wait until it ends; its name."""
        events = self.scratch.client("events")
        name = self.scratch.name(what)
        events.start_replay(
            ReplayName=name,
            EventSourceArn=self.archive_arn,
            EventStartTime=start,
            EventEndTime=end,
            Destination={"Arn": self.bus_arn, **destination},
        )
        done = ("COMPLETED", "FAILED", "CANCELLED")
        if not _poll(lambda: events.describe_replay(ReplayName=name)["State"] in done, seconds=30):
            raise RuntimeError(f"replay {name} did not finish within 30 s")
        return name


@_probes(*_REPLAY_FEATURES)
def _archive_and_replay(scratch: Scratch) -> tuple[Observation, ...]:
    bench = _ReplayBench.build(scratch)
    scratch.put_event(bench.bus, bench.source, {"probe": "replay"})
    original = _take_event(scratch, bench.named.url, wait=5)
    _take_event(scratch, bench.unnamed.url, wait=5)
    if original is None:
        raise RuntimeError("the original event was never delivered, so nothing could be replayed")
    event_time = dt.datetime.fromisoformat(original["time"])
    scratch.let_pass(2)
    now = dt.datetime.fromtimestamp(scratch.backend.clock.now(), dt.timezone.utc)

    name = bench.replay("in-window", event_time - dt.timedelta(minutes=1), now, FilterArns=[bench.named_rule])
    replayed = _take_event(scratch, bench.named.url, wait=10)
    reached_unnamed = _take_event(scratch, bench.unnamed.url, wait=scratch.quiet_wait) is not None
    if replayed is None:
        not_measured = Observation("not measured: the replay was not delivered", False)
        return (Observation("not delivered within 10 s", False),) + (not_measured,) * 3

    bench.replay("out-of-window", event_time - dt.timedelta(hours=1), event_time - dt.timedelta(minutes=30))
    replayed_out_of_window = _take_event(scratch, bench.named.url, wait=scratch.quiet_wait) is not None
    return (
        _replay_delivery(original, replayed),
        _replay_name(replayed, name),
        _honoured(not replayed_out_of_window, "the event was not replayed", "the event was replayed anyway"),
        _honoured(not reached_unnamed, "only the named rule got it", "the rule not named got it too"),
    )


def _take_event(scratch: Scratch, url: str, *, wait: int) -> dict[str, Any] | None:
    """Receive and delete one event delivered to ``url``; its parsed body, or None."""
    message = scratch.receive(url, wait=wait)
    if message is None:
        return None
    scratch.delete_message(url, message)
    return json.loads(message["Body"])


def _replay_delivery(original: dict[str, Any], replayed: dict[str, Any]) -> Observation:
    same_id = "the original's id" if replayed.get("id") == original.get("id") else "a new id"
    return Observation(f"delivered again, with {same_id}", True)


def _replay_name(replayed: dict[str, Any], name: str) -> Observation:
    if "replay-name" not in replayed:
        return Observation("no replay-name field", False)
    if replayed["replay-name"] != name:
        return Observation(f"replay-name is {replayed['replay-name']!r}, not the replay's name", False)
    return Observation("replay-name is the replay's name", True)


def _honoured(held: bool, honoured: str, ignored: str) -> Observation:
    return Observation(f"honoured: {honoured}", True) if held else Observation(f"ignored: {ignored}", False)


# --------------------------------------------------------------------------- Step Functions probes

_HEARTBEAT_SECONDS = 1
_TASK_TIMEOUT_SECONDS = 5


@_probes(
    Feature(
        "stepfunctions.heartbeat_timeout_error",
        "Error a waitForTaskToken task reports when its heartbeat is missed",
        aws="States.HeartbeatTimeout (a Catch on it matches)",
        workaround="catch both States.HeartbeatTimeout and States.Timeout in the same Catch",
    ),
    Feature(
        "stepfunctions.late_task_success",
        "SendTaskSuccess with the token of a task that timed out",
        aws="rejected with TaskTimedOut",
        workaround="treat TaskTimedOut and InvalidToken alike: the token is dead, drop the late result",
    ),
    Feature(
        "stepfunctions.late_task_failure",
        "SendTaskFailure with the token of a task that timed out",
        aws="rejected with TaskTimedOut",
        workaround="never take an accepted SendTaskFailure as proof the task was live; read the execution status",
    ),
)
def _callback_timeouts(scratch: Scratch) -> tuple[Observation, ...]:
    queue = scratch.queue("tokens")
    machine = scratch.state_machine("callback", _callback_definition(queue.url))
    sfn = scratch.client("stepfunctions")
    execution = sfn.start_execution(stateMachineArn=machine, name=uuid.uuid4().hex, input="{}")["executionArn"]
    scratch.on_teardown(execution, sfn.stop_execution, executionArn=execution)
    message = scratch.receive(queue.url, wait=10)
    if message is None:
        raise RuntimeError("the task token never reached the queue within 10 s")
    token = json.loads(message["Body"])["token"]
    ended = _poll(
        lambda: sfn.describe_execution(executionArn=execution)["status"] != "RUNNING",
        seconds=_TASK_TIMEOUT_SECONDS + 10,
    )
    if not ended:
        raise RuntimeError(f"the execution was still running {_TASK_TIMEOUT_SECONDS + 10} s after it started")
    return (
        _heartbeat_error(sfn.get_execution_history(executionArn=execution)["events"]),
        _late_callback(lambda: sfn.send_task_success(taskToken=token, output="{}")),
        _late_callback(lambda: sfn.send_task_failure(taskToken=token, error="Probe", cause="late")),
    )


def _callback_definition(queue_url: str) -> dict[str, Any]:
    return {
        "StartAt": "Wait for callback",
        "States": {
            "Wait for callback": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"QueueUrl": queue_url, "MessageBody": {"token.$": "$$.Task.Token"}},
                "HeartbeatSeconds": _HEARTBEAT_SECONDS,
                "TimeoutSeconds": _TASK_TIMEOUT_SECONDS,
                "End": True,
            }
        },
    }


def _heartbeat_error(history: list[dict[str, Any]]) -> Observation:
    details = ("taskTimedOutEventDetails", "executionFailedEventDetails")
    errors = [event[key]["error"] for event in history for key in details if key in event]
    if not errors:
        kinds = ", ".join(event["type"] for event in history)
        return Observation(f"no timeout error in the history ({kinds})", False)
    return Observation(f"the task fails with {errors[0]}", errors[0] == "States.HeartbeatTimeout")


def _late_callback(call: Callable[[], Any]) -> Observation:
    try:
        call()
    except ClientError as exc:
        code = _error_code(exc)
        return Observation(f"rejected with {code}", code == "TaskTimedOut")
    return Observation("accepted silently", False)


@_probes(
    Feature(
        "stepfunctions.unnamed_execution",
        "StartExecution without a name, twice",
        aws="each execution gets a generated unique name",
        workaround="always pass name=uuid4().hex to StartExecution (fleetlab does)",
    )
)
def _unnamed_execution(scratch: Scratch) -> Observation:
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
    machine = scratch.state_machine("unnamed", definition)
    sfn = scratch.client("stepfunctions")
    names: list[str] = []
    for start in (1, 2):  # distinct inputs: a repeated name is then an error, never idempotent reuse
        try:
            started = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"start": start}))
        except ClientError as exc:
            if not names:
                return Observation(f"rejected: {_error_code(exc)}", False)
            second = f"the second start fails: {_error_code(exc)}"
            return Observation(f'the first is named "{names[0]}"; {second}', False)
        names.append(started["executionArn"].rsplit(":", 1)[-1])  # an execution ARN ends with its name
    if names[0] == names[1] or "None" in names:
        return Observation(f"named {names[0]!r} and {names[1]!r}", False)
    return Observation("two distinct generated names", True)


# --------------------------------------------------------------------------- DynamoDB probes

_TTL_WAIT_SECONDS = 3 * 24 * 3600


@_probes(
    Feature(
        "dynamodb.ttl_deletion",
        "An item whose TTL attribute has passed",
        aws="deleted by the service, typically within 48 h of expiry",
        workaround="treat expired items as absent on read (compare the TTL attribute with the clock), as on AWS",
    )
)
def _ttl_deletion(scratch: Scratch) -> Observation:
    if not scratch.backend.clock.virtual:
        return Observation("not measured: AWS may take 48 h, too long for a probe on a real clock", False)
    ddb = scratch.client("dynamodb")
    table = scratch.table("ttl", key="pk")
    ddb.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires"})
    expired_at = int(scratch.backend.clock.now()) - 3600
    ddb.put_item(TableName=table, Item={"pk": {"S": "expired"}, "expires": {"N": str(expired_at)}})
    scratch.let_pass(_TTL_WAIT_SECONDS)
    item = ddb.get_item(TableName=table, Key={"pk": {"S": "expired"}}, ConsistentRead=True).get("Item")
    if item is not None:
        return Observation("never deleted: still there 3 days after expiry", False)
    return Observation("deleted within 3 days of expiry", True)


# --------------------------------------------------------------------------- probe(), memo, cache

_EMULATOR_PACKAGE = {"moto": "moto", "moto-server": "moto", "localstack": "localstack"}
_session_tables: dict[int, tuple[weakref.ref[Backend], FidelityTable]] = {}


def probe(backend: Backend, *, refresh: bool = False) -> FidelityTable:
    """The fidelity table of ``backend``: measured once per session, cached on disk.

    Reuses this session's table, else a cache file with the same versions,
    else measures (always, with ``refresh=True``): a few seconds on moto, and
    a virtual clock moves about 3 days forward. ``aws`` is the reference and
    is never probed.
    """
    if backend.name == "aws":
        return _aws_reference()
    if not refresh:
        table = _session_table(backend) or _read_cache(backend)
        if table is not None:
            return _remember(backend, table)
    if backend.closed:
        raise ConfigError(f"the {backend.name} backend is closed; open it again (open_backend) to probe it")
    table = FidelityTable(backend=backend.name, versions=_versions(backend), findings=_measure(backend))
    if not any(f.observed.startswith(PROBE_FAILED) for f in table.findings):
        _write_cache(backend, table)
    return _remember(backend, table)


def feature_ids() -> tuple[str, ...]:
    """Every feature id the probes report, in table order."""
    return tuple(feature.id for probe_ in PROBES for feature in probe_.features)


def _aws_reference() -> FidelityTable:
    findings = tuple(
        feature.finding(Observation(AWS_ITSELF, True)) for probe_ in PROBES for feature in probe_.features
    )
    return FidelityTable(backend="aws", versions=_common_versions(), findings=findings)


def _versions(backend: Backend) -> dict[str, str]:
    package, version = _emulator(backend)
    return {package: version, **_common_versions()}


def _emulator(backend: Backend) -> tuple[str, str]:
    """The package that emulates ``backend`` and its version."""
    return _EMULATOR_PACKAGE.get(backend.name, backend.name), backend.details.get("version", "unknown")


def _common_versions() -> dict[str, str]:
    return {"boto3": boto3.__version__, "probes": _probe_set_fingerprint()}


def _probe_set_fingerprint() -> str:
    """Changes whenever a feature is added, removed or reworded: a stale cache is ignored."""
    specs = [asdict(feature) for probe_ in PROBES for feature in probe_.features]
    return hashlib.sha256(json.dumps(specs, sort_keys=True).encode()).hexdigest()[:12]


def _session_table(backend: Backend) -> FidelityTable | None:
    entry = _session_tables.get(id(backend))
    if entry is None or entry[0]() is not backend:
        return None
    return entry[1]


def _remember(backend: Backend, table: FidelityTable) -> FidelityTable:
    _session_tables[id(backend)] = (weakref.ref(backend), table)
    return table


def cache_path(backend: Backend) -> Path:
    """Where ``backend``'s table is cached: ``$FLEETLAB_HOME`` or ``<repo root>/.fleetlab``."""
    home = os.environ.get("FLEETLAB_HOME")
    directory = Path(home) if home else _repo_root(Path.cwd()) / ".fleetlab"
    return directory / f"fidelity-{backend.name}-{_emulator(backend)[1]}.json"


def _repo_root(start: Path) -> Path:
    for directory in (start, *start.parents):
        if (directory / "pyproject.toml").exists() or (directory / ".git").exists():
            return directory
    return start


def _read_cache(backend: Backend) -> FidelityTable | None:
    path = cache_path(backend)
    try:
        table = FidelityTable.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, ConfigError) as exc:
        _log.warning("ignoring unreadable fidelity cache %s (%s); probing again", path, exc)
        return None
    if table.backend != backend.name or table.versions != _versions(backend):
        return None
    return table


def _write_cache(backend: Backend, table: FidelityTable) -> None:
    path = cache_path(backend)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(table.to_dict(), indent=2) + "\n")
        partial.replace(path)
    except OSError as exc:  # the table is still valid for this session
        _log.warning("could not cache the fidelity table at %s (%s); set FLEETLAB_HOME to a writable folder",
                     path, exc)


# --------------------------------------------------------------------------- the generator

_COLUMNS = {"moto": "moto", "moto-server": "moto-server", "localstack": "LocalStack"}
_DOC_HEADER = """# Fidelity: where each backend differs from AWS

Measured by fleetlab's capability probe (`src/fleetlab/fidelity.py`) through boto3,
not written by hand. Regenerate with
`python -m fleetlab.fidelity --out docs/fidelity.md` (add
`--backends moto,moto-server,localstack` with LocalStack running).

"""


def main(argv: Sequence[str] | None = None) -> int:
    """Probe the named backends one at a time and write the markdown fidelity table."""
    args = _parse_args(argv)
    tables: dict[str, FidelityTable | None] = dict.fromkeys(_COLUMNS.values())
    for name in args.backends:
        tables[_COLUMNS[name]] = _probe_fresh(name)
    if not any(tables.values()):
        print("no backend could be probed", file=sys.stderr)
        return 1
    text = _DOC_HEADER + render_markdown(tables)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m fleetlab.fidelity", description=main.__doc__)
    parser.add_argument("--out", default="-", help="markdown file to write (default: stdout)")
    parser.add_argument(
        "--backends",
        default="moto,moto-server",
        help="comma-separated, from: " + ", ".join(_COLUMNS) + " (default: moto,moto-server)",
    )
    args = parser.parse_args(argv)
    args.backends = [name.strip() for name in args.backends.split(",") if name.strip()]
    unknown = [name for name in args.backends if name not in _COLUMNS]
    if unknown:
        probeable = ", ".join(_COLUMNS)
        refused = [n for n in unknown if n in BACKEND_NAMES]
        why = " (aws is the reference column, never probed)" if refused else ""
        parser.error(f"cannot probe {', '.join(unknown)}{why}; choose from {probeable}")
    return args


def _probe_fresh(name: str) -> FidelityTable | None:
    """Open ``name``, measure it, close it; None (and a note on stderr) if it cannot be opened."""
    try:
        backend = open_backend(name)
    except BackendUnavailable as exc:
        print(f"{name}: not probed: {exc}", file=sys.stderr)
        return None
    started = time.monotonic()
    try:
        table = probe(backend, refresh=True)
    finally:
        backend.close()
    print(f"{name}: probed in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return table


if __name__ == "__main__":
    raise SystemExit(main())
