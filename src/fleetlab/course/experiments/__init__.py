"""Experiments the labs run and the checks grade, on real (emulated) services, one module per lesson.

``delivery`` (redelivery races and chaos, labs 01 and 02), ``poison``
(poison, budgets, triage, redrive, batches, FIFO lanes, the waiting caller;
lab 03), ``callbacks`` (scripted workers against real callback executions,
lab 04), ``autoscaling`` (bursts on real queues and the fleet model, lab 05),
``replay`` (archives and replays, lab 06), ``governor`` (the token
governor's batch size under a burst, lab 07). The names below are the public
surface a lab imports.
"""

from fleetlab.course.experiments import poison
from fleetlab.course.experiments.autoscaling import burst, capped, step_prices, trickle
from fleetlab.course.experiments.callbacks import (
    CallbackBench,
    Plan,
    answers,
    dies,
    fails,
    model_call_steps,
    percentile,
)
from fleetlab.course.experiments.delivery import deliver_under_chaos, race
from fleetlab.course.experiments.governor import batch_size_sweep
from fleetlab.course.experiments.replay import COMPLETED_STEPS, LAB_TARGETS, ReplayBench, Target

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
