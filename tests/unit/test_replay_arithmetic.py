"""Retry-policy posture, the idempotency window and replay-aware patterns: pure arithmetic and data."""

import pytest

from fleetlab.core.errors import InvalidInput
from fleetlab.services.events import replay as replays
from fleetlab.services.events.retry import (
    BACKOFF,
    BOUNDED,
    CLASSIC_DEFAULT,
    EVENTS_V2_DEFAULT,
    Posture,
    RetryPolicy,
)
from fleetlab.services.state.window import DuplicateSources

DAY = 86_400


def test_the_backoff_model_spends_each_default_inside_its_own_age_limit():
    assert sum(BACKOFF.waits(5)) <= EVENTS_V2_DEFAULT.max_age
    assert sum(BACKOFF.waits(185)) <= CLASSIC_DEFAULT.max_age
    assert len(EVENTS_V2_DEFAULT.attempt_times) == 5
    assert len(CLASSIC_DEFAULT.attempt_times) == 185


def test_the_age_limit_cuts_the_attempts_of_a_bounded_policy():
    assert BOUNDED.attempt_times[-1] <= 3_600 < BOUNDED.attempt_times[-1] + BACKOFF.cap
    assert len(BOUNDED.attempt_times) < BOUNDED.attempts


@pytest.mark.parametrize(("field", "attempts", "age"), [
    ("MaximumRetryAttempts", 186, 3_600),
    ("MaximumRetryAttempts", -1, 3_600),
    ("MaximumEventAgeInSeconds", 24, 59),
    ("MaximumEventAgeInSeconds", 24, 86_401),
    ("MaximumRetryAttempts", 2.5, 3_600),
    ("MaximumEventAgeInSeconds", 24, True),
])
def test_a_policy_outside_eventbridges_ranges_names_its_field(field, attempts, age):
    with pytest.raises(InvalidInput) as raised:
        RetryPolicy(attempts, age)
    assert raised.value.field == field


def test_a_target_without_a_policy_gets_the_classic_default_and_floats_become_ints():
    assert RetryPolicy.from_target({"Id": "q", "Arn": "arn"}) == CLASSIC_DEFAULT
    flat = RetryPolicy.from_target({"MaximumRetryAttempts": 24.0, "MaximumEventAgeInSeconds": 3600.0})
    assert flat == BOUNDED and isinstance(flat.attempts, int)


def test_a_blip_is_ridden_out_only_when_a_retry_falls_after_it():
    assert BOUNDED.rides_out(600)
    assert not EVENTS_V2_DEFAULT.rides_out(600)
    assert not RetryPolicy(0, 60).rides_out(1)


def test_a_long_outage_pages_after_the_give_up_time_plus_the_alarm():
    posture = Posture("bounded", BOUNDED, alarm_delay=60)
    outcome = posture.through_outage(6 * 3_600, events_per_minute=10)
    assert outcome.paged_after == BOUNDED.gives_up_after + 60
    assert outcome.delivered_late == round(10 / 60 * BOUNDED.gives_up_after)
    assert outcome.delivered_late + outcome.dead_lettered == 3_600
    assert outcome.dropped == 0


def test_an_outage_shorter_than_the_retries_pages_nobody_and_arrives_late():
    outcome = Posture("classic", CLASSIC_DEFAULT).through_outage(3 * 3_600, events_per_minute=10)
    assert outcome.paged_after is None
    assert outcome.delivered_late == 1_800 and outcome.dead_lettered == 0


def test_without_a_dlq_events_are_dropped_silently():
    outcome = Posture("no dlq", CLASSIC_DEFAULT, dead_letter_queue=False).through_outage(30 * 3_600, events_per_minute=1)
    assert outcome.silent and outcome.dropped > 0 and outcome.paged_after is None


def test_the_window_covers_retries_retention_and_replay_end_to_end():
    sources = DuplicateSources(3_600, 4 * DAY, 7 * DAY)
    assert sources.latest_duplicate == 3_600 + 11 * DAY
    assert sources.safe_window() == sources.latest_duplicate + 3_600
    assert [at for _, at in sources.milestones()] == [3_600, 3_600 + 4 * DAY, 3_600 + 11 * DAY]


def facts(retry_policy=None, retention_days=4, archive_days=0, runbook_days=7):
    archive = None if archive_days is None else {"RetentionDays": archive_days}
    return {"retry_policy": retry_policy, "queue": {"MessageRetentionPeriod": str(retention_days * DAY)},
            "archive": archive, "replay_horizon_days": runbook_days}


@pytest.mark.parametrize(("given", "latest"), [
    (facts({"MaximumRetryAttempts": 24, "MaximumEventAgeInSeconds": 3_600}), 3_600 + 11 * DAY),
    (facts(None), DAY + 11 * DAY),
    (facts(None, archive_days=2), DAY + 6 * DAY),
    (facts(None, archive_days=None, runbook_days=None), DAY + 4 * DAY),
    (facts(None, archive_days=3, runbook_days=None), DAY + 7 * DAY),
])
def test_the_window_is_read_from_configuration_as_aws_returns_it(given, latest):
    assert DuplicateSources.from_facts(given).latest_duplicate == latest


def test_an_archive_kept_forever_needs_a_runbook_limit():
    with pytest.raises(InvalidInput) as raised:
        DuplicateSources.from_facts(facts(archive_days=0, runbook_days=None))
    assert raised.value.field == "replay_horizon_days"


def test_replay_aware_patterns_add_one_condition_on_the_top_level_replay_name():
    base = {"source": ["fleet.coordinator"]}
    assert replays.excluding_replays(base) == {**base, "replay-name": [{"exists": False}]}
    assert replays.only_replays('{"source": ["fleet.coordinator"]}') == {**base, "replay-name": [{"exists": True}]}
    with pytest.raises(InvalidInput):
        replays.excluding_replays(replays.only_replays(base))
    assert replays.is_replay({"replay-name": "r1"}) and not replays.is_replay({"id": "1"})


def test_a_pattern_is_read_as_eventbridge_reads_its_json():
    pattern = replays.as_pattern({"source": ("fleet.coordinator",), "detail": {"n": (1, 2)}})
    assert pattern == {"source": ["fleet.coordinator"], "detail": {"n": [1, 2]}}
    assert replays.pattern_problems(pattern) == []


@pytest.mark.parametrize("bad", ["{not json", "[1, 2]", 3, {"source": {"fleet"}}])
def test_a_pattern_that_is_not_a_json_object_is_refused_by_name(bad):
    with pytest.raises(InvalidInput) as raised:
        replays.as_pattern(bad)
    assert raised.value.field == "pattern"
