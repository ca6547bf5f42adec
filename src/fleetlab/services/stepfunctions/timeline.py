"""One execution's story: its history events and the worker's callbacks, on one time axis.

Tokens are long random strings; the timeline names them ``token 1``,
``token 2``... in the order the worker first used them, so a retry's fresh
token is told apart from the stale one at a glance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fleetlab.services.stepfunctions.executions import HistoryRow
from fleetlab.services.stepfunctions.worker import Call

STEP_FUNCTIONS = "Step Functions"
HEARTBEAT = "SendTaskHeartbeat"
HISTORY_RESOLUTION = 0.001


@dataclass(frozen=True)
class Entry:
    """One line of a timeline: seconds since the execution started, who, what, and the detail."""

    at: float
    who: str
    event: str
    detail: str = ""
    ok: bool = True


def timeline(history: Sequence[HistoryRow], calls: Sequence[Call] = (), *, heartbeats: bool = True) -> list[Entry]:
    """History events and worker calls merged in time order (``heartbeats=False`` leaves beats out)."""
    if not history:
        return []
    start = history[0].at
    labels = token_labels(calls)
    entries = _history_entries(history, start)
    entries += [
        Entry(call.at - start, call.worker, call.call, _call_detail(call, labels), call.accepted)
        for call in calls
        if heartbeats or call.call != HEARTBEAT
    ]
    return sorted(entries, key=_order)


def _order(entry: Entry) -> float:
    """History timestamps are cut to the millisecond: an event stamped t happened in [t, t + 1 ms),
    so it sorts after a call sent within that millisecond (the call that caused it)."""
    return entry.at + (HISTORY_RESOLUTION if entry.who == STEP_FUNCTIONS else 0.0)


def token_labels(calls: Sequence[Call]) -> dict[str, str]:
    """``token 1``, ``token 2``... for each token, in the order the calls first used it."""
    labels: dict[str, str] = {}
    for call in calls:
        labels.setdefault(call.token, f"token {len(labels) + 1}")
    return labels


def rows(entries: Sequence[Entry]) -> list[dict[str, str]]:
    """Table rows: ``+1.02 s``, who, event, detail."""
    return [{"at": f"+{e.at:.2f} s", "who": e.who, "event": e.event, "detail": e.detail} for e in entries]


def _history_entries(history: Sequence[HistoryRow], start: float) -> list[Entry]:
    attempts: dict[str, int] = {}
    state = ""
    entries = []
    for row in history:
        detail = row.detail
        if row.type.endswith("StateEntered"):
            state = row.detail
        if row.type == "TaskScheduled":
            attempts[state] = attempts.get(state, 0) + 1
            detail = f"{state}, attempt {attempts[state]}"
        ok = not row.type.endswith(("Failed", "TimedOut", "Aborted"))
        entries.append(Entry(row.at - start, STEP_FUNCTIONS, row.type, detail, ok))
    return entries


def _call_detail(call: Call, labels: dict[str, str]) -> str:
    outcome = "accepted" if call.accepted else f"refused: {call.error_code}"
    return f"{labels[call.token]}, {outcome}"
