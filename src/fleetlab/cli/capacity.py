"""``fleetlab capacity``: a fleet's in-flight work and API calls per second and per day."""

from __future__ import annotations

import json

import click
from rich import box
from rich.table import Table

from fleetlab.cli.argtypes import POSITIVE_FLOAT, POSITIVE_INT
from fleetlab.cli.output import stdout_console
from fleetlab.composition.scaling.capacity import IN_FLIGHT_CAP, Capacity, capacity
from fleetlab.core.errors import InvalidInput


@click.command(
    "capacity",
    short_help="in-flight steps (Little's law) and API calls per second and per day for a fleet",
    help="Capacity arithmetic for a fleet of agent steps: steps per minute, SQS calls, completion "
    "events and PutEvents requests, idempotency writes, in-flight steps against a standard queue's "
    "~120,000 cap, and SendTaskSuccess against its refill rate.",
)
@click.option("--conversations-per-minute", type=POSITIVE_FLOAT, required=True, metavar="C",
              help="new conversations per minute")
@click.option("--steps", type=POSITIVE_INT, required=True, metavar="S", help="steps per conversation")
@click.option("--step-seconds", type=POSITIVE_FLOAT, required=True, metavar="T", help="average seconds per step")
@click.option("--region", default="us-east-1",
              help="AWS region: sets the SendTaskSuccess refill rate (default us-east-1)")
@click.option("--json", "as_json", is_flag=True, help="print machine-readable JSON")
def command(conversations_per_minute: float, steps: int, step_seconds: float, region: str, as_json: bool) -> int:
    try:
        cap = capacity(conversations_per_minute, steps, step_seconds, region=region)
    except InvalidInput as exc:  # the library names its argument; the learner typed the flag
        raise InvalidInput("--" + exc.field.replace("_", "-"), exc.problem, hint=exc.hint) from None
    if as_json:
        print(json.dumps(cap.to_json(), indent=2))
        return 0
    stdout_console().print(capacity_table(cap))
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
