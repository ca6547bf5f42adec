"""fleetlab: the library behind the fleetlab course.

The public surface is a few modules, each with ``__all__``, and a lab
notebook imports from nothing else (a test holds every notebook to it):

==================================  ==================================================
``fleetlab``                        ``start`` a lab, ``check`` an exercise, the fleet and
                                    its instruments (envelopes, fault plans, the ledger,
                                    the tracer), the errors a lab catches,
                                    ``progress_widget``
``fleetlab.services``               the services' building blocks: workers, stores,
                                    DLQs, redrive, replays, retry policies, callbacks
``fleetlab.composition``            the topology, the fleet, autoscaling and capacity
``fleetlab.display``                tables, plots and widgets
``fleetlab.course.experiments``     what the labs run on the services
==================================  ==================================================
"""

from __future__ import annotations

from typing import Any

from fleetlab.composition.pipeline import Fleet
from fleetlab.core.errors import (
    AlreadyInProgress,
    FleetlabError,
    InvalidInput,
    LeaseLost,
    QuotaExhausted,
    ResponseTimeout,
    StepFailed,
    Timeout,
)
from fleetlab.core.faults import Crash, CrashPoint, FaultPlan
from fleetlab.core.ledger import EffectsLedger
from fleetlab.core.tracing import Tracer
from fleetlab.core.units import duration
from fleetlab.course.lab import Lab, start
from fleetlab.services.events.envelope import Envelope

__version__ = "0.1.0"

PUBLIC_MODULES = (
    "fleetlab",
    "fleetlab.services",
    "fleetlab.composition",
    "fleetlab.display",
    "fleetlab.course.experiments",
)
"""The modules a lab notebook may import from."""


def check(check_id: str, answer: Any) -> Any:
    """Run the public cases of exercise ``check_id`` on ``answer``; show and return the result."""
    from fleetlab.course.grading import check as run_check

    return run_check(check_id, answer)


def progress_widget(lab: str | None = None) -> Any:
    """A widget showing which checks pass, per lab, opened on ``lab`` (ipywidgets loads on first call)."""
    from fleetlab.course.grading.widget import progress_widget as widget

    return widget(lab)


__all__ = [
    "AlreadyInProgress",
    "Crash",
    "CrashPoint",
    "EffectsLedger",
    "Envelope",
    "FaultPlan",
    "Fleet",
    "FleetlabError",
    "InvalidInput",
    "Lab",
    "LeaseLost",
    "QuotaExhausted",
    "ResponseTimeout",
    "StepFailed",
    "Timeout",
    "Tracer",
    "check",
    "duration",
    "progress_widget",
    "start",
]
