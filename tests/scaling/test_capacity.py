"""Capacity arithmetic against the seed's worked fleet, the ScaledObject it sizes, and the latency/cost knobs."""

from __future__ import annotations

import pytest

from fleetlab.composition.scaling.capacity import capacity, daily_bill, fleet_scaled_object, priced
from fleetlab.composition.scaling.tradeoff import latency_and_cost
from fleetlab.core.errors import InvalidInput


def test_the_worked_fleet_of_the_seed():
    # 500 conversations a minute, 15 steps of 90 s (seed 000, "Production realities")
    cap = capacity(500, 15, 90)
    assert cap.steps_per_minute == 7_500
    assert (cap.sqs_calls_per_second, cap.sqs_calls_per_day) == (250, 21_600_000)
    assert cap.completion_events_per_day == 10_800_000 and cap.put_events_requests_per_day == 1_080_000
    assert cap.idempotency_writes_per_day == 10_800_000
    assert cap.in_flight_steps == 11_250 and round(cap.in_flight_share, 3) == 0.094
    assert (cap.callbacks_per_second, cap.callback_refill_per_second, cap.callback_headroom) == (125, 500, 4)


def test_the_callback_refill_depends_on_the_region():
    assert capacity(500, 15, 90, region="eu-central-1").callback_refill_per_second == 300
    assert capacity(500, 15, 90, region="eu-west-1").callback_refill_per_second == 500


def test_an_unknown_region_is_refused_naming_the_regions_known():
    with pytest.raises(InvalidInput) as raised:
        capacity(500, 15, 90, region="mars-1")
    assert raised.value.field == "region"
    assert "'mars-1'" in str(raised.value)
    for known in ("us-east-1", "eu-central-1", "ap-south-1"):
        assert known in raised.value.hint


def test_calls_grow_with_steps_not_users():
    assert capacity(500, 30, 90).sqs_calls_per_day == 2 * capacity(500, 15, 90).sqs_calls_per_day
    assert capacity(500, 15, 180).sqs_calls_per_day == capacity(500, 15, 90).sqs_calls_per_day
    assert capacity(500, 15, 180).in_flight_steps == 2 * capacity(500, 15, 90).in_flight_steps


@pytest.mark.parametrize("args, field", [((0, 15, 90), "conversations_per_minute"), ((500, 0, 90), "steps"),
                                         ((500, 15, -1), "step_seconds")])
def test_bad_inputs_are_named(args, field):
    with pytest.raises(InvalidInput) as raised:
        capacity(*args)
    assert raised.value.field == field


def test_a_fleet_sized_by_little_s_law():
    scaled = fleet_scaled_object(capacity(500, 15, 90), pod_concurrency=10, headroom=1.2)
    assert scaled.trigger.queue_length == 10
    assert scaled.max_replica_count == 1350  # 11,250 in flight x 1.2 / 10 per pod


def test_prices_are_the_caller_s():
    assert priced({"a": 10, "b": 2}, {"a": 0.5, "b": 1.0}) == 7.0
    with pytest.raises(InvalidInput, match="has no price"):
        priced({"a": 10, "b": 2}, {"a": 0.5})


def test_a_queue_length_above_what_a_pod_works_trades_latency_for_pods():
    # pods work 5 steps at once; a steady 60 steps a minute of 90 s keeps 90 in flight
    matched = latency_and_cost(queue_length=5, concurrency=5, minutes=30)
    lazy = latency_and_cost(queue_length=20, concurrency=5, minutes=30)
    assert lazy.p95_latency > matched.p95_latency
    assert lazy.pod_hours < matched.pod_hours
    assert matched.steps_completed > 0 and matched.calls_per_step > 3  # 3.1 per step, plus idle polls


def test_the_trade_off_prices_pod_hours_and_calls_when_given_prices():
    prices = {"sqs_receive": 0.0, "sqs_delete": 0.0, "events_put_events": 0.0, "dynamodb_idempotency_write": 0.0,
              "pod_hour": 1.0}
    result = latency_and_cost(minutes=10, prices=prices)
    assert result.cost == pytest.approx(result.pod_hours)


def test_a_day_of_the_worked_fleet_priced_per_step():
    bill = daily_bill(capacity(500, 15, 90), {"sqs": 0.40, "events": 1.00, "dynamodb": 0.625})
    # 10.8 million steps: 21.6 million SQS requests, 10.8 million events, 10.8 million writes
    assert bill == pytest.approx({"sqs": 8.64, "events": 10.80, "dynamodb": 6.75})


def test_a_bill_without_a_price_names_the_line():
    with pytest.raises(InvalidInput) as raised:
        daily_bill(capacity(500, 15, 90), {"sqs": 0.40, "events": 1.00})
    assert raised.value.field == "dynamodb"


def test_the_regions_known_are_the_ones_the_pinned_botocore_lists_for_step_functions():
    import boto3

    from fleetlab.composition.scaling.capacity import STEP_FUNCTIONS_REGIONS

    assert STEP_FUNCTIONS_REGIONS == tuple(boto3.session.Session().get_available_regions("stepfunctions"))
