"""Lab 01 checks: sizing the visibility timeout (``visibility``), and a heartbeat that keeps a
long step's message hidden (``heartbeat``). Each module registers its check on import."""

from fleetlab.course.checks.lab01 import heartbeat, visibility

__all__ = ["heartbeat", "visibility"]
