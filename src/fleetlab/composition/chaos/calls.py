"""Count the AWS calls a fleet makes, by operation, with botocore's event hooks on the backend's clients."""

from __future__ import annotations

from collections import Counter
from typing import Any

from fleetlab.backends.backend import Backend

SERVICES = ("sqs", "dynamodb", "events", "s3", "stepfunctions")
DYNAMODB_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})


class CallCounter:
    """Counts every API call made through the backend's clients of ``SERVICES`` while it is open.

    One count per call as its caller sees it (botocore's retries are not
    counted again). ``close`` removes the hooks; the counts stay.
    """

    def __init__(self, backend: Backend) -> None:
        self.counts: Counter[str] = Counter()
        self._hooked = [backend.client(service) for service in SERVICES]
        self._id = f"fleetlab-chaos-calls-{id(self)}"
        for client in self._hooked:
            client.meta.events.register("before-call", self._count, unique_id=self._id)

    def _count(self, event_name: str, **_: Any) -> None:
        _, service, operation = event_name.split(".", 2)
        self.counts[f"{service}.{operation}"] += 1

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def dynamodb_writes(self) -> int:
        return sum(n for name, n in self.counts.items()
                   if name.startswith("dynamodb.") and name.split(".", 1)[1] in DYNAMODB_WRITES)

    def close(self) -> None:
        for client in self._hooked:
            client.meta.events.unregister("before-call", self._count, unique_id=self._id)
