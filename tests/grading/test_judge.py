"""The judge on its own: one notebook's verdicts written as JSON, the fork server."""

import dataclasses
import io
import json
import math
import os
import threading
from pathlib import Path

import pytest
from fleetlab_instructor.checks import full_check
from fleetlab_instructor.grade import judging
from fleetlab_instructor.grade.environment import kernel_env
from fleetlab_instructor.grade.judging import Ended, JudgeServer, JudgeStopped, Verdicts, judge_answers

from fleetlab.course.grading import session
from fleetlab.course.judge import server as judge

from .answers import divides, good_handle


def handed_in(tmp_path, **answers):
    """The bytes ``session.hand_in`` writes for these answers (check id with "_" for ".")."""
    for check_id, answer in answers.items():
        session._answers[check_id.replace("_", ".")] = answer
    session.hand_in(tmp_path / "handed-in.json", {check_id.replace("_", "."): "" for check_id in answers})
    return (tmp_path / "handed-in.json").read_bytes()


def judged_here(folder, answers, check_ids):
    """Judge in this process (no fork): the events the judge wrote."""
    checks = [full_check(check_id) for check_id in check_ids]
    folder.mkdir()
    (folder / judge.ANSWERS).write_bytes(answers)
    request = {"checks": check_ids, "modules": sorted({check.harness.__module__ for check in checks}),
               "hidden": judge.handover.encode({check.id: check.hidden for check in checks})}
    pipe_read, pipe_write = os.pipe()
    os.write(pipe_write, json.dumps(request).encode())
    os.close(pipe_write)
    results = io.StringIO()
    judge.judge_folder(folder, pipe_read, results)
    return [json.loads(line) for line in results.getvalue().splitlines()]


def test_the_judge_writes_each_checks_cases_as_json_and_no_hidden_cases_name(fixture_lab, tmp_path):
    answers = handed_in(tmp_path, **{"99_visibility": divides, "99_dedupe": good_handle})
    events = judged_here(tmp_path / "job", answers, ["99.dedupe", "99.visibility", "00.planes"])
    assert [next(iter(event)) for event in events] == ["start", "check"] * 3
    dedupe, visibility, planes = events[1], events[3], events[5]
    assert [case["status"] for case in dedupe["cases"]] == ["pass"] * 4
    assert [case["hidden"] for case in dedupe["cases"]] == [False, False, True, True]
    assert visibility["status"] == "fail" and visibility["diagnosis"].startswith("your code raised ZeroDivisionError")
    assert (planes["status"], planes["cases"]) == ("not yet", [])
    assert planes["diagnosis"] == f"not attempted: no `{full_check('00.planes').answer_name}` defined"
    said = json.dumps(events)
    assert all(case.name not in said for case in full_check("99.dedupe").hidden + full_check("99.visibility").hidden)


@pytest.mark.parametrize("answers", [b"\x80 not text", b"[1, 2]", b'{"answers": {"99.dedupe": {"pickle": 3}}}'])
def test_answers_not_in_the_graders_format_are_unreadable(fixture_lab, tmp_path, answers):
    events = judged_here(tmp_path / "job", answers, ["99.dedupe"])
    assert list(events[0]) == ["unreadable"] and "not the grader's format" in events[0]["unreadable"]


def test_an_answer_the_judge_cannot_rebuild_fails_with_the_reason(fixture_lab, tmp_path):
    answers = json.dumps({"answers": {"99.dedupe": {"pickle": "bm90IGEgcGlja2xl"}}}).encode()
    verdict = judged_here(tmp_path / "job", answers, ["99.dedupe"])[1]
    assert verdict["status"] == "fail" and verdict["cases"] == []
    assert verdict["diagnosis"].startswith("your answer could not be rebuilt outside your notebook (UnpicklingError")


def in_a_library_file(source, name):
    """The function ``name`` of ``source``, compiled as a notebook's cell would be but naming a library file."""
    namespace = {"__name__": "__main__"}
    exec(compile(source, judge.__file__, "exec"), namespace)
    return namespace[name]


def test_an_answers_exception_is_the_learners_in_the_judge_whatever_file_its_code_claims(fixture_lab, tmp_path):
    divides_here = in_a_library_file("def divides(p95_seconds):\n    return p95_seconds / 0\n", "divides")
    stub_here = in_a_library_file("def handle(message, done, file_ticket):\n    raise NotImplementedError\n",
                                  "handle")
    answers = handed_in(tmp_path, **{"99_visibility": divides_here, "99_dedupe": stub_here})
    events = judged_here(tmp_path / "job", answers, ["99.visibility", "99.dedupe"])
    visibility, dedupe = events[1], events[3]
    assert visibility["status"] == "fail"
    assert {case["diagnosis"].replace("float ", "") for case in visibility["cases"]} == {
        "your code raised ZeroDivisionError: division by zero (in divides, line 2)"}
    assert dedupe["status"] == "not yet"


