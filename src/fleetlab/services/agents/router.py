"""A router in front of the fake model: model groups, bounded retries, cooldowns, fallbacks, a limit per group.

The shape of an LLM gateway's router (LiteLLM's, in seed 000). A call goes to
the primary *model group*, a list of deployments (each a named ``FakeModel``);
each try picks one of the group's deployments that is not cooling down, at
random from the router's seed. A transient error is retried in the group, at
most ``num_retries`` times; a permanent one leaves the group at once. A
deployment that fails more than ``allowed_fails`` times in a row is benched
for ``cooldown`` seconds of the clock; an input it rejects (a poison input)
is the input's fault and does not count against it. When the group gives
up, the call moves to the group's explicit fallback, if it has one: leaving the failure
domain rather than retrying harder inside it. A group may cap its calls in
flight, so a primary outage cannot pour its whole load onto the fallback: at
the cap, a call is refused (``GroupAtCapacity``), not queued.

Every call ends in a ``RouteOutcome`` (who served it, attempts, retries,
fallbacks, errors by class), kept by the router for a scoreboard
(``Router.tally``). The picks and the model's draws depend only on the seeds,
the trace id and the attempt; the cooldowns, on the order of the calls. So one
caller, or workers taking turns as actors on the virtual clock, get the same
outcomes from the same seeds, every run.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fleetlab.core.clock import Clock
from fleetlab.core.errors import GroupAtCapacity, InvalidInput, ModelError
from fleetlab.core.status import Status
from fleetlab.services.agents.model import FakeModel, ModelResult

MAX_RETRIES = 10
"""The most in-group retries a router takes: retries inside a failing group hide an outage, they never end it."""


class RouteStatus(Status):
    """How a routed call ended."""

    SERVED = "served"
    """A deployment answered."""
    FAILED = "failed"
    """Every group on the way gave up on a model error, or had every deployment cooling down."""
    REFUSED = "refused"
    """The last group on the way had its limit of calls in flight: nothing was sent there."""


class RouteError(Status):
    """The class of one failed try, as a scoreboard counts it."""

    TRANSIENT = "transient"
    """A deployment failed with a transient error (throttling, a 5xx): worth a retry."""
    PERMANENT = "permanent"
    """A deployment failed with a permanent error: the group is left at once."""
    AT_CAPACITY = "at_capacity"
    """The group had its limit of calls in flight; the call was refused there."""
    COOLING_DOWN = "cooling_down"
    """Every deployment of the group was benched; no call was made there."""


@dataclass(frozen=True)
class ModelGroup:
    """Deployments that serve one model name, interchangeably; ``max_in_flight`` caps its calls at once.

    Raises InvalidInput naming the field: an empty name, no deployments, an
    unnamed or repeated deployment, a cap below 1.
    """

    name: str
    deployments: tuple[FakeModel, ...]
    max_in_flight: int | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise InvalidInput("name", "a model group needs a name")
        if not self.deployments:
            raise InvalidInput("deployments", f"group {self.name} lists none; give it at least one FakeModel")
        names = [deployment.name for deployment in self.deployments]
        if "" in names:
            raise InvalidInput("deployments", f"group {self.name} has an unnamed deployment; name each FakeModel")
        if len(set(names)) < len(names):
            raise InvalidInput("deployments", f"group {self.name} repeats a deployment name: {names}")
        if self.max_in_flight is not None and self.max_in_flight < 1:
            raise InvalidInput("max_in_flight", f"group {self.name}: must be at least 1, or None for no cap, "
                                                f"got {self.max_in_flight}")


@dataclass(frozen=True)
class RouterSettings:
    """A router's groups and posture.

    Calls go to ``primary``; ``fallbacks`` maps a group to the group its calls
    move to when it gives up (empty: no cross-group fallback). ``num_retries``
    bounds the retries inside a group (0..MAX_RETRIES); a deployment that
    fails more than ``allowed_fails`` times in a row is benched for
    ``cooldown`` seconds. ``seed`` seeds the picks. Raises InvalidInput naming
    the field for anything else.
    """

    groups: tuple[ModelGroup, ...]
    primary: str
    fallbacks: Mapping[str, str] = field(default_factory=dict)
    num_retries: int = 2
    allowed_fails: int = 2
    cooldown: float = 60.0
    seed: int = 0

    def __post_init__(self) -> None:
        self._check_posture()
        self._check_groups()
        self._check_fallbacks()

    @property
    def chain(self) -> tuple[str, ...]:
        """The groups a call tries, in order: the primary, then its fallbacks."""
        chain = [self.primary]
        while chain[-1] in self.fallbacks:
            chain.append(self.fallbacks[chain[-1]])
        return tuple(chain)

    def group(self, name: str) -> ModelGroup:
        return next(group for group in self.groups if group.name == name)

    def _check_posture(self) -> None:
        if not 0 <= self.num_retries <= MAX_RETRIES:
            raise InvalidInput("num_retries", f"must be within 0..{MAX_RETRIES}, got {self.num_retries}",
                               hint="retries inside a failing group hide an outage; leave it for a fallback")
        if self.allowed_fails < 0:
            raise InvalidInput("allowed_fails", f"must be 0 or more, got {self.allowed_fails}")
        if self.cooldown < 0:
            raise InvalidInput("cooldown", f"must be 0 or more seconds, got {self.cooldown}")

    def _check_groups(self) -> None:
        if not self.groups:
            raise InvalidInput("groups", "the router needs at least one ModelGroup")
        names = [group.name for group in self.groups]
        if len(set(names)) < len(names):
            raise InvalidInput("groups", f"group names must be unique, got {names}")
        deployments = [deployment.name for group in self.groups for deployment in group.deployments]
        if len(set(deployments)) < len(deployments):
            repeated = sorted(name for name, count in Counter(deployments).items() if count > 1)
            raise InvalidInput("groups", f"a deployment belongs to one group only; repeated: {repeated}")
        if self.primary not in names:
            raise InvalidInput("primary", f"names no group: {self.primary!r}; the groups are {names}")

    def _check_fallbacks(self) -> None:
        names = {group.name for group in self.groups}
        for source, target in self.fallbacks.items():
            for end in (source, target):
                if end not in names:
                    raise InvalidInput(f"fallbacks[{source}]", f"names no group: {end!r}; the groups are "
                                                               f"{sorted(names)}")
        for start in self.fallbacks:
            seen = [start]
            while seen[-1] in self.fallbacks:
                seen.append(self.fallbacks[seen[-1]])
                if seen[-1] in seen[:-1]:
                    raise InvalidInput("fallbacks", f"loop back on themselves: {' -> '.join(seen)}")


@dataclass(frozen=True)
class RouteOutcome:
    """How one routed call went.

    ``deployment`` served it ("" unless served) in ``group`` (else the last
    group tried); ``attempts`` counts the model calls made, ``retries`` the
    in-group retries among them, ``fallbacks`` the moves to another group;
    ``errors`` counts the failed tries by class; ``error`` is the last one
    when the call was not served.
    """

    trace_id: str
    status: RouteStatus
    group: str
    deployment: str = ""
    attempts: int = 0
    retries: int = 0
    fallbacks: int = 0
    errors: Mapping[RouteError, int] = field(default_factory=dict)
    result: ModelResult | None = None
    error: ModelError | None = None

    @property
    def delivered(self) -> bool:
        return self.status is RouteStatus.SERVED


@dataclass(frozen=True)
class RouterTally:
    """A router's calls so far, counted for a scoreboard."""

    calls: int
    by_status: Mapping[RouteStatus, int]
    served_by: Mapping[str, int]
    attempts: int
    retries: int
    fallbacks: int
    errors: Mapping[RouteError, int]
    cooldowns: int
    """How many times a deployment was benched."""


