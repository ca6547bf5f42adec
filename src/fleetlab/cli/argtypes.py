"""argparse value types shared by the ``fleetlab`` subcommands: each error names what was wrong."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence


def non_negative_int(text: str) -> int:
    """A whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def positive_int(text: str) -> int:
    """A whole number >= 1."""
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def positive_number(text: str) -> float:
    """A number > 0 (decimals allowed)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def choice_list(allowed: Sequence[str], what: str) -> Callable[[str], tuple[str, ...]]:
    """A comma-separated list drawn from ``allowed`` (duplicates dropped, order kept)."""

    def parse(text: str) -> tuple[str, ...]:
        names = [part.strip() for part in text.split(",") if part.strip()]
        unknown = [name for name in names if name not in allowed]
        if unknown or not names:
            shown = ", ".join(map(repr, unknown)) or repr(text)
            raise argparse.ArgumentTypeError(f"unknown {what} {shown}; choose from {', '.join(allowed)}")
        return tuple(dict.fromkeys(names))

    return parse
