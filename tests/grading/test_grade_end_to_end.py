"""``grade`` on the six fixture submissions, with fake but recognisable credentials in the grader's env."""

import csv
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from fleetlab_instructor.checks import full_check
from fleetlab_instructor.report import room as room_report
from fleetlab_instructor.grade.environment import kernel_env
from fleetlab_tools.kernel import NotebookKernel

from fleetlab.cli import main

from .conftest import FIXTURES
from .test_executor import FLOOD, peak_growth

FAKE_KEY, FAKE_SECRET = "AKIAFLEETLABFAKE0001", "fleetlab-fake-secret-do-not-leak"
EXPECTED = {  # learner (its notebook NN_learner.ipynb): (99.dedupe, 99.visibility, total, error)
    "correct": ("3", "2", "5", ""),
    "partly_correct": ("0", "2", "2", ""),  # keyed on the message id: only hidden cases catch it
    "wrong": ("0", "0", "0", "code cell 6 (exercise 2: file one ticket per alert) raised KeyError: 'body'"),
    "infinite_loop": ("0", "2", "2", "code cell 4 (exercise 1: size a visibility timeout) timed out after 10 s"),
    "kernel_crash": ("0", "0", "0", "the kernel died in code cell 4 (exercise 1: size a visibility timeout)"),
    "reads_credentials": ("3", "2", "5", ""),  # it scores 0 if it sees any credential
}


@pytest.fixture
def room(tmp_path):
    """The six submissions, each renamed <learner>_99_fixture.ipynb (the learner from its old name)."""
    folder = tmp_path / "room"
    folder.mkdir()
    for notebook in (FIXTURES / "submissions").glob("*.ipynb"):
        shutil.copy(notebook, folder / f"{notebook.stem.split('_', 1)[1]}_99_fixture.ipynb")
    return folder


@pytest.fixture
def grader_with_credentials(fixture_lab, tmp_path, monkeypatch):
    """The grader's own environment holds credentials, in variables and in ~/.aws."""
    home = tmp_path / "grader-home"
    (home / ".aws").mkdir(parents=True)
    credentials = home / ".aws" / "credentials"
    credentials.write_text(f"[default]\naws_access_key_id = {FAKE_KEY}\naws_secret_access_key = {FAKE_SECRET}\n")
    for name, value in {
        "HOME": str(home),
        "AWS_ACCESS_KEY_ID": FAKE_KEY,
        "AWS_SECRET_ACCESS_KEY": FAKE_SECRET,
        "AWS_SESSION_TOKEN": FAKE_SECRET,
        "AWS_PROFILE": "default",
        "AWS_SHARED_CREDENTIALS_FILE": str(credentials),
    }.items():
        monkeypatch.setenv(name, value)
    return home


def test_the_gradebook_of_the_six_submissions(grader_with_credentials, room, tmp_path, capsys):
    out, feedback, report = tmp_path / "grades.csv", tmp_path / "feedback", tmp_path / "room.html"
    argv = ["grade", str(room), "--out", str(out), "--feedback", str(feedback), "--report", str(report),
            "--cell-timeout", "10"]
    assert main(argv) == 0
    with out.open(newline="") as file:
        maxima, *rows = list(csv.DictReader(file))
    assert list(maxima.values()) == ["Points Possible", "3", "2", "5"]
    assert [row["learner"] for row in rows] == sorted(EXPECTED)
    got = {row["learner"]: (row["99.dedupe"], row["99.visibility"], row["total"]) for row in rows}
    assert got == {learner: expected[:3] for learner, expected in EXPECTED.items()}
    for learner, (*_, error) in EXPECTED.items():
        said = (feedback / f"{learner}.md").read_text()
        assert (f"Problems while grading: {error}\n" in said) if error else ("Problems while grading" not in said)
    printed = capsys.readouterr().out
    assert "graded 6 notebooks" in printed and f"room report: {report}" in printed
    page = report.read_text()
    assert "2 of 6 learners passed" in page and "4 of 6 learners passed" in page  # 99.dedupe, 99.visibility
    assert "<li>keyed on the message id <b>(" in page  # partly_correct's hidden case, in the catalogue's words
    assert f"<li>{room_report.DID_NOT_RUN} <b>(1)</b>" in page  # kernel_crash: nothing reached the grader
    for secret in (FAKE_KEY, FAKE_SECRET):
        assert secret not in out.read_text() and secret not in printed and secret not in page
        assert all(secret not in path.read_text() for path in feedback.iterdir())


def test_a_learner_fitted_to_the_public_cases_reads_the_mistake_never_the_hidden_input(grader_with_credentials, room,
                                                                                        tmp_path):
    feedback = tmp_path / "feedback"  # by default, beside the gradebook
    assert main(["grade", str(room / "partly_correct_99_fixture.ipynb"), "--out", str(tmp_path / "g.csv")]) == 0
    said = (feedback / "partly_correct.md").read_text()
    assert "- public case *redelivered after a visibility timeout*: pass" in said
    assert "- hidden case 1: fail; it points to: keyed on the message id" in said
    for case in full_check("99.dedupe").hidden:
        assert case.name not in said


