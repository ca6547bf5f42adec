"""The fleet's configuration for a chaos day: the knobs a learner sets, validated.

``FleetConfig()`` is a correct configuration: a visibility timeout that
covers the usual step, a heartbeat for the unusual one, enough receives to
outlast the crashes, the last attempt parking with a diagnosis, idempotency
with a window longer than a replay's horizon, an autoscaler with room, a
router that falls back across groups, and a governor with headroom. Every
bad value raises InvalidInput naming its field; a number is kept as Python's
int or float (a whole float and a numpy integer are whole numbers).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from fleetlab.composition.topology import MAX_VISIBILITY_SECONDS
from fleetlab.core.errors import InvalidInput
from fleetlab.core.numbers import real, whole
from fleetlab.services.agents.router import MAX_RETRIES
from fleetlab.services.state.governor import Quota

MAX_RECEIVES = 1_000  # SQS's cap on a redrive policy's maxReceiveCount


@dataclass(frozen=True)
class FleetConfig:
    """What the fleet is built with; the defaults hold every invariant of a default chaos day.

    Queues: ``visibility_timeout`` (s), ``max_receives`` (the redrive policy's
    maxReceiveCount), ``park_with_diagnosis`` (the worker's last attempt parks
    the step with its diagnosis and answers the caller; False leaves parking to
    SQS, which moves the message silently). Steps: ``idempotency`` (claim
    before the effect) kept for ``idempotency_window`` seconds,
    ``heartbeat_seconds`` (None: no heartbeat). Scaling: replicas between
    ``min_replicas`` and ``max_replicas``, one per ``backlog_per_replica``
    waiting steps (KEDA's queueLength). Router: ``primary_deployments`` in the
    primary group, ``fallback`` (a fallback group), ``num_retries``,
    ``allowed_fails``, ``cooldown`` (s). Governor: ``quota_tokens`` per
    ``quota_window`` seconds, drawn in batches of ``batch_tokens``, with
    ``headroom`` kept back.
    """

    visibility_timeout: int = 900
    max_receives: int = 6
    park_with_diagnosis: bool = True
    idempotency: bool = True
    idempotency_window: int = 86_400
    heartbeat_seconds: float | None = 300.0
    min_replicas: int = 1
    max_replicas: int = 20
    backlog_per_replica: int = 10
    primary_deployments: int = 2
    fallback: bool = True
    num_retries: int = 2
    allowed_fails: int = 2
    cooldown: float = 60.0
    quota_tokens: int = 1_000_000
    quota_window: float = 3_600.0
    batch_tokens: int = 10_000
    headroom: float = 0.1

    def __post_init__(self) -> None:
        self._check_types()
        self._check_queues()
        self._check_scaling()
        self._check_router_and_governor()

    def _check_types(self) -> None:
        """Refuse a value of the wrong kind; keep a number as Python's int or float (numpy's and 900.0 too)."""
        for spec in fields(self):
            value = getattr(self, spec.name)
            wanted = str(spec.type)
            if wanted == "bool" and not isinstance(value, bool):
                raise InvalidInput(spec.name, f"must be True or False, got {value!r}")
            if wanted == "int":
                number: float | int | None = whole(value)
                if number is None:
                    raise InvalidInput(spec.name, f"must be a whole number, got {value!r}",
                                       hint="round it, e.g. math.ceil(...) for seconds or tokens")
            elif wanted == "float" or (wanted == "float | None" and value is not None):
                number = real(value)
                if number is None:
                    raise InvalidInput(spec.name, f"must be a number, got {value!r}")
            else:
                continue
            object.__setattr__(self, spec.name, number)

    def _check_queues(self) -> None:
        _within("visibility_timeout", self.visibility_timeout, 1, MAX_VISIBILITY_SECONDS, "seconds (SQS's range)")
        low = 2 if self.park_with_diagnosis else 1
        _within("max_receives", self.max_receives, low, MAX_RECEIVES,
                "receives" + (" (the last attempt needs a spare receive)" if low == 2 else ""))
        if self.idempotency_window <= self.visibility_timeout:
            raise InvalidInput("idempotency_window", f"{self.idempotency_window} s must exceed the visibility timeout "
                                                     f"{self.visibility_timeout} s (a claim's lease)",
                               hint="keep records longer than any way a step comes back: retries, redrives, replays")
        heartbeat = self.heartbeat_seconds
        if heartbeat is not None and not 0 < heartbeat < self.visibility_timeout:
            raise InvalidInput("heartbeat_seconds", f"must be None or between 0 and the visibility timeout "
                                                    f"{self.visibility_timeout} s (exclusive), got {heartbeat!r}")

    def _check_scaling(self) -> None:
        _within("min_replicas", self.min_replicas, 0, 1_000, "replicas")
        _within("max_replicas", self.max_replicas, max(1, self.min_replicas), 1_000,
                "replicas (at least 1 and at least min_replicas)")
        _within("backlog_per_replica", self.backlog_per_replica, 1, 10_000, "waiting steps per replica")

    def _check_router_and_governor(self) -> None:
        _within("primary_deployments", self.primary_deployments, 1, 10, "deployments")
        _within("num_retries", self.num_retries, 0, MAX_RETRIES, "in-group retries")
        _within("allowed_fails", self.allowed_fails, 0, 100, "failures in a row")
        _within("cooldown", self.cooldown, 0, 3_600, "seconds")
        _within("quota_tokens", self.quota_tokens, 1, 10**12, "tokens per window")
        _within("quota_window", self.quota_window, 1, 86_400, "seconds")
        if not 0 <= self.headroom < 1:
            raise InvalidInput("headroom", f"must be a share in [0, 1), got {self.headroom!r}")
        _within("batch_tokens", self.batch_tokens, 1, self.quota().usable(),
                "tokens (at most the usable quota per window)")

    def quota(self) -> Quota:
        """The governor's quota these knobs set: ``quota_tokens`` per ``quota_window``, ``headroom`` kept back."""
        return Quota("chaos-day", self.quota_tokens, self.quota_window, self.headroom)


def _within(name: str, value: float, low: float, high: float, unit: str) -> None:
    if not low <= value <= high:
        raise InvalidInput(name, f"must be within {low:g}..{high:g} {unit}, got {value!r}")
