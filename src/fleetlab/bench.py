"""``fleetlab bench``: the course's performance figures, measured and saved, never asserted.

Each measurement is a small function that opens what it needs, measures,
cleans up, and returns a plain dict (JSON-ready) holding table ``rows`` and
its details; they compose in ``run`` and each can be called alone:

=================== ===========================================================
``pipeline``        steps/s through bus -> rule -> queue -> worker -> store
``overhead``        one step through the library vs the same boto3 calls raw,
                    side by side in alternating blocks
``clock``           simulated seconds per wall second of a one-worker fleet
                    slice with realistic step latency (virtual clock)
``demo``            wall time of ``fleetlab demo`` per backend
``labs``            headless run time of every lab notebook (nbclient)
``grade``           ``fleetlab grade`` throughput over the solution notebooks
=================== ===========================================================

Only one backend is open at a time in this process: every measurement opens
its backend, uses it and closes it before the next starts. Timings use
``time.perf_counter``, which the virtual clock (time-machine) does not move.
Goals come from the course's Targets table; a missed goal is reported, it
does not fail the command.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .argtypes import choice_list, positive_int
from .backends import BACKEND_NAMES, Backend, open_backend
from .envelope import REQUESTED, SOURCE, Envelope
from .errors import FleetlabError
from .idempotency import COMPLETED, INPROGRESS
from .model import FakeModel, LatencyProfile
from .pipeline import Fleet
from .topology import AgentClass, Topology, TopologySpec, new_prefix, provision
from .workers import parse_body

MEASUREMENTS = ("pipeline", "overhead", "clock", "demo", "labs", "grade")
DEFAULT_BACKENDS = ("moto", "moto-server")
DEFAULT_OUT = Path("bench/results.json")
OVERHEAD_GOAL = 1.25  # library step time / raw boto3 step time (COURSE.md, Targets)
LAB_GOALS = {"04": 30.0, "07": 45.0}  # seconds, headless, default backend; others 20 s
LAB_GOAL_DEFAULT = 20.0
GRADE_GOAL = 10.0  # notebooks per minute on 2 cores
COURSE_GOAL = 180.0  # seconds: every lab headless plus grading the solutions, 2 cores
FLEET_DAY_GOAL = 5.0  # seconds for a simulated fleet day
PACKAGES = ("fleetlab", "boto3", "botocore", "moto", "time-machine", "jsonschema", "nbclient", "ipykernel", "rich")
TINY_LATENCY = LatencyProfile(p50=0.001, p95=0.002)  # seconds: the model's clock must not dominate


# --------------------------------------------------------------------------- the command


def add_command(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bench`` on the ``fleetlab`` command's subparsers."""
    bench = subparsers.add_parser(
        "bench",
        help="measure throughput, library overhead, the virtual clock and lab run times; save JSON",
        description="Run the benchmarks, print one table and save the figures as JSON "
        "(benchmarks report; they never fail on a missed goal).",
    )
    bench.add_argument("--out", type=Path, default=DEFAULT_OUT,
                       help=f"where to save the results (default {DEFAULT_OUT})")
    bench.add_argument("--backends", type=choice_list(BACKEND_NAMES, "backend"), default=DEFAULT_BACKENDS, metavar="NAME[,NAME]",
                       help=f"backends to measure, comma-separated (default {','.join(DEFAULT_BACKENDS)})")
    bench.add_argument("--steps", type=positive_int, default=200,
                       help="steps per pipeline and clock measurement, and per path in the overhead one "
                       "(default 200)")
    bench.add_argument("--only", type=choice_list(MEASUREMENTS, "measurement"), default=MEASUREMENTS, metavar="NAME[,NAME]",
                       help=f"measurements to run, comma-separated, from {', '.join(MEASUREMENTS)} (default all)")
    bench.set_defaults(run=run)
    return bench


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the chosen measurements, print the table, save the JSON.

    Returns 1 when a measurement went wrong (it raised, or what it measured
    did not complete correctly, so its figure means little), else 0; a
    missed goal shows in the table and does not change the exit code.
    """
    started = datetime.now(timezone.utc)  # before any backend: the virtual clock moves datetime too
    machine = machine_info()  # the load average before the bench adds its own
    plan = measurement_plan(args.only, args.backends, args.steps)
    results: list[dict[str, Any]] = []
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, redirect_stdout=False, redirect_stderr=False) as bar:
        task = bar.add_task("bench", total=len(plan))
        for label, measure in plan:
            bar.update(task, description=f"bench: {label}")
            results.append(guarded(label, measure))
            bar.advance(task)
    results += course_total(results)
    document = results_document(results, started=started, machine=machine, settings={
        "backends": list(args.backends), "steps": args.steps, "only": list(args.only)})
    console.print(results_table(results))
    save(document, args.out)
    console.print(f"saved {args.out}")
    broken = [r for r in results if r.get("error")]
    for result in broken:
        console.print(f"[bold red]{result['name']} ({result.get('backend') or '-'}) went wrong:[/] {result['error']}",
                      highlight=False)
    return 1 if broken else 0


def measurement_plan(
    only: Sequence[str], backends: Sequence[str], steps: int
) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    """(label, thunk) for every measurement to run: per backend, then the notebook ones."""
    plan: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    per_block = 10  # short blocks follow a shared machine's load changes more closely
    blocks = max(2, steps // per_block)
    for name in backends:
        if "pipeline" in only:
            plan.append((f"pipeline on {name}", lambda name=name: pipeline_throughput(name, steps)))
        if "overhead" in only:
            plan.append((f"overhead on {name}",
                         lambda name=name: library_overhead(name, blocks=blocks, per_block=per_block)))
        if "clock" in only:
            plan.append((f"virtual clock on {name}", lambda name=name: virtual_clock_ratio(name, steps)))
        if "demo" in only:
            plan.append((f"demo on {name}", lambda name=name: demo_wall_time(name)))
    if "clock" in only:
        plan.append(("simulated fleet day", simulated_fleet_day))
    if "labs" in only:
        plan.append(("lab notebooks", lab_run_times))
    if "grade" in only:
        plan.append(("grade throughput", grade_throughput))
    return plan


def course_total(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The whole course plus grading its solutions, derived from the labs and grade measurements.

    Every instructor notebook once, headless, plus the grader's wall time per
    distinct solution notebook. Empty unless both measurements ran cleanly.
    """
    labs = next((r for r in results if r.get("name") == "labs" and not r.get("error")), None)
    grade = next((r for r in results if r.get("name") == "grade" and not r.get("error")), None)
    if labs is None or grade is None:
        return []
    solutions = [run["wall_seconds"] for run in labs["runs"] if run["notebook"].startswith("labs/solutions/")]
    grading = grade["wall_seconds"] * grade["distinct_notebooks"] / grade["notebooks"]
    total = sum(solutions) + grading
    return [{"name": "course", "backend": "moto", "error": "", "rows": [
        row(f"whole course ({len(solutions)} labs) + grading the solutions", "moto", total, "s",
            goal=f"<= {COURSE_GOAL:g} s", met=total <= COURSE_GOAL,
            note=f"labs {sum(solutions):.1f} s + grading {grading:.1f} s")]}]


