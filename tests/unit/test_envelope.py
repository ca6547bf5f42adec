import json

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


def test_a_received_detail_is_validated_once_and_yields_the_envelope_built_from_it(monkeypatch):
    from fleetlab.services.events import envelope

    full = Envelope("t-1", "c-1", 3, "researcher", payload_ref={"type": "s3", "bucket": "bkt", "key": "k"},
                    model_policy="cheap", ttl_seconds=60, task_token="tok")
    checked = []
    monkeypatch.setattr(envelope, "validate_detail", lambda detail, **_: checked.append(detail))
    received = Envelope.from_detail(full.detail())
    assert checked == [full.detail()]
    assert received == full and received.detail() == full.detail() and received.extra == {}
    bare = {**FIELDS, "schema_version": 1}
    assert Envelope.from_detail({**bare, "payload": None}).detail() == bare


FIELDS = {"trace_id": "conv-8842-step-7", "conversation_id": "8842", "step": 7, "agent_class": "researcher"}


@pytest.mark.parametrize(
    ("change", "field", "allowed"),
    [
        ({"step": "one"}, "step", "must be an integer, got 'one'"),
        ({"step": -1}, "step", "must be at least 0, got -1"),
        ({"step": True}, "step", "must be an integer, got True"),
        ({"agent_class": "Research Team"}, "agent_class", "must match ^[a-z][a-z0-9-]{0,39}$"),
        ({"trace_id": ""}, "trace_id", "must not be empty"),
        ({"trace_id": "conv 1"}, "trace_id", "must match ^[A-Za-z0-9._:-]+$"),
        ({"conversation_id": 8842}, "conversation_id", "must be a string, got 8842"),
        ({"ttl_seconds": 0}, "ttl_seconds", "must be at least 1, got 0"),
        ({"ttl_seconds": 10**9}, "ttl_seconds", "must be at most 31536000"),
        ({"model_policy": 3}, "model_policy", "must be a string, got 3"),
        ({"task_token": ""}, "task_token", "must not be empty"),
        ({"payload": {1, 2}}, "payload", "must be one of: object, array, string, number, boolean, null"),
        ({"payload": {"q": 1}, "payload_ref": {"type": "s3", "bucket": "bkt", "key": "k"}}, "payload",
         "give either payload or payload_ref, not both"),
        ({"payload_ref": {"type": "ftp", "bucket": "bkt", "key": "k"}}, "payload_ref.type", "must be 's3', got 'ftp'"),
    ],
)
def test_a_bad_envelope_is_refused_when_built_naming_its_field(change, field, allowed):
    with pytest.raises(EnvelopeError) as raised:
        Envelope(**{**FIELDS, **change})
    assert raised.value.field == field
    assert f"{field}: {allowed}" in str(raised.value)
    assert "nothing was published" in str(raised.value)


def test_every_bad_field_of_one_envelope_is_named_in_one_error():
    with pytest.raises(EnvelopeError) as raised:
        Envelope(trace_id="", conversation_id="8842", step="one", agent_class="Wizard")
    message = str(raised.value)
    assert raised.value.field == "trace_id"
    for named in ("trace_id: must not be empty", "step: must be an integer, got 'one'",
                  "agent_class: must match ^[a-z][a-z0-9-]{0,39}$, got 'Wizard'"):
        assert named in message


def test_a_bad_received_detail_names_its_field_under_detail():
    with pytest.raises(EnvelopeError) as raised:
        Envelope.from_detail({**STEP.detail(), "step": -1, "schema_version": 2})
    assert raised.value.field == "detail.schema_version"
    assert "detail.step: must be at least 0, got -1" in str(raised.value)
    assert "does not follow envelope v1" in str(raised.value)


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
