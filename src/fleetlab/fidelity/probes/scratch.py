"""A probe's workspace on the backend, and the helpers the probes share.

Durations follow the clock: on a virtual clock a probe uses production
numbers (a 900 s visibility timeout) and jumps over them; on a real clock it
uses seconds.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.config
from botocore.exceptions import ClientError

from ...aws.backends import Backend

_log = logging.getLogger(__name__)


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


def poll(check: Callable[[], Any], *, seconds: float, interval: float = 0.05) -> Any:
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


def mute_server_traceback(action: str) -> None:
    """Keep a probed unimplemented call from printing a server traceback (logged after the reply)."""
    logger = logging.getLogger("werkzeug")
    if not any(isinstance(f, _DropServerTraceback) and f.action == action for f in logger.filters):
        logger.addFilter(_DropServerTraceback(action))


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "unknown"))
