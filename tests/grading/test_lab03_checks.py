"""What lab 03's checks promise beyond their catalogues: a runaway loop is stopped and explained,
the learner's own bug is reported as theirs, and diagnoses come from what happened."""

import pytest

from fleetlab.course.grading import get_check, run_check
from fleetlab.course.grading.results import CheckStatus


@pytest.fixture(autouse=True)
def moto(monkeypatch):
    monkeypatch.setenv("FLEETLAB_BACKEND", "moto")


def test_a_triage_that_never_finds_the_dlq_empty_is_stopped_and_told_why():
    def until_empty(sqs, url):
        counts = {}
        while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                           VisibilityTimeout=0).get("Messages", []):
            for message in batch:
                code = message.get("MessageAttributes", {}).get("ERROR_CODE", {}).get("StringValue", "UNKNOWN")
                counts[code] = counts.get(code, 0) + 1
        return counts

    result = run_check(get_check("03.triage"), until_empty)
    assert result.status == CheckStatus.FAIL
    assert "VisibilityTimeout=0 shows them again at once" in result.cases[0].diagnosis


def test_a_bug_in_the_batch_handler_is_the_learners_not_a_lost_record():
    def typo(event, process, fifo):
        return {"batchItemFailures": [{"itemIdentifier": record["messageid"]} for record in event["Records"]]}

    result = run_check(get_check("03.batch"), typo)
    assert result.status == CheckStatus.FAIL
    assert result.cases[0].diagnosis.startswith("your code raised KeyError: 'messageid'")


def test_a_redrive_that_never_processes_the_canary_is_told_to():
    def moves_and_forgets(sqs, dlq_url, queue_url, canary_size, process):
        for message in sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=2).get("Messages", []):
            sqs.send_message(QueueUrl=queue_url, MessageBody=message["Body"])
            sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])

    result = run_check(get_check("03.redrive"), moves_and_forgets)
    assert result.cases[0].diagnosis.startswith("you moved 2 steps and never called process()")


def test_the_budget_diagnosis_names_the_receives_that_fell_in_the_outage():
    result = run_check(get_check("03.budget"), lambda *facts: (3, 14 * 86_400))
    first = result.cases[0].diagnosis
    assert first.startswith("3 good steps parked: with maxReceiveCount 3, conv-1-step-1 failed on receives at "
                            "+0 s, +1 min 1 s, +2 min 2 s while the provider was down (4 min)")
