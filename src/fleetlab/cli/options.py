"""Options several subcommands share."""

from __future__ import annotations

import click

from fleetlab.backends.backend import BACKEND_NAMES

backend_option = click.option(
    "--backend", type=click.Choice(BACKEND_NAMES), default=None,
    help="backend to use (default: $FLEETLAB_BACKEND or moto)",
)
"""``--backend NAME``: which backend to use (default ``$FLEETLAB_BACKEND`` or moto); None when not given."""
