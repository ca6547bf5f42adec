"""EventBridge probes: PutEvents entry size, the delivered envelope, when delivery happens, target DLQs,
archive and replay, pattern syntax."""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.backends.fidelity.probes.base import Feature, Observation, Probe, register
from fleetlab.backends.fidelity.probes.scratch import Queue, Scratch
from fleetlab.backends.responses import error_code
from fleetlab.core.errors import MeasurementFailed, Timeout

PROBES: list[Probe] = []
"""This service's probes, in the order their findings appear in a table."""

_probes = partial(register, PROBES)

_OVERSIZED_DETAIL_BYTES = 1_100_000
_ENVELOPE_FIELDS = ("version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail")


@_probes(
    Feature(
        "events.put_events_entry_size",
        "PutEvents with one 1.1 MB entry",
        aws="rejected: a request (and so an entry) must stay under 1 MB",
        workaround="fleetlab.services.events.envelope does the 1 MB arithmetic itself and claim-checks big payloads to S3",
    )
)
def _put_events_entry_size(scratch: Scratch) -> Observation:
    bus, _ = scratch.bus("size")
    try:
        response = scratch.put_event(bus, scratch.name("size"), {"pad": "x" * _OVERSIZED_DETAIL_BYTES})
    except ClientError as exc:
        return Observation(f"rejected the request: {error_code(exc)}", True)
    error = response["Entries"][0].get("ErrorCode")
    if error:
        return Observation(f"rejected the entry: {error}", True)
    return Observation("accepted (an EventId came back): no size check", False)


@_probes(
    Feature(
        "events.delivered_envelope",
        "Top-level fields of an event delivered to an SQS target",
        aws="all of version, id, detail-type, source, account, time, region, resources, detail",
        workaround="consumers read what they need from detail (fleetlab's envelope), never a missing top-level field",
    )
)
def _delivered_envelope(scratch: Scratch) -> Observation:
    bus, _ = scratch.bus("envelope")
    queue = scratch.queue("envelope")
    source = scratch.name("envelope")
    scratch.rule(bus, "envelope", source, [{"Id": "queue", "Arn": queue.arn}])
    scratch.put_event(bus, source, {"probe": "envelope"})
    message = scratch.receive(queue.url, wait=5)
    if message is None:
        return Observation("the event was not delivered within 5 s", False)
    missing = [name for name in _ENVELOPE_FIELDS if name not in json.loads(message["Body"])]
    if missing:
        return Observation(f"missing: {', '.join(missing)}", False)
    return Observation("all nine fields present", True)


@_probes(
    Feature(
        "events.immediate_receive",
        "An SQS receive with WaitTimeSeconds=0 made as soon as PutEvents returns",
        aws="may find nothing yet: EventBridge delivers to its targets asynchronously, after PutEvents returns",
        workaround="never receive once with WaitTimeSeconds=0 right after publishing: long-poll "
        "(fleetlab's workers do) or wait for the delivery; code that passes here can miss events on AWS",
    )
)
def _immediate_receive(scratch: Scratch) -> Observation:
    bus, _ = scratch.bus("immediate")
    queue = scratch.queue("immediate")
    source = scratch.name("immediate")
    scratch.rule(bus, "immediate", source, [{"Id": "queue", "Arn": queue.arn}])
    for trial in range(1, _IMMEDIATE_TRIALS + 1):
        scratch.put_event(bus, source, {"trial": trial})
        published = time.monotonic()
        message = scratch.receive(queue.url, wait=0)
        if message is None:
            message = scratch.receive(queue.url, wait=5)
            if message is None:
                raise Timeout(f"the event of trial {trial} was not delivered within 5 s")
            waited = (time.monotonic() - published) * 1000
            return Observation(
                f"found nothing at trial {trial}: the event arrived {waited:.0f} ms after PutEvents returned", True
            )
        scratch.delete_message(queue.url, message)
    return Observation(
        f"found the event every time ({_IMMEDIATE_TRIALS} of {_IMMEDIATE_TRIALS}): delivered before PutEvents "
        "returned",
        False,
    )


