"""The chaos day at bench scale: a 10,000-step seeded day on one backend, its counts and its wall time."""

from __future__ import annotations

from typing import Any

from fleetlab.backends.backend import open_backend
from fleetlab.composition import ChaosSchedule, FleetConfig, run_chaos_day

from fleetlab_instructor.bench.report import row

CHAOS_STEPS = 10_000
CHAOS_SEED = 20261202
CHAOS_GOAL = 60.0  # seconds on moto, this machine (issue 30)


def chaos_day(backend_name: str = "moto", steps: int = CHAOS_STEPS) -> dict[str, Any]:
    """Run the default fleet through a seeded chaos day of ``steps`` steps; its counts and wall time.

    ``error`` names the invariants that did not hold (a correct fleet should
    hold them all, so the figure would mean little).
    """
    backend = open_backend(backend_name)
    try:
        board = run_chaos_day(backend, FleetConfig(), ChaosSchedule.draw(CHAOS_SEED, steps))
    finally:
        backend.close()
    counts = board.counts
    broken = [result.name for result in board.invariants if not result.ok]
    goal = steps == CHAOS_STEPS and backend_name == "moto"
    return {
        "name": "chaos-day",
        "backend": backend_name,
        "measured": True,
        "steps": steps,
        "seed": CHAOS_SEED,
        "wall_seconds": counts.run_seconds,
        "figures": {name: value for name, value in vars(counts).items()} | {
            "api_calls_per_step": counts.api_calls_per_step, "crashes": dict(board.crashes)},
        "error": f"invariants broken: {', '.join(broken)}" if broken else "",
        "rows": [
            row(f"chaos day ({steps:,} steps, seed {CHAOS_SEED})", backend_name, counts.run_seconds, "s",
                goal=f"<= {CHAOS_GOAL:g} s" if goal else "", met=counts.run_seconds <= CHAOS_GOAL if goal else None),
            row("  lost / duplicated / hung", backend_name, counts.lost + counts.duplicated + counts.hung, "steps",
                note=f"lost {counts.lost}, duplicated {counts.duplicated}, hung {counts.hung}"),
            row("  parked (poison)", backend_name, counts.parked, "steps"),
            row("  traced, bus to delete", backend_name, counts.traced, "steps"),
            row("  spend", backend_name, counts.spend, "tokens"),
            row("  API calls per completed step", backend_name, round(counts.api_calls_per_step, 2), "calls"),
        ],
    }
