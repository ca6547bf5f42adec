"""Lab 06 checks: which targets may receive replays (``targets``), a rule pattern that keeps them from the
billing webhook (``pattern``), a safe idempotency window (``window``), and a retry policy for a detection goal
(``retry_policy``). Each module registers its check on import."""

from fleetlab.course.checks.lab06 import pattern, retry_policy, targets, window

__all__ = ["pattern", "retry_policy", "targets", "window"]
