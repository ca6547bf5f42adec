"""Check ``05.max_replicas``: ``max_replicas(quota, reserved, pod_concurrency)`` caps the
fleet below the model provider's quota: the account may hold ``quota`` model
calls at once, ``reserved`` of them are kept for other traffic, and every step
a pod works holds one call. The answer is the largest fleet that never asks
for more than what is left.

The harness puts the answer in a ScaledObject (KEDA refuses a
maxReplicaCount that is not a whole number of at least 1, naming the field)
and runs the fleet model through a burst of 3,000 documents, far more than the
fleet works at once: with a
cap too high, pods past the quota are throttled (each a failed model call and
a message put back); too low, quota the account pays for lies idle while
documents wait.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.course.checks.lab05.manifests import applied
from fleetlab.course.experiments.scaling import capped
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab.course.grading.values import whole_number


@dataclass(frozen=True)
class Quota(Case):
    """A model quota (calls at once), the part kept for other traffic, and what one pod works at once."""

    quota: int = 400
    reserved: int = 90
    pod_concurrency: int = 6


def _judge(case: Quota, cap: int) -> CaseOutcome:
    free = case.quota - case.reserved
    run = capped(cap, free, concurrency=case.pod_concurrency)
    asked = run.peak_replicas * case.pod_concurrency
    quota = f"{free} model calls free in the quota ({case.quota} - {case.reserved} reserved)"
    if run.throttled:
        return CaseOutcome(False, f"maxReplicaCount {cap}: at the peak {run.peak_replicas} pods x "
                                  f"{case.pod_concurrency} steps asked for {asked} model calls at once against "
                                  f"{quota}; {run.throttled:,} receives were throttled, each a failed model call "
                                  f"and a message put back: pods past the quota turn queue pressure into "
                                  f"throttling", "pods-past-the-quota")
    unused = free - asked
    if unused >= case.pod_concurrency:
        more = unused // case.pod_concurrency
        fits = "one more pod still fits" if more == 1 else f"{more} more pods still fit"
        return CaseOutcome(False, f"maxReplicaCount {cap}: {cap} pods x {case.pod_concurrency} steps use {asked} "
                                  f"of {quota}: {unused} calls lie idle while documents wait in the queue; "
                                  f"{fits} ({unused} // {case.pod_concurrency})", "calls-left-idle")
    return CaseOutcome(True, f"maxReplicaCount {cap}: {asked} of {free} free model calls at the peak, "
                             f"nothing throttled")


@register(
    "05.max_replicas",
    title="Cap the fleet below the provider's quota",
    function="max_replicas",
    parameters="quota, reserved, pod_concurrency",
    points=2,
    public=[
        Quota("400 calls at once, 90 kept for chat, pods of 6", 400, 90, 6),
        Quota("1,000 calls at once, 250 kept for other fleets, pods of 8", 1_000, 250, 8),
    ],
    hidden_cases=2,
    timeout=10,
)
def check_max_replicas(answer: Any, case: Quota, ctx: Any) -> CaseOutcome:
    """Validate the cap as KEDA would, then run a burst through a fleet model under the quota."""
    try:
        cap = whole_number(answer(case.quota, case.reserved, case.pod_concurrency), returned_by="max_replicas",
                           what="a whole number of replicas", example="40")
        applied(max_replicas=cap)
    except InvalidInput as bad:
        return CaseOutcome(False, str(bad), "not-a-replica-count")
    return _judge(case, cap)
