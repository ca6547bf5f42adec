"""The effects ledger: every side effect counted, so duplicates and losses show.

A worker's side effect (filing a ticket, charging a card, sending an email)
happens outside the queue's guarantees; the ledger stands in for that outside
world. Each record names the work it belongs to (``key``), so after a run the
ledger answers the two questions at-least-once delivery raises: did any work
happen twice (duplicates), and did any expected work never happen (lost)?
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Effect:
    """One side effect as it happened."""

    key: str
    kind: str
    actor: str
    at: float
    receive_count: int = 1


@dataclass(frozen=True)
class LedgerSummary:
    """Counts after a run: ``duplicated`` extra effects, ``lost`` keys never done."""

    effects: int
    distinct: int
    duplicated: int
    lost: int

    @property
    def exactly_once(self) -> bool:
        return self.duplicated == 0 and self.lost == 0


class EffectsLedger:
    """Thread-safe, append-only record of side effects."""

    def __init__(self) -> None:
        self._effects: list[Effect] = []
        self._lock = threading.Lock()

    def record(self, key: str, *, kind: str, actor: str, at: float, receive_count: int = 1) -> Effect:
        """Append one effect and return it."""
        effect = Effect(key=key, kind=kind, actor=actor, at=at, receive_count=receive_count)
        with self._lock:
            self._effects.append(effect)
        return effect

    def effects(self, key: str | None = None) -> list[Effect]:
        """All effects, or those of one key, in the order they happened."""
        with self._lock:
            return [e for e in self._effects if key is None or e.key == key]

    def count(self, key: str) -> int:
        """How many times the work ``key`` took effect."""
        return len(self.effects(key))

    def duplicates(self) -> dict[str, int]:
        """Keys that took effect more than once, with their counts."""
        counts = Counter(e.key for e in self.effects())
        return {key: n for key, n in counts.items() if n > 1}

    def lost(self, expected: set[str] | list[str]) -> set[str]:
        """Expected keys that never took effect."""
        done = {e.key for e in self.effects()}
        return set(expected) - done

    def summary(self, expected: set[str] | list[str] = ()) -> LedgerSummary:
        """Totals for a run; pass the expected keys to count losses."""
        effects = self.effects()
        counts = Counter(e.key for e in effects)
        return LedgerSummary(
            effects=len(effects),
            distinct=len(counts),
            duplicated=sum(n - 1 for n in counts.values()),
            lost=len(self.lost(expected)),
        )
