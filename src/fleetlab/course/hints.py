"""The hint a cell run before the cells it needs gets: run the cells above first.

A demonstration cell reads what cells above it made. Run too early, it fails
with a bare ``IndexError``, ``StopIteration`` or ``NameError``. The lab's own
lists say what is empty (``core.filled``); for the rest, the lab session
(``fleetlab.start``) installs ``install``'s handler in IPython, which shows
such an error's traceback with ``HINT`` as a note under it. The error stays
what it was: only its display changes.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from fleetlab.core.errors import NotRunYet

OUT_OF_ORDER = (IndexError, StopIteration, NameError)
HINT = ("hint: if this cell uses what cells above it make, run the cells above first "
        "(Run > Run All Above Selected Cell)")


def install(shell: Any) -> bool:
    """Show ``OUT_OF_ORDER`` errors in ``shell`` (an IPython shell) with ``HINT``.

    Leaves a custom handler something else installed in place; True when the hint's handler is installed.
    """
    if shell.custom_exceptions and shell.custom_exceptions != OUT_OF_ORDER:
        return False
    shell.set_custom_exc(OUT_OF_ORDER, show_with_hint)
    return True


def show_with_hint(shell: Any, etype: type[BaseException], value: BaseException, tb: TracebackType | None,
                   tb_offset: int | None = None) -> None:
    """IPython's custom exception handler: ``value``'s usual traceback, ``HINT`` noted under it.

    A NotRunYet already says what to do and is shown as it is.
    """
    if not isinstance(value, NotRunYet) and HINT not in getattr(value, "__notes__", ()):
        value.add_note(HINT)
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)
