"""boto3 calls counted and timed on given clients, with botocore's event hooks."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["CallCounter"]


class CallCounter:
    """Counts and times boto3 calls on the given clients with botocore hooks, while in a ``with``.

    ``before-call.*.*`` names each call; ``provide-client-params`` (the first
    event of a call) and ``after-call`` (the last) bound its duration, which
    covers parameter validation, serialisation, the emulator and parsing.
    """

    def __init__(self, *clients: Any) -> None:
        self.clients = clients
        self.calls: list[tuple[str, str]] = []
        self.seconds: list[float] = []
        self._started: list[float] = []
        self._mark = (0, 0)
        self._id = f"fleetlab-bench-{id(self)}"

    def __enter__(self) -> CallCounter:
        for client in self.clients:
            events = client.meta.events
            events.register("provide-client-params.*.*", self._begin, unique_id=self._id + "-begin")
            events.register("before-call.*.*", self._seen, unique_id=self._id + "-seen")
            events.register("after-call.*.*", self._end, unique_id=self._id + "-end")
        return self

    def __exit__(self, *exc: Any) -> None:
        for client in self.clients:
            events = client.meta.events
            events.unregister("provide-client-params.*.*", unique_id=self._id + "-begin")
            events.unregister("before-call.*.*", unique_id=self._id + "-seen")
            events.unregister("after-call.*.*", unique_id=self._id + "-end")

    def mark(self) -> None:
        self._mark = (len(self.calls), len(self.seconds))

    def since_mark(self) -> tuple[tuple[str, str], ...]:
        """The (service, operation) of every call since ``mark``."""
        return tuple(self.calls[self._mark[0] :])

    def seconds_since_mark(self) -> float:
        """Wall seconds spent inside boto3 calls since ``mark``."""
        return sum(self.seconds[self._mark[1] :])

    # Every hook returns None: a value from before-call would short-circuit the request.
    def _begin(self, **_: Any) -> None:
        self._started.append(time.perf_counter())

    def _seen(self, event_name: str = "", **_: Any) -> None:
        _, service, operation = event_name.split(".", 2)
        self.calls.append((service, operation))

    def _end(self, **_: Any) -> None:
        if self._started:
            self.seconds.append(time.perf_counter() - self._started.pop())
