"""The fake agent model: seeded, deterministic latency and failures.

Each call's outcome depends only on (seed, name, trace_id, attempt), never on
call order or threads, so a chaos run is reproducible however workers
interleave. A named model is one deployment behind a router (``router``): its
name salts its draws, so two deployments with one seed fail independently.
Latency is log-normal, set by its median and p95, and passes on the given
clock: a 10-minute step costs nothing on the virtual clock.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

from fleetlab.core.clock import Clock
from fleetlab.core.errors import InvalidInput, ModelError

Z95 = 1.6448536269514722  # the standard normal's 95th percentile
OUTAGES = ("transient", "permanent")


@dataclass(frozen=True)
class LatencyProfile:
    """Step latency as a log-normal distribution with this median and p95 (seconds)."""

    p50: float = 90.0
    p95: float = 420.0

    def __post_init__(self) -> None:
        if not 0 < self.p50 <= self.p95:
            raise InvalidInput("latency", f"need 0 < p50 <= p95, got p50={self.p50}, p95={self.p95}")

    @property
    def sigma(self) -> float:
        """The log-normal's shape: the spread of log(latency)."""
        return math.log(self.p95 / self.p50) / Z95

    def sample(self, rng: random.Random) -> float:
        return rng.lognormvariate(math.log(self.p50), self.sigma)

    def quantile(self, q: float) -> float:
        """The latency that a share ``q`` (0 < q < 1) of calls stay under."""
        return self.p50 * math.exp(self.sigma * NormalDist().inv_cdf(q))


@dataclass(frozen=True)
class ModelResult:
    """What one model call produced."""

    trace_id: str
    attempt: int
    text: str
    latency: float


@dataclass(frozen=True)
class FakeModel:
    """A deterministic stand-in for an LLM call.

    ``transient_failure_rate`` fails a call with a retryable error;
    ``poison`` names trace ids whose every call fails permanently, the input
    rejected (``ModelError.rejected_input``);
    ``down_until`` (a time on the clock) throttles every call made before
    it (and from ``down_from`` on: an outage window), as a provider outage does; ``outage`` makes the deployment hard-down:
    every call fails at once, with a ``"transient"`` error (a 5xx, throttling)
    or a ``"permanent"`` one (the model is gone). ``name`` names the
    deployment in its errors and salts its draws (unnamed, the draws are as
    they always were).
    """

    seed: int = 0
    latency: LatencyProfile = field(default_factory=LatencyProfile)
    transient_failure_rate: float = 0.0
    poison: frozenset[str] = frozenset()
    down_until: float = 0.0
    down_from: float = 0.0
    name: str = ""
    outage: Literal["transient", "permanent"] | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.transient_failure_rate <= 1.0:
            raise InvalidInput("transient_failure_rate", f"must be within 0..1, got {self.transient_failure_rate}")
        if self.outage is not None and self.outage not in OUTAGES:
            raise InvalidInput("outage", f"must be one of {', '.join(OUTAGES)} or None, got {self.outage!r}")

    def latency_of(self, trace_id: str, attempt: int = 1) -> float:
        """The latency the call (trace_id, attempt) will take, without making it."""
        return self.latency.sample(self._rng(trace_id, attempt, "latency"))

    def invoke(self, trace_id: str, attempt: int, clock: Clock) -> ModelResult:
        """Spend the call's latency on ``clock``, then answer or raise ModelError.

        A hard-down deployment (``outage``) or one called in [``down_from``, ``down_until``)
        fails at once, spending no time. Every ModelError names this deployment.
        """
        if self.outage is not None:
            raise self._error(f"{trace_id}: {self._called} is down ({self.outage} outage)", self.outage == "transient")
        if self.down_from <= clock.now() < self.down_until:
            raise self._error(f"{trace_id}: model throttled (the provider is down)", True)
        latency = self.latency_of(trace_id, attempt)
        clock.sleep(latency)
        if trace_id in self.poison:
            raise self._error(f"{trace_id}: the model rejects this input every time", False, rejected_input=True)
        if self._rng(trace_id, attempt, "failure").random() < self.transient_failure_rate:
            raise self._error(f"{trace_id}: model throttled (attempt {attempt})", True)
        return ModelResult(trace_id=trace_id, attempt=attempt, text=f"answer for {trace_id}", latency=latency)

    @property
    def _called(self) -> str:
        return f"deployment {self.name}" if self.name else "the model"

    def _error(self, message: str, transient: bool, *, rejected_input: bool = False) -> ModelError:
        return ModelError(message, transient=transient, deployment=self.name, rejected_input=rejected_input)

    def _rng(self, trace_id: str, attempt: int, purpose: str) -> random.Random:
        salt = f"{self.name}|" if self.name else ""
        digest = hashlib.sha256(f"{self.seed}|{salt}{trace_id}|{attempt}|{purpose}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))
