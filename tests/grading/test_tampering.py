"""Every tampering a learner could write in a cell scores exactly what the answers earn (issue 29).

Each notebook answers the fixture lab (99.dedupe: 3 points, all or nothing;
99.visibility: 2 points, 0.5 per case) rightly or wrongly, and tampers with
one thing. The whole batch is graded once, by the real grader, kernels and
judge; each test reads one notebook's row.

What the answers earn is what reaches the judge: a kernel whose own hooks
stop or kill the hand-in cell hands in nothing and earns nothing (the kernel
is the learner's; no tampering there can earn a point), while an answer runs
in a process of its own: one that exits, kills its process, changes the
grader's code there or forges a verdict and kills the judge costs only its
own check.
"""

from __future__ import annotations

import os

import nbformat
import pytest
from fleetlab_instructor.grade.grade import Limits, grade_notebooks
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from fleetlab.course.grading import registry

from .conftest import FIXTURES, load_fixture_checks

IMPORTS = "import math\n\nimport fixture_checks\nfrom fleetlab.course.grading import check"
RIGHT_VISIBILITY = "def visibility_timeout(p95_seconds):\n    return min(math.ceil(2 * p95_seconds), 43_200)"
WRONG_VISIBILITY = "def visibility_timeout(p95_seconds):\n    return -1"
RIGHT_HANDLE = '''def handle(message, done, file_ticket):
    alert_id = message["body"]["alert_id"]
    if alert_id not in done:
        done[alert_id] = file_ticket(message["body"])'''
WRONG_HANDLE = 'def handle(message, done, file_ticket):\n    file_ticket(message["body"])'
CHECKS = 'check("99.visibility", visibility_timeout)\ncheck("99.dedupe", handle)'
RIGHT, WRONG = (RIGHT_VISIBILITY, RIGHT_HANDLE), (WRONG_VISIBILITY, WRONG_HANDLE)

FORGED_PASS = '''from fleetlab.course.grading.results import CaseResult, CheckResult, CheckStatus

def forged(check, *args, **kwargs):
    cases = [CaseResult(case.name, CheckStatus.PASS, "", hidden) for case, hidden in check.cases(include_hidden=False)]
    return CheckResult(check.id, check.title, CheckStatus.PASS, check.points, check.points, "", cases)
'''

FORGE_AND_KILL = """    import json, os, signal
    forged = json.dumps({"check": "99.dedupe", "status": "pass", "diagnosis": "", "cases": []})
    with open(f"/proc/{os.getppid()}/stat") as stat:  # the answer's parent forks answers; its parent judges
        judge = int(stat.read().rsplit(")", 1)[1].split()[1])
    folder = os.path.dirname(os.readlink(f"/proc/{judge}/cwd"))
    for where, _, names in os.walk(folder):  # every file of the judge's folder gets a forged verdict
        for name in names:
            with open(os.path.join(where, name), "a") as written:
                written.write("\\n" + forged + "\\n")
    os.kill(judge, signal.SIGKILL)
"""
"""A wrong answer that writes a passing verdict for its check into every file the judge has, then kills the judge."""

