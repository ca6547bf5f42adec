"""A work queue and its dead-letter queue, as every consumer and the redrive name them."""

from __future__ import annotations

from dataclasses import dataclass

from fleetlab.services.sqs.dlq import DeadLetterTarget

__all__ = ["WorkQueue"]

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

    def dead_letter_target(self, rule_arn: str = "") -> DeadLetterTarget:
        """Where this queue's failures are parked, naming ``rule_arn`` as the route that fed it."""
        return DeadLetterTarget(self.dlq_url, self.arn, rule_arn)