_IMMEDIATE_TRIALS = 30  # LocalStack's delivery beat an immediate receive 6 times in a row once; 30 in a row, never


@_probes(
    Feature(
        "events.target_dead_letter",
        "An event for a rule whose target queue does not exist (the target has a DeadLetterConfig)",
        aws="dead-lettered: PutEvents succeeds and the event lands in the target's DLQ (no retries for a "
        "missing resource)",
        workaround="fleetlab.composition.topology makes every target queue before its rule; the labs show target DLQs "
        "only where this row matches AWS",
    )
)
def _target_dead_letter(scratch: Scratch) -> Observation:
    bus, _ = scratch.bus("target-dlq")
    dlq = scratch.queue("target-dlq")
    source = scratch.name("target-dlq")
    missing_arn = f"arn:aws:sqs:{scratch.backend.region}:{scratch.account}:{scratch.name('missing')}"
    target = {
        "Id": "missing",
        "Arn": missing_arn,
        "RetryPolicy": {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60},
        "DeadLetterConfig": {"Arn": dlq.arn},
    }
    scratch.rule(bus, "target-dlq", source, [target])
    try:
        scratch.put_event(bus, source, {"probe": "target-dlq"})
    except ClientError as exc:
        return Observation(f"rejected: the whole PutEvents failed ({error_code(exc)}), nothing was dead-lettered",
                           False)
    if scratch.receive(dlq.url, wait=5 if scratch.backend.clock.virtual else 10) is None:
        return Observation("dropped: PutEvents succeeded and the DLQ stayed empty", False)
    return Observation("dead-lettered: PutEvents succeeded and the event landed in the target's DLQ", True)


_REPLAY_FEATURES = (
    Feature(
        "events.replay_delivered",
        "Archive + StartReplay delivers an archived event to the bus's rules again",
        aws="delivered again to the targets of matching rules",
        workaround="replays cannot be shown on this backend: run lab 06 on moto or LocalStack",
    ),
    Feature(
        "events.replay_name_field",
        "A replayed event carries a top-level replay-name field",
        aws='yes: "replay-name" is the replay\'s name (archives\' managed rules exclude it)',
        workaround="exclude replays by the envelope's own flag where this field is missing",
    ),
    Feature(
        "events.replay_time_window",
        "A replay whose EventStartTime-EventEndTime window excludes the event",
        aws="not replayed: only events whose time falls in the window are",
        workaround="choose replay windows as on AWS and let idempotency absorb the extra events replayed here",
    ),
    Feature(
        "events.replay_filter_arns",
        "A replay with Destination.FilterArns naming one of two matching rules",
        aws="only the named rule gets the replayed event",
        workaround='keep replays from other rules by pattern: {"replay-name": [{"exists": false}]}',
    ),
)


@dataclass(frozen=True)
class _ReplayBench:
    """A bus with an archive and two rules on the same source, each into its own queue."""

    scratch: Scratch
    bus: str
    bus_arn: str
    archive_arn: str
    source: str
    named: Queue
    unnamed: Queue
    named_rule: str

    @classmethod
    def build(cls, scratch: Scratch) -> _ReplayBench:
        bus, bus_arn = scratch.bus("replay")
        archive_arn = scratch.archive("archive", source_arn=bus_arn)
        source = scratch.name("replay")
        named, unnamed = scratch.queue("replay-named"), scratch.queue("replay-unnamed")
        named_rule = scratch.rule(bus, "replay-named", source, [{"Id": "queue", "Arn": named.arn}])
        scratch.rule(bus, "replay-unnamed", source, [{"Id": "queue", "Arn": unnamed.arn}])
        return cls(scratch, bus, bus_arn, archive_arn, source, named, unnamed, named_rule)

    def replay(self, what: str, start: dt.datetime, end: dt.datetime, **destination: Any) -> str:
        """Start a replay of the archive onto the bus and wait until it ends; its name."""
        events = self.scratch.client("events")
        name = self.scratch.name(what)
        events.start_replay(
            ReplayName=name,
            EventSourceArn=self.archive_arn,
            EventStartTime=start,
            EventEndTime=end,
            Destination={"Arn": self.bus_arn, **destination},
        )
        done = ("COMPLETED", "FAILED", "CANCELLED")
        self.scratch.wait_until(
            lambda: events.describe_replay(ReplayName=name)["State"] in done, seconds=30, what=f"replay {name}"
        )
        return name


