"""``fleetlab demo``: run steps through the whole pipeline and show each trace."""

from __future__ import annotations

import click

from fleetlab.cli.argtypes import NON_NEGATIVE_INT, POSITIVE_INT
from fleetlab.cli.options import backend_option
from fleetlab.cli.output import stdout_console
from fleetlab.course import demo


@click.command("demo", help="run events through the whole pipeline and show each trace")
@backend_option
@click.option("--events", type=POSITIVE_INT, default=12, help="steps published on the bus (default 12)")
@click.option("--orchestrated", type=NON_NEGATIVE_INT, default=2,
              help="steps dispatched by the state machine (default 2)")
@click.option("--seed", type=int, default=7, help="seed of the fake model (default 7)")
@click.option("--crash", is_flag=True, help="crash one worker after its effect, before the delete")
def command(backend: str | None, events: int, orchestrated: int, seed: int, crash: bool) -> int:
    return demo.run(stdout_console(), backend=backend, events=events, orchestrated=orchestrated, seed=seed,
                    crash=crash)
