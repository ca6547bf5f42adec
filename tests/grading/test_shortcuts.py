"""An answer that calls the library function implementing its exercise scores nothing for that check, with a
diagnosis naming the function: in the notebook, in the grader's answer process, and for an answer that is data,
in the cells that build it."""

import base64
import csv
import json
import os
import sys
import threading

import cloudpickle
import nbformat
import pytest
from fleetlab_instructor.checks import full_check, side_of
from fleetlab_tools.kernel import NotebookKernel

from fleetlab.cli import main
from fleetlab.composition.scaling.capacity import daily_bill
from fleetlab.course.experiments.replay import COMPLETED_STEPS
from fleetlab.course.grading import registry, run_check, session, shortcuts
from fleetlab.course.judge.answerhost import AnswerHost
from fleetlab.course.judge.server import judge_one
from fleetlab.course.grading.results import CheckStatus
from fleetlab.course.grading.runner import CheckBackend
from fleetlab.services.events import replay as replays

from .conftest import FIXTURES

OWN_CODE = "this exercise asks for your own code"
CAPACITY = "`fleetlab.composition.scaling.capacity.capacity`"
EXCLUDING = "fleetlab.services.events.replay.excluding_replays"


def lazily_imported(cpm, steps, seconds, prices):
    from fleetlab.composition.scaling import capacity as sizing

    fleet = sizing.capacity(cpm, steps, seconds)
    return fleet.in_flight_steps, sum(sizing.daily_bill(fleet, prices).values())


price = daily_bill  # another name for it, from the module's globals


def through_an_alias(cpm, steps, seconds, prices):
    per_day = cpm * steps * 1440
    in_flight = cpm * steps / 60 * seconds
    return in_flight, sum(price(_Fleet(per_day), prices).values())


class _Fleet:
    def __init__(self, steps_per_day):
        self.steps_per_day = steps_per_day


def in_a_thread(cpm, steps, seconds, prices):
    from fleetlab.composition.scaling.capacity import capacity

    box = {}
    worker = threading.Thread(target=lambda: box.update(fleet=capacity(cpm, steps, seconds)))
    worker.start()
    worker.join()
    per_day = cpm * steps * 1440
    return box["fleet"].in_flight_steps, per_day * (2 * prices["sqs"] + prices["events"] + prices["dynamodb"]) / 1e6


def test_every_declared_function_is_found_by_its_code():
    declared = [check for lab in registry.shipped_labs() for check in registry.checks_of(lab) if check.implemented_by]
    assert {check.id for check in declared} >= {"02.window", "03.batch", "03.triage", "04.callback", "05.bill",
                                                 "05.burst", "06.pattern", "06.window"}
    for check in declared:
        assert len(shortcuts.implementing(check)) == len(check.implemented_by), check.id


def test_a_declared_name_that_is_no_function_says_so():
    with pytest.raises(LookupError, match="fleetlab.composition.scaling.capacity.nothing"):
        shortcuts.implementing(registry.Check("98.x", "x", 1, lambda *_: None, (), implemented_by=(
            "fleetlab.composition.scaling.capacity.nothing",)))


@pytest.mark.parametrize("answer", [lazily_imported, in_a_thread])
def test_in_the_notebook_a_call_of_the_implementing_function_scores_nothing_and_names_it(answer):
    result = run_check(registry.get_check("05.bill"), answer)
    assert result.status == CheckStatus.FAIL
    assert result.diagnosis.startswith(OWN_CODE) and CAPACITY in result.diagnosis


def test_another_name_for_it_is_the_same_function():
    result = run_check(registry.get_check("05.bill"), through_an_alias)
    assert result.status == CheckStatus.FAIL and "`fleetlab.composition.scaling.capacity.daily_bill`" in result.diagnosis


def test_the_harness_may_use_the_library_and_the_watch_ends_with_the_answers_calls():
    before = (sys.getprofile(), threading.getprofile())
    result = run_check(registry.get_check("05.bill"), side_of("05.bill").reference)  # the harness calls capacity
    assert result.passed, result.diagnosis
    assert (sys.getprofile(), threading.getprofile()) == before


@pytest.fixture(scope="module")
def answers():
    with AnswerHost(refuse_borrowed=False) as host:
        yield host


