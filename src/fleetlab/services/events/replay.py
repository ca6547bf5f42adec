"""EventBridge archives and replays, and rule patterns that tell a replay from the original.

An archive keeps the events of a bus that match its pattern (every event
without one), for ``RetentionDays`` (0: forever). To feed it, EventBridge
adds a managed rule to the bus whose pattern excludes replays, so a replay
is never archived again. A replay sends the archived events whose time falls
in its window back to a bus, where every rule matches them exactly as it
matched the originals (only the rules in ``FilterArns``, if given). Each
replayed event carries a top-level ``replay-name``: the one field a rule can
use to tell it from the original.

AWS replays in one-minute slices of event time, not in the original order,
and archiving lags ingestion a little: AWS advises waiting about 10 minutes
before replaying recent events. What an emulator does instead (the window,
FilterArns, the replayed event's id) is measured by the fidelity probe, not
assumed here.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetlab.core.clock import Clock
from fleetlab.core.errors import InvalidInput, ReplayFailed

REPLAY_NAME = "replay-name"
NOT_A_REPLAY = {REPLAY_NAME: [{"exists": False}]}
ONLY_REPLAYS = {REPLAY_NAME: [{"exists": True}]}
ARCHIVE_LAG_SECONDS = 600  # AWS's advice: replay events at least this old
REPLAY_SLICE_SECONDS = 60  # AWS replays one minute of event time after another
_FINISHED = {"COMPLETED", "CANCELLED", "FAILED"}


def as_pattern(pattern: Mapping[str, Any] | str) -> dict[str, Any]:
    """A pattern as EventBridge reads it, from a dict or its JSON text: a dict is read back from its JSON, so a
    tuple is the array it becomes on the wire. Raises InvalidInput naming ``pattern``."""
    if isinstance(pattern, Mapping):
        try:
            pattern = json.dumps(dict(pattern))
        except (TypeError, ValueError) as exc:
            raise InvalidInput("pattern", f"cannot be written as JSON ({exc})") from None
    if isinstance(pattern, str):
        try:
            pattern = json.loads(pattern)
        except json.JSONDecodeError as exc:
            raise InvalidInput("pattern", f"is not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(pattern, Mapping):
        raise InvalidInput("pattern", f"must be a JSON object (a dict), got {type(pattern).__name__}")
    return dict(pattern)


_STRING_FILTERS = ("prefix", "suffix", "equals-ignore-case", "wildcard", "cidr")
_FILTERS = (*_STRING_FILTERS, "exists", "numeric", "anything-but")


def pattern_problems(pattern: Mapping[str, Any], path: str = "") -> list[str]:
    """What AWS would refuse in ``pattern``'s syntax, in its words; empty when it is well formed.

    Covers the rules a hand-written pattern breaks: every value to match is a
    non-empty list (or a nested object), a content filter is one known
    operator, ``exists`` takes a boolean, the text filters take a string.
    Some emulators accept what AWS refuses: the fidelity table says which.
    """
    problems: list[str] = []
    for key, value in pattern.items():
        field = f"{path}.{key}" if path else str(key)
        if key == "$or" and isinstance(value, list):
            problems += [p for option in value for p in _option_problems(option, path)]
        elif isinstance(value, Mapping):
            problems += pattern_problems(value, field)
        elif not isinstance(value, list):
            problems.append(f"'{field}' must be an object or an array")
        elif not value:
            problems.append(f"'{field}': empty arrays are not allowed")
        else:
            problems += [p for item in value if isinstance(item, Mapping) for p in _filter_problems(field, item)]
    return problems


def _option_problems(option: Any, path: str) -> list[str]:
    if not isinstance(option, Mapping):
        return [f"each option of '$or' must be an object, got {json.dumps(option)}"]
    return pattern_problems(option, path)


def _filter_problems(field: str, condition: Mapping[str, Any]) -> list[str]:
    if len(condition) != 1:
        return [f"'{field}': only one key allowed in match expression, got {sorted(condition)}"]
    (operator, value), = condition.items()
    if operator not in _FILTERS:
        return [f"'{field}': unrecognized match type {operator}"]
    if operator == "exists" and not isinstance(value, bool):
        return [f"'{field}': exists match pattern must be either true or false"]
    if operator in _STRING_FILTERS and not isinstance(value, (str, Mapping)):
        return [f"'{field}': {operator} match pattern must be a string"]
    if operator == "numeric" and not isinstance(value, list):
        return [f"'{field}': value of numeric must be an array"]
    return []


def excluding_replays(pattern: Mapping[str, Any] | str) -> dict[str, Any]:
    """``pattern`` that matches originals only: ``replay-name`` must not exist."""
    return _with_replay_name(pattern, NOT_A_REPLAY)


def only_replays(pattern: Mapping[str, Any] | str) -> dict[str, Any]:
    """``pattern`` that matches replays only: ``replay-name`` must exist."""
    return _with_replay_name(pattern, ONLY_REPLAYS)


def _with_replay_name(pattern: Mapping[str, Any] | str, condition: dict[str, Any]) -> dict[str, Any]:
    chosen = as_pattern(pattern)
    if REPLAY_NAME in chosen and chosen[REPLAY_NAME] != condition[REPLAY_NAME]:
        raise InvalidInput("pattern", f"already says {REPLAY_NAME}: {chosen[REPLAY_NAME]}", hint="pick one condition")
    return {**chosen, **condition}


def is_replay(event: Mapping[str, Any]) -> bool:
    """True for an event a replay delivered (it has a top-level ``replay-name``)."""
    return REPLAY_NAME in event


@dataclass(frozen=True)
class Archive:
    """An archive of one bus's events (made with ``aws.resources.Resources.archive``)."""

    name: str
    arn: str
    bus_arn: str
    pattern: dict[str, Any] | None
    retention_days: int


