"""fleetlab: the library behind the fleetlab course.

The public surface is small: ``start`` a lab, ``check`` an exercise, and the
building blocks a learner composes (envelopes, fault plans, the fleet).
"""

from __future__ import annotations

from typing import Any

from .events.envelope import Envelope
from .errors import FleetlabError
from .faults import Crash, CrashPoint, FaultPlan
from .lab import Lab, start
from .pipeline import Fleet

__version__ = "0.1.0"


def check(check_id: str, answer: Any) -> Any:
    """Grade ``answer`` for exercise ``check_id`` (see ``fleetlab.grading``)."""
    from .grading import check as run_check

    return run_check(check_id, answer)


__all__ = [
    "Crash",
    "CrashPoint",
    "Envelope",
    "FaultPlan",
    "Fleet",
    "FleetlabError",
    "Lab",
    "check",
    "start",
]