def graded(check_id, answer, host, **entry):
    check = full_check(check_id)
    entry = {"pickle": base64.b64encode(cloudpickle.dumps(answer)).decode("ascii"), **entry}
    with CheckBackend() as backends:
        return judge_one(check, check.hidden, entry, backends, host)


def test_in_the_answer_process_a_lazy_import_of_it_scores_nothing_and_the_next_answer_is_judged_afresh(answers):
    shortcut = graded("05.bill", lazily_imported, answers)
    assert shortcut["status"] == "fail" and shortcut["diagnosis"].startswith(OWN_CODE)
    assert CAPACITY in shortcut["diagnosis"]
    assert graded("05.bill", side_of("05.bill").reference, answers)["status"] == "pass"


def profile_off(cpm, steps, seconds, prices):
    import sys
    import threading

    sys.setprofile(None)
    threading.setprofile(None)
    return lazily_imported(cpm, steps, seconds, prices)


def watch_emptied(cpm, steps, seconds, prices):
    import sys

    sys.modules["fleetlab.course.grading.shortcuts"]._process_watch.reset({})
    return lazily_imported(cpm, steps, seconds, prices)


def module_rerun(cpm, steps, seconds, prices):
    import importlib

    from fleetlab.composition.scaling import capacity as sizing

    importlib.reload(sizing)
    return lazily_imported(cpm, steps, seconds, prices)


def code_put_back(cpm, steps, seconds, prices):
    from fleetlab.composition.scaling import capacity as sizing

    sizing.capacity.__code__ = in_a_thread.__code__
    return lazily_imported(cpm, steps, seconds, prices)


@pytest.mark.parametrize("answer", [profile_off, watch_emptied, module_rerun, code_put_back])
def test_an_answer_that_turns_the_watch_off_or_reruns_the_library_still_scores_nothing(answer):
    """The implementing functions are disarmed in the answer process: they raise, whatever the answer did first."""
    with AnswerHost(refuse_borrowed=False) as host:
        verdict = graded("05.bill", answer, host)
        said = " ".join([verdict["diagnosis"], *(case["diagnosis"] for case in verdict["cases"])])
        assert verdict["status"] != "pass" and not any(case["status"] == "pass" for case in verdict["cases"])
        assert OWN_CODE in said, said
        assert graded("05.burst", side_of("05.burst").reference, host)["status"] == "pass"  # a check of its own


LIBRARYS = [(check.id, wrong) for lab in registry.shipped_labs() for check in registry.checks_of(lab)
            for wrong in side_of(check.id).wrong_answers if wrong.name.startswith("the library's")]


def test_each_check_that_names_its_library_functions_catalogues_the_librarys_answer():
    function_answers = {check.id for lab in registry.shipped_labs() for check in registry.checks_of(lab)
                        if check.implemented_by and check.function}
    assert function_answers == {check_id for check_id, _ in LIBRARYS}


@pytest.mark.parametrize(("check_id", "wrong"), LIBRARYS, ids=[f"{check_id}: {wrong.name}" for check_id, wrong in LIBRARYS])
def test_the_grader_scores_each_catalogued_library_answer_nothing(check_id, wrong, answers):
    verdict = graded(check_id, wrong.answer, answers)
    assert verdict["status"] == "fail" and verdict["diagnosis"].startswith(OWN_CODE), verdict["diagnosis"]
    assert wrong.expect in verdict["diagnosis"]


# --- an answer that is data -------------------------------------------------------------------------------------------

PATTERN = registry.get_check("06.pattern")


def notebook(*cells, **names):
    """A notebook's namespace after these cells ran: IPython's ``In`` (its first entry empty) and ``names``."""
    return {"In": ["", *cells], **names}


def as_notebook_function(source, namespace):
    """A function defined by a notebook cell (its module is ``__main__``)."""
    scope = {"__name__": "__main__", **namespace}
    exec(source, scope)  # noqa: S102  # the test's own source
    return scope