@pytest.mark.parametrize(("check_id", "source", "asked"), [
    ("03.budget", "def choose_budget(a):\n    return 3, 1_000_000\n",
     "choose_budget(retry_seconds, outage_seconds, poison_deadline_seconds, source_retention_seconds, "
     "triage_seconds)"),
    ("03.triage", "def triage(dlq_url):\n    return {}\n", "triage(sqs, dlq_url)"),
])
def test_an_answer_with_other_parameters_fails_in_the_judge_naming_the_ones_asked_for(tmp_path, check_id, source,
                                                                                      asked):
    namespace = {"__name__": "__main__"}
    exec(source, namespace)
    answer = next(value for name, value in namespace.items() if not name.startswith("__"))
    events = judged_here(tmp_path / "job", handed_in(tmp_path, **{check_id.replace(".", "_"): answer}), [check_id])
    verdict = events[1]
    assert (verdict["status"], verdict["cases"]) == ("fail", [])
    assert f"but the exercise asks for {asked}" in verdict["diagnosis"]


def test_the_server_refuses_to_fork_while_a_thread_runs():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        with pytest.raises(RuntimeError, match="it must fork with one"):
            judge.serve(None, None)
    finally:
        stop.set()
        thread.join()


def test_a_judge_server_that_died_is_started_again(fixture_lab, tmp_path):
    def visibility_timeout(p95_seconds):  # defined here, it travels by value, as a notebook's function does
        return min(math.ceil(2 * p95_seconds), 43_200)

    answers = handed_in(tmp_path, **{"99_visibility": visibility_timeout})
    home = tmp_path / "server"
    home.mkdir()
    with JudgeServer(kernel_env(dict(os.environ), home, tmp_path / "shared"), home) as server:
        first = judge_answers(server, tmp_path / "one", [full_check("99.visibility")], answers, 60)
        server._process.kill()
        server._process.wait()
        second = judge_answers(server, tmp_path / "two", [full_check("99.visibility")], answers, 60)
    assert first.errors == second.errors == []
    assert first.checks["99.visibility"]["status"] == second.checks["99.visibility"]["status"] == "pass"
    assert sorted(path.name for path in (tmp_path / "one").iterdir()) == [judge.ANSWERS, judge.HOME]  # no request


def test_the_hidden_cases_reach_the_judge_through_a_pipe_and_never_a_file(fixture_lab, tmp_path):
    def visibility_timeout(p95_seconds):
        return min(math.ceil(2 * p95_seconds), 43_200)

    answers = handed_in(tmp_path, **{"99_visibility": visibility_timeout})
    cases = full_check("99.visibility").hidden
    hidden = [case.name for case in cases] + [judge.handover.encode({"99.visibility": cases})]  # as handed over
    home = tmp_path / "server"
    home.mkdir()
    with JudgeServer(kernel_env(dict(os.environ), home, tmp_path / "shared"), home) as server:
        verdicts = judge_answers(server, tmp_path / "job", [full_check("99.visibility")], answers, 60)
    assert len(verdicts.checks["99.visibility"]["cases"]) == len(full_check("99.visibility").cases(include_hidden=True))
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert not any(name.encode() in path.read_bytes() for name in hidden), path


class ScriptedServer:
    """Stands in for JudgeServer: each run writes the next scripted results and ends as scripted."""

    def __init__(self, *runs):
        self.runs, self.requests = list(runs), []

    def run(self, folder, seconds, request):
        events, ended = self.runs.pop(0)
        self.requests.append(json.loads(request)["checks"])
        if ended is None:
            raise JudgeStopped("the judge server stopped while judging")
        return Ended(ended.exit, ended.timed_out, (*(json.dumps(event) for event in events), '{"cut sh'))


VERDICT = {"status": "pass", "diagnosis": "", "cases": []}


def scripted(fixture_lab, tmp_path, *runs):
    server = ScriptedServer(*runs)
    checks = [full_check("99.dedupe"), full_check("99.visibility")]
    return server, judge_answers(server, tmp_path / "job", checks, b"{}", 60)


def test_an_answer_that_kills_its_judge_fails_its_check_and_the_next_judge_takes_the_rest(fixture_lab, tmp_path):
    server, verdicts = scripted(fixture_lab, tmp_path,
                                ([{"start": "99.dedupe"}], Ended(-9, False)),
                                ([{"start": "99.visibility"}, {"check": "99.visibility", **VERDICT}], Ended(0, False)))
    assert server.requests == [["99.dedupe", "99.visibility"], ["99.visibility"]]
    assert verdicts.errors == [] and verdicts.checks["99.visibility"]["status"] == "pass"
    assert verdicts.checks["99.dedupe"]["diagnosis"].startswith(
        "your code stopped the process that ran it (killed by signal 9)")


