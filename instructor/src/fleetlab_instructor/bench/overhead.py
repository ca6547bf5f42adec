"""The library's overhead: one step through fleetlab vs the same four boto3 calls made raw, side by side."""

from __future__ import annotations

import json
import os
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from fleetlab_tools.counter import CallCounter

from fleetlab.composition.pipeline import Fleet
from fleetlab.composition.topology import AgentClass, TopologySpec
from fleetlab.core.clock import Clock
from fleetlab.core.errors import MeasurementFailed, PartlyRefused
from fleetlab.services.agents.model import FakeModel
from fleetlab.services.events.envelope import REQUESTED, SOURCE, Envelope
from fleetlab.services.sqs.messages import parse_body
from fleetlab.services.state.conditions import (
    CLAIMABLE,
    INPROGRESS,
    INPROGRESS_VALUE,
    NOW,
    attribute_names,
    number,
    string,
)
from fleetlab.services.state.idempotency import Claim, claim_item, complete_write
from fleetlab_instructor.bench.report import row
from fleetlab_instructor.bench.scaffold import TINY_LATENCY, provisioned

OVERHEAD_GOAL = 1.25  # library step time / raw boto3 step time: the course's overhead target
STEP_CALLS = (("sqs", "ReceiveMessage"), ("dynamodb", "PutItem"), ("dynamodb", "PutItem"), ("sqs", "DeleteMessage"))
PATHS = ("library", "raw")


