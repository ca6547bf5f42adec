"""The chaos day: a seeded schedule of every fault at once, run on the whole fleet, graded on a scoreboard.

``config`` (``FleetConfig``: the knobs), ``facts`` (``DayFacts``: what
the day will bring, known beforehand), ``schedule`` (``ChaosSchedule``:
the faults from one seed), ``day`` (``run_chaos_day``), ``scoreboard``
(``Scoreboard``, ``Budgets``), ``scoring`` (reading a finished day into
it), ``series`` (the fleet sampled through the day), ``calls`` (counting
the AWS calls by operation) and ``sizing`` (the same fleet at real traffic:
the quota that binds first and a day's bill).
"""

from fleetlab.composition.chaos.config import FleetConfig
from fleetlab.composition.chaos.day import run_chaos_day
from fleetlab.composition.chaos.facts import DayFacts
from fleetlab.composition.chaos.schedule import ChaosSchedule
from fleetlab.composition.chaos.scoreboard import INVARIANTS, Budgets, Counts, Result, Scoreboard
from fleetlab.composition.chaos.series import DaySample
from fleetlab.composition.chaos.sizing import QuotaUse, Sizing, calls_per_step, mean_step_seconds, size_fleet

__all__ = ["INVARIANTS", "Budgets", "ChaosSchedule", "Counts", "DayFacts", "DaySample", "FleetConfig", "QuotaUse",
           "Result", "Scoreboard", "Sizing", "calls_per_step", "mean_step_seconds", "run_chaos_day", "size_fleet"]