def test_a_pattern_built_by_the_implementing_function_under_any_name_is_read_in_its_cell():
    imported = notebook("from fleetlab.services.events.replay import excluding_replays as keep_out",
                        "billing_pattern = keep_out(COMPLETED_STEPS)",
                        keep_out=replays.excluding_replays, COMPLETED_STEPS=COMPLETED_STEPS)
    by_module = notebook("from fleetlab.services.events import replay",
                         "billing_pattern = dict(replay.excluding_replays(COMPLETED_STEPS))",
                         replay=replays, COMPLETED_STEPS=COMPLETED_STEPS)
    helper = as_notebook_function("def build():\n    return replay.excluding_replays(COMPLETED_STEPS)\n",
                                  {"replay": replays, "COMPLETED_STEPS": COMPLETED_STEPS})
    through_helper = notebook("def build(): ...", "billing_pattern = build()", build=helper["build"])
    through_a_variable = notebook("built = replay.excluding_replays(COMPLETED_STEPS)", "billing_pattern = built",
                                  replay=replays, COMPLETED_STEPS=COMPLETED_STEPS,
                                  built=replays.excluding_replays(COMPLETED_STEPS))
    for namespace in (imported, by_module, through_helper, through_a_variable):
        assert shortcuts.called_in_cells(PATTERN, namespace) == [EXCLUDING]


def test_a_hand_written_pattern_is_the_learners_even_beside_the_librarys():
    hand_written = json.dumps(replays.excluding_replays(COMPLETED_STEPS))
    written = notebook(f"billing_pattern = {hand_written}")
    rewritten = notebook("billing_pattern = keep_out(COMPLETED_STEPS)", f"billing_pattern = {hand_written}",
                         "print(billing_pattern)", keep_out=replays.excluding_replays, COMPLETED_STEPS=COMPLETED_STEPS)
    compared = notebook(f"billing_pattern = {hand_written}", "assert billing_pattern == keep_out(COMPLETED_STEPS)",
                        keep_out=replays.excluding_replays, COMPLETED_STEPS=COMPLETED_STEPS)
    assert shortcuts.called_in_cells(PATTERN, written) == []
    assert shortcuts.called_in_cells(PATTERN, rewritten) == []
    assert shortcuts.called_in_cells(PATTERN, compared) == []


def test_check_and_the_hand_in_refuse_a_pattern_its_cell_built_with_the_library(monkeypatch, tmp_path, answers):
    pattern = replays.excluding_replays(COMPLETED_STEPS)
    namespace = notebook("billing_pattern = replay.excluding_replays(COMPLETED_STEPS)", replay=replays,
                         COMPLETED_STEPS=COMPLETED_STEPS, billing_pattern=pattern)
    monkeypatch.setattr(session, "_notebook_namespace", lambda: namespace)
    in_notebook = session.judge_answer(PATTERN, pattern)
    assert in_notebook.status == CheckStatus.FAIL and f"`{EXCLUDING}`" in in_notebook.diagnosis
    session.hand_in(tmp_path / "answers.json", {"06.pattern": "billing_pattern"})
    entry = json.loads((tmp_path / "answers.json").read_text())["answers"]["06.pattern"]
    assert entry["shortcut"] == EXCLUDING
    verdict = graded("06.pattern", pattern, answers, shortcut=entry["shortcut"])
    assert verdict["status"] == "fail" and verdict["diagnosis"].startswith(OWN_CODE)


def test_the_judge_believes_a_hand_in_only_about_the_checks_own_implementing_functions(answers):
    verdict = graded("05.bill", side_of("05.bill").reference, answers, shortcut="builtins.sum")
    assert verdict["status"] == "pass", verdict["diagnosis"]


def test_in_a_kernel_the_hand_in_reads_the_cells_that_built_the_pattern(tmp_path):
    handed = tmp_path / "answers.json"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in (
        "from fleetlab.course.experiments.replay import COMPLETED_STEPS\n"
        "from fleetlab.services.events.replay import excluding_replays as keep_out",
        "billing_pattern = keep_out(COMPLETED_STEPS)",
        f"from fleetlab.course.grading import session\nsession.hand_in({str(handed)!r}, {{'06.pattern': 'billing_pattern'}})",
    )])
    env = {**os.environ, "HOME": str(tmp_path), "FLEETLAB_HOME": str(tmp_path / ".fleetlab"), "FLEETLAB_GRADED": "1"}
    with NotebookKernel(nb, env=env, cwd=tmp_path) as kernel:
        runs = kernel.run_code_cells(timeout=60)
    assert [run.status for run in runs] == ["ok"] * 3, [run.error for run in runs]
    assert json.loads(handed.read_text())["answers"]["06.pattern"]["shortcut"] == EXCLUDING


# --- through the real grader ------------------------------------------------------------------------------------------


