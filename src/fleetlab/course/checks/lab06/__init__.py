"""Lab 06 checks: who may receive replays, a rule that keeps them out, the window, the retry policy.
``pattern`` still registers all four while the package is being split."""

from fleetlab.course.checks.lab06 import pattern

__all__ = ["pattern"]
