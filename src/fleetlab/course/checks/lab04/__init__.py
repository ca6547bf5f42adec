"""Lab 04 checks: the callback worker (``callback``), the task's timers (``timeouts``), and a Catch
that survives a missed heartbeat (``catch``). Each module registers its check on import.

Step Functions timers run in real time on every backend, so every timer in
these checks is 1 to 3 s and a case runs its executions side by side.
"""

from fleetlab.course.checks.lab04 import callback, catch, timeouts

__all__ = ["callback", "catch", "timeouts"]
