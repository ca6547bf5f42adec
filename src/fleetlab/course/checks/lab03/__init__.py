"""Lab 03 checks: maxReceiveCount and DLQ retention (``budget``), triage without consuming
(``triage``), a canary redrive (``redrive``), and partial batch responses (``batch``). Each module
registers its check on import."""

from fleetlab.course.checks.lab03 import batch, budget, redrive, triage

__all__ = ["batch", "budget", "redrive", "triage"]
