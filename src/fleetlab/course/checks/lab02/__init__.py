"""Lab 02 checks: an idempotent consumer (``consumer``), a conditional claim with a lease
(``lease``), and the idempotency window (``window``). Each module registers its check on import."""

from fleetlab.course.checks.lab02 import consumer, lease, window

__all__ = ["consumer", "lease", "window"]