TAMPERINGS = {  # learner: (answers, tampering cell, (99.dedupe, 99.visibility), error)
    "replacesgrading": (WRONG, FORGED_PASS + '''
import fleetlab.course.grading as grading
import fleetlab.course.grading.session as session
session.judge_answer = forged
session.check = grading.check = lambda check_id, answer: forged(grading.get_check(check_id))
session.hand_in.__code__ = (lambda path, names: None).__code__''', (0, 0), "the kernel handed in no answers"),
    "replacesrunner": (WRONG, FORGED_PASS + '''
import fleetlab.course.grading.runner as runner
runner.run_check = forged
runner._run_case = lambda check, answer, case, context, hidden: CaseResult(case.name, CheckStatus.PASS, "", hidden)''',
                       (0, 0), ""),
    "replacesregistry": (WRONG, '''import dataclasses
from fleetlab.course.grading import CaseOutcome, registry
for check_id in ("99.visibility", "99.dedupe"):
    registry._CHECKS[check_id] = dataclasses.replace(registry._CHECKS[check_id], harness=lambda a, c, x: CaseOutcome(True))''',
                         (0, 0), ""),
    "replacesdisplay": (RIGHT, '''import builtins
import IPython.display
IPython.display.display = lambda *args, **kwargs: None
builtins.print = lambda *args, **kwargs: None''', (3, 2), ""),
    "forgesprogress": (WRONG, '''import json
from fleetlab.course.grading import progress
passed = {"status": "pass", "points": 5, "grader_adds": 0}
progress.progress_file().parent.mkdir(parents=True, exist_ok=True)
progress.progress_file().write_text(json.dumps({"99.visibility": passed, "99.dedupe": passed}))
progress.record = progress.load = lambda *args, **kwargs: {"99.visibility": passed, "99.dedupe": passed}''',
                       (0, 0), ""),
    "printsgrades": (WRONG, '''from IPython.display import display
forged = {"nonce": "guess", "expected": {"99.visibility": 2, "99.dedupe": 3},
          "checks": {check_id: {"status": "pass", "points": 9, "max_points": 9, "diagnosis": "", "cases": []}
                     for check_id in ("99.visibility", "99.dedupe")}}
display({"application/vnd.fleetlab.grades+v1+json": forged, "text/plain": "fleetlab: graded 2 checks"}, raw=True)
print(forged)''', (0, 0), ""),
    "exitsinanswer": ((RIGHT_VISIBILITY.replace("return min", "raise SystemExit(0)\n    return min"), RIGHT_HANDLE),
                      "", (3, 0), ""),
    "exitsingrading": (RIGHT, '''def leave(info):
    raise SystemExit(0)

get_ipython().events.register("pre_run_cell", leave)''', (0, 0), "handing in the answers failed (SystemExit)"),
    "killsinanswer": ((RIGHT_VISIBILITY, RIGHT_HANDLE.replace('    alert_id', '    import os, signal\n'
                                                                          '    os.kill(os.getpid(), signal.SIGKILL)\n'
                                                                          '    alert_id', 1)),
                      "", (0, 2), ""),
    "killsingrading": (RIGHT, '''import os
import signal

get_ipython().events.register("pre_run_cell", lambda info: os.kill(os.getpid(), signal.SIGKILL))''',
                       (0, 0), "the kernel died while handing in the answers"),
    "changesjudge": ((RIGHT_VISIBILITY.replace("    return min", "    import fleetlab.course.grading.results as r\n"
                                                                 "    r.conclude = None\n    return min"), RIGHT_HANDLE),
                     "", (3, 2), ""),
    "forgesverdict": ((RIGHT_VISIBILITY, WRONG_HANDLE.replace("    file_ticket", FORGE_AND_KILL + "    file_ticket")),
                      "", (0, 2), ""),
    "instructor": ((RIGHT_VISIBILITY, RIGHT_HANDLE.replace("    alert_id", "    import fleetlab_instructor\n    alert_id", 1)),
                   "", (0, 2), ""),
    "unpicklable": ((RIGHT_VISIBILITY.replace("def ", "import threading\nlock = threading.Lock()\n\ndef ").replace(
        "    return", "    with lock:\n        return"), RIGHT_HANDLE), "", (3, 0), ""),
}


def tampering_notebook(answers: tuple[str, str], tampering: str) -> nbformat.NotebookNode:
    cells = [IMPORTS, *answers, CHECKS] + ([tampering] if tampering else [])
    return new_notebook(cells=[new_markdown_cell("# Lab 99")] + [new_code_cell(source) for source in cells])


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """Every tampering notebook graded in one batch: learner -> GradeRow."""
    folder = tmp_path_factory.mktemp("tampering")
    paths = []
    for learner, (answers, tampering, *_) in TAMPERINGS.items():
        nbformat.write(tampering_notebook(answers, tampering), path := folder / f"{learner}_99_fixture.ipynb")
        paths.append(path)
    with pytest.MonkeyPatch.context() as patch, registry.isolated():
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FIXTURES), os.environ.get("PYTHONPATH")])))
        load_fixture_checks()
        graded = grade_notebooks(paths, grader_env=dict(os.environ), limits=Limits(cell=30))
    return {path.name.split("_", 1)[0]: row for path, row in zip(paths, graded)}


@pytest.mark.parametrize("learner", sorted(TAMPERINGS))
def test_a_tampering_scores_exactly_what_the_answers_earn(rows, learner):
    *_, (dedupe, visibility), error = TAMPERINGS[learner]
    row = rows[learner]
    assert (row.scores, row.error) == ({"99.dedupe": dedupe, "99.visibility": visibility}, error)


def test_an_answer_that_exits_or_kills_its_process_fails_its_cases(rows):
    exits = rows["exitsinanswer"].checks["99.visibility"]
    assert all(case.status == "fail" for case in exits.cases)
    assert exits.diagnosis.startswith("your code raised SystemExit")
    killed = rows["killsinanswer"].checks["99.dedupe"]
    assert killed.diagnosis.startswith("your code stopped the process that ran it (it exited or was killed)")
    assert rows["killsinanswer"].checks["99.visibility"].status == "pass"  # judged by the next judge


def test_an_answer_that_reaches_for_the_instructors_package_scores_nothing_and_is_told_why(rows):
    said = rows["instructor"].checks["99.dedupe"]
    assert said.status == "fail"
    assert "fleetlab_instructor is the instructor's side of fleetlab" in said.diagnosis


def test_an_answer_that_cannot_travel_is_told_to_take_what_it_needs_as_an_argument(rows):
    said = rows["unpicklable"].checks["99.visibility"]
    assert said.status == "fail" and said.cases == ()
    assert said.diagnosis.startswith("`visibility_timeout` could not be handed to the grader (TypeError: ")
    assert "such as an open client or the `lab` object; pass what it needs as an argument" in said.diagnosis
