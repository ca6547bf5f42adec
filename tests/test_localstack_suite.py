"""``make test-localstack``'s parts that need no LocalStack: notebooks within a limit, and the per-lab report.

The whole runner runs for real in ``make test-localstack``; here a notebook
runs in a real kernel on the default backend, and the report reads real
fidelity tables.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import nbformat
import pytest
from fleetlab_tools.localstack import suite
from rich.console import Console

from fleetlab.backends.fidelity import FidelityTable, Finding, feature_ids
from fleetlab.cli import main

REPO = Path(__file__).resolve().parents[1]


def notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# a lab")] + [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    folder = tmp_path / "shared"
    folder.mkdir()
    return folder


def test_a_notebook_that_runs_to_the_end_passes(tmp_path: Path, shared: Path) -> None:
    path = notebook(tmp_path / "07_fine.ipynb", "x = 6 * 7", "assert x == 42")
    ran = suite.run_notebook(path, "instructor", shared, limit=60)
    assert (ran.result, ran.stopped_at, ran.lab) == (suite.PASSED, "", "07")


def test_a_failing_cell_stops_the_notebook_and_is_named(tmp_path: Path, shared: Path) -> None:
    path = notebook(tmp_path / "07_broken.ipynb", "x = 1", "# the check\nraise ValueError('queue was empty')", "x = 2")
    ran = suite.run_notebook(path, "student", shared, limit=60)
    assert ran.result == suite.FAILED
    assert ran.stopped_at == "cell 2 (`raise ValueError('queue was empty')`): ValueError: queue was empty"


def test_a_notebook_past_its_limit_is_stopped_not_waited_for(tmp_path: Path, shared: Path) -> None:
    path = notebook(tmp_path / "07_slow.ipynb", "from fleetlab.core.clock import RealClock",
                    "clock = RealClock()\nwait = 600\nclock.sleep(wait)", "print('never')")
    ran = suite.run_notebook(path, "instructor", shared, limit=6)
    assert ran.result == suite.TIME_LIMIT
    stopped = "cell 2 (`clock = RealClock()`): still running at line 3, in RealClock.sleep (core/realclock.py:"
    assert ran.stopped_at.startswith(stopped)
    assert ran.seconds < 30


def test_each_notebook_gets_the_checks_expectation_of_its_kind(tmp_path: Path, shared: Path) -> None:
    reads = "import os; assert os.environ['FLEETLAB_EXPECT_CHECKS'] == {!r}"
    for kind, expected in (("instructor", "pass"), ("student", "not-yet")):
        path = notebook(tmp_path / f"07_{kind}.ipynb", reads.format(expected))
        assert suite.run_notebook(path, kind, shared, limit=60).result == suite.PASSED


def test_every_lab_notebook_joins_the_run() -> None:
    instructor = suite.lab_notebooks(REPO, "instructor")
    student = suite.lab_notebooks(REPO, "student")
    assert [p.name for p in instructor] == [p.name for p in student]
    assert instructor == sorted((REPO / "labs" / "solutions").glob("*.ipynb"))
    assert [p.name[:2] for p in instructor] == list(suite.every_lab(REPO))
    assert {p.name[:2] for p in student} >= {"00", "01", "02", "07"}


def test_a_run_can_keep_the_notebooks_of_some_labs_only() -> None:
    kept = suite.lab_notebooks(REPO, "student", ("03", "01"))
    assert [p.name[:2] for p in kept] == ["01", "03"]
    assert suite.lab_notebooks(REPO, "student", ()) == suite.lab_notebooks(REPO, "student")


def test_parts_run_side_by_side_and_are_reported_in_lab_order(tmp_path: Path, shared: Path) -> None:
    # Labs 01 and 02 each wait (at most 30 s) for the other to have started: they pass only side by side.
    solutions = tmp_path / "repo" / "labs" / "solutions"
    solutions.mkdir(parents=True)
    meet = ("import pathlib, time\n"
            "pathlib.Path({mine!r}).touch()\n"
            "deadline = time.monotonic() + 30\n"
            "while not pathlib.Path({other!r}).exists():\n"
            "    assert time.monotonic() < deadline, 'the other notebook never started'\n"
            "    time.sleep(0.05)")
    one, two = str(tmp_path / "01.started"), str(tmp_path / "02.started")
    notebook(solutions / "02_b.ipynb", meet.format(mine=two, other=one))
    notebook(solutions / "01_a.ipynb", meet.format(mine=one, other=two))
    notebook(solutions / "03_c.ipynb", "1 + 1")
    result = suite.SuiteResult()
    suite._run_parts(result, tmp_path / "repo", ("instructor",), (), shared, 60, 120, 2, lambda line: None)
    assert [(run.path.name, run.result) for run in result.notebooks] == [
        ("01_a.ipynb", suite.PASSED), ("02_b.ipynb", suite.PASSED), ("03_c.ipynb", suite.PASSED)]
    assert result.contract is None


def test_the_labs_flag_names_an_unknown_lab(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["localstack", "test", "--labs", "03,42"]) == 2
    assert "'--labs': unknown lab '42'; choose from 00, 01, 02, 03, 04" in capsys.readouterr().err


def test_the_labs_flag_knows_every_lab_whatever_home_is_in_use(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    import importlib

    from fleetlab_tools import cli
    from fleetlab_tools.localstack import host

    monkeypatch.setattr(host, "default_home", lambda: host.Home(tmp_path / ".localstack"))
    monkeypatch.chdir(tmp_path)
    reloaded = importlib.reload(cli)
    assert reloaded.LABS == tuple(p.name[:2] for p in sorted((REPO / "labs" / "solutions").glob("[0-9][0-9]_*.ipynb")))


def table(backend: str, **diverging: str) -> FidelityTable:
    findings = tuple(
        Finding(f, f, "aws", diverging.get(f.replace(".", "__"), "as AWS"), f.replace(".", "__") not in diverging)
        for f in feature_ids()
    )
    return FidelityTable(backend, {}, findings)


def test_a_lab_lists_the_rows_it_reads_where_localstack_differs_from_aws_or_moto(tmp_path: Path) -> None:
    localstack = table("localstack", dynamodb__ttl_deletion="not measured")
    moto = table("moto", sqs__visibility_timeout="never comes back", events__immediate_receive="found every time")
    path = notebook(tmp_path / "07_x.ipynb", 'lab.fidelity().get("dynamodb.ttl_deletion")',
                    'lab.fidelity().get("sqs.visibility_timeout")', 'lab.fidelity().get("sqs.redrive_receive")')

    read = suite.features_read([path])

    assert read == ["sqs.visibility_timeout", "sqs.redrive_receive", "dynamodb.ttl_deletion"]
    assert suite.declared_differences(localstack, moto, read) == [
        "sqs.visibility_timeout: as AWS here (as AWS); moto differs: never comes back",
        "dynamodb.ttl_deletion: differs from AWS here: not measured",
    ]


def test_a_lab_declares_the_rows_it_depends_on_in_its_metadata(tmp_path: Path) -> None:
    path = notebook(tmp_path / "07_x.ipynb", "print('no row named here')")
    nb = nbformat.read(path, as_version=4)
    nb.metadata["fleetlab"] = {"fidelity": ["events.immediate_receive"]}
    nbformat.write(nb, path)
    assert suite.declared_features(nb) == ["events.immediate_receive"]
    assert suite.features_read([path]) == ["events.immediate_receive"]


def test_every_row_a_shipped_notebook_declares_is_a_row_of_the_table() -> None:
    known = set(feature_ids())
    for kind in ("instructor", "student"):
        for path in suite.lab_notebooks(REPO, kind):
            declared = suite.declared_features(nbformat.read(path, as_version=4))
            assert set(declared) <= known, f"{path.name} declares unknown rows {sorted(set(declared) - known)}"
            assert declared, f"{path.name} declares no fidelity rows (docs/backends.md, rules for lab authors)"


def test_the_report_has_one_table_per_lab_and_says_why_a_notebook_stopped(tmp_path: Path) -> None:
    runs = [
        suite.NotebookRun(REPO / "labs/solutions/01_at_least_once.ipynb", "instructor", suite.TIME_LIMIT, 120.4,
                          "cell 9 (`clock.sleep(901)`): still running"),
        suite.NotebookRun(REPO / "labs/01_at_least_once.ipynb", "student", suite.PASSED, 31.2),
        suite.NotebookRun(REPO / "labs/00_orientation.ipynb", "student", suite.PASSED, 12.0),
    ]
    result = suite.SuiteResult(install_seconds=None, start_seconds=1.4, probe_seconds=40, scale=60,
                               contract=suite.ContractRun("21 passed in 130.2s", 0, 131.0), notebooks=runs,
                               localstack=table("localstack", sqs__redelivery_delay="late by 1.0 s"), moto=None)
    console = Console(record=True, width=200)

    suite.print_report(result, console)

    text = console.export_text()
    assert "contract suite: pass: 21 passed in 130.2s (131 s)" in text
    assert text.index("lab 00 (00_orientation.ipynb)") < text.index("lab 01 (01_at_least_once.ipynb)")
    assert "time limit" in text and "cell 9 (`clock.sleep(901)`): still running" in text
    assert text.count("declared divergences this lab reads: none") == 1  # lab 00's rows all match here
    assert "sqs.redelivery_delay: differs from AWS here: late by 1.0 s" in text  # lab 01 declares it
    assert "clock on LocalStack: real, scaled x60: a lab minute passes in one real second" in text
    assert "notebooks: 2 passed, 1 failed; 1 over the 120 s goal" in text
    assert not result.passed


def test_the_report_heading_stays_short_in_a_log_that_never_wraps() -> None:
    console = Console(record=True, width=4096)  # the CLI's width when stdout is not a terminal
    suite.print_report(suite.SuiteResult(), console)
    heading = console.export_text().splitlines()[0]
    assert "fleetlab on LocalStack" in heading and len(heading) == suite.RULE_WIDTH


def test_a_notebook_over_the_goal_passes_and_is_named_in_the_report() -> None:
    runs = [suite.NotebookRun(REPO / "labs/solutions/03_poison_and_dlq.ipynb", "instructor", suite.PASSED, 131.0),
            suite.NotebookRun(REPO / "labs/03_poison_and_dlq.ipynb", "student", suite.PASSED, 119.0)]
    result = suite.SuiteResult(notebooks=runs, goal=120)
    console = Console(record=True, width=200)

    suite.print_report(result, console)

    text = console.export_text()
    assert result.passed and result.over_goal() == runs[:1]
    assert "131 s (over the 120 s goal)" in text and "119 s (over" not in text
    assert "notebooks: 2 passed, 0 failed; 1 over the 120 s goal\n  03_poison_and_dlq.ipynb (instructor): 131 s" in text


def test_a_terminate_signal_unwinds_the_run_so_localstack_is_stopped() -> None:
    stopped = []
    with pytest.raises(SystemExit) as exited:
        with suite._terminate_as_exit():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                pytest.fail("SIGTERM did not unwind the block")
            finally:
                stopped.append("LocalStack")
    assert exited.value.code == 128 + signal.SIGTERM
    assert stopped == ["LocalStack"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
