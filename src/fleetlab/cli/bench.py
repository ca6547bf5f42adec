"""``fleetlab bench``: measure throughput, overhead, the virtual clock and lab times; save JSON."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from ..aws.backends import BACKEND_NAMES
from ..bench.suite import DEFAULT_BACKENDS, DEFAULT_OUT, MEASUREMENTS
from ..bench.suite import run as run_suite
from .argtypes import choice_list, positive_int


def add_command(subparsers: Any) -> None:
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


def run(args: argparse.Namespace, console: Console) -> int:
    return run_suite(console, only=args.only, backends=args.backends, steps=args.steps, out=args.out)
