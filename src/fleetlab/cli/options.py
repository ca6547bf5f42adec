"""Options several subcommands share."""

from __future__ import annotations

import argparse

from fleetlab.backends.backend import BACKEND_NAMES


def add_backend_flag(parser: argparse.ArgumentParser) -> None:
    """``--backend NAME``: which backend to use (default ``$FLEETLAB_BACKEND`` or moto)."""
    parser.add_argument("--backend", choices=BACKEND_NAMES, default=None,
                        help="backend to use (default: $FLEETLAB_BACKEND or moto)")
