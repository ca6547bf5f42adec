"""The chaos day: a seeded schedule of every fault at once, run on the whole fleet, graded on a scoreboard.

``config`` (``FleetConfig``: the knobs), ``facts`` (``DayFacts``: what
the day will bring, known beforehand), ``schedule`` (``ChaosSchedule``:
the faults from one seed), ``day`` (``run_chaos_day``), ``scoreboard``
(``Scoreboard``, ``Budgets``), ``scoring`` (reading a finished day into
it) and ``calls`` (counting the AWS calls by operation).
"""

from fleetlab.composition.chaos.config import FleetConfig
from fleetlab.composition.chaos.day import run_chaos_day
from fleetlab.composition.chaos.facts import DayFacts
from fleetlab.composition.chaos.schedule import ChaosSchedule
from fleetlab.composition.chaos.scoreboard import INVARIANTS, Budgets, Counts, Result, Scoreboard

__all__ = ["INVARIANTS", "Budgets", "ChaosSchedule", "Counts", "DayFacts", "FleetConfig", "Result", "Scoreboard",
           "run_chaos_day"]
