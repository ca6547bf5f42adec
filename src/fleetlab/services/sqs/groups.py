"""FIFO message groups: how far each group got, over time."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GroupProgress"]

@dataclass(frozen=True)
class GroupProgress:
    """How far each FIFO message group got, over time (seconds since the first send)."""

    finished: dict[str, list[float]]
    steps: int
    stuck: str
    parked_at: float | None
    horizon: float

    def done_by(self, group: str, at: float) -> int:
        """Steps of ``group`` finished by ``at`` seconds."""
        return sum(1 for when in self.finished[group] if when <= at)
