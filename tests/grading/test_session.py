import json

import pytest
from fleetlab_instructor.checks import full_check
from fleetlab_instructor.checks.lab00 import planes as lab00
from fleetlab_instructor.grading.grade import hidden_cases

from fleetlab.core.errors import ConfigError
from fleetlab.course.grading import check, grade_session, progress
from fleetlab.course.grading.session import UnexpectedCheckStatus

from .answers import good_handle


def test_check_runs_public_cases_records_and_displays_what_they_cover(capsys):
    result = check("00.planes", dict(lab00.REFERENCE))
    assert result.passed
    assert {case.name for case in result.cases} == {case.name for case in lab00.PUBLIC}
    recorded = progress.load()["00.planes"]
    assert (recorded["status"], recorded["points"], recorded["grader_adds"]) == ("public pass", None, 4)
    shown = capsys.readouterr().out
    assert "◐ 00.planes Name the three planes: public cases pass (the grader adds 4 more)" in shown
    assert "1/1" not in shown and "points" not in shown.splitlines()[0]


def test_grade_session_regrades_the_last_answer_with_hidden_cases():
    check("00.planes", {**lab00.REFERENCE, "workers": "control"})  # public cases pass
    check("00.planes", {**lab00.REFERENCE, "claim-check bucket": "work"})  # the last answer counts
    payload = grade_session("nonce-1", hidden_cases(["00.planes"]))
    assert payload["nonce"] == "nonce-1"
    graded = payload["checks"]["00.planes"]
    assert (graded["status"], graded["points"], graded["max_points"]) == ("fail", 0.875, 1)
    assert [(case["name"], case["hidden"], case["status"]) for case in graded["cases"]] == [
        *((case.name, False, "pass") for case in lab00.PUBLIC),
        *(("", True, "fail" if case.name == "claim-check bucket" else "pass") for case in lab00.HIDDEN),
    ]
    assert graded["diagnosis"] == graded["cases"][-1]["diagnosis"]  # the failed case's, for the grader only
    assert payload["expected"] == {"00.planes": 1}


def test_grades_name_no_hidden_case_and_carry_nothing_the_learner_prints_while_hidden_cases_run(fixture_lab, capsys):
    def talkative(message, done, file_ticket):
        print("handling", message)
        good_handle(message, done, file_ticket)

    check("99.dedupe", talkative)
    assert "handling" in capsys.readouterr().out  # the public cases may print
    payload = grade_session("nonce-2", hidden_cases(["99.dedupe"]))
    assert "handling" not in capsys.readouterr().out
    graded = payload["checks"]["99.dedupe"]
    assert (graded["status"], graded["points"], graded["max_points"]) == ("pass", 3, 3)
    assert [case["hidden"] for case in graded["cases"]] == [False, False, True, True]
    for hidden in full_check("99.dedupe").hidden:
        assert hidden.name not in json.dumps(payload)


def test_a_session_that_checked_nothing_grades_nothing():
    assert grade_session("n", hidden_cases([])) == {"nonce": "n", "checks": {}, "expected": {}}


def test_ci_can_require_every_check_to_pass_or_to_say_not_yet(monkeypatch):
    monkeypatch.setenv("FLEETLAB_EXPECT_CHECKS", "not-yet")
    assert check("00.planes", ...).status == "not yet"
    with pytest.raises(UnexpectedCheckStatus, match="says 'public pass' where FLEETLAB_EXPECT_CHECKS expects 'not yet'"):
        check("00.planes", dict(lab00.REFERENCE))
    monkeypatch.setenv("FLEETLAB_EXPECT_CHECKS", "pass")
    assert check("00.planes", dict(lab00.REFERENCE)).passed
    monkeypatch.setenv("FLEETLAB_EXPECT_CHECKS", "green")
    with pytest.raises(ConfigError, match="FLEETLAB_EXPECT_CHECKS='green' is not allowed: use pass or not-yet"):
        check("00.planes", dict(lab00.REFERENCE))
    monkeypatch.setenv("FLEETLAB_EXPECT_CHECKS", "pass")
    with pytest.raises(UnexpectedCheckStatus, match="says 'fail' where FLEETLAB_EXPECT_CHECKS expects 'pass'"):
        check("00.planes", {**lab00.REFERENCE, "event bus": "work"})


def test_a_home_that_cannot_be_written_warns_but_still_checks(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("FLEETLAB_HOME", str(blocker / "home"))
    with pytest.warns(UserWarning, match="set FLEETLAB_HOME to a writable folder"):
        assert check("00.planes", dict(lab00.REFERENCE)).passed
