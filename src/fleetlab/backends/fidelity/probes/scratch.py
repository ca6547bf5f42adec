"""A probe's workspace on the backend, and the helpers the probes share.

Durations follow the clock: on a virtual clock a probe uses production
numbers (a 900 s visibility timeout) and jumps over them; on a real clock it
uses seconds. Resources are made and removed through ``aws.resources``, like
every other resource fleetlab makes.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
from collections.abc import Callable
from typing import Any, TypeVar

from fleetlab.backends.backend import Backend
from fleetlab.backends.resources import Queue, Resources
from fleetlab.backends.responses import error_code

_log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["Queue", "Scratch", "error_code"]


class Scratch:
    """One probe's workspace: unique names, durations sized to the clock, teardown.

    Everything made through it is deleted when the ``with`` block ends, last
    made first, each deletion best effort (a failure is logged, not raised).
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.made = Resources(backend, f"flprobe-{secrets.token_hex(3)}-")
        self._account: str | None = None

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for problem in self.made.teardown():
            _log.warning("fidelity probe could not delete %s", problem)

    # names, clients, time

    @property
    def prefix(self) -> str:
        return self.made.prefix

    def name(self, what: str) -> str:
        return self.made.name(what)

    def client(self, service: str) -> Any:
        return self.backend.client(service)

    def unretried_client(self, service: str) -> Any:
        """A client that makes one attempt: an unimplemented call fails once, quietly."""
        return self.backend.unretried_client(service)

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

    def wait_until(self, predicate: Callable[[], T], *, seconds: float, what: str) -> T:
        """Poll ``predicate`` on real time until truthy (returned); Timeout after ``seconds``."""
        return self.backend.clock.wait_until(predicate, timeout=seconds, what=what)

    def on_teardown(self, what: str, delete: Callable[..., Any], **kwargs: Any) -> None:
        """Call ``delete(**kwargs)`` at teardown; a failure is logged, not raised."""
        self.made.on_teardown("probe resource", what, functools.partial(delete, **kwargs))

    # resources

    def queue(self, what: str, **attributes: str) -> Queue:
        return self.made.queue(what, attributes)

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
        return self.made.bus(what)

    def rule(self, bus: str, what: str, source: str, targets: list[dict[str, Any]]) -> str:
        """A rule on ``bus`` matching ``source``, sending to ``targets``: its ARN."""
        return self.made.rule(what, bus=bus, pattern={"source": [source]}, targets=targets)

    def archive(self, what: str, *, source_arn: str) -> str:
        """An archive of everything on the bus ``source_arn``: its ARN."""
        return self.made.archive(what, source_arn=source_arn)

    def put_event(self, bus: str, source: str, detail: dict[str, Any]) -> dict[str, Any]:
        """PutEvents of one entry; the response."""
        entry = {"Source": source, "DetailType": "fleetlab.probe", "Detail": json.dumps(detail)}
        return self.client("events").put_events(Entries=[{**entry, "EventBusName": bus}])

    def state_machine(self, what: str, definition: dict[str, Any]) -> str:
        role = f"arn:aws:iam::{self.account}:role/fleetlab-probe"
        return self.made.state_machine(what, definition, role_arn=role)

    def table(self, what: str, key: str) -> str:
        return self.made.table(what, key=key)