@dataclass
class _Call:
    """One routed call as it goes: what it has tried so far."""

    trace_id: str
    earlier_calls: int
    """Model calls numbered for the caller's earlier attempts: this call's are numbered after them."""
    attempts: int = 0
    retries: int = 0
    fallbacks: int = 0
    errors: Counter[RouteError] = field(default_factory=Counter)
    last_error: tuple[RouteError, ModelError] | None = None

    @property
    def next_attempt(self) -> int:
        return self.earlier_calls + self.attempts + 1

    @property
    def counts(self) -> dict[str, Any]:
        """The outcome's counts so far, by RouteOutcome's field names."""
        return {"attempts": self.attempts, "retries": self.retries, "fallbacks": self.fallbacks,
                "errors": dict(self.errors)}

    def failed(self, kind: RouteError, error: ModelError) -> None:
        self.errors[kind] += 1
        self.last_error = (kind, error)


class Router:
    """Routes model calls over ``settings``' groups; safe to share among concurrent workers.

    Cooldowns run on the clock each call passes (use one clock for a router):
    virtual time on moto, so a 60 s bench costs nothing.
    """

    def __init__(self, settings: RouterSettings) -> None:
        self.settings = settings
        self.outcomes: list[RouteOutcome] = []
        self._chain = [settings.group(name) for name in settings.chain]
        self._calls_per_attempt = (settings.num_retries + 1) * len(self._chain)
        self._lock = threading.Lock()
        self._fails: Counter[str] = Counter()
        self._benched_until: dict[str, float] = {}
        self._in_flight: Counter[str] = Counter()
        self._cooldowns = 0

    def route(self, trace_id: str, clock: Clock, *, attempt: int = 1) -> RouteOutcome:
        """Route the caller's ``attempt`` at ``trace_id``; record and return how it went.

        Model errors end in the outcome, never raised. Model call k of the
        caller's attempt a is the model's attempt (a-1)*C + k, with C the most
        calls one attempt can make, so each call of each attempt draws afresh.
        Raises InvalidInput when ``attempt`` is below 1.
        """
        if attempt < 1:
            raise InvalidInput("attempt", f"counts from 1, got {attempt}")
        call = _Call(trace_id, earlier_calls=(attempt - 1) * self._calls_per_attempt)
        for hop, group in enumerate(self._chain):
            call.fallbacks = hop
            served = self._try_group(group, call, clock)
            if served is not None:
                deployment, result = served
                return self._record(RouteOutcome(
                    call.trace_id, RouteStatus.SERVED, group.name, deployment, **call.counts, result=result))
        assert call.last_error is not None  # every group that gave up said why
        kind, error = call.last_error
        status = RouteStatus.REFUSED if kind is RouteError.AT_CAPACITY else RouteStatus.FAILED
        return self._record(RouteOutcome(call.trace_id, status, self._chain[-1].name, **call.counts, error=error))

    def invoke(self, trace_id: str, attempt: int, clock: Clock) -> ModelResult:
        """``FakeModel.invoke``'s contract, routed: the answer, or the call's last ModelError raised."""
        outcome = self.route(trace_id, clock, attempt=attempt)
        if outcome.error is not None:
            raise outcome.error
        assert outcome.result is not None  # a call not failed was served
        return outcome.result

    def cooling_down(self, clock: Clock) -> list[str]:
        """The deployments benched at the clock's now."""
        now = clock.now()
        with self._lock:
            return sorted(name for name, until in self._benched_until.items() if until > now)

    def tally(self) -> RouterTally:
        """Every call routed so far, counted."""
        with self._lock:
            outcomes = list(self.outcomes)
            cooldowns = self._cooldowns
        errors: Counter[RouteError] = Counter()
        for outcome in outcomes:
            errors.update(outcome.errors)
        return RouterTally(
            calls=len(outcomes),
            by_status=dict(Counter(outcome.status for outcome in outcomes)),
            served_by=dict(Counter(outcome.deployment for outcome in outcomes if outcome.delivered)),
            attempts=sum(outcome.attempts for outcome in outcomes),
            retries=sum(outcome.retries for outcome in outcomes),
            fallbacks=sum(outcome.fallbacks for outcome in outcomes),
            errors=dict(errors),
            cooldowns=cooldowns,
        )

    def _try_group(self, group: ModelGroup, call: _Call, clock: Clock) -> tuple[str, ModelResult] | None:
        """The group's answer (deployment, result), or None once the group gives up on this call."""
        refused = self._enter(group)
        if refused is not None:
            call.failed(RouteError.AT_CAPACITY, refused)
            return None
        try:
            for retry in range(self.settings.num_retries + 1):
                deployment = self._pick(group, call, clock)
                if deployment is None:
                    call.failed(RouteError.COOLING_DOWN, ModelError(
                        f"{call.trace_id}: every deployment of group {group.name} is cooling down", transient=True))
                    return None
                if retry:
                    call.retries += 1
                attempt = call.next_attempt
                call.attempts += 1
                try:
                    result = deployment.invoke(call.trace_id, attempt, clock)
                except ModelError as error:
                    if not error.rejected_input:
                        self._strike(deployment.name, clock)
                    call.failed(RouteError.TRANSIENT if error.transient else RouteError.PERMANENT, error)
                    if not error.transient:
                        return None
                    continue
                self._cleared(deployment.name)
                return deployment.name, result
            return None
        finally:
            if refused is None:
                self._leave(group)

    def _pick(self, group: ModelGroup, call: _Call, clock: Clock) -> FakeModel | None:
        """A seeded pick among the group's deployments that are not benched; None when all are."""
        now = clock.now()
        with self._lock:
            ready = [d for d in group.deployments if self._benched_until.get(d.name, now) <= now]
        if not ready:
            return None
        key = f"{self.settings.seed}|{group.name}|{call.trace_id}|{call.next_attempt}"
        return random.Random(hashlib.sha256(key.encode()).digest()).choice(ready)

    def _strike(self, deployment: str, clock: Clock) -> None:
        """Count a failure; one past ``allowed_fails`` in a row benches the deployment for ``cooldown``."""
        with self._lock:
            self._fails[deployment] += 1
            if self._fails[deployment] > self.settings.allowed_fails:
                self._benched_until[deployment] = clock.now() + self.settings.cooldown
                self._fails[deployment] = 0
                self._cooldowns += 1

    def _cleared(self, deployment: str) -> None:
        with self._lock:
            self._fails[deployment] = 0

    def _enter(self, group: ModelGroup) -> GroupAtCapacity | None:
        """Take one of the group's places in flight; the refusal instead when the group has none left."""
        with self._lock:
            if group.max_in_flight is not None and self._in_flight[group.name] >= group.max_in_flight:
                return GroupAtCapacity(group.name, group.max_in_flight)
            self._in_flight[group.name] += 1
            return None

    def _leave(self, group: ModelGroup) -> None:
        with self._lock:
            self._in_flight[group.name] -= 1

    def _record(self, outcome: RouteOutcome) -> RouteOutcome:
        with self._lock:
            self.outcomes.append(outcome)
        return outcome
