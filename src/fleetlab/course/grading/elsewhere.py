"""An answer that runs in another process, as the grading package sees it: the hooks the judge package fills.

In a graded run the learner's answer lives in a process of its own and the
harness gets proxies of it (``fleetlab.course.judge``). The grading package
never imports that package; it reads the answer's process through this
module: an object that stands for one elsewhere (``Elsewhere``), the error
a call raises when that process is gone (``AnswerProcessLost``), and what
settles every connection before a check counts dropped timers (``SETTLERS``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fleetlab.core.errors import FleetlabError

ENDED = ("your code stopped the process that ran it ({why}); a check calls your code, so it must return "
         "(or raise), never exit or kill its process")
"""The diagnosis of a call that ``AnswerProcessLost``: the learner's process is gone or broke the protocol."""


class AnswerProcessLost(FleetlabError):
    """The process that ran the answer ended, or sent what cannot be read: nothing more can be asked of it."""


class Elsewhere:
    """Stands for an object that lives in another process (the judge's proxies are these)."""

    __slots__ = ()

    def _fleetlab_process(self) -> int | None:
        """The pid of the process the object lives in, when known."""
        return None


def process_of(value: Any) -> int | None:
    """The pid of the process ``value`` lives in when it stands for an object elsewhere, else None."""
    return value._fleetlab_process() if isinstance(value, Elsewhere) else None


SETTLERS: list[Callable[[], None]] = []
"""Called by ``settle``: each brings its connections to rest (the judge package adds its peers')."""


def settle() -> None:
    """Let every connection to another process finish releasing what it holds."""
    for settler in SETTLERS:
        settler()
