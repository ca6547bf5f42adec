"""What lab 07's checks promise beyond their catalogues (``test_catalogues.py`` runs those on moto and
moto-server): stubs say "not yet", a learner's own error is theirs, an answer that is not a FleetConfig is
refused saying what to return, an invalid configuration is reported by its field, and the planted day a
repair reads is run once per case."""

import pytest
from fleetlab.composition.chaos import FleetConfig
from fleetlab.course.grading import get_check, run_check
from fleetlab.course.grading.results import CheckStatus


def stub_configure(facts): ...


def stub_repair(config, scoreboard):
    raise NotImplementedError


@pytest.mark.parametrize(("check_id", "answer"), [("07.configure", stub_configure), ("07.defects", stub_repair),
                                                  ("07.configure", ...)])
def test_an_unfinished_exercise_says_not_yet(check_id, answer):
    assert run_check(get_check(check_id), answer).status == CheckStatus.NOT_YET


def configure_that_divides_by_zero(facts):
    return FleetConfig(idempotency_window=int(facts.replay_reach_seconds // 0))


def test_a_learners_own_error_is_reported_as_theirs():
    result = run_check(get_check("07.configure"), configure_that_divides_by_zero)
    assert result.status == CheckStatus.FAIL
    assert "your code raised ZeroDivisionError" in result.diagnosis
    assert "configure_that_divides_by_zero" in result.diagnosis


def configure_with_no_visibility(facts):
    return FleetConfig(visibility_timeout=0)


def test_an_invalid_configuration_is_reported_by_its_field():
    result = run_check(get_check("07.configure"), configure_with_no_visibility)
    assert result.status == CheckStatus.FAIL
    assert "your code raised InvalidInput: visibility_timeout: must be within 1..43200" in result.diagnosis


def test_a_configure_that_returns_a_dict_is_refused_saying_what_to_return():
    result = run_check(get_check("07.configure"), lambda facts: {"idempotency_window": 4 * 86_400})
    assert result.status == CheckStatus.FAIL
    assert [case.diagnosis for case in result.cases] == [
        "configure returned dict, not a FleetConfig; build it with FleetConfig(...), e.g. FleetConfig(**knobs) "
        "for a dict of knobs"] * 2


def test_a_repair_reads_the_planted_day_run_once_per_case_and_is_refused_when_not_a_fleet_config():
    check = get_check("07.defects")
    seen = []

    def repair_that_keeps_the_scoreboard(config, scoreboard):
        seen.append(scoreboard)
        return scoreboard

    first, again = (run_check(check, repair_that_keeps_the_scoreboard) for _ in range(2))
    assert first.status == again.status == CheckStatus.FAIL
    assert "repair returned Scoreboard, not a FleetConfig" in first.diagnosis
    planted = check.public[0]
    assert seen[0] is seen[1] and seen[0].config == planted.config  # one planted day, read twice
    assert seen[0].broken()[:2] == ["no duplicate effect", "every poison message parked with its diagnosis"]

