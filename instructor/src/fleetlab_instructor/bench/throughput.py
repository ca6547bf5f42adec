"""The message loop measured: its throughput, the virtual clock's ratio, and ``fleetlab demo``'s wall time."""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from fleetlab.composition.pipeline import Fleet
from fleetlab.composition.scaling.capacity import capacity, fleet_scaled_object
from fleetlab.composition.scaling.simulator import Pods, Workload, simulate
from fleetlab.composition.topology import TopologySpec
from fleetlab.core.errors import FleetlabError
from fleetlab.course import demo
from fleetlab.services.agents.model import FakeModel, LatencyProfile
from fleetlab.services.events.envelope import Envelope
from fleetlab_instructor.bench.report import not_measured, row
from fleetlab_instructor.bench.scaffold import TINY_LATENCY, provisioned

FLEET_DAY_GOAL = 5.0  # seconds for a simulated fleet day
FLEET_DAY_POD_CONCURRENCY = 10  # steps one pod works at once, so queueLength 10 (the seed's example)


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


def virtual_clock_ratio(
    backend_name: str = "moto", steps: int = 200, *, chunk: int = 10, seed: int = 0
) -> dict[str, Any]:
    """Simulated seconds per wall second for ``steps`` steps of realistic latency (p50 90 s).

    One worker per class drains the queues, so simulated time is the sum of
    the step latencies (plus heartbeats); that is the slice a lab runs.
    """
    with provisioned(backend_name, "clock", TopologySpec(orchestrator=False)) as (backend, topology):
        if not backend.clock.virtual:
            return not_measured("virtual clock", backend_name, "this backend runs on the real clock")
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


def simulated_fleet_day(hours: float = 24.0, *, dt: float = 1.0) -> dict[str, Any]:
    """Wall time of a simulated fleet day: 500 conversations a minute, 15 steps of 90 s, a KEDA-sized fleet.

    The fleet is sized by Little's law (``scaling.capacity``): pods that work
    10 steps at once, queueLength 10, maxReplicaCount for the in-flight steps
    plus 20 %, minReplicaCount 2. The time-stepped model runs it for
    ``hours`` in ``dt`` steps with KEDA and the HPA exactly as the real loop
    runs them. The goal applies to a full day.
    """
    workload = {"conversations_per_minute": 500, "steps_per_conversation": 15, "step_seconds": 90}
    cap = capacity(500, 15, 90)
    scaled = fleet_scaled_object(cap, pod_concurrency=FLEET_DAY_POD_CONCURRENCY)
    seconds = hours * 3600
    t0 = time.perf_counter()
    run = simulate(scaled, Workload(500, 15), Pods(step_seconds=90, concurrency=FLEET_DAY_POD_CONCURRENCY),
                   seconds=seconds, dt=dt, sample_every=60, replicas=scaled.min_replica_count)
    wall = time.perf_counter() - t0
    # the first conversations reach their last step only after 15 x 90 s: count from then
    expected = cap.steps_per_second * max(seconds - 15 * 90, 0)
    problem = "" if run.steps_completed >= 0.9 * expected else (
        f"{run.steps_completed:,} steps completed; expected over {0.9 * expected:,.0f}")
    full_day = hours == 24
    label = "simulated fleet day (500 conv/min, 15 x 90 s)" if full_day else f"simulated {hours:g} h of the fleet"
    figures = {
        "peak_replicas": run.peak_replicas,
        "peak_visible": run.peak_visible,
        "peak_depth": run.peak_depth,
        "steps_completed": run.steps_completed,
        "conversations_completed": run.conversations_completed,
        "p95_step_latency_s": run.latency(0.95),
        "peak_age_of_oldest_s": run.peak_age,
        "pod_hours": run.pod_seconds / 3600,
        "scaling_changes": len(run.scaling),
    }
    return {
        "name": "fleet-day",
        "backend": None,
        "measured": True,
        "workload": workload,
        "scaled_object": {"queue_length": scaled.trigger.queue_length, "min_replicas": scaled.min_replica_count,
                          "max_replicas": scaled.max_replica_count},
        "simulated_seconds": seconds,
        "dt": dt,
        "wall_seconds": wall,
        "figures": figures,
        "error": problem,
        "rows": [
            row(label, None, wall, "s", goal=f"< {FLEET_DAY_GOAL:g} s" if full_day else "",
                met=wall < FLEET_DAY_GOAL if full_day else None, note=problem),
            row("  peak replicas", None, run.peak_replicas, f"of max {scaled.max_replica_count}"),
            row("  peak queue depth (visible + in flight)", None, run.peak_depth, "messages"),
            row("  steps completed", None, run.steps_completed, "steps"),
            row("  p95 step latency (wait + step)", None, run.latency(0.95), "s"),
        ],
    }


def demo_wall_time(backend_name: str, **options: Any) -> dict[str, Any]:
    """Wall time of ``fleetlab demo`` on ``backend_name``, its output captured.

    ``options`` are ``demo.run``'s (``events``, ``orchestrated``, ...); by default the command's.

    The demo opens and closes its own backend, so none may be open here
    (every measurement closes its own before returning).
    """
    out = io.StringIO()
    console = Console(file=out, width=160, force_terminal=False)
    error = ""
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            code = demo.run(console, backend=backend_name, **options)
        except FleetlabError as exc:  # as the command reports it
            code, error = 2, str(exc)
    wall = time.perf_counter() - t0
    if code and not error:
        error = f"exit code {code}: {out.getvalue().strip().splitlines()[-1:]}"
    return {
        "name": "demo",
        "backend": backend_name,
        "wall_seconds": wall,
        "exit_code": code,
        "output_chars": len(out.getvalue()),
        "error": error,
        "rows": [row("fleetlab demo", backend_name, wall, "s", note=error)],
    }


def bench_envelopes(count: int, label: str, *, classes: Sequence[str]) -> list[Envelope]:
    """``count`` distinct step requests spread over ``classes``."""
    return [
        Envelope(trace_id=f"{label}-{i}", conversation_id=f"{label}-{i // 15}", step=i % 15,
                 agent_class=classes[i % len(classes)], payload={"question": f"task {i}"})
        for i in range(count)
    ]
