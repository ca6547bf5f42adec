"""Record the AWS calls a learner's code makes, so a harness can judge them exactly.

A harness hands the learner ``CallLog(client, clock).client`` instead of the
bare boto3 client. Every API call goes through unchanged and is recorded
(when, with what parameters, and the error code if it failed), tagged with
what the harness was doing at that moment. Once the case is over,
``close()`` makes the stand-in inert: a timer the learner leaked can no
longer reach the (deleted) resources of a finished case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError


@dataclass(frozen=True)
class Call:
    """One API call: ``operation`` is boto3's method name (``put_item``)."""

    operation: str
    params: dict[str, Any]
    at: float
    tag: str = ""
    error: str = ""  # the error code (or exception type) when the call failed
    message: str = ""  # what the service said about the failure

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass
class CallLog:
    """The calls made through ``client`` (see the module docstring)."""

    wrapped: Any
    clock: Any
    tag: Callable[[], str] = lambda: ""
    calls: list[Call] = field(default_factory=list)
    closed: bool = False

    @property
    def client(self) -> Any:
        """The stand-in to hand to the learner."""
        return _Recording(self)

    def of(self, *operations: str) -> list[Call]:
        """The recorded calls of these operations, in order."""
        return [call for call in self.calls if call.operation in operations]

    def close(self) -> None:
        """From now on calls do nothing and are not recorded."""
        self.closed = True

    def call(self, operation: str, method: Callable[..., Any], params: dict[str, Any]) -> Any:
        if self.closed:
            return {}
        at, tag = self.clock.now(), self.tag()
        try:
            response = method(**params)
        except ClientError as error:
            details = error.response.get("Error", {})
            self.calls.append(Call(operation, params, at, tag, details.get("Code", "ClientError"), details.get("Message", "")))
            raise
        except Exception as error:
            self.calls.append(Call(operation, params, at, tag, type(error).__name__, str(error)))
            raise
        self.calls.append(Call(operation, params, at, tag))
        return response


class _Recording:
    """Looks like the wrapped boto3 client; its API methods record through the log."""

    def __init__(self, log: CallLog) -> None:
        self._log = log

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._log.wrapped, name)
        if name not in self._log.wrapped.meta.method_to_api_mapping:
            return attribute

        def recorded(**params: Any) -> Any:
            return self._log.call(name, attribute, params)

        return recorded