def test_the_grader_scores_a_lazily_imported_library_call_nothing_and_says_why(fixture_lab, tmp_path):
    nb = nbformat.read(FIXTURES / "submissions" / "01_correct.ipynb", as_version=4)
    cell = next(cell for cell in nb.cells if cell.source.startswith("def visibility_timeout"))
    cell.source = ("def visibility_timeout(p95_seconds):\n"
                   "    from fleetlab.composition.topology import visibility_for as sized\n"
                   "    return sized(p95_seconds, margin=2)\n")
    nbformat.write(nb, submission := tmp_path / "shortcut_99_fixture.ipynb")
    out, feedback = tmp_path / "grades.csv", tmp_path / "feedback"
    assert main(["grade", str(submission), "--out", str(out), "--feedback", str(feedback)]) == 0
    with out.open(newline="") as file:
        row = next(row for row in csv.DictReader(file) if row["learner"] == "shortcut")
    assert (row["99.visibility"], row["99.dedupe"]) == ("0", "3")
    said = (feedback / "shortcut.md").read_text()
    assert OWN_CODE in said and "`fleetlab.composition.topology.visibility_for`" in said


def test_the_grader_scores_a_pattern_built_by_the_library_nothing_and_a_hand_written_one_in_full(tmp_path):
    cells = {"built": "billing_pattern = keep_out(COMPLETED_STEPS)",
             "forgotten": "billing_pattern = keep_out(COMPLETED_STEPS)\nIn.clear()",  # the history the kernel reads
             "unwatched": "import fleetlab.course.grading.shortcuts as watch\nwatch.called_in_cells = lambda *_: []\n"
                          "billing_pattern = keep_out(COMPLETED_STEPS)",
             "evaluated": "billing_pattern = eval('keep_out(COMPLETED_STEPS)')",
             "written": f"billing_pattern = {replays.excluding_replays(COMPLETED_STEPS)!r}"}
    for learner, source in cells.items():
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            "from fleetlab.course.experiments.replay import COMPLETED_STEPS\n"
            "from fleetlab.services.events.replay import excluding_replays as keep_out"), nbformat.v4.new_code_cell(source)])
        nbformat.write(nb, tmp_path / f"{learner}_06_replay_hazards.ipynb")
    out, feedback = tmp_path / "grades.csv", tmp_path / "feedback"
    notebooks = [str(tmp_path / f"{learner}_06_replay_hazards.ipynb") for learner in cells]
    assert main(["grade", *notebooks, "--out", str(out), "--feedback", str(feedback)]) == 0
    with out.open(newline="") as file:
        rows = {row["learner"]: row["06.pattern"] for row in csv.DictReader(file) if row["learner"] in cells}
    assert rows == {"built": "0", "forgotten": "0", "unwatched": "0", "evaluated": "0", "written": "2"}
    said = (feedback / "built.md").read_text()
    assert OWN_CODE in said and f"`{EXCLUDING}`" in said


READ = ("from fleetlab.course.experiments.replay import COMPLETED_STEPS\n"
        "from fleetlab.services.events import replay as replays")


@pytest.mark.parametrize(("cells", "taken"), [
    ([READ, "billing_pattern = replays.excluding_replays(COMPLETED_STEPS)"], [EXCLUDING]),
    (["from fleetlab.services.events.replay import excluding_replays as keep", "base = dict(COMPLETED_STEPS)",
      "billing_pattern = keep(base)"], [EXCLUDING]),
    ([READ, "def make(pattern):\n    return replays.excluding_replays(pattern)", "billing_pattern = make(COMPLETED_STEPS)"],
     [EXCLUDING]),
    ([READ, "billing_pattern = eval('replays.excluding_replays(COMPLETED_STEPS)')"], [EXCLUDING]),
    ([READ, "no_replays = replays.excluding_replays(COMPLETED_STEPS)", "billing_pattern = {'source': ['fleet']}"], []),
    ([READ, "def excluding_replays(pattern):\n    return {**pattern, 'replay-name': [{'exists': False}]}",
      "billing_pattern = excluding_replays(COMPLETED_STEPS)"], []),
])
def test_the_grader_reads_the_cells_that_build_a_pattern_from_the_notebooks_text(cells, taken):
    """Aliases, notebook helpers and code given to eval count; the library's call beside the answer and a notebook
    function of the same name do not."""
    assert shortcuts.called_in_source(PATTERN, cells) == taken
