"""A closed lab's clients refuse every call, and nothing of an emulated lab ever reaches AWS's endpoints."""

import botocore.config
import botocore.session
import pytest

import fleetlab
from fleetlab.backends.backend import Backend
from fleetlab.core.errors import LabClosed
from fleetlab.core.timescale import ScaledClock

CLOSED = "this lab is closed; run the set-up cell again"


def nothing_is_sent(client):
    """Fail the test from the client's last hook before the network, should a request get that far."""

    def sent(request, **_):
        raise AssertionError(f"a request left for {request.url}")

    client.meta.events.register("before-send", sent)
    return client


@pytest.mark.parametrize("backend", ["moto", "moto-server"])
def test_a_closed_labs_clients_refuse_every_call_and_send_nothing(backend):
    lab = fleetlab.start("01", backend=backend, quiet=True)
    queue_url = lab.topology.queues["researcher"].url
    sqs = lab.backend.client("sqs")
    assert sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    clients = [lab.backend.client(service) for service in ("sqs", "dynamodb", "events", "sts")]
    made_apart = lab.backend.make_client("stepfunctions", botocore.config.Config())
    lab.close()  # its teardown still calls through these clients
    for client in (*clients, made_apart):
        nothing_is_sent(client)
    sqs_calls = [lambda: sqs.receive_message(QueueUrl=queue_url), lambda: sqs.list_queues(),
                 lambda: sqs.send_message(QueueUrl=queue_url, MessageBody="{}")]
    other_calls = [clients[1].list_tables, clients[2].list_event_buses, clients[3].get_caller_identity,
                   made_apart.list_state_machines, lambda: lab.fleet.run()]
    for call in sqs_calls + other_calls:
        with pytest.raises(LabClosed, match=CLOSED):
            call()
    with pytest.raises(LabClosed, match=r"\(no new kinesis client is made\)"):
        lab.backend.client("kinesis")


def test_a_call_is_refused_naming_what_was_not_sent():
    lab = fleetlab.start("01", quiet=True)
    lab.close()
    with pytest.raises(LabClosed) as refused:
        lab.backend.client("sqs").list_queues()
    assert str(refused.value) == f"{CLOSED} (sqs.ListQueues was not sent)"


def test_the_service_time_view_of_a_closed_backend_refuses_too():
    session = botocore.session.get_session()

    def make_client(service, config):
        return session.create_client(service, region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
                                     aws_access_key_id="testing", aws_secret_access_key="testing", config=config)

    backend = Backend(name="localstack", region="us-east-1", clock=ScaledClock(60), make_client=make_client)
    view = backend.at_service_time()
    assert view is not backend
    viewed = view.client("sqs")
    backend.close()
    nothing_is_sent(viewed)
    with pytest.raises(LabClosed, match=CLOSED):
        viewed.list_queues()