def test_learner_code_sees_no_credential(grader_with_credentials, tmp_path):
    nb = nbformat.read(FIXTURES / "submissions" / "06_reads_credentials.ipynb", as_version=4)
    nb.cells = nb.cells[:3]  # the imports and the cell that looks for credentials
    env = kernel_env(dict(os.environ), tmp_path, tmp_path / "shared")
    with NotebookKernel(nb, env=env, cwd=tmp_path) as kernel:
        runs = [kernel.run_cell(index, timeout=30) for index, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    assert [run.status for run in runs] == ["ok", "ok"]
    outputs = nbformat.writes(nb)
    assert "credentials visible to this notebook: none" in outputs
    assert FAKE_KEY not in outputs and FAKE_SECRET not in outputs


def without_check_calls(source: Path, target: Path) -> Path:
    nb = nbformat.read(source, as_version=4)
    nb.cells = [cell for cell in nb.cells if "check(" not in cell.source]
    nbformat.write(nb, target)
    return target


def test_the_grader_finds_each_answer_by_name_without_the_learners_check_call(fixture_lab, room, tmp_path):
    bare = without_check_calls(room / "correct_99_fixture.ipynb", tmp_path / "bare_99_fixture.ipynb")
    nb = nbformat.read(bare, as_version=4)
    nb.cells = [cell for cell in nb.cells if "def visibility_timeout" not in cell.source]  # one answer left out
    nbformat.write(nb, partial := tmp_path / "partial_99_fixture.ipynb")
    out, feedback = tmp_path / "grades.csv", tmp_path / "feedback"
    assert main(["grade", str(bare), str(partial), "--out", str(out), "--feedback", str(feedback)]) == 0
    with out.open(newline="") as file:
        rows = {row["learner"]: row for row in csv.DictReader(file)}
    assert (rows["bare"]["99.dedupe"], rows["bare"]["99.visibility"]) == ("3", "2")  # as with its check() calls
    assert (rows["partial"]["99.dedupe"], rows["partial"]["99.visibility"]) == ("3", "0")
    said = (feedback / "partial.md").read_text()
    assert "not attempted: no `visibility_timeout` defined" in said


def test_a_notebook_that_prints_hundreds_of_megabytes_and_raises_30_mb_keeps_the_grader_small(fixture_lab, tmp_path):
    nb = nbformat.read(FIXTURES / "submissions" / "01_correct.ipynb", as_version=4)
    shouting = "def visibility_timeout(p95_seconds):\n    raise ValueError('z' * 30_000_000)"
    nb.cells[3] = nbformat.v4.new_code_cell(shouting)
    nb.cells.insert(4, nbformat.v4.new_code_cell(FLOOD))
    nbformat.write(nb, loud := tmp_path / "loud_99_fixture.ipynb")
    out, feedback = tmp_path / "grades.csv", tmp_path / "feedback"
    with peak_growth() as grew:
        assert main(["grade", str(loud), "--out", str(out), "--feedback", str(feedback)]) == 0
    with out.open(newline="") as file:
        _, row = list(csv.DictReader(file))
    assert (row["99.dedupe"], row["99.visibility"]) == ("3", "0")
    said = (feedback / "loud.md").read_text()
    assert ("code cell 3 (exercise 1: size a visibility timeout) printed more than the grader keeps; "
            "its output was cut") in said
    assert "your code raised ValueError: zzz" in said and "characters cut]" in said
    assert len(said) < 20_000 and grew[0] < 200 * 2**20, grew[0]


def test_an_answer_compiled_under_a_library_file_name_is_graded_as_the_learners(fixture_lab, tmp_path):
    nb = nbformat.read(FIXTURES / "submissions" / "01_correct.ipynb", as_version=4)
    disguised = ("import fleetlab.course.grading.runner as runner\nnamespace = {}\n"
                 "exec(compile('def handle(message, done, file_ticket):\\n    raise KeyError(\"body\")\\n', "
                 "runner.__file__, 'exec'), namespace)\nhandle = namespace['handle']")
    nb.cells[6] = nbformat.v4.new_code_cell(disguised)
    nbformat.write(nb, notebook := tmp_path / "disguised_99_fixture.ipynb")
    out, feedback = tmp_path / "grades.csv", tmp_path / "feedback"
    assert main(["grade", str(notebook), "--out", str(out), "--feedback", str(feedback)]) == 0
    with out.open(newline="") as file:
        _, row = list(csv.DictReader(file))
    assert (row["99.dedupe"], row["99.visibility"]) == ("0", "2")
    said = (feedback / "disguised.md").read_text()
    assert "your code raised KeyError: 'body' (in handle, line 2)" in said and "fleetlab bug" not in said
