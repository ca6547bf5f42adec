"""``fleetlab keda-size``: what KEDA and the HPA do with a ScaledObject at one queue reading, and why."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich import box
from rich.table import Table

from fleetlab.cli.argtypes import NON_NEGATIVE_INT
from fleetlab.cli.options import backend_option
from fleetlab.cli.output import stdout_console
from fleetlab.composition.scaling.manifest import load_scaled_object
from fleetlab.composition.scaling.scaler import QueueAttributes
from fleetlab.composition.scaling.sizing import Sizing, size
from fleetlab.core.errors import InvalidInput


@click.command(
    "keda-size",
    short_help="what KEDA and the HPA do with a ScaledObject at one queue reading, and why",
    help="Read a ScaledObject (aws-sqs-queue trigger) and explain, for one reading of the queue, "
    "the metric, whether the scaler is active, the HPA's target and what limits it. Give the counts "
    "(--visible, --in-flight, --delayed) or read them live (--queue-url).",
)
@click.argument("manifest", type=click.Path(path_type=Path), metavar="SCALEDOBJECT.yaml",
                help="the ScaledObject manifest")
@click.option("--visible", type=NON_NEGATIVE_INT, help="ApproximateNumberOfMessages")
@click.option("--in-flight", type=NON_NEGATIVE_INT, help="ApproximateNumberOfMessagesNotVisible")
@click.option("--delayed", type=NON_NEGATIVE_INT, help="ApproximateNumberOfMessagesDelayed (default 0)")
@click.option("--queue-url", help="read the three counts live from this queue instead")
@backend_option
@click.option("--current", type=NON_NEGATIVE_INT,
              help="replicas running now: adds the tolerance band, the rate limit and where it settles")
@click.option("--json", "as_json", is_flag=True, help="print machine-readable JSON")
def command(manifest: Path, visible: int | None, in_flight: int | None, delayed: int | None,
            queue_url: str | None, backend: str | None, current: int | None, as_json: bool) -> int:
    scaled = load_scaled_object(manifest)
    counts = {"--visible": visible, "--in-flight": in_flight, "--delayed": delayed}
    attributes, source = reading(counts, queue_url, backend)
    sizing = size(scaled, attributes, current)
    if as_json:
        print(json.dumps({
            "scaled_object": scaled.name,
            "queue": queue_url or scaled.trigger.queue_url,
            "reading": {"source": source, "visible": attributes.visible, "in_flight": attributes.in_flight,
                        "delayed": attributes.delayed},
            "warnings": list(scaled.warnings),
            **sizing.to_json(),
        }, indent=2))
        return 0
    console = stdout_console()
    for warning in scaled.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    console.print(explanation(scaled.name, source, sizing))
    return 0


def reading(counts: dict[str, int | None], queue_url: str | None, backend: str | None) -> tuple[QueueAttributes, str]:
    """The counts from the flags (``--visible``, ``--in-flight``, ``--delayed``), or read live from ``queue_url``.

    InvalidInput names a wrong combination of flags.
    """
    given = [flag for flag, value in counts.items() if value is not None]
    if queue_url:
        if given:
            raise InvalidInput("--queue-url", f"reads the counts live; drop {', '.join(given)}")
        return read_live(queue_url, backend), f"live from {queue_url}"
    if backend:
        raise InvalidInput("--backend", "is only used with --queue-url")
    missing = [flag for flag in ("--visible", "--in-flight") if counts[flag] is None]
    if missing:
        raise InvalidInput(missing[0], "is required (or read the queue live with --queue-url URL)")
    return QueueAttributes(counts["--visible"], counts["--in-flight"], counts["--delayed"] or 0), "flags"


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
