import base64
import json
import pickle
import threading

import pytest
from fleetlab_instructor.checks.lab00 import planes as lab00

from fleetlab.core.errors import ConfigError
from fleetlab.course.grading import check, progress, session
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


def test_in_a_graded_kernel_check_runs_no_case_and_remembers_the_answer(monkeypatch, capsys):
    monkeypatch.setenv("FLEETLAB_GRADED", "1")
    result = check("00.planes", {**lab00.REFERENCE, "workers": "control"})
    assert (result.status, result.cases, result.points) == ("not yet", [], None)
    assert result.diagnosis.startswith("graded by the grader")
    assert "graded by the grader" in capsys.readouterr().out
    assert progress.load() == {}
    assert session._answers["00.planes"]["workers"] == "control"


def test_hand_in_writes_each_answer_by_value_and_says_which_cannot_travel(tmp_path):
    lock = threading.Lock()

    def holds_a_lock(message, done, file_ticket):
        with lock:
            good_handle(message, done, file_ticket)

    check("00.planes", dict(lab00.REFERENCE))
    session._answers["99.dedupe"] = holds_a_lock
    session._answers["99.visibility"] = ...
    session.hand_in(tmp_path / "answers.json", {"00.planes": "", "99.dedupe": "handle",
                                                "99.visibility": "visibility_timeout", "99.other": "nothing"})
    answers = json.loads((tmp_path / "answers.json").read_text())["answers"]
    assert sorted(answers) == ["00.planes", "99.dedupe", "99.visibility"]  # 99.other has no answer
    assert pickle.loads(base64.b64decode(answers["00.planes"]["pickle"])) == dict(lab00.REFERENCE)
    assert pickle.loads(base64.b64decode(answers["99.visibility"]["pickle"])) is Ellipsis
    assert answers["99.dedupe"]["unpicklable"].startswith("`handle` could not be handed to the grader (TypeError: ")
    assert "pass what it needs as an argument" in answers["99.dedupe"]["unpicklable"]


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


@pytest.mark.parametrize(("check_id", "answer", "asked"), [
    ("03.budget", lambda a: (3, 1_000_000), "choose_budget(retry_seconds, outage_seconds, poison_deadline_seconds, "
                                            "source_retention_seconds, triage_seconds)"),
    ("03.triage", lambda dlq_url: {}, "triage(sqs, dlq_url)"),
])
def test_check_tells_an_answer_with_other_parameters_the_ones_the_exercise_asks_for(capsys, check_id, answer, asked):
    result = check(check_id, answer)
    assert (result.status, result.cases) == ("fail", [])
    assert f"but the exercise asks for {asked}" in result.diagnosis
    assert "fleetlab bug" not in capsys.readouterr().out
