"""Spans of time in words, exactly: ``4 d 1 h``, never a rounded ``4.0 days``.

The library's tables and the checks' diagnoses write durations the same way, so two
different spans never read alike.
"""

from __future__ import annotations

_UNITS = (("d", 86_400), ("h", 3_600), ("min", 60))


def duration(span: float) -> str:
    """``4 d 1 h`` for 349200, ``1 min 30 s`` for 90, ``0.5 s``: exact, largest unit first."""
    if span < 0:
        return f"-{duration(-span)}"
    parts = []
    rest = span
    for unit, size in _UNITS:
        whole = int(rest // size)
        if whole:
            parts.append(f"{whole} {unit}")
            rest -= whole * size
    rest = round(rest, 3)
    if rest or not parts:
        parts.append(f"{rest:g} s")
    return " ".join(parts)
