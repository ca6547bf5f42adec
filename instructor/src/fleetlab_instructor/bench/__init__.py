"""``fleetlab bench``: the course's performance figures, measured and saved, never asserted.

These are benchmarks, never timed tests: each figure is printed next to its
goal and saved, and nothing fails on it.

Each measurement is a small function that opens what it needs, measures,
cleans up, and returns a plain dict (JSON-ready) holding table ``rows`` and
its details; they compose in ``run`` and each can be called alone:

=================== ===========================================================
``throughput``      steps/s through bus -> rule -> queue -> worker -> store
``overhead``        one step through the library vs the same boto3 calls raw,
                    side by side in alternating blocks
``clock``           simulated seconds per wall second of a one-worker fleet
                    slice with realistic step latency (virtual clock), and
                    the wall time of a simulated fleet day
``demo``            wall time of ``fleetlab demo`` per backend
``chaos``           a 10,000-step seeded chaos day on moto: lost, duplicated,
                    parked, hung, traced, spend, API calls per step, run time
``labs``            headless run time of every lab notebook (the grader's kernel runner)
``grade``           ``fleetlab grade`` throughput over the solution and student notebooks
=================== ===========================================================

measure → report:

* ``throughput``: the message loop's throughput, the virtual clock's ratio,
  the simulated fleet day (the time-stepped model of ``fleetlab.composition.scaling``)
  and the demo's wall time.
* ``overhead``: the library vs raw boto3, side by side, with the botocore
  call counter and the raw step.
* ``chaos``: the chaos day (``fleetlab.composition.run_chaos_day``) at bench scale.
* ``notebooks``: lab run times (``grading.executor.NotebookKernel``, timed per cell) and grading
  throughput.
* ``scaffold``: what the backend measurements stand on: a backend with a
  throwaway topology, and a model too fast to dominate.
* ``report``: result rows, the rich table, the JSON document, machine info.
* ``suite``: the measurement plan, ``run`` and the course total (``fleetlab bench`` is in ``cli.bench``).

Only one backend is open at a time in this process: every measurement opens
its backend, uses it and closes it before the next starts. Timings use
``time.perf_counter``, which the virtual clock (time-machine) does not move.
Goals come from the course's Targets table; a missed goal is reported, it
does not fail the command.
"""

from fleetlab_instructor.bench.chaos import chaos_day
from fleetlab_instructor.bench.notebooks import grade_throughput, lab_goal, lab_run_times
from fleetlab_instructor.bench.overhead import CallCounter, library_overhead, overhead_body, raw_step, send_bodies
from fleetlab_instructor.bench.scaffold import provisioned
from fleetlab_instructor.bench.suite import MEASUREMENTS, course_total, guarded, measurement_plan, run
from fleetlab_instructor.bench.throughput import (
    demo_wall_time,
    pipeline_throughput,
    simulated_fleet_day,
    virtual_clock_ratio,
)

__all__ = [
    "MEASUREMENTS",
    "CallCounter",
    "chaos_day",
    "course_total",
    "demo_wall_time",
    "grade_throughput",
    "guarded",
    "lab_goal",
    "lab_run_times",
    "library_overhead",
    "measurement_plan",
    "overhead_body",
    "pipeline_throughput",
    "provisioned",
    "raw_step",
    "run",
    "send_bodies",
    "simulated_fleet_day",
    "virtual_clock_ratio",
]
