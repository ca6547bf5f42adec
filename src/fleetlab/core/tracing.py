"""Tracing: one trace_id carried through every hop, recorded as it passes.

Queue, bus and state machine each number things their own way (message id,
event id, execution ARN); the envelope's ``trace_id`` is what stitches them.
Every component that touches a step records a ``Hop``; ``timeline`` lays a
trace's hops out in time order; ``fleetlab.display`` shows them as a table or a waterfall.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from fleetlab.core.filled import Filled


@dataclass(frozen=True)
class Hop:
    """One component touching one trace at one moment."""

    trace_id: str
    name: str
    at: float
    component: str
    attrs: dict[str, Any] = field(default_factory=dict)


class Tracer:
    """Thread-safe recorder of hops, queryable by trace."""

    def __init__(self) -> None:
        self._hops: dict[str, list[Hop]] = {}  # by trace, in recording order; traces in first-seen order
        self._lock = threading.Lock()

    def record(self, trace_id: str, name: str, *, at: float, component: str, **attrs: Any) -> Hop:
        """Record that ``component`` did ``name`` for ``trace_id`` at time ``at``."""
        hop = Hop(trace_id=trace_id, name=name, at=at, component=component, attrs=attrs)
        with self._lock:
            self._hops.setdefault(trace_id, []).append(hop)
        return hop

    def timeline(self, trace_id: str) -> Filled[Hop]:
        """The trace's hops in time order (ties keep recording order); empty for a trace not seen (yet)."""
        with self._lock:
            hops = list(self._hops.get(trace_id, ()))
        return Filled(sorted(hops, key=lambda h: h.at), what=f"the hops of trace {trace_id!r}")

    def trace_ids(self) -> list[str]:
        """Every trace seen, in first-seen order."""
        with self._lock:
            return list(self._hops)
