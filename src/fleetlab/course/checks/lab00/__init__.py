"""Lab 00 checks: name the three planes of the reference topology (``planes``). The module
registers its check on import."""

from fleetlab.course.checks.lab00 import planes

__all__ = ["planes"]
