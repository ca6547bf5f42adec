"""The CLI's tables outside a terminal: whole names, one line per row; COLUMNS still rules."""

import io
import os
import subprocess
import sys

from fleetlab_instructor.grade.grade import GradeRow
from fleetlab_instructor.report.gradebook import summary_table

from fleetlab.backends.fidelity.table import FidelityTable, Finding
from fleetlab.cli import main
from fleetlab.cli.output import stdout_console

CHECKS = [f"0{lab}.{name}" for lab in range(8) for name in ("first", "second", "third")]
MAXIMA = dict.fromkeys(CHECKS, 2.0)


def gradebook_rows() -> list[GradeRow]:
    names = [f"submissions/cohort-2026/learner-{n:02d}/03_poison_and_dlq_final_final.ipynb" for n in range(3)]
    return [GradeRow(name, {c: 1.0 for c in CHECKS}, {c: 2.0 for c in CHECKS}, "") for name in names]


def test_a_gradebook_in_a_log_keeps_every_notebook_name_whole(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    log = io.StringIO()
    stdout_console(file=log).print(summary_table(gradebook_rows(), MAXIMA))
    lines = log.getvalue().splitlines()
    for n in range(3):
        name = f"learner-{n:02d}/03_poison_and_dlq_final_final.ipynb"
        assert sum(name in line for line in lines) == 1, log.getvalue()
    assert sum("learner-" in line for line in lines) == 3  # one line per notebook


def test_columns_fixes_the_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    log = io.StringIO()
    stdout_console(file=log).print(summary_table(gradebook_rows(), MAXIMA))
    assert max(len(line) for line in log.getvalue().splitlines()) <= 60


def test_progress_through_a_pipe_prints_each_check_on_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["FLEETLAB_HOME"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-m", "fleetlab.cli", "progress"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if "01.visibility" in line)
    assert "Size the visibility timeout from measured step times" in row
    assert "\x1b[" not in done.stdout  # no colour codes in a file


def long_table():
    prose = "a sentence about what the service does, long enough that a table of three of them is wide " * 3
    findings = (Finding("sqs.same", "A feature AWS and moto agree on", prose, prose, True, ""),
                Finding("sqs.apart", "A feature moto does otherwise", prose, prose, False, "do this " * 20))
    return FidelityTable(backend="moto", versions={"moto": "5"}, findings=findings)


def test_doctor_through_a_pipe_writes_the_fidelity_table_as_wrapped_text(monkeypatch, capsys):
    import fleetlab.backends.fidelity as fidelity

    monkeypatch.setattr(fidelity, "probe", lambda backend, refresh=False: long_table())
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "✓ A feature AWS and moto agree on (sqs.same)" in out and "✗ A feature moto does otherwise (sqs.apart)" in out
    assert out.count("workaround: do this") == 1  # only the divergence has one
    assert "\x1b[" not in out


def test_doctor_with_columns_keeps_the_table(monkeypatch, capsys):
    import fleetlab.backends.fidelity as fidelity

    monkeypatch.setattr(fidelity, "probe", lambda backend, refresh=False: long_table())
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "┃ feature" in out and max(len(line) for line in out.splitlines()) <= 120