@dataclass(frozen=True)
class Replay:
    """A replay as DescribeReplay reports it."""

    name: str
    state: str
    reason: str
    window: tuple[float, float]

    @classmethod
    def described(cls, description: Mapping[str, Any]) -> Replay:
        return cls(
            name=description["ReplayName"],
            state=description["State"],
            reason=description.get("StateReason", ""),
            window=(description["EventStartTime"].timestamp(), description["EventEndTime"].timestamp()),
        )


def start_replay(
    events: Any,
    archive: Archive,
    name: str,
    *,
    start: float,
    end: float,
    destination_bus_arn: str | None = None,
    filter_arns: Sequence[str] = (),
) -> None:
    """Start replaying the archived events whose time is in [``start``, ``end``) (epoch seconds).

    They go to ``destination_bus_arn`` (the archive's own bus by default),
    to every matching rule, or only to ``filter_arns``.
    """
    if not start < end:
        raise InvalidInput("start", f"the window must start before it ends ({_iso(start)} is not before {_iso(end)})")
    destination: dict[str, Any] = {"Arn": destination_bus_arn or archive.bus_arn}
    if filter_arns:
        destination["FilterArns"] = list(filter_arns)
    events.start_replay(
        ReplayName=name,
        EventSourceArn=archive.arn,
        EventStartTime=_utc(start),
        EventEndTime=_utc(end),
        Destination=destination,
    )


def wait_for_replay(events: Any, name: str, clock: Clock, *, timeout: float = 60.0, interval: float = 0.2) -> Replay:
    """Wait, through ``clock``, until the replay ends; return it.

    Raises ReplayFailed when it ended FAILED or CANCELLED, and Timeout (the
    replay may still be running: DescribeReplay shows its progress) after
    ``timeout`` seconds of real time.
    """

    def finished() -> Replay | None:
        described = Replay.described(events.describe_replay(ReplayName=name))
        return described if described.state in _FINISHED else None

    replay = clock.wait_until(finished, timeout=timeout, what=f"replay {name}", interval=interval)
    if replay.state != "COMPLETED":
        raise ReplayFailed(name, replay.state, replay.reason)
    return replay


def replay(
    events: Any,
    archive: Archive,
    name: str,
    clock: Clock,
    *,
    start: float,
    end: float,
    filter_arns: Sequence[str] = (),
    timeout: float = 60.0,
) -> Replay:
    """Start a replay onto the archive's bus and wait until it has finished (see ``start_replay``)."""
    start_replay(events, archive, name, start=start, end=end, filter_arns=filter_arns)
    return wait_for_replay(events, name, clock, timeout=timeout)


def _utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)


def _iso(seconds: float) -> str:
    return _utc(seconds).isoformat(timespec="seconds")