@pytest.mark.parametrize(("events", "ended", "error"), [
    ([], Ended(0, False), "the judge ended (exit code 0) without judging 99.dedupe"),
    ([{"start": "99.dedupe"}], Ended(-9, True), "grading timed out after 60 s"),
    ([{"check": "99.dedupe", **VERDICT}, {"check": "99.dedupe", **VERDICT}], Ended(0, False),
     "the judge reported 99.dedupe twice; scores withheld"),
    ([{"broken": "KeyError"}], Ended(1, False), "grading failed (KeyError)"),
])
def test_a_judge_that_did_not_judge_every_check_once_says_so(fixture_lab, tmp_path, events, ended, error):
    _, verdicts = scripted(fixture_lab, tmp_path, (events, ended))
    assert verdicts.errors == [error]


def test_a_notebook_whose_judge_server_died_is_judged_again_from_the_start(fixture_lab, tmp_path):
    server, verdicts = scripted(fixture_lab, tmp_path,
                                ([{"start": "99.dedupe"}, {"check": "99.dedupe", **VERDICT}], None),
                                ([{"check": "99.dedupe", **VERDICT}, {"check": "99.visibility", **VERDICT}],
                                 Ended(0, False)))
    assert server.requests == [["99.dedupe", "99.visibility"]] * 2
    assert verdicts.errors == [] and sorted(verdicts.checks) == ["99.dedupe", "99.visibility"]


def test_a_judge_server_that_dies_twice_under_one_notebook_is_a_grading_error(fixture_lab, tmp_path):
    with pytest.raises(JudgeStopped):
        scripted(fixture_lab, tmp_path, ([], None), ([], None))


def test_a_line_longer_than_the_grader_reads_is_read_past_and_left_out():
    stream = io.BytesIO(b'{"ready": 1}\n' + b"x" * 120 + b"\n" + b'{"folder": "f"}\n')
    assert list(judging._lines(stream, 50)) == [b'{"ready": 1}\n', b'{"folder": "f"}\n']
    verdicts = Verdicts()
    huge = json.dumps({"check": "99.dedupe", "status": "fail", "diagnosis": "y" * judging.MAX_EVENT, "cases": []})
    assert judging._read_results([json.dumps({"start": "99.dedupe"}), huge], verdicts) == "99.dedupe"
    assert verdicts.checks == {}


class EchoServer:
    """Passes every check it is asked for, and notes each request's folder and checks (the grader's threads
    call it at once)."""

    def __init__(self):
        self.requests, self.guard = {}, threading.Lock()

    def run(self, folder, seconds, request):
        checks = json.loads(request)["checks"]
        with self.guard:
            self.requests[folder] = checks
        return Ended(0, False, tuple(json.dumps({"check": check, **VERDICT}) for check in checks))


def test_a_check_that_waits_on_the_real_clock_is_judged_by_a_judge_of_its_own(fixture_lab, tmp_path):
    waits = dataclasses.replace(full_check("99.visibility"), real_time=True)
    server = EchoServer()
    verdicts = judge_answers(server, tmp_path / "job", [full_check("99.dedupe"), waits], b"{}", 60)
    assert sorted(server.requests.values()) == [["99.dedupe"], ["99.visibility"]]
    assert len(set(server.requests)) == 2 and all(folder.parent == tmp_path / "job" for folder in server.requests)
    assert verdicts.errors == [] and sorted(verdicts.checks) == ["99.dedupe", "99.visibility"]


def test_checks_that_do_not_wait_on_the_real_clock_share_one_judge(fixture_lab, tmp_path):
    server = EchoServer()
    judge_answers(server, tmp_path / "job", [full_check("99.dedupe"), full_check("99.visibility")], b"{}", 60)
    assert list(server.requests.items()) == [(tmp_path / "job", ["99.dedupe", "99.visibility"])]


def test_lab_04s_step_functions_checks_wait_on_the_real_clock_and_their_notebooks_are_graded_first():
    from fleetlab.course.grading import registry
    from fleetlab_instructor.grade.grade import _waits_first

    assert {check.id for check in registry.checks_of("04") if check.real_time} == {"04.callback", "04.catch"}
    paths = [Path("a/01_at_least_once.ipynb"), Path("Untitled.ipynb"), Path("b/04_wait_for_task_token.ipynb"),
             Path("bob_04_wait_for_task_token.ipynb")]
    assert _waits_first(paths) == [2, 3, 0, 1]
