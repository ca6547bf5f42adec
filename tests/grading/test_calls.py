import pytest
from botocore.exceptions import ClientError

from fleetlab.backends.backend import open_backend
from fleetlab.composition.topology import experiment_queue, new_prefix
from fleetlab.course.grading.calls import CallLog


@pytest.fixture
def backend():
    opened = open_backend("moto")
    yield opened
    opened.close()


def test_calls_are_recorded_with_time_tag_and_error_and_then_made_inert(backend):
    phase = ["before"]
    with experiment_queue(backend, new_prefix("98"), visibility_timeout=60) as queue:
        sqs = backend.client("sqs")
        log = CallLog(sqs, backend.clock, tag=lambda: phase[0])
        learner = log.client
        learner.send_message(QueueUrl=queue.url, MessageBody="hello")
        phase[0] = "during"
        handle = learner.receive_message(QueueUrl=queue.url)["Messages"][0]["ReceiptHandle"]
        learner.change_message_visibility(QueueUrl=queue.url, ReceiptHandle=handle, VisibilityTimeout=120)
        with pytest.raises(ClientError):
            learner.change_message_visibility(QueueUrl=queue.url + "-missing", ReceiptHandle=handle, VisibilityTimeout=1)
        assert learner.meta.region_name == sqs.meta.region_name  # what is not an API call passes through
        log.close()
        assert learner.delete_message(QueueUrl=queue.url, ReceiptHandle=handle) == {}
    assert [(call.operation, call.tag) for call in log.calls] == [
        ("send_message", "before"),
        ("receive_message", "during"),
        ("change_message_visibility", "during"),
        ("change_message_visibility", "during"),
    ]
    extended, failed = log.of("change_message_visibility")
    assert extended.ok and extended.params["VisibilityTimeout"] == 120
    assert not failed.ok and "NonExistentQueue" in failed.error and failed.message == "The specified queue does not exist."
