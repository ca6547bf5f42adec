"""A list that earlier notebook cells fill, and that says so when asked for an item it does not hold.

A demonstration cell reads ``parked(...)[0]`` or ``tracer.timeline("alert-8")[0]``;
run before the cells that park the message or run the trace, a plain list
raises a bare ``IndexError: list index out of range``. ``Filled`` raises
NotRunYet (an IndexError) naming what is empty and what to do.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, SupportsIndex, TypeVar, overload

from fleetlab.core.errors import NotRunYet

T = TypeVar("T")


class Filled(list[T]):
    """A list of ``what`` (``"the hops of trace 'alert-8'"``); an index it does not hold raises NotRunYet."""

    def __init__(self, items: Iterable[T], *, what: str) -> None:
        super().__init__(items)
        self.what = what

    @overload
    def __getitem__(self, index: SupportsIndex) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: Any) -> Any:
        try:
            return super().__getitem__(index)
        except IndexError:
            raise NotRunYet(f"no item [{index}] in {self.what}: it holds {len(self)}; "
                            "if the cells above fill it, run them first") from None