@_probes(*_REPLAY_FEATURES)
def _archive_and_replay(scratch: Scratch) -> tuple[Observation, ...]:
    bench = _ReplayBench.build(scratch)
    scratch.put_event(bench.bus, bench.source, {"probe": "replay"})
    original = _take_event(scratch, bench.named.url, wait=5)
    _take_event(scratch, bench.unnamed.url, wait=5)
    if original is None:
        raise MeasurementFailed("the original event was never delivered, so nothing could be replayed")
    event_time = dt.datetime.fromisoformat(original["time"])
    scratch.let_pass(2)
    now = dt.datetime.fromtimestamp(scratch.backend.clock.now(), dt.timezone.utc)

    name = bench.replay("in-window", event_time - dt.timedelta(minutes=1), now, FilterArns=[bench.named_rule])
    replayed = _take_event(scratch, bench.named.url, wait=10)
    reached_unnamed = _take_event(scratch, bench.unnamed.url, wait=scratch.quiet_wait) is not None
    if replayed is None:
        not_measured = Observation("not measured: the replay was not delivered", False)
        return (Observation("not delivered within 10 s", False),) + (not_measured,) * 3

    bench.replay("out-of-window", event_time - dt.timedelta(hours=1), event_time - dt.timedelta(minutes=30))
    replayed_out_of_window = _take_event(scratch, bench.named.url, wait=scratch.quiet_wait) is not None
    return (
        _replay_delivery(original, replayed),
        _replay_name(replayed, name),
        _honoured(not replayed_out_of_window, "the event was not replayed", "the event was replayed anyway"),
        _honoured(not reached_unnamed, "only the named rule got it", "the rule not named got it too"),
    )


def _take_event(scratch: Scratch, url: str, *, wait: int) -> dict[str, Any] | None:
    """Receive and delete one event delivered to ``url``; its parsed body, or None."""
    message = scratch.receive(url, wait=wait)
    if message is None:
        return None
    scratch.delete_message(url, message)
    return json.loads(message["Body"])


def _replay_delivery(original: dict[str, Any], replayed: dict[str, Any]) -> Observation:
    same_id = "the original's id" if replayed.get("id") == original.get("id") else "a new id"
    return Observation(f"delivered again, with {same_id}", True)


def _replay_name(replayed: dict[str, Any], name: str) -> Observation:
    if "replay-name" not in replayed:
        return Observation("no replay-name field", False)
    if replayed["replay-name"] != name:
        return Observation(f"replay-name is {replayed['replay-name']!r}, not the replay's name", False)
    return Observation("replay-name is the replay's name", True)


def _honoured(held: bool, honoured: str, ignored: str) -> Observation:
    return Observation(f"honoured: {honoured}", True) if held else Observation(f"ignored: {ignored}", False)


_MALFORMED_PATTERN = {"source": "fleet.coordinator"}  # a value to match that is not in a list


@_probes(
    Feature(
        "events.invalid_pattern",
        'PutRule with a malformed pattern ({"source": "fleet.coordinator"}: a value not in a list)',
        aws="refused: InvalidEventPatternException",
        workaround="fleetlab judges a pattern's syntax as AWS does (fleetlab.services.events.replay.pattern_problems); "
        "lab 06's pattern check says when this backend took a pattern AWS refuses",
    )
)
def _invalid_pattern(scratch: Scratch) -> Observation:
    bus, _ = scratch.bus("pattern")
    events = scratch.client("events")
    name = scratch.name("malformed")
    try:
        events.put_rule(Name=name, EventBusName=bus, EventPattern=json.dumps(_MALFORMED_PATTERN))
    except ClientError as exc:
        return Observation(f"refused: {error_code(exc)}", True)
    scratch.on_teardown(name, events.delete_rule, Name=name, EventBusName=bus)
    return Observation("accepted: the rule was created", False)
