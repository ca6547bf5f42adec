"""``fleetlab demo``: run steps through the whole pipeline and show each trace."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from fleetlab.cli.argtypes import non_negative_int, positive_int
from fleetlab.cli.options import add_backend_flag
from fleetlab.course import demo


def add_command(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="run events through the whole pipeline and show each trace")
    add_backend_flag(parser)
    parser.add_argument("--events", type=positive_int, default=12, help="steps published on the bus (default 12)")
    parser.add_argument("--orchestrated", type=non_negative_int, default=2,
                        help="steps dispatched by the state machine (default 2)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the fake model (default 7)")
    parser.add_argument("--crash", action="store_true", help="crash one worker after its effect, before the delete")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, console: Console) -> int:
    return demo.run(console, backend=args.backend, events=args.events, orchestrated=args.orchestrated,
                    seed=args.seed, crash=args.crash)
