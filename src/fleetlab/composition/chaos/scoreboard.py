"""A chaos day's scoreboard: invariants and budgets as named results with their numbers, and the counts.

Each ``Result`` passes or fails and says why in figures. ``Scoreboard``
holds the invariants, the budgets, the counts, the schedule it ran and the
configuration it ran on; ``str()`` renders it as plain tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rich import box
from rich.console import Group
from rich.table import Table

from fleetlab.composition.chaos.config import FleetConfig
from fleetlab.composition.chaos.schedule import ChaosSchedule
from fleetlab.composition.chaos.series import DaySample
from fleetlab.core.errors import InvalidInput
from fleetlab.core.numbers import real
from fleetlab.core.rendering import plain_text
from fleetlab.core.tracing import Hop
from fleetlab.core.units import duration

INVARIANTS = ("no accepted request lost", "no duplicate effect", "every poison message parked with its diagnosis",
              "no caller left waiting", "every step on one trace", "spend within the quota")
"""The invariants' names, in the scoreboard's order."""


@dataclass(frozen=True)
class Budgets:
    """What a day may cost: API calls and DynamoDB writes per completed step, tokens per conversation, and
    ``answer_seconds``, the deadline of each caller: from the step's accept (its publish) to its answer. Numbers
    are kept as Python floats."""

    api_calls_per_step: float = 12.0
    dynamodb_writes_per_step: float = 4.75
    tokens_per_conversation: float = 6_000.0
    answer_seconds: float = 43_200.0

    def __post_init__(self) -> None:
        for name in ("api_calls_per_step", "dynamodb_writes_per_step", "tokens_per_conversation", "answer_seconds"):
            value = getattr(self, name)
            number = real(value)
            if number is None or not number > 0:
                raise InvalidInput(name, f"must be a positive number, got {value!r}")
            object.__setattr__(self, name, number)


@dataclass(frozen=True)
class Result:
    """One invariant or budget: its name, whether it held, and the figures that say so."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class Counts:
    """The day's figures. ``lost``: healthy steps accepted that never took effect (``stranded`` of them
    sit in a DLQ); ``duplicated``: extra effects; ``parked``: distinct steps in a DLQ; ``hung``: callers
    never answered; ``traced``: steps whose one trace runs from the bus to its delete; ``spend``: tokens;
    ``slowest_answer``: the longest a caller waited from its step's first publish to its answer (seconds, over the
    callers answered)."""

    accepted: int
    completed: int
    lost: int
    stranded: int
    duplicated: int
    parked: int
    hung: int
    traced: int
    spend: int
    api_calls: int
    dynamodb_writes: int
    replayed: int
    slowest_answer: float
    run_seconds: float
    virtual_seconds: float

    @property
    def api_calls_per_step(self) -> float:
        return self.api_calls / max(self.completed, 1)

    @property
    def dynamodb_writes_per_step(self) -> float:
        return self.dynamodb_writes / max(self.completed, 1)


@dataclass(frozen=True)
class Scoreboard:
    """What a chaos day showed (``run_chaos_day``): invariants, budgets, counts, and what it ran."""

    schedule: ChaosSchedule
    config: FleetConfig
    invariants: tuple[Result, ...]
    budgets: tuple[Result, ...]
    counts: Counts
    crashes: Mapping[str, int] = field(default_factory=dict)
    diagnoses: Mapping[str, int] = field(default_factory=dict)
    calls_by_operation: Mapping[str, int] = field(default_factory=dict)
    replayed: frozenset[str] = frozenset()
    """The traces the replay published again."""
    replicas_peak: int = 0
    router: Mapping[str, int] = field(default_factory=dict)
    samples: tuple[DaySample, ...] = ()
    """The fleet after every round of receives, in time order (the day's dashboard)."""
    traces: Mapping[str, tuple[Hop, ...]] = field(default_factory=dict)
    """Every accepted step's hops in time order, by trace id (a conversation's waterfall)."""

    @property
    def held(self) -> bool:
        """Every invariant held and every budget was kept."""
        return all(result.ok for result in (*self.invariants, *self.budgets))

    def invariant(self, name: str) -> Result:
        """The invariant named ``name``; InvalidInput lists the names."""
        for result in self.invariants:
            if result.name == name:
                return result
        raise InvalidInput("name", f"no invariant {name!r}", hint=f"one of {', '.join(INVARIANTS)}")

    def broken(self) -> list[str]:
        """The names of the invariants and budgets that did not hold."""
        return [result.name for result in (*self.invariants, *self.budgets) if not result.ok]

    def comparable(self) -> tuple[object, ...]:
        """What the same seed and config reproduce exactly on every backend: every result's verdict, the step
        counts, the crashes, the diagnoses and the replay. Left out: the wall time, and figures that depend on
        exactly when a call falls in real time, such as the governor's draws per window and so the API call
        count. (On moto, whose clock the day holds still, those repeat too.)"""
        counts = self.counts
        steps = (counts.accepted, counts.completed, counts.lost, counts.stranded, counts.duplicated, counts.parked,
                 counts.hung, counts.traced, counts.spend, counts.replayed)
        verdicts = tuple((result.name, result.ok) for result in (*self.invariants, *self.budgets))
        return verdicts, steps, dict(self.crashes), dict(self.diagnoses), self.replayed

    def table(self) -> Group:
        """The scoreboard as rich tables: the results, then the counts."""
        results = Table(title=f"chaos day, seed {self.schedule.seed}: {self.schedule.steps:,} steps",
                        box=box.SIMPLE_HEAD)
        for column in ("kind", "result", "held?", "figures"):
            results.add_column(column)
        for kind, group in (("invariant", self.invariants), ("budget", self.budgets)):
            for result in group:
                results.add_row(kind, result.name, "yes" if result.ok else "NO", result.detail)
        counts = Table(title="counts", box=box.SIMPLE_HEAD)
        counts.add_column("count")
        counts.add_column("value", justify="right")
        c = self.counts
        for name, value in (("accepted", f"{c.accepted:,}"), ("completed", f"{c.completed:,}"),
                            ("lost", f"{c.lost}"), ("duplicated", f"{c.duplicated}"), ("parked", f"{c.parked}"),
                            ("hung", f"{c.hung}"), ("traced", f"{c.traced:,}"), ("spend (tokens)", f"{c.spend:,}"),
                            ("API calls per step", f"{c.api_calls_per_step:.2f}"),
                            ("DynamoDB writes per step", f"{c.dynamodb_writes_per_step:.2f}"),
                            ("slowest answer", duration(round(c.slowest_answer))), ("replayed", f"{c.replayed}"),
                            ("peak replicas", f"{self.replicas_peak}"),
                            ("crashes", ", ".join(f"{k} {v}" for k, v in sorted(self.crashes.items()))),
                            ("virtual time", f"{c.virtual_seconds / 3600:,.1f} h"),
                            ("run time", f"{c.run_seconds:.1f} s")):
            counts.add_row(name, value)
        return Group(self.schedule.table(), results, counts)

    def __str__(self) -> str:
        return plain_text(self.table())
