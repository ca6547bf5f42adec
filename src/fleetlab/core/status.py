"""The base of fleetlab's status vocabularies (worker outcomes, cell runs, redrive methods, check results).

A ``Status`` is a ``StrEnum``: it compares equal to its plain string
(``outcome.status == "done"``), prints as it, and shows as it in a list, so a
notebook printing ``[o.status for o in outcomes]`` reads ``['done']``.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """A status that behaves as its string value everywhere a learner sees it."""

    def __repr__(self) -> str:
        return repr(self.value)
