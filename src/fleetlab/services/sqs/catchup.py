"""SQS's visibility timeouts brought up to lab time after a scaled clock skipped.

On a scaled clock (LocalStack, AWS) ``clock.skip`` moves lab time on at once
and the services see none of it, so a message received before a skip stays
hidden for its visibility timeout in service time, long after lab time has
passed it. ``VisibilityCatchUp`` watches the backend's SQS client (botocore
hooks): every message received and not deleted, with the lab instant its
visibility ends (from the receive, or from the last ChangeMessageVisibility
with its current receipt handle). ``release_due`` makes each message whose
instant lab time has passed visible at once (ChangeMessageVisibility to 0):
where the service would be by now had the skipped time run for real.

The releases stand in for the service's timer, not for a caller's call: they
go through the backend's unretried client, which no call counter hooks. A
release the service refuses (the message is back already, deleted, or moved
to its DLQ) is dropped; the service's own timer still covers any message the
catch-up misses.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.backends.backend import Backend
from fleetlab.core.errors import InvalidInput
from fleetlab.core.timescale import service_seconds

_PARAMS = "fleetlab_catch_up_params"  # where a call's lab-time parameters wait for its answer (request context)


@dataclass
class _InFlight:
    queue_url: str
    receipt_handle: str
    until: float  # the lab instant its visibility timeout ends


class VisibilityCatchUp:
    """The messages the backend's SQS client has in flight, released once lab time passes their visibility.

    For a scaled clock only (InvalidInput on a virtual one, whose time the
    services follow). ``close`` removes the hooks.
    """

    def __init__(self, backend: Backend) -> None:
        if backend.clock.virtual:
            raise InvalidInput("backend", f"{backend.name} runs on a virtual clock: its services follow it, "
                                          "nothing needs catching up")
        self.clock = backend.clock
        self._sqs = backend.client("sqs")
        self._releaser = backend.unretried_client("sqs")
        self._in_flight: dict[str, _InFlight] = {}  # by message id
        self._by_handle: dict[str, str] = {}  # current receipt handle -> message id
        self._visibility: dict[str, float] = {}  # a queue's own visibility timeout, lab seconds
        self._lock = threading.Lock()
        self._hooks: list[tuple[str, Any, str]] = []
        watched = {"ReceiveMessage": self._received, "ChangeMessageVisibility": self._changed,
                   "DeleteMessage": self._deleted}
        for operation, answered in watched.items():
            self._hook(f"provide-client-params.sqs.{operation}", self._remember_params)
            self._hook(f"after-call.sqs.{operation}", answered)

    @property
    def in_flight(self) -> int:
        """Messages received and neither deleted nor released yet."""
        return len(self._in_flight)

    def release_due(self) -> int:
        """Make visible every message whose visibility timeout lab time has passed; how many were due."""
        now = self.clock.now()
        with self._lock:
            due = [held for held in self._in_flight.values() if held.until <= now]
            for held in due:
                self._forget(held.receipt_handle)
        for held in due:
            try:
                self._releaser.change_message_visibility(QueueUrl=held.queue_url, ReceiptHandle=held.receipt_handle,
                                                         VisibilityTimeout=0)
            except ClientError:
                pass  # back already, deleted or dead-lettered: nothing left to release
        return len(due)

    def close(self) -> None:
        """Stop watching the client (idempotent)."""
        events = self._sqs.meta.events
        for event, handler, unique_id in self._hooks:
            events.unregister(event, handler, unique_id=unique_id)
        self._hooks.clear()

    # ----------------------------------------------------------------------- hooks

    def _hook(self, event: str, handler: Any) -> None:
        unique_id = f"fleetlab-catch-up-{id(self)}-{event}"
        self._sqs.meta.events.register(event, handler, unique_id=unique_id)
        self._hooks.append((event, handler, unique_id))

    @staticmethod
    def _remember_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context[_PARAMS] = dict(params)  # in lab time: the service-time conversion comes after this event

    def _received(self, http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        params = context.get(_PARAMS, {})
        if http_response.status_code >= 300 or not parsed.get("Messages"):
            return
        queue_url = params["QueueUrl"]
        hidden = self._effective(params["VisibilityTimeout"]) if "VisibilityTimeout" in params \
            else self._queue_visibility(queue_url)
        until = self.clock.now() + hidden
        with self._lock:
            for message in parsed["Messages"]:
                earlier = self._in_flight.get(message["MessageId"])
                if earlier is not None:
                    self._by_handle.pop(earlier.receipt_handle, None)
                self._in_flight[message["MessageId"]] = _InFlight(queue_url, message["ReceiptHandle"], until)
                self._by_handle[message["ReceiptHandle"]] = message["MessageId"]

    def _changed(self, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        params = context.get(_PARAMS, {})
        if http_response.status_code >= 300:
            return
        with self._lock:
            message_id = self._by_handle.get(params["ReceiptHandle"])
            if message_id is None:
                return  # a stale handle, or a message this catch-up does not hold
            hidden = self._effective(params["VisibilityTimeout"])
            if hidden == 0:
                self._forget(params["ReceiptHandle"])
            else:
                self._in_flight[message_id].until = self.clock.now() + hidden

    def _deleted(self, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        if http_response.status_code < 300:
            with self._lock:
                self._forget(context.get(_PARAMS, {})["ReceiptHandle"])

    # ----------------------------------------------------------------------- helpers

    def _forget(self, receipt_handle: str) -> None:
        message_id = self._by_handle.pop(receipt_handle, None)
        if message_id is not None:
            del self._in_flight[message_id]

    def _effective(self, lab_seconds: Any) -> float:
        """The lab seconds a visibility of ``lab_seconds`` really lasts: whole seconds of service time."""
        scale = self.clock.scale
        return float(service_seconds(float(lab_seconds), scale) * scale)

    def _queue_visibility(self, queue_url: str) -> float:
        """The queue's own visibility timeout in lab seconds, read once (the answer comes back in lab time)."""
        if queue_url not in self._visibility:
            attributes = self._releaser.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["VisibilityTimeout"])
            self._visibility[queue_url] = float(attributes["Attributes"]["VisibilityTimeout"])
        return self._visibility[queue_url]
