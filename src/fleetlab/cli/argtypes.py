"""Click parameter types shared by the ``fleetlab`` subcommands: each error names the flag and what was wrong.

A type converts the text typed on the command line; a default written in the
code is already of the right type and passes through as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from fleetlab.backends.sweep import check_prefix
from fleetlab.core.errors import InvalidInput


class NonNegativeInt(click.ParamType):
    """A whole number >= 0."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            number = int(value)
        except ValueError:
            self.fail(f"must be a whole number, got {value!r}", param, ctx)
        if number < 0:
            self.fail(f"must not be negative, got {value}", param, ctx)
        return number


class PositiveInt(NonNegativeInt):
    """A whole number >= 1."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        number = super().convert(value, param, ctx)
        if number == 0:
            self.fail(f"must be at least 1, got {value}", param, ctx)
        return number


class PositiveFloat(click.ParamType):
    """A number > 0 and finite (seconds, say)."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            number = float(value)
        except ValueError:
            self.fail(f"must be a number, got {value!r}", param, ctx)
        if not number > 0 or number == float("inf"):
            self.fail(f"must be a positive, finite number, got {value}", param, ctx)
        return number


class ResourcePrefix(click.ParamType):
    """A resource-name prefix long enough to sweep by (``fl-01-3fa9c2-``)."""

    name = "prefix"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return check_prefix(value)
        except InvalidInput as exc:
            self.fail(exc.problem + (f" ({exc.hint})" if exc.hint else ""), param, ctx)


class ChoiceList(click.ParamType):
    """A comma-separated list drawn from ``allowed`` (duplicates dropped, order kept); ``what`` names one item."""

    name = "list"

    def __init__(self, allowed: Sequence[str], what: str) -> None:
        self.allowed = tuple(allowed)
        self.what = what

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, ...]:
        if not isinstance(value, str):
            return tuple(value)
        names = [part.strip() for part in value.split(",") if part.strip()]
        unknown = [name for name in names if name not in self.allowed]
        if unknown or not names:
            shown = ", ".join(map(repr, unknown)) or repr(value)
            self.fail(f"unknown {self.what} {shown}; choose from {', '.join(self.allowed)}", param, ctx)
        return tuple(dict.fromkeys(names))


NON_NEGATIVE_INT = NonNegativeInt()
POSITIVE_INT = PositiveInt()
POSITIVE_FLOAT = PositiveFloat()
RESOURCE_PREFIX = ResourcePrefix()
