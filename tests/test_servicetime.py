"""Service time on a scaled clock: the conversions every client of a real-clock backend makes.

The hooks are checked two ways: by emitting botocore's own events on a
client (no network), and end to end on the ``localstack`` code path pointed
at a moto server, reading what the service really holds through a client
that converts nothing (``Backend.at_service_time``).
"""

from __future__ import annotations

import datetime as dt

import boto3
import botocore.config
import botocore.exceptions
import pytest

from fleetlab.backends import servicetime
from fleetlab.composition.topology import experiment_queue, new_prefix
from fleetlab.core.timescale import ScaledClock
from fleetlab.core.waits import WaitMeter


def client(service: str, clock: ScaledClock):
    made = boto3.client(service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return servicetime.install(made, clock)


def sent(client_, operation: str, **params):
    """The parameters ``operation`` would send, after the hooks ran (nothing is sent)."""
    service = client_.meta.service_model.service_id.hyphenize()
    model = client_.meta.service_model.operation_model(operation)
    client_.meta.events.emit(f"before-parameter-build.{service}.{operation}", params=params, model=model, context={})
    return params


def answered(client_, operation: str, parsed: dict):
    """``parsed`` as the caller gets it from ``operation``, after the hooks ran."""
    service = client_.meta.service_model.service_id.hyphenize()
    client_.meta.events.emit(f"after-call.{service}.{operation}", http_response=None, parsed=parsed, model=None,
                             context={})
    return parsed


def test_sqs_durations_go_out_in_whole_service_seconds_and_come_back_in_lab_seconds():
    sqs = client("sqs", ScaledClock(60))
    attributes = {"VisibilityTimeout": "900", "MessageRetentionPeriod": "345600", "DelaySeconds": "30",
                  "ReceiveMessageWaitTimeSeconds": "20", "Policy": "{}"}
    out = sent(sqs, "CreateQueue", QueueName="q", Attributes=attributes)
    assert out["Attributes"] == {"VisibilityTimeout": "15", "MessageRetentionPeriod": "5760", "DelaySeconds": "1",
                                 "ReceiveMessageWaitTimeSeconds": "1", "Policy": "{}"}
    assert attributes["VisibilityTimeout"] == "900"  # the caller's dict is never changed
    assert sent(sqs, "ReceiveMessage", QueueUrl="u", WaitTimeSeconds=20, VisibilityTimeout=30) == {
        "QueueUrl": "u", "WaitTimeSeconds": 1, "VisibilityTimeout": 1}
    batch = sent(sqs, "ChangeMessageVisibilityBatch", QueueUrl="u",
                 Entries=[{"Id": "a", "ReceiptHandle": "h", "VisibilityTimeout": 300}])
    assert batch["Entries"] == [{"Id": "a", "ReceiptHandle": "h", "VisibilityTimeout": 5}]
    back = answered(sqs, "GetQueueAttributes", {"Attributes": {"VisibilityTimeout": "15", "QueueArn": "arn"}})
    assert back == {"Attributes": {"VisibilityTimeout": "900", "QueueArn": "arn"}}


def test_a_value_the_service_refuses_is_sent_as_given_so_the_service_says_so():
    sqs = client("sqs", ScaledClock(60))
    assert sent(sqs, "ReceiveMessage", QueueUrl="u", WaitTimeSeconds=21)["WaitTimeSeconds"] == 21
    assert sent(sqs, "ChangeMessageVisibility", QueueUrl="u", ReceiptHandle="h", VisibilityTimeout=50_000)[
        "VisibilityTimeout"] == 50_000
    assert sent(sqs, "SendMessage", QueueUrl="u", MessageBody="b", DelaySeconds=-1)["DelaySeconds"] == -1
    assert sent(sqs, "SendMessage", QueueUrl="u", MessageBody="b", DelaySeconds=True)["DelaySeconds"] is True
    assert servicetime.to_service("MessageRetentionPeriod", "120", 60) == "60"  # at least the service's minimum


def test_timestamps_are_mapped_to_lab_time_both_ways():
    clock = ScaledClock(60)
    sqs, events = client("sqs", clock), client("events", clock)
    real_now = clock.service_time(clock.now())
    message = {"Messages": [{"Attributes": {"SentTimestamp": str(int(real_now * 1000))}}]}
    lab_sent = int(answered(sqs, "ReceiveMessage", message)["Messages"][0]["Attributes"]["SentTimestamp"]) / 1000
    assert lab_sent == pytest.approx(clock.now(), abs=1)
    lab_start = dt.datetime.fromtimestamp(clock.now() - 3_600, tz=dt.timezone.utc)
    window = sent(events, "StartReplay", ReplayName="r", EventSourceArn="a", EventStartTime=lab_start,
                  EventEndTime=clock.now(), Destination={"Arn": "b"})
    assert window["EventStartTime"].timestamp() == pytest.approx(real_now - 60, abs=1)  # a lab hour: a real minute
    assert window["EventEndTime"] == pytest.approx(real_now, abs=1)


def test_every_call_is_a_wait_on_the_clocks_meter_until_it_ends_even_in_an_error():
    clock = ScaledClock(60)
    clock.meter = WaitMeter()
    clock.meter.join()
    nowhere = boto3.client("sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x",
                           endpoint_url="http://127.0.0.1:9",
                           config=botocore.config.Config(retries={"total_max_attempts": 1}, connect_timeout=0.5))
    servicetime.install(nowhere, clock)
    seen = []
    nowhere.meta.events.register("before-send", lambda **_: seen.append(clock.meter.all_waiting))
    with pytest.raises(botocore.exceptions.EndpointConnectionError):
        nowhere.list_queues()
    assert seen == [True] and not clock.meter.all_waiting


def test_on_the_real_clock_path_a_queue_keeps_whole_service_seconds_and_reads_back_lab_time(real_clock_backend):
    backend = real_clock_backend
    assert backend.clock.scale == 60 and backend.receive_wait == 20
    raw = backend.at_service_time().client("sqs")
    with experiment_queue(backend, new_prefix("st"), visibility_timeout=900) as queue:
        held = raw.get_queue_attributes(QueueUrl=queue.url, AttributeNames=["VisibilityTimeout"])["Attributes"]
        assert (queue.visibility_timeout, held["VisibilityTimeout"]) == (900, "15")
    with experiment_queue(backend, new_prefix("st"), visibility_timeout=30) as queue:
        assert queue.visibility_timeout == 60  # 30 lab seconds is half a service second: kept as one
    assert backend.at_service_time().clock.scale == 1
