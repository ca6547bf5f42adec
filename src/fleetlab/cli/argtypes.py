"""argparse value types shared by the ``fleetlab`` subcommands: each error names what was wrong."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from fleetlab.backends.sweep import check_prefix
from fleetlab.core.errors import InvalidInput


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


def positive_float(text: str) -> float:
    """A number > 0 (seconds, say)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number, got {text}")
    return value


def resource_prefix(text: str) -> str:
    """A resource-name prefix long enough to sweep by (``fl-01-3fa9c2-``)."""
    try:
        return check_prefix(text)
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(exc.problem + (f" ({exc.hint})" if exc.hint else "")) from None


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
