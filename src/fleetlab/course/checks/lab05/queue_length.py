"""Check ``05.queue_length``: ``choose_queue_length(steps_per_minute, mean_step_seconds)``
turns a load test of one pod (never short of work) into the ScaledObject's
queueLength. With in-flight messages counted, queueLength is the steps one
pod works at once, which Little's law gives from the load test.

The harness puts the answer in a ScaledObject (so KEDA's own rules refuse a
non-whole or non-positive queueLength, naming the field), lands a burst of
documents on a real queue, and lets KEDA and the HPA size a fleet of pods of
the true concurrency until the first step completes. It passes when the
fleet has room for every document at once and no replica to spare: too
large a queueLength leaves documents waiting a whole step while the HPA
reads the fleet as full; too small pays for replicas with nothing to do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.course.checks.lab05.manifests import applied
from fleetlab.course.experiments.scaling import burst
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab.course.grading.values import whole_number

TICK = 15.0
VISIBILITY = 600  # longer than any step: nothing comes back while a case runs


@dataclass(frozen=True)
class LoadTest(Case):
    """One pod's load test (throughput, mean step time) and the burst its fleet then meets.

    ``concurrency`` is what the pod really works at once: the measurement is
    a little under it, as a saturated pod loses a moment between steps.
    """

    steps_per_minute: float = 3.28
    mean_step_seconds: float = 91.4
    concurrency: int = 5
    documents: int = 40


def _as_metadata(answer: Any) -> str:
    """The answer as trigger metadata holds it: a string (a number is written as its whole value)."""
    if isinstance(answer, str):
        return answer
    return str(whole_number(answer, returned_by="choose_queue_length", what="a whole number of messages per replica",
                            example="5: KEDA reads queueLength as a whole number"))


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}" if number == 1 else f"{number} {thing}s"


def _judge(case: LoadTest, queue_length: int, replicas: int) -> CaseOutcome:
    measured = case.steps_per_minute / 60 * case.mean_step_seconds
    slots, documents, pod = replicas * case.concurrency, case.documents, case.concurrency
    fleet = (f"with queueLength {queue_length} the HPA took the fleet to {_count(replicas, 'replica')} for "
             f"{documents} documents, and stopped there: {_count(replicas, 'pod')} of {pod} steps have room for "
             f"{slots}")
    law = (f"a pod of this load test works {case.steps_per_minute:g} steps/min / 60 x {case.mean_step_seconds:g} s "
           f"= {measured:.2f} steps at once (Little's law)")
    asked = f"the {_count(queue_length, 'message')} per replica you asked for"
    if slots < documents:
        return CaseOutcome(False, f"{fleet}, so {documents - slots} documents wait a whole step in the queue while "
                                  f"the HPA reads the fleet as full; {law}, fewer than {asked}",
                           "queue-length-above-concurrency")
    spare = replicas - math.ceil(documents / pod)
    if spare > 0:
        return CaseOutcome(False, f"{fleet}, and {spare} of them have nothing to do; {law}, more than {asked}",
                           "queue-length-below-concurrency")
    return CaseOutcome(True, f"queueLength {queue_length}: {replicas} replicas of {pod} for {documents} documents, "
                             f"none waiting, none idle")


@register(
    "05.queue_length",
    title="Set queueLength from a pod's measured concurrency",
    function="choose_queue_length",
    parameters="steps_per_minute, mean_step_seconds",
    points=2,
    public=[
        LoadTest("a document pod: 3.28 steps/min, 91.4 s a step; then 40 documents land", 3.28, 91.4, 5, 40),
        LoadTest("a research pod: 1.98 steps/min, 240 s a step; then 50 documents land", 1.98, 240.0, 8, 50),
    ],
    hidden_cases=2,
    timeout=30,
)
def check_queue_length(answer: Any, case: LoadTest, ctx: Any) -> CaseOutcome:
    """Put the answer in a ScaledObject, land a burst on a real queue, and judge the fleet the HPA builds."""
    try:
        scaled = applied(queue_length=_as_metadata(answer(case.steps_per_minute, case.mean_step_seconds)))
    except InvalidInput as bad:
        return CaseOutcome(False, str(bad), "not-a-queue-length")
    run = burst(ctx.backend, scaled, case.documents, step_seconds=case.mean_step_seconds,
                concurrency=case.concurrency, visibility_timeout=VISIBILITY, tick=TICK,
                max_seconds=case.mean_step_seconds - TICK, prefix=ctx.fresh_prefix())
    return _judge(case, scaled.trigger.queue_length, run.samples[-1].replicas)
