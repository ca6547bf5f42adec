"""fleetlab: the library behind the fleetlab course.

The public surface is small: ``start`` a lab, ``check`` an exercise, and the
building blocks a learner composes (envelopes, fault plans, the fleet).
"""

from __future__ import annotations

from typing import Any

from fleetlab.composition.pipeline import Fleet
from fleetlab.core.errors import FleetlabError
from fleetlab.core.faults import Crash, CrashPoint, FaultPlan
from fleetlab.course.lab import Lab, start
from fleetlab.services.events.envelope import Envelope

__version__ = "0.1.0"


def check(check_id: str, answer: Any) -> Any:
    """Grade ``answer`` for exercise ``check_id`` (see ``fleetlab.course.grading``)."""
    from fleetlab.course.grading import check as run_check

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