def guarded(label: str, measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one measurement; a failure becomes a result with ``error`` instead of ending the bench."""
    try:
        return measure()
    except Exception as exc:  # a benchmark harness records a broken measurement and carries on
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return {
            "name": label,
            "backend": None,
            "error": f"{type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})",
            "rows": [row(label, None, None, "", note="failed: see error")],
        }


# --------------------------------------------------------------------------- rows, table, JSON


def row(measurement: str, backend: str | None, value: float | None, unit: str, *,
        goal: str = "", met: bool | None = None, note: str = "") -> dict[str, Any]:
    """One line of the results table."""
    return {"measurement": measurement, "backend": backend, "value": value, "unit": unit,
            "goal": goal, "met": met, "note": note}


def results_table(results: Sequence[dict[str, Any]]) -> Table:
    """The rich table: measurement | backend | value | unit | goal | met?, notes as numbered footnotes."""
    table = Table(title="fleetlab bench", caption_justify="left")
    for name, justify in (("measurement", "left"), ("backend", "left"), ("value", "right"),
                          ("unit", "left"), ("goal", "left"), ("met?", "center")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    notes: list[str] = []
    for result in results:
        for line in result["rows"]:
            met = {True: "[green]yes[/]", False: "[red]NO[/]", None: "-"}[line["met"]]
            if line["value"] is None:
                value = line["note"] or "-"
            else:
                value = _fmt(line["value"])
                if line["note"]:
                    notes.append(line["note"])
                    value = f"({len(notes)}) {value}"
            table.add_row(line["measurement"], line["backend"] or "-", value, line["unit"], line["goal"] or "-", met)
    if notes:
        table.caption = "\n".join(f"({n}) {note}" for n, note in enumerate(notes, 1))
    return table


def results_document(results: Sequence[dict[str, Any]], *, started: datetime, settings: dict[str, Any],
                     machine: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything saved: when, on what machine, with which settings, every result and row."""
    return {
        "format": "fleetlab-bench/1",
        "timestamp": started.isoformat(timespec="seconds"),
        "machine": machine or machine_info(),
        "settings": settings,
        "results": list(results),
        "rows": [line for result in results for line in result["rows"]],
    }


def machine_info() -> dict[str, Any]:
    """What a comparison between two runs needs to know about the machine."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "packages": {name: _version(name) for name in PACKAGES},
    }


def save(document: dict[str, Any], path: Path) -> Path:
    """Write the results as JSON, making the parent folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- 1. pipeline throughput


def pipeline_throughput(backend_name: str, steps: int = 200, *, chunk: int = 10, seed: int = 0) -> dict[str, Any]:
    """Steps per second through the whole message loop on ``backend_name``.

    Work is fed ``chunk`` steps at a time (one PutEvents, then ``Fleet.run``
    drains), so no queue is ever deeper than ``chunk``: moto's per-call cost
    grows with queue depth. ``steps_per_s`` is steps / time spent draining;
    ``end_to_end_steps_per_s`` also counts the publishing.
    """
    with provisioned(backend_name, "bench", TopologySpec(orchestrator=False)) as (backend, topology):
        fleet = Fleet(backend, topology, model=FakeModel(seed=seed, latency=TINY_LATENCY))
        envelopes = bench_envelopes(steps, "pipe", classes=tuple(topology.queues))
        drain = 0.0
        done = 0
        began = time.perf_counter()
        for start in range(0, steps, chunk):
            fleet.submit(*envelopes[start : start + chunk])
            t0 = time.perf_counter()
            report = fleet.run()
            drain += time.perf_counter() - t0
            done += report.count("done")
        total = time.perf_counter() - began
        summary = fleet.ledger.summary(fleet.submitted)
    problem = "" if done == steps and summary.exactly_once else (
        f"{done}/{steps} done, {summary.duplicated} duplicated, {summary.lost} lost")
    return {
        "name": "pipeline",
        "backend": backend_name,
        "steps": steps,
        "chunk": chunk,
        "done": done,
        "drain_seconds": drain,
        "total_seconds": total,
        "steps_per_s": steps / drain,
        "end_to_end_steps_per_s": steps / total,
        "error": problem,
        "rows": [
            row("pipeline steps/s (drain)", backend_name, steps / drain, "steps/s", note=problem),
            row("pipeline steps/s (publish+drain)", backend_name, steps / total, "steps/s", note=problem),
        ],
    }


# --------------------------------------------------------------------------- 2. library overhead


STEP_CALLS = (("sqs", "ReceiveMessage"), ("dynamodb", "PutItem"), ("dynamodb", "UpdateItem"), ("sqs", "DeleteMessage"))
PATHS = ("library", "raw")


def library_overhead(backend_name: str, *, blocks: int = 10, per_block: int = 20, seed: int = 0) -> dict[str, Any]:
    """One step through the library (A) vs the same four boto3 calls made raw (B).

    A is ``QueueWorker.poll_once`` running ``Fleet.handle_step`` (heartbeat
    off): ReceiveMessage, PutItem (claim), UpdateItem (complete),
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
                raise FleetlabError(f"library step did not finish: {outcomes}")

        def raw() -> None:
            lease = fleet.store.lease_seconds
            if raw_step(sqs, ddb, queue.url, topology.table_name, consumer, lease_seconds=lease) != 1:
                raise FleetlabError("raw step found no message")

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


def raw_step(sqs: Any, dynamodb: Any, queue_url: str, table: str, consumer: str, *,
             lease_seconds: float = 900, window_seconds: float = 86_400) -> int:
    """The four calls of one step, made directly: receive, claim, complete, delete.

    Same parameters as the library's (AttributeNames All, the store's
    conditional PutItem and UpdateItem); no parsing beyond the key, no
    validation, ledger, tracing or model. Returns how many messages it handled.
    """
    messages = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=1, WaitTimeSeconds=0,
        AttributeNames=["All"], MessageAttributeNames=["All"],
    ).get("Messages", [])
    for message in messages:
        key = json.loads(message["Body"])["detail"]["trace_id"]
        now = time.time()
        owner = uuid.uuid4().hex
        dynamodb.put_item(
            TableName=table,
            Item={
                "pk": {"S": key}, "sk": {"S": consumer}, "status": {"S": INPROGRESS}, "owner": {"S": owner},
                "lease_until": {"N": str(round(now + lease_seconds, 3))},
                "expires_at": {"N": str(round(now + window_seconds, 3))},
            },
            ConditionExpression=("attribute_not_exists(pk) OR expires_at < :now "
                                 "OR (#status = :inprogress AND lease_until < :now)"),
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":now": {"N": str(round(now, 3))}, ":inprogress": {"S": INPROGRESS}},
            ReturnValues="ALL_OLD",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        dynamodb.update_item(
            TableName=table,
            Key={"pk": {"S": key}, "sk": {"S": consumer}},
            UpdateExpression="SET #status = :done, #result = :result",
            ConditionExpression="#owner = :owner",
            ExpressionAttributeNames={"#status": "status", "#result": "result", "#owner": "owner"},
            ExpressionAttributeValues={
                ":done": {"S": COMPLETED},
                ":result": {"S": json.dumps({"trace_id": key, "text": f"answer for {key}", "latency_s": 0.001})},
                ":owner": {"S": owner},
            },
        )
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return len(messages)


class CallCounter:
    """Counts and times boto3 calls on the given clients with botocore hooks, while in a ``with``.

    ``before-call.*.*`` names each call; ``provide-client-params`` (the first
    event of a call) and ``after-call`` (the last) bound its duration, which
    covers parameter validation, serialisation, the emulator and parsing.
    """

    def __init__(self, *clients: Any) -> None:
        self.clients = clients
        self.calls: list[tuple[str, str]] = []
        self.seconds: list[float] = []
        self._started: list[float] = []
        self._mark = (0, 0)
        self._id = f"fleetlab-bench-{id(self)}"

    def __enter__(self) -> CallCounter:
        for client in self.clients:
            events = client.meta.events
            events.register("provide-client-params.*.*", self._begin, unique_id=self._id + "-begin")
            events.register("before-call.*.*", self._seen, unique_id=self._id + "-seen")
            events.register("after-call.*.*", self._end, unique_id=self._id + "-end")
        return self

    def __exit__(self, *exc: Any) -> None:
        for client in self.clients:
            events = client.meta.events
            events.unregister("provide-client-params.*.*", unique_id=self._id + "-begin")
            events.unregister("before-call.*.*", unique_id=self._id + "-seen")
            events.unregister("after-call.*.*", unique_id=self._id + "-end")

    def mark(self) -> None:
        self._mark = (len(self.calls), len(self.seconds))

    def since_mark(self) -> tuple[tuple[str, str], ...]:
        """The (service, operation) of every call since ``mark``."""
        return tuple(self.calls[self._mark[0] :])

    def seconds_since_mark(self) -> float:
        """Wall seconds spent inside boto3 calls since ``mark``."""
        return sum(self.seconds[self._mark[1] :])

    # Every hook returns None: a value from before-call would short-circuit the request.
    def _begin(self, **_: Any) -> None:
        self._started.append(time.perf_counter())

    def _seen(self, event_name: str = "", **_: Any) -> None:
        _, service, operation = event_name.split(".", 2)
        self.calls.append((service, operation))

    def _end(self, **_: Any) -> None:
        if self._started:
            self.seconds.append(time.perf_counter() - self._started.pop())


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
            raise FleetlabError(f"preloading the queue failed: {response['Failed']}")


# --------------------------------------------------------------------------- 3. virtual clock


def virtual_clock_ratio(
    backend_name: str = "moto", steps: int = 200, *, chunk: int = 10, seed: int = 0
) -> dict[str, Any]:
    """Simulated seconds per wall second for ``steps`` steps of realistic latency (p50 90 s).

    One worker per class drains the queues, so simulated time is the sum of
    the step latencies (plus heartbeats); that is the slice a lab runs.
    """
    with provisioned(backend_name, "clock", TopologySpec(orchestrator=False)) as (backend, topology):
        if not backend.clock.virtual:
            return _not_measured("virtual clock", backend_name, "this backend runs on the real clock")
        fleet = Fleet(backend, topology, model=FakeModel(seed=seed))
        envelopes = bench_envelopes(steps, "clock", classes=tuple(topology.queues))
        sim0, wall0 = backend.clock.now(), time.perf_counter()
        done = 0
        for start in range(0, steps, chunk):
            fleet.submit(*envelopes[start : start + chunk])
            done += fleet.run().count("done")
        simulated = backend.clock.now() - sim0
        wall = time.perf_counter() - wall0
    problem = "" if done == steps else f"{done}/{steps} done"
    return {
        "name": "clock",
        "backend": backend_name,
        "steps": steps,
        "latency_p50_s": LatencyProfile().p50,
        "latency_p95_s": LatencyProfile().p95,
        "simulated_seconds": simulated,
        "wall_seconds": wall,
        "ratio": simulated / wall,
        "error": problem,
        "rows": [
            row(f"virtual clock, {steps} steps of p50 90 s", backend_name, simulated / wall,
                "sim s / wall s", note=problem),
            row("  simulated time advanced", backend_name, simulated, "sim s"),
            row("  wall time", backend_name, wall, "s"),
        ],
    }


def simulated_fleet_day() -> dict[str, Any]:
    """The course target (a fleet day in under 5 s) needs the time-stepped fleet model; not faked here."""
    note = "not measured: needs the time-stepped fleet model (autoscale.py)"
    return {
        "name": "fleet-day",
        "backend": None,
        "measured": False,
        "reason": note,
        "workload": {"conversations_per_minute": 500, "steps_per_conversation": 15, "step_seconds": 90},
        "rows": [row("simulated fleet day (500 conv/min, 15 x 90 s)", None, None, "s",
                     goal=f"< {FLEET_DAY_GOAL:g} s", note=note)],
    }


# --------------------------------------------------------------------------- 4. demo


def demo_wall_time(backend_name: str, *extra: str) -> dict[str, Any]:
    """Wall time of ``fleetlab demo --backend NAME``, in this process, its output captured.

    The demo opens and closes its own backend, so none may be open here
    (every measurement closes its own before returning). The command runs
    exactly as ``cli.main`` runs it (parse, then ``args.run``) but with a
    console writing to a buffer, so its output stays out of the bench's.
    """
    from . import cli

    argv = ["demo", "--backend", backend_name, *extra]
    args = cli.build_parser().parse_args(argv)
    out = io.StringIO()
    console = Console(file=out, width=160, force_terminal=False)
    error = ""
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            code = int(args.run(args, console) or 0)
        except FleetlabError as exc:  # as cli.main reports it
            code, error = 2, str(exc)
    wall = time.perf_counter() - t0
    if code and not error:
        error = f"exit code {code}: {out.getvalue().strip().splitlines()[-1:]}"
    return {
        "name": "demo",
        "backend": backend_name,
        "argv": argv,
        "wall_seconds": wall,
        "exit_code": code,
        "output_chars": len(out.getvalue()),
        "error": error,
        "rows": [row("fleetlab demo", backend_name, wall, "s", note=error)],
    }


# --------------------------------------------------------------------------- 5. labs and grading


def default_notebooks(root: Path | None = None) -> list[Path]:
    """Instructor notebooks (``labs/solutions/*.ipynb``), then ``labs/*.ipynb``."""
    labs = _labs_folder(root)
    if labs is None:
        return []
    return sorted(labs.glob("solutions/*.ipynb")) + sorted(labs.glob("*.ipynb"))


def lab_goal(path: Path) -> float:
    """The headless time goal of a lab notebook, from its number."""
    return LAB_GOALS.get(path.name[:2], LAB_GOAL_DEFAULT)


def lab_run_times(notebooks: Sequence[Path] | None = None, *, timeout: float = 120,
                  attempts: int = 2) -> dict[str, Any]:
    """Execute each notebook headless with nbclient, in this process, on the moto backend; time each.

    The kernel gets ``FLEETLAB_BACKEND=moto`` (the default backend) and a
    fresh, throwaway ``FLEETLAB_HOME`` per run, so checks run here never touch
    a learner's progress and every run starts with a cold fidelity cache (as
    in the grader, where each notebook gets a fresh home).

    nbclient's client sometimes misses a finished cell's reply and waits out
    the whole ``timeout`` without an error (jupyter/nbclient#312, see
    BACKENDS.md): such a run is recorded as stalled and the notebook run
    again, up to ``attempts`` runs; the value is the last run's time, and
    every stall is kept in the JSON and named in the note.
    """
    paths = list(notebooks) if notebooks is not None else default_notebooks()
    runs: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fleetlab-bench-") as home:
        env = {k: v for k, v in os.environ.items() if k not in ("FLEETLAB_ALLOW_REAL_AWS",)}
        env["FLEETLAB_BACKEND"] = "moto"

        def attempt(path: Path) -> dict[str, Any]:
            return execute_notebook(path, env={**env, "FLEETLAB_HOME": tempfile.mkdtemp(dir=home)}, timeout=timeout)

        for path in paths:
            tries = [attempt(path)]
            while tries[-1]["stalled_cells"] and len(tries) < max(1, attempts):
                tries.append(attempt(path))
            last = tries[-1]
            stalls = [f"cell {c['cell']} {c['seconds']:.0f} s" for t in tries for c in t["stalled_cells"]]
            goal = lab_goal(path)
            label = _display_path(path)
            runs.append({"notebook": label, "goal_seconds": goal, **last, "attempts": tries})
            notes = [last["error"]] if last["error"] else []
            if stalls:
                notes.append(f"nbclient stall (#312) in {', '.join(stalls)}; "
                             + ("still stalled" if last["stalled_cells"] else f"value from run {len(tries)}"))
            rows.append(row(f"lab {label}", "moto", last["wall_seconds"], "s", goal=f"<= {goal:g} s",
                            met=(last["wall_seconds"] <= goal) and not last["error"], note="; ".join(notes)))
    if not paths:
        rows.append(row("lab notebooks", "moto", None, "s", note="no notebooks found under labs/"))
    return {"name": "labs", "backend": "moto", "timeout": timeout, "runs": runs,
            "error": "; ".join(f"{r['notebook']}: {r['error']}" for r in runs if r["error"]), "rows": rows}


def execute_notebook(path: Path, *, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """One headless run of ``path`` with nbclient (in its folder); its time, slowest cells and stalls."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    cells = CellTimer()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}},
                            on_cell_start=cells.start, on_cell_executed=cells.executed)
    error = ""
    t0 = time.perf_counter()
    try:
        client.execute(env=env, stderr=subprocess.DEVNULL)  # the kernel's TCP warning is noise here
    except Exception as exc:  # a failing notebook is a result, not the end of the bench
        error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    wall = time.perf_counter() - t0
    stalled = [{"cell": i, "seconds": round(s, 3)} for i, s in sorted(cells.seconds.items()) if s >= 0.98 * timeout]
    return {
        "wall_seconds": wall,
        "kernel_start_seconds": (cells.first_start - t0) if cells.first_start else None,
        "cells_seconds": sum(cells.seconds.values()),
        "slowest_cells": cells.slowest(nb, 3),
        "stalled_cells": [] if error else stalled,  # a cell that timed out raised: that is an error, not a stall
        "error": error,
    }


class CellTimer:
    """nbclient hooks that time each cell on this process's wall clock.

    nbclient's own timing metadata comes from the kernel's message dates,
    which the virtual clock in the kernel moves; these do not.
    """

    def __init__(self) -> None:
        self.seconds: dict[int, float] = {}
        self.first_start: float | None = None
        self._started: dict[int, float] = {}

    def start(self, cell: Any = None, cell_index: int = 0, **_: Any) -> None:
        now = time.perf_counter()
        self.first_start = self.first_start or now
        self._started[cell_index] = now

    def executed(self, cell: Any = None, cell_index: int = 0, **_: Any) -> None:
        if cell_index in self._started:
            self.seconds[cell_index] = time.perf_counter() - self._started.pop(cell_index)

    def slowest(self, nb: Any, count: int) -> list[dict[str, Any]]:
        ranked = sorted(self.seconds.items(), key=lambda item: -item[1])[:count]
        return [{"cell": index, "seconds": round(seconds, 3),
                 "first_line": (nb.cells[index].source.strip().splitlines() or [""])[0][:80]}
                for index, seconds in ranked]


def grade_throughput(notebooks: Sequence[Path] | None = None, *, workers: int = 2, min_jobs: int = 4) -> dict[str, Any]:
    """Notebooks graded per minute by ``fleetlab.grading``'s batch grader over the solution notebooks.

    When there are fewer than ``min_jobs`` notebooks, the list is repeated
    up to ``min_jobs`` so every worker has work (a batch of one notebook
    measures latency, not throughput); the JSON says how many were distinct.
    """
    grader = _batch_grader()
    if grader is None:
        return _not_measured("grade throughput", None, "not available: fleetlab.grading has no batch grader",
                             unit="notebooks/min", goal=f">= {GRADE_GOAL:g}/min")
    labs = _labs_folder()
    paths = list(notebooks) if notebooks is not None else (
        sorted(labs.glob("solutions/*.ipynb")) if labs is not None else [])
    if not paths:
        return _not_measured("grade throughput", None, "no solution notebooks found",
                             unit="notebooks/min", goal=f">= {GRADE_GOAL:g}/min")
    jobs = [paths[i % len(paths)] for i in range(max(len(paths), min_jobs))]
    t0 = time.perf_counter()
    graded = grader(jobs, workers=workers, grader_env=dict(os.environ))
    wall = time.perf_counter() - t0
    rate = len(jobs) / wall * 60
    errors = sorted({f"{Path(r.notebook).name}: {r.error}" for r in graded if r.error})
    error = "; ".join(errors)
    return {
        "name": "grade",
        "backend": "moto",
        "notebooks": len(jobs),
        "distinct_notebooks": len(paths),
        "workers": workers,
        "wall_seconds": wall,
        "notebooks_per_minute": rate,
        "totals": [r.total for r in graded],
        "error": error,
        "rows": [row(f"grade throughput ({len(jobs)} runs of {len(paths)} solution notebook(s), {workers} workers)",
                     "moto", rate, "notebooks/min", goal=f">= {GRADE_GOAL:g}/min",
                     met=(rate >= GRADE_GOAL) and not error, note=error)],
    }


def _batch_grader() -> Callable[..., Any] | None:
    try:
        from .grading import grade
    except ImportError:
        return None
    return getattr(grade, "grade_notebooks", None)


# --------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def provisioned(backend_name: str, label: str, spec: TopologySpec) -> Iterator[tuple[Backend, Topology]]:
    """Open ``backend_name``, provision ``spec`` under a fresh prefix; tear down and close after."""
    backend = open_backend(backend_name)
    try:
        topology = provision(backend, spec, prefix=new_prefix(label))
        try:
            yield backend, topology
        finally:
            topology.teardown()
    finally:
        backend.close()


def bench_envelopes(count: int, label: str, *, classes: Sequence[str]) -> list[Envelope]:
    """``count`` distinct step requests spread over ``classes``."""
    return [
        Envelope(trace_id=f"{label}-{i}", conversation_id=f"{label}-{i // 15}", step=i % 15,
                 agent_class=classes[i % len(classes)], payload={"question": f"task {i}"})
        for i in range(count)
    ]


def _not_measured(measurement: str, backend: str | None, reason: str, *, unit: str = "",
                  goal: str = "") -> dict[str, Any]:
    return {"name": measurement, "backend": backend, "measured": False, "reason": reason,
            "rows": [row(measurement, backend, None, unit, goal=goal, note=reason)]}


def _labs_folder(root: Path | None = None) -> Path | None:
    candidates = [root] if root is not None else [Path.cwd() / "labs", Path(__file__).resolve().parents[2] / "labs"]
    return next((c for c in candidates if c is not None and c.is_dir()), None)


def _display_path(path: Path) -> str:
    parts = path.resolve().parts
    return "/".join(parts[parts.index("labs"):]) if "labs" in parts else path.name


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _fmt(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    if abs(value) >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"
