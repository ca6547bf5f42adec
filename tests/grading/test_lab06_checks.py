"""What lab 06's checks promise beyond their catalogues (``test_catalogues.py`` runs those on moto and
moto-server): stubs say "not yet", a learner's own error is theirs, answers of the wrong kind are refused
by name, and a pattern the backend takes but AWS refuses is judged as AWS would."""

import pytest
from fleetlab_instructor.checks import full_check, side_of

from fleetlab.core.errors import InvalidInput
from fleetlab.course.checks.lab06.targets import Scenario
from fleetlab.course.experiments.replay import BILLING_WEBHOOK
from fleetlab.course.grading import get_check, run_check
from fleetlab.course.grading.results import CheckStatus


def stub_targets(target, replay_age): ...


def stub_window(facts):
    raise NotImplementedError


@pytest.mark.parametrize(("check_id", "answer"), [("06.targets", stub_targets), ("06.window", stub_window),
                                                  ("06.pattern", ...), ("06.retry_policy", ...)])
def test_an_unfinished_exercise_says_not_yet(check_id, answer):
    assert run_check(get_check(check_id), answer).status == CheckStatus.NOT_YET


def window_that_forgets_there_may_be_no_archive(facts):
    facts["archive"]["RetentionDays"]  # a learner who reads the archive before checking it exists
    return side_of("06.window").reference(facts)


def test_a_learners_own_error_is_reported_as_theirs_by_the_hidden_case_that_triggers_it():
    check = full_check("06.window")
    assert run_check(check, window_that_forgets_there_may_be_no_archive).status == CheckStatus.PUBLIC_PASS
    graded = run_check(check, window_that_forgets_there_may_be_no_archive, include_hidden=True)
    assert graded.status == CheckStatus.FAIL and 0 < graded.points < check.points
    failed = [case for case in graded.cases if case.status == CheckStatus.FAIL]
    assert [case.name for case in failed] == ["no archive at all: 1 h of retries, 4-day retention"]
    assert "your code raised TypeError" in failed[0].diagnosis


@pytest.mark.parametrize(("check_id", "answer", "expect"), [
    ("06.targets", lambda target, age: "yes", "return True or False"),
    ("06.window", lambda facts: True, "a bool"),
    ("06.retry_policy", lambda goal, alarm, blip, dlq: [185, 240], "return a dict"),
])
def test_an_answer_of_the_wrong_kind_is_refused_saying_what_to_return(check_id, answer, expect):
    result = run_check(get_check(check_id), answer)
    assert result.status == CheckStatus.FAIL and expect in result.diagnosis


def test_a_pattern_this_backend_takes_but_aws_refuses_fails_in_aws_words():
    result = run_check(get_check("06.pattern"), {"source": ["fleet.coordinator"], "replay-name": [{"exists": 0}]})
    assert result.status == CheckStatus.FAIL
    assert "AWS refuses this pattern" in result.diagnosis and "either true or false" in result.diagnosis


def test_every_target_scenario_makes_exactly_the_targets_that_may_take_a_replay_miss_steps():
    check, may_receive = full_check("06.targets"), side_of("06.targets").reference
    for case in (*check.public, *check.hidden):
        allowed = [target.name for target in case.targets if may_receive(target, case.replay_age)]
        assert list(case.must_receive) == allowed, case.name


def test_a_scenario_that_names_a_stranger_as_a_target_that_must_receive_is_refused_by_field():
    with pytest.raises(InvalidInput, match="must_receive"):
        Scenario("a typo", (BILLING_WEBHOOK,), must_receive=("billing-webhok",))


def test_a_retention_left_a_string_is_told_it_comes_as_sqs_returns_it():
    def adds_the_string(facts):
        return facts["queue"]["MessageRetentionPeriod"] + 86_400

    diagnosis = run_check(get_check("06.window"), adds_the_string).cases[0].diagnosis
    assert diagnosis.startswith("your code raised TypeError: can only concatenate str (not \"int\") to str "
                                "(in adds_the_string, line ")
    assert diagnosis.endswith(": the queue's attributes come as strings, as SQS returns them (facts['queue']"
                              "['MessageRetentionPeriod'] is '345600', not 345600): convert it with int() before "
                              "adding it to a number")


def test_a_window_given_in_days_is_told_to_give_seconds():
    diagnosis = run_check(get_check("06.window"), lambda facts: 12).cases[0].diagnosis
    assert diagnosis.endswith("the record expired after 12 s; read as days, 12 would be right: give seconds "
                              "(12 days = 1,036,800 s)")
