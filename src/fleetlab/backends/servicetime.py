"""Service time on a scaled clock: what a real-clock backend's boto3 clients convert, in one place.

On LocalStack and AWS lab time runs ``clock.scale`` times faster than the
services' own time (``fleetlab.core.timescale``). ``install(client, clock)``
registers botocore event hooks on every client the backend hands out, so
code using it (the learner's included) speaks lab time only:

* the SQS durations the service enforces (``DURATIONS``) are divided by the
  scale on the way out, rounded up to a whole second and at least the
  service's minimum, and multiplied back in GetQueueAttributes' answer. The
  answer is what the queue really has: a 30 s timeout is 1 s of service
  time, which reads back as 60 lab seconds. A value the service refuses
  (negative, beyond its maximum) is sent as given, so the service refuses
  it with its own error;
* the epoch timestamps SQS and EventBridge return are mapped to lab time,
  and the ones EventBridge is given (a replay's window, an entry's Time) to
  service time;
* with the clock's wait meter attached, each call counts as a wait.

Step Functions is not converted: its timers run in real time on every
backend.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from fleetlab.core.timescale import ScaledClock, service_seconds

DURATIONS: dict[str, tuple[int, int]] = {
    "VisibilityTimeout": (0, 43_200),
    "DelaySeconds": (0, 900),
    "WaitTimeSeconds": (0, 20),
    "ReceiveMessageWaitTimeSeconds": (0, 20),
    "MessageRetentionPeriod": (60, 1_209_600),
}
"""The SQS durations converted, with the range the service accepts (in seconds)."""

QUEUE_TIMESTAMPS = ("CreatedTimestamp", "LastModifiedTimestamp")  # epoch seconds
MESSAGE_TIMESTAMPS = ("SentTimestamp", "ApproximateFirstReceiveTimestamp")  # epoch milliseconds
REPLAY_TIMES = ("EventStartTime", "EventEndTime", "EventLastReplayedTime", "ReplayStartTime", "ReplayEndTime")


def install(client: Any, clock: ScaledClock) -> Any:
    """Register the conversions (and the wait meter's hooks) on ``client``; returns it."""
    events = client.meta.events
    service = client.meta.service_model.service_id.hyphenize()
    if service == "sqs":
        _install_sqs(events, clock)
    elif service == "eventbridge":
        _install_eventbridge(events, clock)
    events.register("before-call", lambda **_: _meter_enter(clock))
    events.register("after-call", lambda **_: _meter_exit(clock))
    events.register("after-call-error", lambda **_: _meter_exit(clock))
    return client


def to_service(name: str, lab_seconds: Any, scale: int) -> Any:
    """The service-time value of duration ``name`` given in lab seconds (unchanged when the service refuses it)."""
    if isinstance(lab_seconds, bool):
        return lab_seconds
    try:
        seconds = float(lab_seconds)
    except (TypeError, ValueError):
        return lab_seconds
    low, high = DURATIONS[name]
    if not low <= seconds <= high:
        return lab_seconds
    converted = max(low, service_seconds(seconds, scale))
    return type(lab_seconds)(converted) if isinstance(lab_seconds, (str, float)) else converted


# --------------------------------------------------------------------------- SQS


def _install_sqs(events: Any, clock: ScaledClock) -> None:
    scale = clock.scale

    def attributes(params: dict[str, Any], **_: Any) -> None:
        if isinstance(params.get("Attributes"), dict):
            params["Attributes"] = _durations_out(params["Attributes"], scale)

    def top_level(params: dict[str, Any], **_: Any) -> None:
        params.update(_durations_out({k: v for k, v in params.items() if k in DURATIONS}, scale))

    def entries(params: dict[str, Any], **_: Any) -> None:
        if isinstance(params.get("Entries"), list):
            params["Entries"] = [_durations_out(e, scale) if isinstance(e, dict) else e for e in params["Entries"]]

    def queue_attributes(parsed: dict[str, Any], **_: Any) -> None:
        if "Attributes" in parsed:
            parsed["Attributes"] = _queue_attributes_in(parsed["Attributes"], clock)

    def received(parsed: dict[str, Any], **_: Any) -> None:
        for message in parsed.get("Messages", []):
            if "Attributes" in message:
                message["Attributes"] = _message_attributes_in(message["Attributes"], clock)

    for operation in ("CreateQueue", "SetQueueAttributes"):
        events.register(f"before-parameter-build.sqs.{operation}", attributes)
    for operation in ("ReceiveMessage", "ChangeMessageVisibility", "SendMessage"):
        events.register(f"before-parameter-build.sqs.{operation}", top_level)
    for operation in ("ChangeMessageVisibilityBatch", "SendMessageBatch"):
        events.register(f"before-parameter-build.sqs.{operation}", entries)
    events.register("after-call.sqs.GetQueueAttributes", queue_attributes)
    events.register("after-call.sqs.ReceiveMessage", received)


def _durations_out(values: dict[str, Any], scale: int) -> dict[str, Any]:
    """A copy of ``values`` (the caller's dict is never changed) with every duration in service time."""
    return {name: to_service(name, value, scale) if name in DURATIONS else value for name, value in values.items()}


def _queue_attributes_in(attributes: dict[str, str], clock: ScaledClock) -> dict[str, str]:
    converted = dict(attributes)
    for name, value in attributes.items():
        if name in DURATIONS and value.isdigit():
            converted[name] = str(int(value) * clock.scale)
        elif name in QUEUE_TIMESTAMPS and value.isdigit():
            converted[name] = str(int(clock.lab_time(int(value))))
    return converted


def _message_attributes_in(attributes: dict[str, str], clock: ScaledClock) -> dict[str, str]:
    converted = dict(attributes)
    for name in MESSAGE_TIMESTAMPS:
        if attributes.get(name, "").isdigit():
            converted[name] = str(int(clock.lab_time(int(attributes[name]) / 1000) * 1000))
    return converted


# --------------------------------------------------------------------------- EventBridge


def _install_eventbridge(events: Any, clock: ScaledClock) -> None:
    def window(params: dict[str, Any], **_: Any) -> None:
        params.update({name: _instant(params[name], clock.service_time) for name in REPLAY_TIMES if name in params})

    def entry_times(params: dict[str, Any], **_: Any) -> None:
        if isinstance(params.get("Entries"), list):
            params["Entries"] = [
                {**entry, "Time": _instant(entry["Time"], clock.service_time)}
                if isinstance(entry, dict) and "Time" in entry else entry
                for entry in params["Entries"]
            ]

    def replay_in(parsed: dict[str, Any], **_: Any) -> None:
        parsed.update({name: _instant(parsed[name], clock.lab_time) for name in REPLAY_TIMES if name in parsed})

    events.register("before-parameter-build.eventbridge.StartReplay", window)
    events.register("before-parameter-build.eventbridge.PutEvents", entry_times)
    for operation in ("StartReplay", "DescribeReplay"):
        events.register(f"after-call.eventbridge.{operation}", replay_in)


def _instant(value: Any, convert: Callable[[float], float]) -> Any:
    """``value`` (a datetime or epoch seconds) moved through ``convert``, in the same form."""
    if isinstance(value, dt.datetime):
        epoch = value.timestamp() if value.tzinfo else value.replace(tzinfo=dt.timezone.utc).timestamp()
        return dt.datetime.fromtimestamp(convert(epoch), tz=dt.timezone.utc)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return convert(value)
    return value


# --------------------------------------------------------------------------- the wait meter


def _meter_enter(clock: ScaledClock) -> None:
    if clock.meter is not None:
        clock.meter.enter()


def _meter_exit(clock: ScaledClock) -> None:
    if clock.meter is not None:
        clock.meter.exit()
