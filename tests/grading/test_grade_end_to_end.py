"""``grade`` on the six fixture submissions, with fake but recognisable credentials in the grader's env."""

import csv
import os
from pathlib import Path

import nbformat
import pytest
from fleetlab_instructor.grading.sandbox import kernel_env
from fleetlab_tools.kernel import NotebookKernel

from fleetlab.cli import main

from .conftest import FIXTURES

FAKE_KEY, FAKE_SECRET = "AKIAFLEETLABFAKE0001", "fleetlab-fake-secret-do-not-leak"
EXPECTED = {  # notebook: (99.dedupe, 99.visibility, total, error)
    "01_correct.ipynb": ("3", "2", "5", ""),
    "02_partly_correct.ipynb": ("0", "2", "2", ""),  # keyed on the message id: only hidden cases catch it
    "03_wrong.ipynb": ("0", "0", "0", "cell 9 raised KeyError: 'body'"),
    "04_infinite_loop.ipynb": ("0", "2", "2", "cell 6 timed out after 10 s"),
    "05_kernel_crash.ipynb": ("0", "0", "0", "the kernel died in cell 6"),
    "06_reads_credentials.ipynb": ("3", "2", "5", ""),  # it scores 0 if it sees any credential
}


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


def test_the_gradebook_of_the_six_submissions(grader_with_credentials, tmp_path, capsys):
    out = tmp_path / "grades.csv"
    assert main(["grade", str(FIXTURES / "submissions"), "--out", str(out), "--cell-timeout", "10"]) == 0
    with out.open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert list(rows[0]) == ["notebook", "99.dedupe", "99.visibility", "total", "error"]
    got = {
        Path(row["notebook"]).name: (row["99.dedupe"], row["99.visibility"], row["total"], row["error"]) for row in rows
    }
    assert got == EXPECTED
    printed = capsys.readouterr().out
    assert "graded 6 notebooks" in printed
    for secret in (FAKE_KEY, FAKE_SECRET):
        assert secret not in out.read_text() and secret not in printed


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
