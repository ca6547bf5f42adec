"""``fleetlab keda-size``: what KEDA and the HPA do with a ScaledObject at one queue reading, and why."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from fleetlab.cli.argtypes import non_negative_int
from fleetlab.cli.options import add_backend_flag
from fleetlab.composition.scaling.manifest import load_scaled_object
from fleetlab.composition.scaling.scaler import QueueAttributes
from fleetlab.composition.scaling.sizing import Sizing, size
from fleetlab.core.errors import InvalidInput


def add_command(subparsers: Any) -> None:
    """Register ``keda-size`` on the ``fleetlab`` command's subparsers."""
    parser = subparsers.add_parser(
        "keda-size",
        help="what KEDA and the HPA do with a ScaledObject at one queue reading, and why",
        description="Read a ScaledObject (aws-sqs-queue trigger) and explain, for one reading of the queue, "
        "the metric, whether the scaler is active, the HPA's target and what limits it. Give the counts "
        "(--visible, --in-flight, --delayed) or read them live (--queue-url).",
    )
    parser.add_argument("manifest", type=Path, metavar="SCALEDOBJECT.yaml", help="the ScaledObject manifest")
    parser.add_argument("--visible", type=non_negative_int, help="ApproximateNumberOfMessages")
    parser.add_argument("--in-flight", type=non_negative_int, help="ApproximateNumberOfMessagesNotVisible")
    parser.add_argument("--delayed", type=non_negative_int, help="ApproximateNumberOfMessagesDelayed (default 0)")
    parser.add_argument("--queue-url", help="read the three counts live from this queue instead")
    add_backend_flag(parser)
    parser.add_argument("--current", type=non_negative_int,
                        help="replicas running now: adds the tolerance band, the rate limit and where it settles")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, console: Console) -> int:
    scaled = load_scaled_object(args.manifest)
    attributes, source = reading(args)
    sizing = size(scaled, attributes, args.current)
    if args.json:
        print(json.dumps({
            "scaled_object": scaled.name,
            "queue": args.queue_url or scaled.trigger.queue_url,
            "reading": {"source": source, "visible": attributes.visible, "in_flight": attributes.in_flight,
                        "delayed": attributes.delayed},
            "warnings": list(scaled.warnings),
            **sizing.to_json(),
        }, indent=2))
        return 0
    for warning in scaled.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    console.print(explanation(scaled.name, source, sizing))
    return 0


def reading(args: argparse.Namespace) -> tuple[QueueAttributes, str]:
    """The counts from the flags, or read live; InvalidInput names a wrong combination of flags."""
    counts = {"--visible": args.visible, "--in-flight": args.in_flight, "--delayed": args.delayed}
    given = [flag for flag, value in counts.items() if value is not None]
    if args.queue_url:
        if given:
            raise InvalidInput("--queue-url", f"reads the counts live; drop {', '.join(given)}")
        return read_live(args.queue_url, args.backend), f"live from {args.queue_url}"
    if args.backend:
        raise InvalidInput("--backend", "is only used with --queue-url")
    missing = [flag for flag in ("--visible", "--in-flight") if counts[flag] is None]
    if missing:
        raise InvalidInput(missing[0], "is required (or read the queue live with --queue-url URL)")
    return QueueAttributes(args.visible, args.in_flight, args.delayed or 0), "flags"


def read_live(queue_url: str, backend_name: str | None) -> QueueAttributes:
    """GetQueueAttributes on the chosen backend (default ``$FLEETLAB_BACKEND`` or moto)."""
    from fleetlab.backends.backend import open_backend
    from fleetlab.composition.scaling.realloop import read_queue

    backend = open_backend(backend_name)
    try:
        return read_queue(backend.client("sqs"), queue_url)
    except InvalidInput:
        raise
    except Exception as exc:  # botocore raises many unrelated types; the message says which
        raise InvalidInput("--queue-url", f"could not read {queue_url} on {backend.name}: {exc}") from None
    finally:
        backend.close()


def explanation(name: str, source: str, sizing: Sizing) -> Table:
    """The explanation as a two-column table: each step and what it decided."""
    table = Table(title=f"{name}: {sizing.desired} replicas ({source})", box=box.SIMPLE, title_justify="left",
                  show_header=False)
    table.add_column("step", style="bold", no_wrap=True)
    table.add_column("what happens")
    for step in sizing.steps:
        table.add_row(step.name, step.text)
    return table
