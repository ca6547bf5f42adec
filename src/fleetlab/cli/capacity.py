"""``fleetlab capacity``: a fleet's in-flight work and API calls per second and per day."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from fleetlab.cli.argtypes import positive_float, positive_int
from fleetlab.composition.scaling.capacity import IN_FLIGHT_CAP, Capacity, capacity


def add_command(subparsers: Any) -> None:
    """Register ``capacity`` on the ``fleetlab`` command's subparsers."""
    parser = subparsers.add_parser(
        "capacity",
        help="in-flight steps (Little's law) and API calls per second and per day for a fleet",
        description="Capacity arithmetic for a fleet of agent steps: steps per minute, SQS calls, completion "
        "events and PutEvents requests, idempotency writes, in-flight steps against a standard queue's "
        "~120,000 cap, and SendTaskSuccess against its refill rate.",
    )
    parser.add_argument("--conversations-per-minute", type=positive_float, required=True, metavar="C",
                        help="new conversations per minute")
    parser.add_argument("--steps", type=positive_int, required=True, metavar="S", help="steps per conversation")
    parser.add_argument("--step-seconds", type=positive_float, required=True, metavar="T",
                        help="average seconds per step")
    parser.add_argument("--region", default="us-east-1",
                        help="AWS region: sets the SendTaskSuccess refill rate (default us-east-1)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, console: Console) -> int:
    cap = capacity(args.conversations_per_minute, args.steps, args.step_seconds, region=args.region)
    if args.json:
        print(json.dumps(cap.to_json(), indent=2))
        return 0
    console.print(capacity_table(cap))
    return 0


def capacity_table(cap: Capacity) -> Table:
    """One row per figure: per second, per day, and what it is measured against."""
    title = (f"{cap.conversations_per_minute:g} conversations/min x {cap.steps_per_conversation} steps "
             f"x {cap.step_seconds:g} s")
    table = Table(title=title, box=box.SIMPLE, title_justify="left")
    for column, justify in (("figure", "left"), ("per second", "right"), ("per day", "right"), ("against", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    table.add_row("steps", _n(cap.steps_per_second), _n(cap.steps_per_day), f"{_n(cap.steps_per_minute)} per minute")
    table.add_row("SQS calls (receive + delete)", _n(cap.sqs_calls_per_second), _n(cap.sqs_calls_per_day),
                  "2 per step")
    table.add_row("completion events", _n(cap.steps_per_second), _n(cap.completion_events_per_day), "1 per step")
    table.add_row("PutEvents requests", _n(cap.put_events_requests_per_day / 86_400),
                  _n(cap.put_events_requests_per_day), "10 entries a request")
    table.add_row("idempotency writes", _n(cap.steps_per_second), _n(cap.idempotency_writes_per_day), "1 per step")
    table.add_row("SendTaskSuccess", _n(cap.callbacks_per_second), "-",
                  f"{cap.callback_share:.0%} of {_n(cap.callback_refill_per_second)}/s refill in {cap.region} "
                  f"({cap.callback_headroom:.1f}x headroom)")
    table.add_row("in-flight steps (Little's law)", "-", "-",
                  f"{_n(cap.in_flight_steps)} = {cap.in_flight_share:.1%} of the {IN_FLIGHT_CAP:,} cap")
    table.caption = f"{cap.calls_per_step:g} API calls per step (+1 SendTaskSuccess for an orchestrated step)"
    return table


def _n(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 or value == int(value) else f"{value:,.2f}"
