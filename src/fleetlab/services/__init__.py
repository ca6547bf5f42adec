"""Services: one package per AWS service the course teaches, and what a notebook takes from them.

``sqs`` (consumers, the worker, DLQs, redrive), ``state`` (the idempotency
and response stores, the window, the token governor), ``events`` (the envelope, replays, retry
policies), ``stepfunctions`` (machines, executions, callbacks, sizing) and
``agents`` (the fake model and the router in front of it). The names below
are the public surface a lab imports; everything else is the library's own.
"""

from fleetlab.services.agents.model import FakeModel, LatencyProfile
from fleetlab.services.agents.router import (
    ModelGroup,
    RouteError,
    RouteOutcome,
    Router,
    RouterSettings,
    RouterTally,
    RouteStatus,
)
from fleetlab.services.events import replay
from fleetlab.services.events.retry import (
    BOUNDED,
    CLASSIC_DEFAULT,
    EVENTS_V2_DEFAULT,
    STANDARD_POSTURES,
    RetryPolicy,
)
from fleetlab.services.sqs import dlq, messages, redrive
from fleetlab.services.sqs.worker import QueueWorker
from fleetlab.services.state.governor import Allowance, Quota, TokenGovernor
from fleetlab.services.state.idempotency import Completed, IdempotencyStore
from fleetlab.services.state.responses import ResponseStore
from fleetlab.services.state.window import DuplicateSources
from fleetlab.services.stepfunctions import callbacks, machines, sizing
from fleetlab.services.stepfunctions.executions import history

__all__ = [
    "BOUNDED",
    "CLASSIC_DEFAULT",
    "EVENTS_V2_DEFAULT",
    "STANDARD_POSTURES",
    "Allowance",
    "Completed",
    "DuplicateSources",
    "FakeModel",
    "IdempotencyStore",
    "LatencyProfile",
    "ModelGroup",
    "QueueWorker",
    "Quota",
    "ResponseStore",
    "RetryPolicy",
    "RouteError",
    "RouteOutcome",
    "RouteStatus",
    "Router",
    "RouterSettings",
    "RouterTally",
    "TokenGovernor",
    "callbacks",
    "dlq",
    "history",
    "machines",
    "messages",
    "redrive",
    "replay",
    "sizing",
]
