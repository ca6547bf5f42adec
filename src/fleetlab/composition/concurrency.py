"""Adaptive concurrency, AIMD as TCP does it: add one slot per success, halve on a throttle.

A complement to the token governor, not a replacement: it needs no
accounting, but it finds the limit only by brushing against it. The window
is a float (additive steps of less than one slot accumulate); ``limit`` is
its whole part, never below ``minimum`` nor above ``maximum``.
"""

from __future__ import annotations

from fleetlab.core.errors import InvalidInput


class AdaptiveConcurrency:
    """How many calls may run at once: +``increase`` per success, ×``decrease`` per throttle.

    Raises InvalidInput naming the field for a minimum below 1, a maximum
    below the minimum, an initial window outside them, an increase that is
    not positive, or a decrease outside (0, 1).
    """

    def __init__(self, *, initial: int, maximum: int, minimum: int = 1, increase: float = 1.0,
                 decrease: float = 0.5) -> None:
        if minimum < 1:
            raise InvalidInput("minimum", f"must be at least 1, got {minimum!r}")
        if maximum < minimum:
            raise InvalidInput("maximum", f"must be at least minimum ({minimum}), got {maximum!r}")
        if not minimum <= initial <= maximum:
            raise InvalidInput("initial", f"must be within {minimum}..{maximum}, got {initial!r}")
        if not increase > 0:
            raise InvalidInput("increase", f"must be positive, got {increase!r}")
        if not 0 < decrease < 1:
            raise InvalidInput("decrease", f"must be a factor in (0, 1), got {decrease!r}",
                               hint="0.5 halves the window on a throttle, as TCP does")
        self.minimum = minimum
        self.maximum = maximum
        self.increase = increase
        self.decrease = decrease
        self._window = float(initial)

    @property
    def limit(self) -> int:
        """Calls allowed at once now."""
        return int(self._window)

    def on_success(self) -> int:
        """A call went through: widen the window additively. Returns the new limit."""
        self._window = min(self.maximum, self._window + self.increase)
        return self.limit

    def on_throttle(self) -> int:
        """A throttle or an exhausted quota: shrink the window multiplicatively. Returns the new limit."""
        self._window = max(self.minimum, self._window * self.decrease)
        return self.limit
