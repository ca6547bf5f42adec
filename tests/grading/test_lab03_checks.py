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


def test_the_budget_diagnosis_says_the_receive_that_parks_a_step_came_after_the_outage():
    result = run_check(get_check("03.budget"), lambda *facts: (4, 14 * 86_400))
    assert result.cases[0].diagnosis.startswith(
        "3 good steps parked: with maxReceiveCount 4, conv-1-step-1 failed on receives at +0 s, +1 min 1 s, "
        "+2 min 2 s, +3 min 3 s while the provider was down (4 min); its next receive, at +4 min 4 s, came after "
        "the outage and would have succeeded, but SQS moved it to the DLQ instead. With a retry every 1 min, up to "
        "4 receives can fall in the outage: allow those and one more")


def test_the_budget_diagnosis_says_when_the_parking_receive_still_fell_in_the_outage():
    result = run_check(get_check("03.budget"), lambda *facts: (3, 14 * 86_400))
    assert "SQS moved it to the DLQ on its next receive, at +3 min 3 s, still in the outage." in \
        result.cases[0].diagnosis


def test_a_redrive_that_moves_its_canary_and_fails_before_process_earns_no_case():
    def canary_then_fails(sqs, dlq_url, queue_url, canary_size, process):
        for message in sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=canary_size).get("Messages", []):
            sqs.send_message(QueueUrl=queue_url, MessageBody=message["Body"])
            sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
        raise KeyError("Body")

    result = run_check(get_check("03.redrive"), canary_then_fails)
    killed = result.cases[2]
    assert killed.name.startswith("the redrive is killed moving the rest")
    assert (killed.status, killed.diagnosis.startswith("your code raised KeyError")) == (CheckStatus.FAIL, True)


def test_the_batch_diagnosis_names_the_event_source_mapping_as_the_lab_does():
    result = run_check(get_check("03.batch"), lambda event, process, fifo: [])
    diagnosis = result.cases[0].diagnosis
    assert "your function returned [], not {'batchItemFailures': [...]}: the event source mapping cannot read it" \
        in diagnosis
    assert "ESM" not in diagnosis


def test_a_triage_that_never_asks_for_attributes_is_told_where_error_code_comes_from():
    def no_attributes(sqs, url):
        held = []
        while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60).get(
                "Messages", []):
            held += batch
        for message in held:
            sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
        counts = {}
        for message in held:
            code = message.get("MessageAttributes", {}).get("ERROR_CODE", {}).get("StringValue", "UNKNOWN")
            counts[code] = counts.get(code, 0) + 1
        return counts

    diagnosis = run_check(get_check("03.triage"), no_attributes).cases[0].diagnosis
    assert "pass MessageAttributeNames=['All'] (ERROR_CODE is one of the message attributes the pipeline set " \
           "when it parked the step)" in diagnosis
    assert "system" not in diagnosis


def test_a_triage_that_reads_message_attributes_every_record_has_is_told_which_records_lack_them():
    def trusts_every_record(sqs, url):
        counts = {}
        while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                           VisibilityTimeout=60).get("Messages", []):
            for message in batch:
                code = message["MessageAttributes"]["ERROR_CODE"]["StringValue"]
                counts[code] = counts.get(code, 0) + 1
        return counts

    diagnosis = run_check(get_check("03.triage"), trusts_every_record).cases[0].diagnosis
    assert diagnosis.startswith("your code raised KeyError: 'MessageAttributes' (in trusts_every_record, line ")
    assert diagnosis.endswith(": a record SQS moved to the DLQ itself (after maxReceiveCount receives) carries no "
                              "message attributes, so it has no MessageAttributes key; count it as UNKNOWN: "
                              "message.get('MessageAttributes', {})")


def test_a_dlq_retention_given_in_minutes_is_told_to_give_seconds():
    diagnosis = run_check(get_check("03.budget"), lambda *facts: (5, 7 * 24 * 60)).cases[0].diagnosis
    assert "On a standard queue like this one, SQS counts its age from when it was first sent" in diagnosis
    assert diagnosis.endswith("keep at least 7 d; read as minutes, 10080 would be right: give seconds "
                              "(10080 minutes = 604,800 s)")