def library_overhead(backend_name: str, *, blocks: int = 10, per_block: int = 20, seed: int = 0) -> dict[str, Any]:
    """One step through the library (A) vs the same four boto3 calls made raw (B).

    A is ``QueueWorker.poll_once`` running ``Fleet.handle_step`` (heartbeat
    off): ReceiveMessage, PutItem (claim), PutItem (complete),
    DeleteMessage, plus the library's parsing, validation, model call,
    ledger and tracing. B is ``raw_step``: the same calls with the same
    parameters and nothing else. Both run on the same backend, queue and
    table, alternating step by step within a block (ABAB... in even blocks,
    BABA... in odd ones; ``per_block`` steps of each), so both see the same
    machine load and the same queue depth; each block's messages are sent
    beforehand (untimed). Besides the medians and their ratio, the median
    of the differences between adjacent A and B steps gives a paired ratio.
    Botocore hooks count every call of every step and time it, which splits
    a step into time inside boto3 calls (SDK and emulator) and time in the
    caller's own code.

    Each step is timed on the wall clock and in process CPU time; CPU time
    (which includes a moto server's threads, as they live in this process)
    is far less disturbed by other programs on a shared machine.
    """
    spec = TopologySpec(agent_classes=(AgentClass("researcher"),), orchestrator=False)
    with provisioned(backend_name, "ovh", spec) as (backend, topology):
        fleet = Fleet(backend, topology, model=FakeModel(seed=seed, latency=TINY_LATENCY), heartbeat=False)
        queue = topology.queue("researcher")
        worker = fleet.workers["researcher"]
        sqs, ddb = backend.client("sqs"), backend.client("dynamodb")
        calls = CallCounter(sqs, ddb)
        consumer = "researcher"

        def library() -> None:
            outcomes = worker.poll_once(max_messages=1)
            if [o.status for o in outcomes] != ["done"]:
                raise MeasurementFailed(f"library step did not finish: {outcomes}")

        def raw() -> None:
            lease = fleet.store.lease_seconds
            if raw_step(sqs, ddb, queue.url, topology.table_name, consumer, clock=backend.clock,
                        lease_seconds=lease) != 1:
                raise MeasurementFailed("raw step found no message")

        run_step = {"library": library, "raw": raw}
        wall: dict[str, list[float]] = {p: [] for p in PATHS}
        cpu: dict[str, list[float]] = {p: [] for p in PATHS}
        in_calls: dict[str, list[float]] = {p: [] for p in PATHS}
        block_medians: dict[str, list[float]] = {p: [] for p in PATHS}
        sequences: dict[str, list[tuple[tuple[str, str], ...]]] = {p: [] for p in PATHS}
        bodies: list[str] = []
        serial = iter(range(10**9))

        def one_block(order: tuple[str, str], *, timed: bool) -> None:
            block_bodies = [overhead_body(f"ovh-{next(serial)}", consumer) for _ in range(2 * per_block)]
            send_bodies(sqs, queue.url, block_bodies)
            bodies.extend(block_bodies)
            block: dict[str, list[tuple[float, float, float]]] = {p: [] for p in PATHS}  # (wall, cpu, in calls)
            with calls:
                for index in range(2 * per_block):
                    path = order[index % 2]
                    calls.mark()
                    c0, t0 = time.process_time(), time.perf_counter()
                    run_step[path]()
                    t1, c1 = time.perf_counter(), time.process_time()
                    sequences[path].append(calls.since_mark())
                    block[path].append((t1 - t0, c1 - c0, calls.seconds_since_mark()))
            if timed:
                for path in PATHS:
                    block_wall, block_cpu, block_in_calls = zip(*block[path])
                    wall[path] += block_wall
                    cpu[path] += block_cpu
                    in_calls[path] += block_in_calls
                    block_medians[path].append(statistics.median(block_wall))

        one_block(PATHS, timed=False)  # warm-up: first calls pay for lazy loading in boto3 and moto
        for index in range(blocks):
            one_block(PATHS if index % 2 == 0 else PATHS[::-1], timed=True)
        parse_ms = statistics.median(_timed(lambda body=body: parse_body(body)) for body in bodies) * 1e3

    ms = {p: statistics.median(wall[p]) * 1e3 for p in PATHS}
    cpu_ms = {p: statistics.median(cpu[p]) * 1e3 for p in PATHS}
    calls_ms = {p: statistics.median(in_calls[p]) * 1e3 for p in PATHS}
    own_ms = {p: statistics.median(w - c for w, c in zip(wall[p], in_calls[p])) * 1e3 for p in PATHS}
    logic_ms = own_ms["library"] - own_ms["raw"]  # steadier than the ratio on a busy machine
    paired_ms = statistics.median(a - b for a, b in zip(wall["library"], wall["raw"])) * 1e3
    ratio = ms["library"] / ms["raw"]
    cpu_ratio = cpu_ms["library"] / cpu_ms["raw"]
    paired = 1 + paired_ms / ms["raw"]
    same_calls = set(sequences["library"]) == set(sequences["raw"]) == {STEP_CALLS}
    calls_note = "" if same_calls else "A and B made different calls: see calls_per_step"
    goal = f"<= {OVERHEAD_GOAL}x"
    return {
        "name": "overhead",
        "backend": backend_name,
        "blocks": blocks,
        "per_block": per_block,
        "steps_per_path": blocks * per_block,
        "library_ms_per_step": ms["library"],
        "raw_ms_per_step": ms["raw"],
        "ratio": ratio,
        "goal": OVERHEAD_GOAL,
        "met": ratio <= OVERHEAD_GOAL and same_calls,
        "paired_difference_ms_per_step": paired_ms,
        "paired_ratio": paired,
        "cpu_ms_per_step": cpu_ms,
        "cpu_ratio": cpu_ratio,
        "in_boto3_calls_ms_per_step": calls_ms,
        "own_code_ms_per_step": own_ms,
        "library_logic_ms_per_step": logic_ms,
        "parse_body_ms_per_step": parse_ms,
        "block_medians_ms": {k: [round(v * 1e3, 3) for v in vs] for k, vs in block_medians.items()},
        "calls_per_step": {k: sorted({" > ".join(".".join(call) for call in seq) for seq in v})
                           for k, v in sequences.items()},
        "boto3_calls": {k: sum(len(seq) for seq in v) for k, v in sequences.items()},
        "same_calls": same_calls,
        "load_average_after": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "error": calls_note,
        "rows": [
            row("step via library (A), wall", backend_name, ms["library"], "ms/step (median)", note=calls_note),
            row("step via raw boto3 (B), wall", backend_name, ms["raw"], "ms/step (median)", note=calls_note),
            row("library overhead A/B, wall", backend_name, ratio, "x", goal=goal,
                met=ratio <= OVERHEAD_GOAL and same_calls, note=calls_note),
            row("library overhead, paired A-B steps", backend_name, paired, "x", goal=goal,
                met=paired <= OVERHEAD_GOAL and same_calls, note=calls_note),
            row("library overhead A/B, CPU time", backend_name, cpu_ratio, "x", goal=goal,
                met=cpu_ratio <= OVERHEAD_GOAL and same_calls, note=calls_note),
            row("  A: own code outside boto3 calls", backend_name, own_ms["library"], "ms/step (median)"),
            row("  B: own code outside boto3 calls", backend_name, own_ms["raw"], "ms/step (median)"),
            row("  library logic (A own - B own)", backend_name, logic_ms, "ms/step"),
            row("  A: envelope parse + schema check", backend_name, parse_ms, "ms/step (median)"),
        ],
    }


