"""The token governor under a burst (lab 07): what the allowance's batch size buys and costs.

``batch_size_sweep`` runs the same seeded burst once per batch size, each on
a fresh queue and counter, for exactly one quota window that opens as the
run starts: ``workers`` workers behind admission control work a burst that
asks for more tokens than the window holds. Each row says how many
conditional writes the counter took and how many of them were conflicts,
and how much of the quota paid for calls (``quota_use``) against how much
sat drawn but unspent when the window closed (``stranded``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from fleetlab.backends.backend import Backend
from fleetlab.composition.admission import Dispatcher, work_bodies
from fleetlab.composition.topology import experiment_queue, experiment_table, new_prefix
from fleetlab.core.clock import library_clock
from fleetlab.core.errors import InvalidInput
from fleetlab.services.state.governor import Quota, TokenGovernor

BATCH_SIZES = (1, 5, 10, 25, 50)


@dataclass(frozen=True)
class BatchSizeRow:
    """One batch size's run: model ``calls`` paid, conditional ``writes`` (and per call), ``conflicts``,
    draws refused as ``exhausted``, tokens ``spent`` and ``stranded``, and both as shares of the quota."""

    batch: int
    calls: int
    writes: int
    writes_per_call: float
    conflicts: int
    exhausted: int
    spent: int
    stranded: int
    quota_use: float
    stranded_share: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def batch_size_sweep(backend: Backend, *, batch_sizes: Sequence[int] = BATCH_SIZES, workers: int = 8,
                     quota: int = 200, window_seconds: float = 600.0, headroom: float = 0.0, messages: int = 160,
                     tokens: tuple[int, int] = (1, 3), seconds: tuple[float, float] = (20.0, 60.0), seed: int = 7,
                     prefix: str | None = None) -> list[BatchSizeRow]:
    """One row per batch size for the same seeded burst of ``messages`` calls, in the order given.

    Raises InvalidInput for an empty ``batch_sizes``, and as Quota,
    Allowance and Dispatcher do for a bad quota, headroom, batch size or
    worker count.
    """
    if not batch_sizes:
        raise InvalidInput("batch_sizes", "must name at least one batch size")
    bodies = work_bodies(messages, seed=seed, tokens=tokens, seconds=seconds)
    settings = Quota("burst", quota, window_seconds, headroom)
    return [_one_window(backend, settings, bodies, batch=batch, workers=workers, call_tokens=tokens[1],
                        prefix=prefix or new_prefix("07gov"))
            for batch in batch_sizes]


def _one_window(backend: Backend, quota: Quota, bodies: list[dict[str, Any]], *, batch: int, workers: int,
                call_tokens: int, prefix: str) -> BatchSizeRow:
    with experiment_table(backend, prefix) as table, \
            experiment_queue(backend, prefix, visibility_timeout=300) as queue:
        governor = TokenGovernor(backend.client("dynamodb"), table, library_clock(backend.clock), quota)
        dispatcher = Dispatcher(backend, queue.url, governor, workers=workers, batch=batch, call_tokens=call_tokens)
        # a run's timeline starts on the next whole second: half a second before the window opens
        backend.clock.sleep(governor.next_window() - 0.5 - backend.clock.now())
        run = dispatcher.run([(0.0, bodies)], max_seconds=quota.window_seconds)
    stats = run.stats
    return BatchSizeRow(
        batch=batch, calls=run.calls, writes=stats.writes, writes_per_call=round(stats.writes / max(run.calls, 1), 3),
        conflicts=stats.conflicts, exhausted=stats.exhausted, spent=run.spent, stranded=run.expired,
        quota_use=round(run.spent / quota.tokens, 3), stranded_share=round(run.expired / quota.tokens, 3),
    )
