"""Opening a backend is all or nothing: a step that fails undoes what the earlier steps started."""

import os
import socket

import pytest
from moto.core.models import MockAWS

from fleetlab.backends.backend import open_backend
from fleetlab.core.clock import VirtualClock
from fleetlab.core.errors import ConfigError


@pytest.fixture
def clock_already_running():
    """A virtual clock someone left open: the next backend's clock cannot start."""
    clock = VirtualClock()
    yield
    clock.close()


def test_a_moto_backend_that_cannot_start_its_clock_stops_its_mock(clock_already_running):
    mocks_before = MockAWS._nested_count
    with pytest.raises(ConfigError, match="already running"):
        open_backend("moto")
    assert MockAWS._nested_count == mocks_before


def test_a_moto_server_that_cannot_start_its_clock_stops_the_server_and_restores_moto_port(
    clock_already_running, monkeypatch
):
    monkeypatch.setenv("MOTO_PORT", "5999")
    started = []
    from moto.server import ThreadedMotoServer

    original_start = ThreadedMotoServer.start

    def remember(self):
        original_start(self)
        started.append(self.get_host_and_port())

    monkeypatch.setattr(ThreadedMotoServer, "start", remember)
    with pytest.raises(ConfigError, match="already running"):
        open_backend("moto-server")
    assert os.environ["MOTO_PORT"] == "5999"
    (host, port), = started
    with pytest.raises(OSError):
        socket.create_connection((host, port), timeout=1).close()  # nothing listens there any more


def test_a_backend_closes_everything_it_started_once():
    backend = open_backend("moto-server")
    port = os.environ["MOTO_PORT"]
    backend.close()
    backend.close()
    assert os.environ.get("MOTO_PORT") != port
    VirtualClock().close()  # the backend's clock is gone: a new one may start



def test_in_process_moto_answers_the_fleets_unsigned_requests_as_signed_ones_and_s3_stays_signed():
    sent: dict[str, list[dict]] = {"sqs": [], "dynamodb": [], "s3": []}
    backend = open_backend("moto")
    try:
        clients = {service: backend.client(service) for service in sent}
        for service, client in clients.items():
            client.meta.events.register("before-send", lambda request, _s=service, **_: sent[_s].append(request.headers))
        sqs, dynamodb, s3 = clients["sqs"], clients["dynamodb"], clients["s3"]
        url = sqs.create_queue(QueueName="unsigned")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        table_arn = dynamodb.create_table(TableName="unsigned", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                                          AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                                          BillingMode="PAY_PER_REQUEST")["TableDescription"]["TableArn"]
        s3.create_bucket(Bucket="fleetlab-unsigned")
        s3.put_object(Bucket="fleetlab-unsigned", Key="k", Body=b"v")
        body = s3.get_object(Bucket="fleetlab-unsigned", Key="k")["Body"].read()
        account = backend.account_id
    finally:
        backend.close()
    assert sent["sqs"] and sent["dynamodb"]
    assert not any("Authorization" in headers for service in ("sqs", "dynamodb") for headers in sent[service])
    assert sent["s3"] and all("Authorization" in headers for headers in sent["s3"])
    assert queue_arn == "arn:aws:sqs:us-east-1:123456789012:unsigned"
    assert table_arn == "arn:aws:dynamodb:us-east-1:123456789012:table/unsigned"
    assert account == "123456789012" and body == b"v"
