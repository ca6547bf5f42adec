"""``03.batch``: the hidden batches, the reference response builder and both catalogues.

The hidden cases hold several poison steps in one batch, two conversations
interleaved on one FIFO queue, a failure on the first record, and a batch
where every step fails once.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)

from fleetlab.core.errors import StepFailed
from fleetlab.course.checks.lab03.batch import POISON, Batch, interleaved_steps
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Batch("a standard queue: three poison steps among ten", False, interleaved_steps(10),
          (("conv-1-step-2", POISON), ("conv-1-step-5", POISON), ("conv-1-step-9", POISON))),
    Batch("a FIFO queue: two conversations interleaved, conv-2's step 2 is poison", True, interleaved_steps(5, 2),
          (("conv-2-step-2", POISON),)),
    Batch("a FIFO queue: the first step fails once", True, interleaved_steps(6), (("conv-1-step-1", 1),)),
    Batch("a standard queue: every step fails once", False, interleaved_steps(6),
          tuple((f"conv-1-step-{n}", 1) for n in range(1, 7))),
)


def reference_batch_response(event: dict[str, Any], process: Any, fifo: bool) -> dict[str, Any]:
    """Report each record whose process() raised; on FIFO, stop at the first failure and report the rest too."""
    failures = []
    for record in event["Records"]:
        if fifo and failures:
            failures.append({"itemIdentifier": record["messageId"]})
            continue
        try:
            process(record)
        except Exception:
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def _powertools(event: dict[str, Any], process: Any, fifo: bool) -> Any:
    processor = SqsFifoPartialProcessor() if fifo else BatchProcessor(event_type=EventType.SQS)
    return process_partial_response(event=event, record_handler=lambda record: process(record.raw_event),
                                    processor=processor)


def _skip_group(event: dict[str, Any], process: Any, fifo: bool) -> dict[str, Any]:
    failures, stopped = [], set()
    for record in event["Records"]:
        group = record["attributes"].get("MessageGroupId")
        if fifo and group in stopped:
            failures.append({"itemIdentifier": record["messageId"]})
            continue
        try:
            process(record)
        except StepFailed:
            failures.append({"itemIdentifier": record["messageId"]})
            stopped.add(group)
    return {"batchItemFailures": failures}


def _stop_everywhere(event: dict[str, Any], process: Any, fifo: bool) -> dict[str, Any]:
    records = event["Records"]
    for index, record in enumerate(records):
        try:
            process(record)
        except Exception:
            return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records[index:]]}
    return {"batchItemFailures": []}


def _standard_only(event: dict[str, Any], process: Any, fifo: bool) -> dict[str, Any]:
    return reference_batch_response(event, process, False)


def _every_id(event: dict[str, Any], process: Any, fifo: bool) -> dict[str, Any]:
    for record in event["Records"]:
        try:
            process(record)
        except Exception:
            pass
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}


def _none(event: dict[str, Any], process: Any, fifo: bool) -> dict[str, Any]:
    _every_id(event, process, fifo)
    return {"batchItemFailures": []}


def _stops_but_reports_only_the_failure(event: dict[str, Any], process: Any, fifo: bool) -> dict[str, Any]:
    for record in event["Records"]:
        try:
            process(record)
        except Exception:
            return {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    return {"batchItemFailures": []}


def _raises(event: dict[str, Any], process: Any, fifo: bool) -> None:
    for record in event["Records"]:
        process(record)


def _by_receipt_handle(event: dict[str, Any], process: Any, fifo: bool) -> dict[str, Any]:
    response = reference_batch_response(event, process, fifo)
    handles = {r["messageId"]: r["receiptHandle"] for r in event["Records"]}
    return {"batchItemFailures": [{"itemIdentifier": handles[f["itemIdentifier"]]} for f in response["batchItemFailures"]]}


def _list_of_ids(event: dict[str, Any], process: Any, fifo: bool) -> list[str]:
    return [f["itemIdentifier"] for f in reference_batch_response(event, process, fifo)["batchItemFailures"]]


def _fifo_returns_everything_unrun(event: dict[str, Any], process: Any, fifo: bool) -> dict[str, Any]:
    if fifo:
        return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}
    return reference_batch_response(event, process, fifo)


def _fifo_one_record_per_batch(event: dict[str, Any], process: Any, fifo: bool) -> dict[str, Any]:
    if not fifo:
        return reference_batch_response(event, process, fifo)
    first, *rest = event["Records"]
    try:
        process(first)
        failed = rest
    except Exception:
        failed = [first, *rest]
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in failed]}


def _bare_id_strings(event: dict[str, Any], process: Any, fifo: bool) -> dict[str, Any]:
    response = reference_batch_response(event, process, fifo)
    return {"batchItemFailures": [f["itemIdentifier"] for f in response["batchItemFailures"]]}


def _powertools_handler_misnamed(event: dict[str, Any], process: Any, fifo: bool) -> Any:
    processor = SqsFifoPartialProcessor() if fifo else BatchProcessor(event_type=EventType.SQS)
    return process_partial_response(event=event, record_handler=lambda item: process(item.raw_event),
                                    processor=processor)


RIGHT_ANSWERS = (
    RightAnswer("Powertools' BatchProcessor and SqsFifoPartialProcessor", _powertools),
    RightAnswer("FIFO skips only the failed record's message group", _skip_group),
)


def the_librarys_response(event, process, fifo):
    from fleetlab.services.sqs.esm import partial_batch_response

    return partial_batch_response(event, process, fifo=fifo)


WRONG_ANSWERS = (
    WrongAnswer("reports every record", _every_id, "runs again", mistake="reports-a-record-that-succeeded"),
    WrongAnswer("reports nothing", _none, "it is lost", mistake="failed-record-not-reported"),
    WrongAnswer("does not stop at the first FIFO failure", _standard_only, "broke the order",
                mistake="fifo-runs-on-after-a-failure"),
    WrongAnswer("stops on FIFO but reports only the failed record", _stops_but_reports_only_the_failure,
                "never ran and your response did not report it",
                mistake="reports-only-the-failed-record"),
    WrongAnswer("lets the failure through (no partial response)", _raises, "whole batch",
                mistake="lets-the-failure-through"),
    WrongAnswer("stops at the first failure on a standard queue too", _stop_everywhere, "never ran and was parked",
                mistake="standard-queue-stops-at-first-failure"),
    WrongAnswer("names receipt handles", _by_receipt_handle, "messageId", mistake="failures-name-no-message-id"),
    WrongAnswer("returns a bare list of ids", _list_of_ids, "batchItemFailures",
                mistake="response-not-batch-item-failures"),
    WrongAnswer("FIFO: returns the whole batch unrun", _fifo_returns_everything_unrun,
                "unprocessed, though no earlier record had failed", mistake="fifo-returns-records-unrun"),
    WrongAnswer("FIFO: runs one record per batch, returns the rest", _fifo_one_record_per_batch,
                "unprocessed, though no earlier record had failed", mistake="fifo-returns-records-unrun"),
    WrongAnswer("batchItemFailures holds bare messageId strings", _bare_id_strings, "not an object",
                mistake="failures-not-objects"),
    WrongAnswer("Powertools with a record handler that takes another parameter name", _powertools_handler_misnamed,
                "no record reached process(record)", mistake="record-handler-never-called"),
    WrongAnswer("the library's partial_batch_response", the_librarys_response,
                "calls `fleetlab.services.sqs.esm.partial_batch_response`"),
)

SIDE = InstructorSide("03.batch", hidden=HIDDEN, reference=reference_batch_response,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS)
