"""Standard or Express, and the callback APIs' headroom: the seed's worked numbers, and bad input named."""

import math

import pytest

from fleetlab.core.errors import InvalidInput
from fleetlab.services.stepfunctions import sizing


def test_a_twelve_step_chain_at_thirty_seconds_is_over_express():
    choice = sizing.choose_workflow(12, 30, 1.0)
    assert choice.worst_case_seconds == 360
    assert not choice.fits_express
    assert choice.verdict.startswith("Standard")


def test_retry_safety_multiplies_the_worst_case_and_can_push_a_chain_over():
    assert sizing.choose_workflow(5, 30, 1.0).fits_express
    assert not sizing.choose_workflow(5, 30, 2.5).fits_express


def test_an_express_fit_still_warns_that_express_cannot_wait_for_a_token():
    assert "cannot wait for a task token" in sizing.choose_workflow(3, 10, 1.5).verdict


def test_prices_come_from_the_dated_price_file():
    assert sizing.list_price("transitions") == pytest.approx(0.025 / 1000)
    assert sizing.list_price("express_requests") == pytest.approx(1e-6)
    assert sizing.list_price("express_gb_seconds") == pytest.approx(0.00001667)


def test_prices_follow_transitions_on_standard_and_duration_on_express():
    choice = sizing.choose_workflow(4, 10, 1.0, retries_per_step=0.5)
    assert choice.transitions == 4 * 1.5 + 1
    assert choice.standard_price == pytest.approx(7 * 0.025 / 1000)
    assert choice.express_price == pytest.approx(1e-6 + 40 * (64 / 1024) * 0.00001667)
    bigger = sizing.choose_workflow(4, 10, 1.0, memory_mb=100)  # billed in 64 MB steps: 128 MB
    assert bigger.express_price == pytest.approx(1e-6 + 40 * (128 / 1024) * 0.00001667)


def test_the_worked_fleet_has_four_times_headroom_on_send_task_success():
    steps_per_second = 500 * 15 / 60
    success, heartbeat = sizing.callback_load(steps_per_second, step_seconds=90, heartbeat_every=300)
    assert (success.api, success.rate, success.headroom) == ("SendTaskSuccess", 125, 4.0)
    assert heartbeat.rate == pytest.approx(125 * 90 / 300)


def test_a_chatty_heartbeat_throttles_before_the_answers_do():
    success, heartbeat = sizing.callback_load(125, step_seconds=90, heartbeat_every=10)
    assert success.headroom > 1 > heartbeat.headroom


def test_no_heartbeat_and_other_regions():
    success, heartbeat = sizing.callback_load(125, step_seconds=90, heartbeat_every=None, region="other regions")
    assert success.refill == 300 and heartbeat.rate == 0 and math.isinf(heartbeat.headroom)


@pytest.mark.parametrize(("call", "field"), [
    (lambda: sizing.choose_workflow(0, 30, 1), "chain_steps"),
    (lambda: sizing.choose_workflow(3, -1, 1), "p95_step_seconds"),
    (lambda: sizing.choose_workflow(3, 30, 0.5), "retry_safety"),
    (lambda: sizing.state_transitions(3, retries_per_step=-1), "retries_per_step"),
    (lambda: sizing.callback_load(-1, step_seconds=90, heartbeat_every=300), "steps_per_second"),
    (lambda: sizing.callback_load(10, step_seconds=90, heartbeat_every=0), "heartbeat_every"),
    (lambda: sizing.callback_load(10, step_seconds=90, heartbeat_every=30, region="mars"), "region"),
])
def test_bad_input_names_its_field(call, field):
    with pytest.raises(InvalidInput) as refused:
        call()
    assert refused.value.field == field
