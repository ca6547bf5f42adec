"""``python -m fleetlab.grading progress|assign|grade``: the grading commands on their own."""

from __future__ import annotations

import argparse
import sys

from .commands import add_commands, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fleetlab.grading", description="fleetlab's grading commands")
    add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