def raw_step(sqs: Any, dynamodb: Any, queue_url: str, table: str, consumer: str, *, clock: Clock,
             lease_seconds: float = 900, window_seconds: float = 86_400) -> int:
    """The four calls of one step, made directly: receive, claim, complete, delete.

    Same parameters as the library's (AttributeNames All, the store's
    two conditional PutItems, built from the same named clauses of
    ``state.conditions``); no parsing beyond the key, no validation, ledger,
    tracing or model. Returns how many messages it handled.
    """
    messages = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=1, WaitTimeSeconds=0,
        AttributeNames=["All"], MessageAttributeNames=["All"],
    ).get("Messages", [])
    for message in messages:
        key = json.loads(message["Body"])["detail"]["trace_id"]
        now = clock.now()
        owner = uuid.uuid4().hex
        dynamodb.put_item(
            TableName=table,
            Item=claim_item(key, consumer, owner=owner, now=now, lease_seconds=lease_seconds,
                            window_seconds=window_seconds),
            ConditionExpression=CLAIMABLE,
            ExpressionAttributeNames=attribute_names(CLAIMABLE),
            ExpressionAttributeValues={NOW: number(now), INPROGRESS_VALUE: string(INPROGRESS)},
            ReturnValues="ALL_OLD",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        result = {"trace_id": key, "text": f"answer for {key}", "latency_s": 0.001}
        claim = Claim(key, consumer, owner, lease_until=now + lease_seconds, expires_at=now + window_seconds)
        dynamodb.put_item(TableName=table, **complete_write(claim, result))
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return len(messages)


def overhead_body(trace_id: str, agent_class: str) -> str:
    """An SQS body as EventBridge delivers it: the envelope in ``detail``."""
    detail = Envelope(trace_id=trace_id, conversation_id=trace_id, step=1, agent_class=agent_class,
                      payload={"question": "benchmark"}).detail()
    return json.dumps({
        "version": "0", "id": str(uuid.uuid4()), "detail-type": REQUESTED, "source": SOURCE,
        "time": "2026-01-01T00:00:00Z", "region": "us-east-1", "resources": [], "detail": detail,
    })


def send_bodies(sqs: Any, queue_url: str, bodies: Sequence[str]) -> None:
    """Put ``bodies`` on the queue, ten per SendMessageBatch."""
    for start in range(0, len(bodies), 10):
        chunk = bodies[start : start + 10]
        response = sqs.send_message_batch(
            QueueUrl=queue_url, Entries=[{"Id": str(i), "MessageBody": b} for i, b in enumerate(chunk)])
        if response.get("Failed"):
            refused = [f"{f['Id']}: {f.get('Code')}" for f in response["Failed"]]
            raise PartlyRefused(f"preloading the queue: SQS refused {refused}", refused=refused)


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
