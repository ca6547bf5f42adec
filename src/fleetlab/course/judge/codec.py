"""What crosses between the judge and an answer's process, and how it is read back (``Peer`` uses it).

A message is pickled with no globals at all: ``loads`` refuses every class
and function (``DataOnly``), so reading what the learner's process sent
runs none of its code. Plain values travel as themselves; datetimes and
decimals as tagged lists (``TIME_TAGS``). Only fleetlab's frozen dataclasses
(by their constructors), named tuples and enums are rebuilt as themselves,
and exceptions of Python's, fleetlab's, botocore's and Powertools' classes
(their state set as pickle sets it, no constructor run); an exception of
any other class becomes a ``RemoteError`` of the same name.
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime
import decimal
import enum
import numbers
import pickle
import sys
import traceback
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.course.grading.elsewhere import AnswerProcessLost

MAX_DEPTH = 200
PLAIN = (type(None), bool, int, float, str, bytes)
LIBRARIES = ("fleetlab.", "botocore.", "aws_lambda_powertools.")


class RemoteFailed(AnswerProcessLost):
    """The other process ended or sent what cannot be read: nothing more can be asked of it."""


class RemoteError(Exception):
    """An exception of a class that cannot be rebuilt here; its class is named as the original was."""


class DataOnly(pickle.Unpickler):
    """Reads plain pickled data and refuses every class and function: loading runs nothing of the sender's."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name} is not data")


ORIGIN = "__fleetlab_origin__"
"""Set on a client or an exception that stands for the other side's object: ``(peer token, its id there)``."""


def whole(value: Any) -> int:
    if type(value) is not int:
        raise RemoteFailed("the other process sent an object id that is not a whole number")
    return value


# --- what travels by value ----------------------------------------------------------------------------------------


def encode_time_or_decimal(value: Any) -> list[Any]:
    if isinstance(value, datetime.datetime):
        return ["DT", value.isoformat()]
    if isinstance(value, datetime.date):
        return ["DA", value.isoformat()]
    if isinstance(value, datetime.timedelta):
        return ["TD", value.days, value.seconds, value.microseconds]
    return ["DE", str(value)]


def time_delta(days: Any, seconds: Any, microseconds: Any) -> datetime.timedelta:
    return datetime.timedelta(days=whole(days), seconds=whole(seconds), microseconds=whole(microseconds))


TIME_TAGS: dict[str, Callable[..., Any]] = {
    "DT": lambda text: datetime.datetime.fromisoformat(str(text)),
    "DA": lambda text: datetime.date.fromisoformat(str(text)),
    "TD": time_delta,
    "DE": lambda text: decimal.Decimal(str(text)),
}


def class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def in_fleetlab(cls: type) -> bool:
    return cls.__module__ == "fleetlab" or cls.__module__.startswith("fleetlab.")


def library_enum(cls: type) -> bool:
    return issubclass(cls, enum.Enum) and in_fleetlab(cls)


def library_value(cls: Any) -> bool:
    """A frozen dataclass of fleetlab's: a value, rebuilt on the other side by its own constructor."""
    return (isinstance(cls, type) and dataclasses.is_dataclass(cls) and in_fleetlab(cls)
            and cls.__dataclass_params__.frozen)


def loaded_class(module: str, qualname: str) -> type | None:
    """The class ``module.qualname`` from a module already imported (nothing is imported), else None."""
    value: Any = builtins if module == "builtins" else sys.modules.get(module)
    for part in qualname.split("."):
        value = getattr(value, part, None)
    return value if isinstance(value, type) else None


def library_class(path: Any, base: type | None) -> Any:
    """The public class ``module:qualname`` of fleetlab's, from a module already imported (nothing is imported)."""
    module, _, qualname = str(path).partition(":")
    private = any(part.startswith("_") for part in qualname.split("."))  # a private name, or a walk past one
    value = None if private else loaded_class(module, qualname)
    if value is None or not in_fleetlab(value) or (base is not None and not issubclass(value, base)):
        raise RemoteFailed(f"{path} is not a class of fleetlab's that travels by value")
    return value


def exception_of(module: str, qualname: str, args: list[Any], message: str) -> BaseException:
    """An exception of the class ``module.qualname`` (with these ``args``) when it is a builtin one or one of
    ``LIBRARIES``, else a RemoteError of that name; one that stops a process (SystemExit) is always a RemoteError."""
    cls = exception_class(module, qualname)
    if issubclass(cls, RemoteError):
        return cls(message)
    error = cls.__new__(cls, *args)  # its state is set below, as pickle does: no constructor of its runs
    error.args = tuple(args)
    return error


def exception_class(module: str, qualname: str) -> type[BaseException]:
    """The exception class ``module.qualname`` when it may be rebuilt here, else a RemoteError class so named."""
    cls = rebuildable_exception(module, qualname)
    if cls is not None:
        return cls
    name = qualname.rpartition(".")[2] or "Exception"
    kind = _remote_error_classes.get((module, name))
    if kind is None:
        kind = type(name if name.isidentifier() else "RemoteError", (RemoteError,),
                    {"__module__": module, "__qualname__": name})
        _remote_error_classes[(module, name)] = kind
    return kind


def base_container(value: Any) -> Any:
    for base in (dict, list, tuple, frozenset, set):
        if isinstance(value, base):
            return base(value)
    raise TypeError(type(value).__name__)


def plain_number(value: Any) -> int | float | None:
    """A number of another type (numpy's) as Python's own int or float, or None when it is neither."""
    try:
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
    except Exception:  # a number whose conversion fails travels as a proxy
        return None
    return None


_remote_error_classes: dict[tuple[str, str], type[RemoteError]] = {}


def rebuildable_exception(module: str, qualname: str) -> type[Exception] | None:
    if module not in ("builtins", "fleetlab") and not module.startswith(LIBRARIES):
        return None
    found = loaded_class(module, qualname)
    if found is not None and issubclass(found, Exception) and not issubclass(found, ClientError):
        return found
    return None


def frame_summaries(frames: Any) -> list[traceback.FrameSummary]:
    """The frames the other side sent, rebuilt. Raises RemoteFailed for anything but a list of 4-item frames."""
    try:
        return [traceback.FrameSummary(str(f), int(n), str(name), line=str(line)) for f, n, name, line in frames]
    except (TypeError, ValueError) as exc:
        raise RemoteFailed(f"the other process sent frames that are not this protocol's ({exc})") from None
