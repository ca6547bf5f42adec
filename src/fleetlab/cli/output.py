"""How the ``fleetlab`` command writes to stdout: one width policy for every subcommand.

* On a terminal, rich fits each table to the terminal's width (long cells wrap).
* Anywhere else (a file, a pipe, a CI log) nothing wraps: every table is printed
  at its natural width, one line per row, so a log keeps names whole and each row
  stays greppable; no colours or spinners are written there either. A table of
  prose (the doctor's fidelity table) would be a thousand characters wide
  there: its command prints it as wrapped text instead (``fits_tables``).
* ``COLUMNS=N`` fixes the width in both cases.
"""

from __future__ import annotations

import os
from typing import IO

from rich.console import Console

# Wide enough that no table the CLI prints is ever wrapped; a table narrower than
# this is printed at its own width, not padded to it.
UNWRAPPED_WIDTH = 4096


def stdout_console(file: IO[str] | None = None) -> Console:
    """The console every subcommand prints to (``file`` defaults to stdout)."""
    console = Console(file=file)
    if console.is_terminal or os.environ.get("COLUMNS", "").strip():
        return console
    return Console(file=file, width=UNWRAPPED_WIDTH)


def fits_tables(console: Console) -> bool:
    """True when ``console`` fits a table to a width (a terminal, or ``COLUMNS``); False in a file or pipe."""
    return console.width < UNWRAPPED_WIDTH
