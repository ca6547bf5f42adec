import json
from dataclasses import replace

import pytest

from fleetlab.core.errors import EnvelopeError
from fleetlab.services.events.envelope import (
    PUT_EVENTS_REQUEST_LIMIT,
    REQUESTED,
    Envelope,
    batches,
    entry_size,
    validate_detail,
)

STEP = Envelope("conv-8842-step-7", "8842", 7, "researcher", payload={"q": "why"})


def test_detail_round_trips_through_the_wire_format():
    entry = STEP.entry("bus")
    assert entry["DetailType"] == REQUESTED == "agent.step.requested.v1"
    assert Envelope.from_detail(json.loads(entry["Detail"])) == STEP


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"step": -1}, "detail.step"),
        ({"agent_class": "Research Team"}, "detail.agent_class"),
        ({"trace_id": ""}, "detail.trace_id"),
        ({"payload_ref": {"type": "s3", "bucket": "b", "key": "k"}}, "detail.payload"),
        ({"payload_ref": {"type": "ftp", "bucket": "bkt", "key": "k"}, "payload": None}, "detail.payload_ref.type"),
    ],
)
def test_a_bad_envelope_names_its_field(change, field):
    with pytest.raises(EnvelopeError) as raised:
        replace(STEP, **change).detail()
    assert raised.value.field == field
    assert "nothing was published" in str(raised.value)


def test_missing_and_unknown_fields_are_named():
    with pytest.raises(EnvelopeError) as missing:
        validate_detail({"schema_version": 1, "trace_id": "t", "step": 1, "agent_class": "coder"})
    assert missing.value.field == "detail.conversation_id"
    with pytest.raises(EnvelopeError) as unknown:
        validate_detail({**STEP.detail(), "priority": "high"})
    assert unknown.value.field == "detail.priority"


def test_entry_size_follows_the_putevents_arithmetic():
    entry = {"Source": "ab", "DetailType": "cd", "Detail": '{"é":1}', "Resources": ["r1", "r22"]}
    assert entry_size(entry) == 2 + 2 + len('{"é":1}'.encode()) + 2 + 3
    assert entry_size({**entry, "Time": "2026-11-30T00:00:00Z"}) == entry_size(entry) + 14


def test_batches_respect_entry_count_and_request_size():
    small = {"Source": "s", "DetailType": "d", "Detail": "{}"}
    assert [len(b) for b in batches([small] * 23)] == [10, 10, 3]
    half = {"Source": "s", "DetailType": "d", "Detail": "x" * (PUT_EVENTS_REQUEST_LIMIT // 2)}
    assert [len(b) for b in batches([half, half, half])] == [1, 1, 1]


def test_an_entry_over_the_limit_is_refused_with_its_index():
    huge = {"Source": "s", "DetailType": "d", "Detail": "x" * PUT_EVENTS_REQUEST_LIMIT}
    with pytest.raises(EnvelopeError) as raised:
        batches([{"Source": "s", "DetailType": "d", "Detail": "{}"}, huge])
    assert raised.value.field == "entries[1]"
    assert "ClaimCheck" in str(raised.value)
