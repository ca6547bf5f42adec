"""Lab 07 checks: configure the whole fleet for a day from its facts (``configure``), and repair a
configuration from its chaos day's scoreboard (``defects``). Each module registers its check on import;
both run short seeded chaos days (``common``) on the check's backend."""

from fleetlab.course.checks.lab07 import configure, defects

__all__ = ["configure", "defects"]
