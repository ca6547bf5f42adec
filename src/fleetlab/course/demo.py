"""``fleetlab demo``: steps through the whole pipeline, each trace printed hop by hop.

Bus -> rule -> queue (+DLQ) -> worker -> idempotency store -> ledger for the
published steps, and orchestrator (``events:putEvents.waitForTaskToken``) ->
callback -> execution SUCCEEDED for the orchestrated ones. The CLI and the
bench both call ``run``. A trace's times are lab time, on the backend's clock
(virtual on moto: its waits pass at once); the last line sets the run's lab
time beside its wall time.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from fleetlab.backends.backend import chosen_backend, open_backend
from fleetlab.composition.cost import require_opt_in
from fleetlab.composition.pipeline import Fleet
from fleetlab.composition.topology import new_prefix, provision
from fleetlab.core.clock import Clock
from fleetlab.core.faults import Crash, CrashPoint, FaultPlan
from fleetlab.services.agents.model import FakeModel
from fleetlab.services.events.envelope import Envelope


def run(
    console: Console,
    *,
    backend: str | None = None,
    events: int = 12,
    orchestrated: int = 2,
    seed: int = 7,
    crash: bool = False,
) -> int:
    """Provision, run ``events`` bus steps and ``orchestrated`` state-machine steps, tear down.

    Returns 0 when every step took effect exactly once and every execution
    succeeded, else 1. Raises what ``open_backend`` raises for a backend that
    cannot be opened (nothing was made). On ``aws`` the demo's cost estimate is
    printed first (or raised with the refusal, without the opt-in).
    """
    if chosen_backend(backend) == "aws":
        require_opt_in("demo", say=lambda text: console.print(text, markup=False, highlight=False))
    started = time.perf_counter()
    opened = open_backend(backend)
    if "account" in opened.details:
        console.print(f"real AWS account {opened.details['account']}: every name starts with fl-demo-")
    topology = None
    try:
        with console.status(f"provisioning the topology on {opened.name}..."):
            topology = provision(opened, prefix=new_prefix("demo"))
        steps = demo_steps(events + orchestrated)
        faults = FaultPlan(crashes=(Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, steps[0].trace_id),)) if crash else None
        fleet = Fleet(opened, topology, model=FakeModel(seed=seed), faults=faults)
        lab_start = opened.clock.now()
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("publishing", total=len(steps))
            for step in steps[:events]:
                fleet.submit(step)
                progress.advance(task)
            for step in steps[events:]:
                fleet.orchestrate(step)
                progress.advance(task)
        with console.status("workers draining the queues..."):
            fleet.run(advance=max(q.visibility_timeout for q in topology.queues.values()) + 1)
            statuses = fleet.finish_executions()
        console.print(traces_table(fleet))
        summary = fleet.ledger.summary(fleet.submitted)
        console.print(
            f"{len(steps)} steps: {summary.effects} effects, {summary.duplicated} duplicated, "
            f"{summary.lost} lost, {len(fleet.unsettled())} unsettled"
        )
        console.print(f"lab time {opened.clock.now() - lab_start:.1f} s ({_lab_clock(opened.clock)}); "
                      f"wall time {time.perf_counter() - started:.1f} s", highlight=False)
        succeeded = all(status == "SUCCEEDED" for status in statuses.values())
        return 0 if summary.exactly_once and not fleet.unsettled() and succeeded else 1
    finally:
        if topology is not None:
            topology.teardown()
        opened.close()


def _lab_clock(clock: Clock) -> str:
    """How lab time ran: ``virtual clock, waits pass at once``, ``x60 faster than wall time`` or ``real clock``."""
    if clock.virtual:
        return "virtual clock, waits pass at once"
    return f"x{clock.scale} faster than wall time" if clock.scale > 1 else "real clock"


def demo_steps(count: int) -> list[Envelope]:
    """``count`` step requests, alternating between the researcher and coder classes."""
    classes = ("researcher", "coder")
    return [
        Envelope(
            trace_id=f"conv-{1000 + i}-step-1",
            conversation_id=str(1000 + i),
            step=1,
            agent_class=classes[i % len(classes)],
            payload={"question": f"task {i}"},
        )
        for i in range(count)
    ]


def traces_table(fleet: Fleet) -> Table:
    """Each trace's hops in order, and how long it took in lab time (the backend's clock)."""
    table = Table(title="each trace, hop by hop")
    table.add_column("trace_id")
    table.add_column("hops")
    table.add_column("took (lab time)", justify="right")
    for trace_id in fleet.tracer.trace_ids():
        hops = fleet.tracer.timeline(trace_id)
        path = " > ".join(h.name for h in hops)
        table.add_row(trace_id, path, f"{hops[-1].at - hops[0].at:.1f} s")
    return table
