"""``fleetlab cost``: what a lab would cost on real AWS, without opening any backend."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from fleetlab.composition import cost


def add_command(subparsers: Any) -> None:
    """Register ``cost`` on the ``fleetlab`` command's subparsers."""
    parser = subparsers.add_parser(
        "cost", help="estimate what a lab costs on real AWS (nothing is opened or made)",
        description="Print the real-AWS cost estimate that FLEETLAB_BACKEND=aws shows before it makes anything.",
    )
    parser.add_argument("subjects", nargs="*", metavar="LAB",
                        help="lab ids (00, 01, ...), demo or contract (default: every one counted)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, console: Console) -> int:
    subjects = args.subjects or list(cost.load_calls()["subjects"])
    for number, subject in enumerate(subjects):
        if number:
            console.print()
        console.print(cost.estimate(subject).text(), markup=False, highlight=False)
    return 0
