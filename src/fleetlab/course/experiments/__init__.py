"""Experiments the labs run and the checks grade, on real (emulated) services: one module per lesson,
named as the lesson's modules are in ``display/`` and ``composition/`` (``fleetlab.course.labs``).

``delivery`` (redelivery races, lab 01), ``idempotency`` (an idempotent
consumer under at-least-once delivery, lab 02), ``poison`` (poison, budgets,
triage, redrive, batches, FIFO lanes, the waiting caller; lab 03),
``callback`` (scripted workers against real callback executions, lab 04),
``scaling`` (bursts on real queues and the fleet model, lab 05), ``replay``
(archives and replays, lab 06), ``chaos`` (the token governor's batch size
under a burst, lab 07; the chaos day itself is ``composition.chaos``). The
names below are the public surface a lab imports.
"""

from fleetlab.course.experiments import poison
from fleetlab.course.experiments.callback import (
    CallbackBench,
    Plan,
    answers,
    dies,
    fails,
    model_call_steps,
    percentile,
)
from fleetlab.course.experiments.chaos import batch_size_sweep
from fleetlab.course.experiments.delivery import race
from fleetlab.course.experiments.idempotency import deliver_under_chaos
from fleetlab.course.experiments.replay import COMPLETED_STEPS, LAB_TARGETS, ReplayBench, Target
from fleetlab.course.experiments.scaling import burst, capped, step_prices, trickle

__all__ = [
    "COMPLETED_STEPS",
    "LAB_TARGETS",
    "CallbackBench",
    "Plan",
    "ReplayBench",
    "Target",
    "answers",
    "batch_size_sweep",
    "burst",
    "capped",
    "deliver_under_chaos",
    "dies",
    "fails",
    "model_call_steps",
    "percentile",
    "poison",
    "race",
    "step_prices",
    "trickle",
]
