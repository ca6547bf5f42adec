"""What lab 05's checks promise beyond their catalogues: the exercise's HPA rule is the HPA's on every
case, the inputs tell answers apart, pure checks stay pure, and diagnoses come from what happened."""

import math

import pytest
from fleetlab_instructor.checks import full_check, side_of
from fleetlab_instructor.checks.lab05 import burst as burst_side

from fleetlab.backends.backend import open_backend
from fleetlab.composition.scaling.manifest import scaled_object
from fleetlab.course.checks.lab05 import burst as burst_check
from fleetlab.course.checks.lab05 import queue_length
from fleetlab.course.experiments.scaling import MODEL_QUEUE, burst
from fleetlab.course.grading import get_check, run_check
from fleetlab.course.grading.results import CheckStatus


@pytest.fixture
def backend():
    opened = open_backend("moto")
    yield opened
    opened.close()


def _every_case(check_id):
    check = full_check(check_id)
    return [*check.public, *check.hidden]


@pytest.mark.parametrize("case", _every_case("05.burst"), ids=lambda case: case.name)
def test_the_exercise_s_hpa_rule_is_the_hpa_s_on_every_case(case, backend):
    """The statement leaves out the HPA's memory (stabilisation); no case may need it."""
    scaled = scaled_object("documents", MODEL_QUEUE, queue_length=case.queue_length,
                           min_replica_count=case.min_replicas, max_replica_count=case.max_replicas)
    settings = dict(step_seconds=case.step_seconds, concurrency=case.concurrency, arrivals=case.arrivals,
                    replicas=case.replicas, tick=burst_check.TICK, max_seconds=case.step_seconds - burst_check.TICK,
                    visibility_timeout=burst_check.VISIBILITY)
    judge = burst_check._Judge(burst_side.reference_desired, case)
    judged = burst(backend, scaled, case.documents, hpa_step=judge.sync, **settings)
    modelled = burst(backend, scaled, case.documents, **settings)
    assert judged.scaling == modelled.scaling
    assert len(judge.path) >= 6  # every sync until the first step completes was judged


def test_each_burst_mistake_is_caught_by_a_public_case_that_names_its_rule():
    check = get_check("05.burst")
    rules = {name for name, _ in burst_check.MISTAKES}
    named = {"in-flight", "tolerance", "no-limit", "plus4", "double", "clamp-max", "floor"}
    assert named <= rules
    for wrong in side_of(check.id).wrong_answers:
        if wrong.public:
            assert run_check(check, wrong.answer).status == CheckStatus.FAIL, wrong.name


def test_a_diagnosis_says_when_and_on_what_reading_the_answer_went_wrong():
    visible_only = lambda c, v, f, q, low, high: burst_side.reference_desired(c, v, 0, q, low, high)  # noqa: E731
    result = run_check(get_check("05.burst"), visible_only)
    first = result.cases[0]
    assert first.diagnosis.startswith("at +30 s, with 8 replicas and 22 messages visible + 40 in flight "
                                      "(queueLength 5), you set 5 replicas; the HPA sets 13")


@pytest.mark.parametrize("case", _every_case("05.queue_length"), ids=lambda case: case.name)
def test_each_load_test_measures_a_little_under_the_pod_s_concurrency(case):
    measured = case.steps_per_minute / 60 * case.mean_step_seconds
    assert case.concurrency - 0.2 < measured < case.concurrency  # so round and ceil agree, and floor is wrong
    # one replica more or fewer than the right fleet is caught: a queueLength one off either way fails
    for off_by_one in (case.concurrency - 1, case.concurrency + 1):
        replicas = math.ceil(case.documents / off_by_one)
        assert not queue_length._judge(case, off_by_one, replicas).ok, (case.name, off_by_one)
    assert case.mean_step_seconds >= 90  # the HPA's ramp (at most 75 s) ends before the first step does


def test_a_cap_that_throttles_says_how_many_calls_it_asked_for():
    result = run_check(get_check("05.max_replicas"), lambda quota, reserved, c: math.ceil((quota - reserved) / c))
    assert result.cases[0].diagnosis.startswith(
        "maxReplicaCount 52: at the peak 52 pods x 6 steps asked for 312 model calls at once against 310 model "
        "calls free in the quota (400 - 90 reserved)")


def test_a_cap_with_idle_calls_counts_the_pods_that_still_fit():
    ten_short = run_check(get_check("05.max_replicas"), lambda quota, reserved, c: (quota - reserved) // c - 10)
    assert ten_short.cases[0].diagnosis == (
        "maxReplicaCount 41: 41 pods x 6 steps use 246 of 310 model calls free in the quota (400 - 90 reserved): "
        "64 calls lie idle while documents wait in the queue; 10 more pods still fit (64 // 6)")
    one_short = run_check(get_check("05.max_replicas"), lambda quota, reserved, c: (quota - reserved) // c - 1)
    assert one_short.cases[0].diagnosis.endswith("one more pod still fits (10 // 6)")


def test_the_queue_length_diagnosis_prints_little_s_law_with_its_division_by_60():
    result = run_check(get_check("05.queue_length"), lambda per_minute, seconds: 1)
    assert "a pod of this load test works 3.28 steps/min / 60 x 91.4 s = 5.00 steps at once (Little's law)" in \
        result.cases[0].diagnosis


def test_the_bill_check_agrees_with_the_seed_s_worked_fleet():
    check = get_check("05.bill")
    worked = check.public[0]
    reference = side_of(check.id).reference
    in_flight, dollars = reference(worked.conversations_per_minute, worked.steps, worked.step_seconds,
                                   worked.price_list)
    # seed 000: 11,250 steps in flight; 21.6 M SQS requests, 10.8 M events, 10.8 M writes a day
    assert in_flight == 11_250
    assert dollars == pytest.approx(21.6 * 0.40 + 10.8 * 1.00 + 10.8 * 0.625)
